package text

import (
	_ "embed"
	"strconv"
	"strings"
	"sync"
	"unicode/utf8"
)

// The hand-written lexicon is grammar, not vocabulary picked from known
// questions: stop words and polite fillers in English and Chinese, question
// forms (how many = 多少), six general state concepts (remaining, status,
// progress, need, done, waiting), polarity and dimension words that become
// facets (inbound/入库 vs outbound/出库), markers, and Chinese provinces and
// large cities with their pinyin names. The concept lines that were written
// while reading the development pairs (orders, waves, bins, admissions,
// HTTP codes, circuit breakers ...) are gone. The generated lexicon
// (lexicon_gen.txt, antonym facets from WordNet, made by internal/lexgen)
// is read after it, and only for words it does not know, after numbers and
// month names.
//
// Each line is "target|phrase|phrase|...", where the target is one of:
//
//	"-"       a stop phrase, dropped: it carries no meaning for the cache;
//	"="       a plain Chinese word, matched whole so that no part of it is
//	          read as a unit or a zone (软件 holds 件, 区别 holds 区);
//	"c:NAME"  a concept: one embedding token shared by every phrase;
//	"q:NAME"  a question form: like a concept, with a lower weight;
//	"f:FACET" a facet: the phrase sets FACET and leaves the embedding;
//	"m:TYPE"  a marker that types the code next to it (zone A, A区, 3号仓);
//	"p:NAME"  a place: facet "place:NAME", or "univ:NAME" before
//	          university or 大学.
//
// A phrase with Han characters is matched inside Chinese text (longest match
// first); any other phrase is matched on whole English words (also after
// light stemming).
const lexiconText = `
-|a|an|the|is|am|are|was|were|be|been|being|do|does|did|of|in|on|at|for|by|with|into|onto|about|as|it|its|this|that|these|those|there|here
f:person:any|anyone|anybody
f:person:some|someone|somebody
f:person:all|everyone|everybody
f:person:1|me|my|mine|myself|i
f:person:1p|we|our|ours|us|ourselves
f:person:2|you|your|yours|yourself
f:person:3|they|their|theirs|them|he|him|his|she|her|hers
-|please|kindly|could|would|can|will|shall|should|might|must|let|tell|show|list|give|get|gets|got|find|check|see|look|know|want|help|need|needs
-|need to|needs to|required to|is required to|are required to|to be|have to|has to|going to|want to|wants to|used to
-|just|currently|now|still|already|also|any|some|which|what|whats|so|then|both|either|one of|out|up|at all|after all|first of all|all right|all in all
f:quant:all|all|every|all of|every one of
f:quant:each|each|each of
-|could you|can you|would you|will you|please tell me|tell me|show me|let me know|i want to know|i would like to know|i'd like to know|do you know|help me|give me|explain
-|located|located in|situated|situated in|based in|lies in|to|into|onto
-|there are|there is|are there|is there|right now|at the moment|at present|so far|in total|in all
-|offer|offers|offered|provide|provides|provided|have|has|had|having|own|contain|contains|include|includes|exist|exists
f:ord:1|first|1st
f:ord:2|second|2nd
f:ord:3|third|3rd
f:ord:4|fourth|4th
f:ord:5|fifth|5th
f:ord:6|sixth|6th
f:ord:7|seventh|7th
f:ord:8|eighth|8th
f:ord:9|ninth|9th
f:ord:10|tenth|10th
f:ord:11|eleventh|11th
f:ord:12|twelfth|12th
f:ord:13|thirteenth|13th
f:ord:14|fourteenth|14th
f:ord:15|fifteenth|15th
f:ord:16|sixteenth|16th
f:ord:17|seventeenth|17th
f:ord:18|eighteenth|18th
f:ord:19|nineteenth|19th
f:ord:20|twentieth|20th
f:ord:30|thirtieth|30th
f:ord:40|fortieth|40th
f:ord:50|fiftieth|50th
f:ord:60|sixtieth|60th
f:ord:70|seventieth|70th
f:ord:80|eightieth|80th
f:ord:90|ninetieth|90th
f:ord:100|hundredth|100th
f:ord:last|last one|最后一个
f:dir:up|increase|increases|increased|raise|raised|grow|grows|提高|上升|上调|增长|调高|调大
f:dir:down|decrease|decreases|decreased|reduce|reduces|reduced|lower|lowered|降低|减少|下降|下调|调低|调小
-|请问|请|不好意思|帮我|帮忙|帮|麻烦|麻烦你|麻烦您|给我|一下|查一下|查查|查询|查|看看|看一下|看下|瞧瞧|告诉我|我想知道|想知道|想问|问一下|能否|能不能|可以|可不可以|是否|要不要|是不是|会不会|有没有|对不对|好不好|行不行|了没有|了没
-|的|了|吗|呢|吧|啊|呀|嘛|么|是|都|在|位于|处于|为|给|把|和|跟|与|及|以及|或|这|那|这个|那个|这张|那张|这些|那些|这里|那里|个|一个|一张|一条|一些|一共|共|总共|现在|目前|当前|已经|已|在哪个|上|里|中|内|还|也|就|又|再|会|能|要|需要|应该|该|得|地|着|过|等|下设|设有|开设|有|拥有|包括|包含|请帮我|帮我看看|帮我查查|帮我查一下|非常|无论|否则|不过|不仅|不断|不错
-|哪些|有哪些|都有哪些|哪个|哪一个|哪|什么|是什么|啥|有何|怎么样
q:qty|how many|how much|what number of|what quantity of|number of|quantity|quantities|amount|count|多少|几个|几|数量|多少个|多少钱|是多少|要多少钱|多少分
q:how|how|how to|how do i|how can i|way to|ways to|the way to|怎么|怎么办|怎样做|如何做|要怎么|如何|怎样|该如何|要如何|怎么处理|如何处理|怎么解决|如何解决
f:ask:who|who|whom|whose|which person|which people|谁|哪位|什么人|是什么人
f:ask:when|when|what time|是什么时候|时候|什么时候|何时|时间|几点|啥时候|哪天|哪一天|是哪天
f:ask:where|where|location|locations|located|whereabouts|哪里|哪儿|哪了|哪呢|在哪|在哪里|在哪儿|位置|什么地方
f:ask:why|why|reason|reasons|how come|what causes|what caused|what causing|what is causing|what are causing|what can cause|what could cause|what might cause|the cause of|the causes of|cause of|causes of|为什么|为啥|原因|什么导致|是什么导致|导致的原因|为何|怎么又|怎么会|怎么老是|怎么总是|怎么回事
q:meaning|mean|means|meaning|meant|stand for|stands for|definition|意思|什么意思|是什么意思|代表什么|代表|指的是什么|指什么|含义|表示什么|表示|意味着
q:diff|difference|differences|differ|different|vs|versus|区别|差别|不同|有什么区别|有什么不同|差异在哪
q:advice|ok|okay|good idea|a good idea|advisable|recommended|safe|sensible|reasonable|合适|合理|推荐|建议|好|可行
c:remain|left|remaining|remain|remains|remainder|还剩|剩余|剩下|剩|还有多少|尚余|余量|剩多少
c:status|status|状态|什么状态|情况|现状
c:progress|progress|how far along|进度|进展|完成度
c:wait|pending|waiting|awaiting|await|待|等待|等着|等待中|尚未
c:need|require|requires|required|requirement|需|需求|要求
c:must|必须|非得|务必
c:other|别的|其他|其它
c:many|不少|很多|许多
c:done|done|complete|completed|completion|finished|finish|完成|完毕|做完|完了
c:univ|university|universities|大学
c:from|from|从|自
c:to|到|至|往
c:than|than|比
c:per|per|每|一年|每年|a year
f:neg|not|no|never|none|nothing|nobody|without|cannot|neither|nor|不|没|没有|未|无|非|别|勿|否|并非|尚未完成|还没有|还没|未完成
f:avail:yes|in stock|available|有货|有库存|可用
f:avail:no|out of stock|sold out|unavailable|无货|没货|售罄|不可用
f:flow:in|inbound|入库|入仓|入库单
f:flow:out|outbound|出库|出仓|出库单
f:shelf:up|putaway|put-away|put away|上架
f:shelf:down|下架|unshelve
f:op:add|add|adds|added|adding|添加|增加|加入|新增|加上
f:op:remove|remove|removes|removed|removing|delete|deletes|deleted|deleting|删除|移除|去掉|删掉|去除
f:ext:min|min|minimum|lowest|最小|最低|最少|最低分
f:ext:max|max|maximum|highest|最大|最高|最多|最高分
f:ext:small|smallest
f:ext:large|largest|biggest
f:ext:least|least
f:ext:most|most
f:len:long|longest|最长|最久
f:len:short|shortest|最短
f:speed:fast|fastest|quickest|最快
f:speed:slow|slowest|最慢
f:freq:day|daily|every day|per day|每天|每日
f:freq:week|weekly|every week|per week|每周|每星期|每个星期|每礼拜|每个礼拜
f:freq:month|monthly|every month|per month|每月|每个月
f:freq:year|annually|yearly|every year|per year
f:freq:hour|hourly|every hour|per hour|每小时
f:toggle:on|enable|enables|enabled|enabling|turn on|switch on|启用|开启|打开|开通
f:toggle:off|disable|disables|disabled|disabling|turn off|switch off|禁用|关闭|关掉|停用
f:rel:before|before|prior to|earlier than|之前|以前|点前
f:rel:after|after|later than|之后|以后|点后
f:cmp:gt|above|more than|greater than|higher than|larger than|exceed|exceeds|exceeding|超过|高于|大于|多于
f:cmp:ge|at least|or more|no less than|no fewer than|not less than|以上|至少|不少于|不低于|不小于
f:cmp:lt|below|under|less than|fewer than|lower than|smaller than|低于|小于|少于|不到
f:cmp:le|at most|up to|or less|or fewer|no more than|not more than|以下|不超过|至多|不多于|不高于|不大于
f:run:start|start|starts|started|starting|begin|begins|开始|启动
f:run:stop|stop|stops|stopped|stopping|停止|结束|停
f:state:open|open|opened|未关闭
f:state:closed|closed|close|已关闭
f:io:read|read|reads|reading|读|读取
f:io:write|write|writes|writing|written|写|写入
f:io:connect|connect|connects|connecting|connection|connections|连接|建连
f:role:picker|picker|pickers|拣货员|拣选员
f:role:packer|packer|packers|打包员|包装员
f:role:checker|checker|复核员|核对员
f:role:driver|driver|drivers|司机
f:op:pick|pick|picks|picked|picking|拣货|拣选|拣
f:op:pack|pack|packs|packed|packing|打包|包装
f:op:replenish|replenish|replenishes|replenished|replenishing|replenishment|补货|补充库存
f:op:count|cycle count|cycle counts|stocktake|stock take|盘点
f:op:receive|receive|receives|received|receiving|arrive|arrives|arrived|arrival|收货|到货|到达|收到
f:op:ship|ship|ships|shipped|shipping|shipment|dispatch|dispatched|发货|发运|出货|发出
f:op:short|short-picked|short pick|short-pick|short picked|shortage|缺拣|缺货
f:op:return|return rate|return rates|returned goods|rma|退货|退货率
f:lvl:ug|undergraduate|undergrad|bachelor|bachelor's|本科|本科生
f:lvl:grad|graduate|postgraduate|master|master's|masters|研究生|硕士
f:lvl:phd|phd|doctoral|doctorate|博士
f:track:sci|science track|理科|理工科
f:track:arts|humanities track|liberal arts|文科
f:dim:tuition|tuition|tuition fee|tuition fees|学费
f:dim:city|city|cities|城市|哪个城市
f:dim:province|province|provinces|省份
f:dim:college|college|colleges|学院|院系
f:dim:major|major|majors|专业
f:dim:campus|campus|campuses|校区
f:day:today|today|今天|今日|当天
f:day:yesterday|yesterday|昨天|昨日
f:day:tomorrow|tomorrow|明天|明日
f:day:before_yesterday|day before yesterday|前天
f:day:after_tomorrow|day after tomorrow|后天
f:gen:70s|七零后|70后
f:gen:80s|八零后|80后
f:gen:90s|九零后|90后
f:gen:00s|零零后|00后
f:per:person|per person|each person|per head|每人|每个人|人均
f:day:three_days_ago|three days ago|大前天
f:day:in_three_days|in three days|大后天
f:week:after_next|the week after next|下下周|下下个星期|下下星期|下下个礼拜|下下礼拜
f:week:before_last|the week before last|上上周|上上个星期|上上星期|上上个礼拜|上上礼拜
f:month:after_next|the month after next|下下个月|下下月
f:month:before_last|the month before last|上上个月|上上月
f:year:after_next|the year after next|后年
f:year:before_last|the year before last|前年
f:year:in_three|大后年
f:year:three_ago|大前年
f:week:this|this week|本周|这周|这个星期|本星期|这个礼拜|这礼拜|本礼拜
f:week:last|last week|上周|上个星期|上星期|上个礼拜|上礼拜
f:term:last|last term|last semester|上学期|上个学期
f:term:this|this term|this semester|这学期|本学期|这个学期
f:term:next|next term|next semester|下学期|下个学期
f:season:last|last season|上赛季|上个赛季
f:season:this|this season|本赛季|这个赛季|这赛季
f:season:next|next season|下赛季|下个赛季
f:schoolyear:last|上学年|上一学年
f:schoolyear:this|本学年|这学年
f:schoolyear:next|下学年|下一学年
f:week:next|next week|下周|下个星期|下星期|下个礼拜|下礼拜
f:month:this|this month|本月|这个月
f:month:last|last month|上个月|上月
f:month:next|next month|下个月|下月
f:year:this|this year|今年|本年
f:year:last|last year|去年
f:year:next|next year|明年
f:ampm:am|morning|上午|早上|早晨|凌晨|a.m|a.m.
f:ampm:pm|afternoon|下午|p.m|p.m.|pm
f:ampm:evening|evening|night|晚上|夜间
f:ampm:today.evening|tonight|this evening|今晚
f:ampm:today.am|this morning|今早
f:ampm:today.pm|this afternoon
f:ampm:noon|noon|midday|中午
f:wd:1|monday|周一|星期一|礼拜一
f:wd:2|tuesday|周二|星期二|礼拜二
f:wd:3|wednesday|周三|星期三|礼拜三
f:wd:4|thursday|周四|星期四|礼拜四
f:wd:5|friday|周五|星期五|礼拜五
f:wd:6|saturday|周六|星期六|礼拜六
f:wd:7|sunday|周日|周天|星期日|星期天|礼拜天
f:unit:pcs|unit|units|piece|pieces|pcs|eaches|件
f:unit:case|cases|carton|cartons|ctn|箱
f:unit:pallet|pallet|pallets|plt|托|托盘|栈板
f:cur:cny|rmb|cny|yuan|人民币
f:cur:usd|usd|dollar|dollars|美元
f:cur:eur|eur|euro|euros|欧元
m:zone|zone|area|区|库区
m:wh|warehouse|wh|仓|仓库|号仓|号库|号仓库
m:dock|dock|door|月台|号月台|号门|道口|号道口
m:aisle|aisle|巷道|通道|号巷道|号通道
p:beijing|beijing|peking|北京
p:tianjin|tianjin|天津
p:shanghai|shanghai|上海
p:chongqing|chongqing|重庆
p:hebei|hebei|河北
p:shanxi|shanxi|山西
p:shaanxi|shaanxi|陕西
p:liaoning|liaoning|辽宁
p:jilin|jilin|吉林
p:heilongjiang|heilongjiang|黑龙江
p:jiangsu|jiangsu|江苏
p:zhejiang|zhejiang|浙江
p:anhui|anhui|安徽
p:fujian|fujian|福建
p:jiangxi|jiangxi|江西
p:shandong|shandong|山东
p:henan|henan|河南
p:hubei|hubei|湖北
p:hunan|hunan|湖南
p:guangdong|guangdong|广东
p:hainan|hainan|海南
p:sichuan|sichuan|四川
p:guizhou|guizhou|贵州
p:yunnan|yunnan|云南
p:gansu|gansu|甘肃
p:qinghai|qinghai|青海
p:taiwan|taiwan|台湾
p:innermongolia|inner mongolia|内蒙古|内蒙
p:guangxi|guangxi|广西
p:tibet|tibet|xizang|西藏
p:ningxia|ningxia|宁夏
p:xinjiang|xinjiang|新疆
p:hongkong|hong kong|hongkong|香港
p:macau|macau|macao|澳门
p:nanjing|nanjing|南京
p:wuhan|wuhan|武汉
p:guangzhou|guangzhou|广州
p:shenzhen|shenzhen|深圳
p:hangzhou|hangzhou|杭州
p:chengdu|chengdu|成都
p:xian|xi'an|xian|西安
p:xiamen|xiamen|厦门
p:suzhou|suzhou|苏州
p:changsha|changsha|长沙
p:zhengzhou|zhengzhou|郑州
p:jinan|jinan|济南
p:qingdao|qingdao|青岛
p:dalian|dalian|大连
p:shenyang|shenyang|沈阳
p:harbin|harbin|哈尔滨
p:changchun|changchun|长春
p:hefei|hefei|合肥
p:fuzhou|fuzhou|福州
p:nanchang|nanchang|南昌
p:kunming|kunming|昆明
p:guiyang|guiyang|贵阳
p:nanning|nanning|南宁
p:lanzhou|lanzhou|兰州
p:taiyuan|taiyuan|太原
p:shijiazhuang|shijiazhuang|石家庄
p:ningbo|ningbo|宁波
p:wuxi|wuxi|无锡
p:dongguan|dongguan|东莞
p:foshan|foshan|佛山
p:zhuhai|zhuhai|珠海
p:wenzhou|wenzhou|温州
p:xuzhou|xuzhou|徐州
p:yangzhou|yangzhou|扬州
p:hohhot|hohhot|呼和浩特
p:urumqi|urumqi|乌鲁木齐
p:lhasa|lhasa|拉萨
p:haikou|haikou|海口
p:yinchuan|yinchuan|银川
p:xining|xining|西宁
=|文件|条件|软件|硬件|事件|邮件|组件|配件|插件|案件|纸箱|箱子|冰箱|邮箱|信箱|委托|托管|拜托|托运|地区|区别|区分|区域|小区|社区|分区|前端|后端|前缀|后缀|之间|期间|空间|中间|未来|无线|别人|区间
`

// generatedLexicon holds the lines generated from a general language
// resource by cache/text/internal/lexgen: antonym facets from WordNet 3.0.
//
//go:embed lexicon_gen.txt
var generatedLexicon string

//go:embed hanwords_gen.txt
var generatedHanWords string

// InWord reports a token that HanSegment put in a two-character word.
func InWord(seg []int, i int) bool {
	return seg[i] != 0 && (i > 0 && seg[i-1] == seg[i] || i+1 < len(seg) && seg[i+1] == seg[i])
}

// hanTables are the jieba tables of hanwords_gen.txt (internal/hangen):
// the frequency class (4 ln f) of every Han character and of the
// two-character words whose role characters mark no role (自由, 现在,
// 目的), the class of the whole dictionary, the characters tagged as verbs
// or adjectives, the two-character words tagged as function words, and
// the three-character nouns that end in a modal character (运动会, 太阳能).
type hanTables struct {
	freq                         map[string]int
	total                        int
	verbal, function, modalNouns map[string]bool
}

var hanData = sync.OnceValue(func() *hanTables {
	t := &hanTables{freq: map[string]int{}, verbal: map[string]bool{}, function: map[string]bool{}, modalNouns: map[string]bool{}}
	for _, line := range strings.Split(generatedHanWords, "\n") {
		k, words, ok := strings.Cut(line, " ")
		if !ok || strings.HasPrefix(line, "#") {
			continue
		}
		if set := map[string]map[string]bool{"verbal": t.verbal, "function": t.function, "modalnouns": t.modalNouns}[k]; set != nil {
			for _, w := range strings.Fields(words) {
				set[w] = true
			}
			continue
		}
		class, err := strconv.Atoi(k)
		if err != nil {
			continue
		}
		for _, w := range strings.Fields(words) {
			if w == "total" {
				t.total = class
			} else {
				t.freq[w] = class
			}
		}
	}
	return t
})

// HanVerbal reports a character jieba's dictionary tags as a verb or an
// adjective (跑, 说, 长).
func HanVerbal(ch string) bool { return hanData().verbal[ch] }

// HanModalNoun reports three characters that jieba's dictionary tags as
// a noun ending in a modal character: 运动会 (a sports meeting), 太阳能
// (solar energy), where 会 is no will and 能 no can.
func HanModalNoun(three string) bool { return hanData().modalNouns[three] }

// HanStop reports a Chinese word the lexicon drops as a stop word or a
// polite filler (一共, 现在, 请问).
func HanStop(w string) bool {
	e, ok := lexicon().zh[w]
	return ok && e.kind == lexStop
}

// HanFunction reports a two-character word jieba's dictionary tags as a
// closed-class word: an adverb, conjunction, preposition, pronoun,
// particle, numeral, classifier, time or place word (马上, 无论, 因为, 我们,
// 今年, 上面).
func HanFunction(two string) bool { return hanData().function[two] }

// HanWord reports two characters that are a word of the segmentation's
// table (得到, 觉得; not 宝得).
func HanWord(two string) bool {
	_, ok := hanData().freq[two]
	return ok && utf8.RuneCountInString(two) == 2
}

// HanSegment numbers the words of the most probable segmentation of each
// Han run of toks (one character a token), by a unigram model over jieba's
// frequencies: the two characters of a two-character word share a number,
// every other Han character has its own, and a token that is no Han
// character gets 0. 自由党 is 自由 + 党, so 自 and 由 are no role markers
// there; 线程跟进程 is 线程 + 跟 + 进程, so 跟 is one. A word that keeps its
// role character's role (送给, 对于) is not in the table, so that character
// stands alone.
func HanSegment(toks []string) []int {
	t := hanData()
	total := float64(t.total) / 4
	logp := func(w string) (float64, bool) {
		k, ok := t.freq[w]
		return float64(k)/4 - total, ok
	}
	seg := make([]int, len(toks))
	id := 0
	han := func(i int) bool {
		r, size := utf8.DecodeRuneInString(toks[i])
		return size == len(toks[i]) && IsHan(r)
	}
	for start := 0; start < len(toks); {
		if !han(start) {
			start++
			continue
		}
		end := start
		for end < len(toks) && han(end) {
			end++
		}
		// best[j]: the best log probability of toks[start:start+j]; two[j]:
		// its last word has two characters.
		n := end - start
		best := make([]float64, n+1)
		two := make([]bool, n+1)
		for j := 1; j <= n; j++ {
			p, _ := logp(toks[start+j-1])
			best[j] = best[j-1] + p
			if j >= 2 {
				if q, ok := logp(toks[start+j-2] + toks[start+j-1]); ok && best[j-2]+q > best[j] {
					best[j], two[j] = best[j-2]+q, true
				}
			}
		}
		for j := n; j > 0; {
			id++
			seg[start+j-1] = id
			if two[j] {
				seg[start+j-2] = id
				j -= 2
			} else {
				j--
			}
		}
		start = end
	}
	return seg
}

// Targets of lexicon entries.
const (
	lexStop = iota
	lexConcept
	lexQuestion
	lexFacet
	lexPlace
	lexMarker
	lexLiteral
)

// lexEntry is one parsed lexicon target.
type lexEntry struct {
	kind  int
	value string // concept name, facet, or place name
}

// lexicon is the parsed lexiconText.
type lexiconTables struct {
	en    map[string]lexEntry // space-joined English words (raw and stemmed)
	gen   map[string]lexEntry // generated English phrases, as written
	enMax int                 // most words in an English phrase
	// enFirst and genFirst give, for a first word, the most words of a
	// phrase of en (as written or stemmed) or gen that starts with it, so
	// that a word no phrase starts with costs one map read, not enMax.
	enFirst, genFirst map[string]int
	zh                map[string]lexEntry // Chinese phrases
	zhMax             int                 // most runes in a Chinese phrase
	stopWords         map[string]bool     // single-word English stop words, for tests
}

var (
	lexOnce sync.Once
	lex     lexiconTables
)

// lexicon returns the parsed tables, parsing them once: the hand-written
// lines, then the generated ones (lexicon_gen.txt).
func lexicon() *lexiconTables {
	lexOnce.Do(func() {
		lex = lexiconTables{en: map[string]lexEntry{}, gen: map[string]lexEntry{}, zh: map[string]lexEntry{}, stopWords: map[string]bool{},
			enFirst: map[string]int{}, genFirst: map[string]int{}}
		lex.add(lexiconText, false)
		lex.add(generatedLexicon, true)
	})
	return &lex
}

// lookupEn finds the entry of an English phrase (words lower-case; the
// slice is reused) in the hand-written lines, as written and then stemmed,
// or with generated true in the generated ones, as written: they list
// their inflected forms, and the light stemmer, which folds unrelated
// words ("dated" and "date"), is kept away from them.
func (lx *lexiconTables) lookupEn(words []string, generated bool) (lexEntry, bool) {
	key := strings.Join(words, " ")
	if generated {
		e, ok := lx.gen[key]
		return e, ok
	}
	if e, ok := lx.en[key]; ok {
		return e, true
	}
	for k := range words {
		words[k] = stem(words[k])
	}
	e, ok := lx.en[strings.Join(words, " ")]
	return e, ok
}

// add parses lexicon lines into the tables. A hand-written English phrase
// is keyed as written and stemmed; a generated one only as written (into
// gen), since it lists its inflected forms.
func (lx *lexiconTables) add(text string, generated bool) {
	for _, line := range strings.Split(text, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '@' {
			continue // @ lines are stem's (stemData)
		}
		parts := strings.Split(line, "|")
		e := parseTarget(parts[0])
		for _, p := range parts[1:] {
			if p == "" {
				continue
			}
			if hasHan(p) {
				if _, dup := lx.zh[p]; !dup {
					lx.zh[p] = e
				}
				if n := utf8.RuneCountInString(p); n > lx.zhMax {
					lx.zhMax = n
				}
				continue
			}
			words := strings.Fields(p)
			if len(words) == 0 {
				continue
			}
			if len(words) > lx.enMax {
				lx.enMax = len(words)
			}
			key := strings.Join(words, " ")
			if generated {
				if _, dup := lx.gen[key]; !dup {
					lx.gen[key] = e
				}
				longestFrom(lx.genFirst, words)
				continue
			}
			if _, dup := lx.en[key]; !dup {
				lx.en[key] = e
			}
			longestFrom(lx.enFirst, words)
			for i, w := range words {
				words[i] = stem(w)
			}
			if sk := strings.Join(words, " "); sk != key {
				if _, dup := lx.en[sk]; !dup {
					lx.en[sk] = e
				}
			}
			longestFrom(lx.enFirst, words)
			if e.kind == lexStop && len(words) == 1 {
				lx.stopWords[key] = true
			}
		}
	}
}

// longestFrom records in first that a phrase of len(words) words starts
// with words[0].
func longestFrom(first map[string]int, words []string) {
	if len(words) > first[words[0]] {
		first[words[0]] = len(words)
	}
}

// longestEn returns the most words a phrase of the hand-written lines (as
// written or stemmed), or with generated true of the generated ones, may
// have when it starts with the word w: 0 when none starts with it.
func (lx *lexiconTables) longestEn(w string, generated bool) int {
	if generated {
		return lx.genFirst[w]
	}
	return max(lx.enFirst[w], lx.enFirst[stem(w)])
}

func parseTarget(t string) lexEntry {
	switch {
	case t == "-":
		return lexEntry{kind: lexStop}
	case t == "=":
		return lexEntry{kind: lexLiteral}
	case strings.HasPrefix(t, "c:"):
		return lexEntry{kind: lexConcept, value: t}
	case strings.HasPrefix(t, "q:"):
		return lexEntry{kind: lexQuestion, value: t}
	case strings.HasPrefix(t, "f:"):
		return lexEntry{kind: lexFacet, value: t[2:]}
	case strings.HasPrefix(t, "m:"):
		return lexEntry{kind: lexMarker, value: t[2:]}
	case strings.HasPrefix(t, "p:"):
		return lexEntry{kind: lexPlace, value: t[2:]}
	}
	panic("text: bad lexicon target " + t)
}

func hasHan(s string) bool {
	for _, r := range s {
		if IsHan(r) {
			return true
		}
	}
	return false
}

// stem is a light English stemmer: it folds plural and verb endings so
// that "picking", "picked" and "picks" meet "pick", and "released" meets
// "release". It takes an -ed or -ing ending off only when what is left is
// a verb WordNet knows (as it is, undoubled, or with an e: "shipped" is
// "ship", "caring" is "care"); otherwise the word stays whole ("morning",
// "speed"), so that a word never meets a different word ("caring" and
// "car", "plane" and "plan" used to). A word in -s or -ing that is a word
// of its own ("news", "goods", "evening") is not taken for a plural or a
// verb form. An irregular verb form
// meets its verb ("sent" is "send", "bought" is "buy"), unless it is a
// word of its own (found, left, rose: see lexgen).
func stem(w string) string {
	st := stemData()
	if b, ok := st.irregular[w]; ok {
		return b // sent, bought: WordNet's irregular verb forms
	}
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies") && !st.keep[w]:
		return w[:n-3] + "y"
	case n > 5 && strings.HasSuffix(w, "ing") && !st.keep[w]:
		return verbBase(st, w, w[:n-3])
	case n > 4 && strings.HasSuffix(w, "ed"):
		return verbBase(st, w, w[:n-2])
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") && !strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is") && !st.keep[w]:
		if b := w[:n-1]; st.verbs[b] || !strings.HasSuffix(b, "e") {
			return b // caches, notes; picks
		}
		for _, suf := range []string{"sses", "xes", "zes", "ches", "shes"} {
			if strings.HasSuffix(w, suf) {
				return w[:n-2] // boxes, matches
			}
		}
		return w[:n-1]
	}
	return w
}

// IsPerson reports a noun whose most frequent sense names a person
// (driver, suppliers; WordNet's noun.person).
func IsPerson(w string) bool {
	st := stemData()
	return st.person[w] || st.person[stem(w)]
}

// IsAnimate reports a noun whose most frequent sense names a person or
// an animal (driver, dog; WordNet's noun.person and noun.animal): one that
// does things, where a thing has them done.
func IsAnimate(w string) bool {
	st := stemData()
	return IsPerson(w) || st.animal[w] || st.animal[stem(w)]
}

// IsPhrasal reports a verb and a particle ("work out", "sleep in") that
// WordNet lists as a verb whose most frequent sense the verb alone does
// not have.
func IsPhrasal(verbParticle string) bool { return stemData().phrasal[verbParticle] }

// IsVerb reports a one-word verb of WordNet (pay, call).
func IsVerb(w string) bool { return stemData().verbs[w] }

// HasAntonym reports an English word of the generated lexicon that is an
// antonym facet (cheap, large, next: its most frequent sense has an
// antonym in WordNet), as written.
func HasAntonym(w string) bool {
	e, ok := lexicon().gen[w]
	return ok && e.kind == lexFacet && strings.HasPrefix(e.value, "ant.")
}

// IsStative reports a verb whose most frequent sense in WordNet is a state
// (require, include, contain, need).
func IsStative(verb string) bool { return stemData().stative[verb] }

// VerbTense reads an English word as a verb form: the verb and "past" for
// a past form (an irregular one, or -ed on a verb: ran, sent, picked),
// "present" for a third-person -s form of a verb (runs, picks), "ing" for
// its -ing form (picking), or "" for anything else (the verb itself, a
// word that is no verb form).
func VerbTense(w string) (verb, tense string) {
	st := stemData()
	if b, ok := st.irregular[w]; ok {
		return b, "past"
	}
	b := stem(w)
	switch {
	case b == w || !st.verbs[b]:
		return "", ""
	case strings.HasSuffix(w, "ed"):
		return b, "past"
	case strings.HasSuffix(w, "s") && !st.keep[w]:
		return b, "present"
	case strings.HasSuffix(w, "ing"):
		return b, "ing"
	}
	return "", ""
}

// verbBase returns the verb left when an ending is taken off w (b is w
// without it), or w itself when no verb is left. When both b and b+"e" are
// verbs and b ends consonant-vowel-consonant, the verb is b+"e": b's own
// forms would double the consonant ("rated" is rate, since rat gives
// "ratted"; "hoped" is hope).
func verbBase(st *stemTables, w, b string) string {
	switch u := undouble(b); {
	case st.verbs[b] && !(cvc(b) && st.verbs[b+"e"]):
		return b
	case u != b && st.verbs[u]:
		return u
	case st.verbs[b+"e"]:
		return b + "e"
	case st.verbs[b]:
		return b
	}
	return w
}

// cvc reports whether w ends consonant, vowel, consonant (not w, x or y).
func cvc(w string) bool {
	n := len(w)
	if n < 3 {
		return false
	}
	vowel := func(c byte) bool { return strings.IndexByte("aeiou", c) >= 0 }
	return !vowel(w[n-3]) && vowel(w[n-2]) && !vowel(w[n-1]) && strings.IndexByte("wxy", w[n-1]) < 0
}

// stemTables are the word lists of the generated lexicon that stem uses.
type stemTables struct {
	verbs     map[string]bool   // one-word verbs (@verbs)
	keep      map[string]bool   // words in -s that are not plurals, nouns in -ing that are no verb form (@keep)
	irregular map[string]string // irregular verb form → its verb (@irregular)
	person    map[string]bool   // nouns that name a person (@person)
	animal    map[string]bool   // nouns that name an animal (@animal)
	phrasal   map[string]bool   // verb and particle whose first sense the verb alone lacks (@phrasal): "work out"
	stative   map[string]bool   // verbs whose most frequent sense is a state (@stative)
}

var stemData = sync.OnceValue(func() *stemTables {
	st := &stemTables{verbs: map[string]bool{}, keep: map[string]bool{}, irregular: map[string]string{}, person: map[string]bool{}, animal: map[string]bool{}, phrasal: map[string]bool{}, stative: map[string]bool{}}
	for _, line := range strings.Split(generatedLexicon, "\n") {
		target, words, ok := strings.Cut(line, "|")
		if !ok {
			continue
		}
		var m map[string]bool
		switch target {
		case "@verbs":
			m = st.verbs
		case "@keep":
			m = st.keep
		case "@person":
			m = st.person
		case "@animal":
			m = st.animal
		case "@phrasal":
			m = st.phrasal
		case "@stative":
			m = st.stative
		case "@irregular":
			for _, fb := range strings.Split(words, "|") {
				if form, base, ok := strings.Cut(fb, ">"); ok {
					st.irregular[form] = base
				}
			}
			continue
		default:
			continue
		}
		for _, w := range strings.Split(words, "|") {
			m[w] = true
		}
	}
	return st
})

// undouble turns a doubled final consonant ("shipp") into one ("ship").
func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouls", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}
