package cache

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/cache/text"
)

// wantRefused checks that the verification refuses b against a cached a,
// by one of checks ("order|roles"), and a against a cached b too.
func wantRefused(t *testing.T, a, b, checks string) {
	t.Helper()
	check, why := verifyPair(signature(b), signature(a))
	if !strings.Contains("|"+checks+"|", "|"+check+"|") || check == "" {
		t.Errorf("%.60q / %.60q: check %q (%s), want %q", a, b, check, why, checks)
	}
	if check, _ := verifyPair(signature(a), signature(b)); check == "" {
		t.Errorf("%.60q / %.60q: passes the other way round", b, a)
	}
}

// wantPassed checks that the verification passes b against a cached a,
// and a against a cached b.
func wantPassed(t *testing.T, a, b string) {
	t.Helper()
	if check, why := verifyPair(signature(b), signature(a)); check != "" {
		t.Errorf("%q / %q: refused by %s: %s", a, b, check, why)
	}
	if check, why := verifyPair(signature(a), signature(b)); check != "" {
		t.Errorf("%q / %q: refused by %s: %s", b, a, check, why)
	}
}

// TestVerifyRefuses checks that the verification stage refuses questions
// that share their words but not their meaning, for names it has never
// seen, and accepts real paraphrases.
func TestVerifyRefuses(t *testing.T) {
	for _, tc := range []struct{ a, b, check string }{
		{"Alice reports to Bob", "Bob reports to Alice", "order|roles"},
		{"Does Marta Quill report to Ivo Brandt?", "Does Ivo Brandt report to Marta Quill?", "order|roles"},
		{"Move the pallets from Dock 3 to Dock 7", "Move the pallets from Dock 7 to Dock 3", "order|roles"},
		{"ship the crates from Tarnow to Lviv", "ship the crates to Tarnow from Lviv", "order|roles"},
		{"王磊把任务转给了李娜", "李娜把任务转给了王磊", "order|roles"},
		{"赵敏被周强批评了", "周强被赵敏批评了", "order|roles"},
		{"从青岛到大连的船几点开", "从大连到青岛的船几点开", "order|roles"},
		{"狗咬人", "人咬狗", "order|roles"},
		{"他母系是苗族，父系是侗族", "他父系是苗族，母系是侗族", "order|roles"},
		{"什么牌子的羽绒服好", "这羽绒服是什么牌子的", "intent"},
		{"Which laptop is good for students?", "What laptop is this?", "intent"},
		{"Which warehouses stock SKU-7?", "How many warehouses stock SKU-7?", "intent"},
		{"Is the Quarry API rate limited?", "How is the Quarry API rate limited?", "intent"},
		{"What is a sturdy tent for alpine camping?", "Is this a sturdy tent for alpine camping?", "intent"},
		{"How to turn a list into a map in Kotlin", "How to turn a map into a list in Kotlin", "order|roles"},
		{"What is the difference between Kestrel and Osprey?", "What is the difference between Kestrel and Merlin?", "names"},
		{"Ravelin 和 Bastion 有什么区别", "Ravelin 和 Glacis 有什么区别", "names"},
		{"Who replaced Odile Brandt as shift lead?", "Who did Odile Brandt replace as shift lead?", "roles"},
		{"Who trained the new pickers?", "Whom did the new pickers train?", "roles"},
		{"仓库里有几台叉车", "仓库里有哪几台叉车", "intent"},
		{"这个月有几场盘点", "这个月有哪些盘点", "intent"},
	} {
		wantRefused(t, tc.a, tc.b, tc.check)
	}
	for _, tc := range [][2]string{
		{"How many units of SKU-7 are left in zone A?", "In zone A, how many units of SKU-7 are left?"},
		{"What is the difference between Kestrel and Osprey?", "What's the difference between Osprey and Kestrel?"},
		{"王磊把任务转给了李娜吗", "王磊把任务转给李娜了吗"},
		{"Who did Odile Brandt replace as shift lead?", "Whom did Odile Brandt replace as shift lead?"},
		{"仓库里有几台叉车", "仓库里一共有几台叉车"},
		{"Who does Alice report to?", "Who is Alice's manager, the one she reports to?"},
		{"5 号仓今天有多少待上架的托盘", "今天 5 号仓还有几个托盘等着上架"},
		{"Where is SKU-30 stored?", "In which location is SKU-30 stored?"},
	} {
		wantPassed(t, tc[0], tc[1])
	}
}

// TestVerifyInCache checks that Lookup and Explain run the verification
// stage after the score and report it, for a near-duplicate that scores
// above the threshold.
func TestVerifyInCache(t *testing.T) {
	ctx := context.Background()
	c := New(Config{})
	ns := Namespace{Namespace: "v", Model: "m"}
	c.Store(ctx, ns, "Alice reports to Bob", c.Generation(ns), Answer{Chunks: []string{"yes"}})
	x := c.Explain(ctx, ns, "Bob reports to Alice")
	if x.Score < c.Threshold() {
		t.Fatalf("score %.3f below the threshold: the test needs a near-duplicate", x.Score)
	}
	if x.Decision != "miss" || x.Stage != "verify" || x.Verify == nil || x.Verify.Passed || x.Verify.Check == "" {
		t.Fatalf("explanation %+v %+v, want a miss refused by verification", x, x.Verify)
	}
	if !strings.HasPrefix(x.Reason, "verification refused: ") {
		t.Errorf("reason %q", x.Reason)
	}
	if r := c.Lookup(ctx, ns, "Bob reports to Alice"); r.Hit {
		t.Errorf("Lookup hit a role swap")
	}
	x = c.Explain(ctx, ns, "alice reports to bob?!")
	if x.Decision != "hit" || x.Stage != "exact" {
		t.Errorf("exact: %+v", x)
	}
	c.Store(ctx, ns, "How many units of SKU-7 are left in zone A?", c.Generation(ns), Answer{Chunks: []string{"5"}})
	x = c.Explain(ctx, ns, "In zone A, how many units of SKU-7 are left?")
	if x.Decision != "hit" || x.Stage != "verify" || x.Verify == nil || !x.Verify.Passed {
		t.Errorf("paraphrase: %+v %+v", x, x.Verify)
	}
}

// TestVerifyMore covers comparisons written in lower case, direction
// markers in Chinese, and the length bound.
func TestVerifyMore(t *testing.T) {
	for _, tc := range []struct{ a, b, check string }{
		{"difference between tcp and udp", "difference between tcp and sctp", "compare"},
		{"TCP 和 UDP 的区别", "TCP 和 SCTP 的区别", "names"},
		{"从杭州寄到成都要几天", "从成都寄到杭州要几天", "order|roles"},
		{"顾客向商家退款", "商家向顾客退款", "order|roles"},
		{"Is Kestrel faster than Osprey?", "Is Osprey faster than Kestrel?", "order|roles"},
		{strings.Repeat("what about the next step ", 60), strings.Repeat("what about the next step ", 61), "length"},
	} {
		wantRefused(t, tc.a, tc.b, tc.check)
	}
	for _, tc := range [][2]string{
		{"difference between tcp and udp", "what is the difference between udp and tcp"},
		{"从杭州寄到成都要几天", "从杭州寄到成都需要几天"},
	} {
		wantPassed(t, tc[0], tc[1])
	}
}

// FuzzVerify checks that the verification never panics, accepts a
// question against itself, and is bounded, whatever the input.
func FuzzVerify(f *testing.F) {
	for _, s := range []string{"", "?", "王磊把任务转给了李娜", "Alice reports to Bob", "三万六，1.5万、3k", "a|b#2 to#1", "\u0308\u3000。？"} {
		f.Add(s, s+" x")
	}
	f.Fuzz(func(t *testing.T, a, b string) {
		sa, sb := signature(a), signature(b)
		verifyPair(sa, sb)
		verifyPair(sb, sa)
		if check, why := verifyPair(sa, signature(a)); check != "" && check != "length" {
			t.Errorf("%q refused against itself: %s", a, why)
		}
		text.Facets(text.Normalize(a))
	})
}

// TestVerifyGrammar covers the grammar checks: a tense conflict, a unit
// counted by other numerals, a unit owned by another possessor, and the
// agent of a passive that stays an unmarked participant after the same
// ones in an active question; and paraphrases of each kind that pass.
func TestVerifyGrammar(t *testing.T) {
	for _, tc := range []struct{ a, b, check string }{
		// Voice: who does what to whom exchanged.
		{"Was Lena Okafor reimbursed by the Harlow clinic?", "Did Lena Okafor reimburse the Harlow clinic?", "roles"},
		{"Did we get invoiced by Brightline Freight last week?", "Did we invoice Brightline Freight last week?", "roles"},
		{"Is Tomas being sued by his landlord?", "Is Tomas suing his landlord?", "roles"},
		{"我被王芳投诉了吗", "我投诉了王芳吗", "roles"},
		{"自由党议员昨天批评了工党的领袖。", "工党议员昨天批评了自由党的领袖。", "order|roles"}, // 自由 is a word, not from + by
		{"The bill was approved by the Senate after the House vote.", "The House approved the bill after the Senate vote.", "order|roles"},
		{"Was the package sent by Anna to Ben?", "Did Ben send the package to Anna?", "order|roles"},
		// Quantities exchanged between two units.
		{"Can one driver use two trucks?", "Can two drivers use one truck?", "quantity"},
		{"Is a single ticket valid for two rides?", "Are two tickets valid for a single ride?", "quantity|roles"},
		{"一张卡能绑两个手机号吗", "两张卡能绑一个手机号吗", "quantity"},
		{"十二个箱子装三托吗", "三个箱子装十二托吗", "quantity"},
		// In against out of; all of them against some of them; 该 as this,
		// not should.
		{"How long can cooked chicken stay in the fridge?", "How long can cooked chicken stay out of the fridge?", "particle"},
		{"这些包裹都签收了吗", "这些包裹有签收的吗", "scope"},
		{"该公司的员工可以远程办公吗", "该公司的员工必须远程办公吗", "mood"},
		// What or which and a noun asking the subject or the object; owner
		// and owned exchanged; see and find, know and see outside a
		// look-up; safe against okay (one question form's words).
		{"What country invaded Poland in 1939?", "What country did Poland invade in 1939?", "roles"},
		{"Which team beat Brazil in the final?", "Which team did Brazil beat in the final?", "roles"},
		{"What company bought Instagram in 2012?", "What company did Instagram buy in 2012?", "roles"}, // an irregular past after what and a noun
		{"Who is the patient's doctor?", "Who is the doctor's patient?", "roles"},
		{"Does the kit contain any batteries?", "Does the kit need batteries?", "replaced"}, // aligned without determiners
		{"Can I park here overnight?", "Can I park there overnight?", "scope"},
		{"Is Pluto a planet?", "Was Pluto a planet?", "tense"},
		{"Which airlines have dropped the fuel surcharge?", "Which airlines are going to drop the fuel surcharge?", "tense"},                   // done so far against a plan
		{"Is the old mill being torn down?", "Was the old mill torn down?", "tense"},                                                           // being and an irregular participle: now
		{"Does IT bill the marketing department for laptops?", "Does the marketing department bill IT for laptops?", "order|roles"},            // IT is a name, not it
		{"这批货都能按时到吗", "这批货有的能按时到吗", "scope"},                                                                                                   // 有的 after its noun: some of them
		{"并不是所有员工都能报销", "所有员工都无法报销", "negation"},                                                                                               // 都无: none of them
		{"Is the briefing optional for new night staff?", "Is the new briefing optional for night staff?", "order"},                            // a modifier moved to a noun in -ing
		{"Can customers who have not paid the deposit book a table?", "Can customers who have paid the deposit not book a table?", "negation"}, // into or out of the relative clause
		{"Was Vienna considered as a host city?", "Is Vienna considered as a host city?", "tense"},                                             // be, a participle and as: a status then or now
		{"Was a visa required for the trip?", "Is a visa required for the trip?", "tense"},                                                     // the participle of a verb of state (WordNet's verb.stative)
		{"How much did the ferry ticket cost?", "How much does the ferry ticket cost?", "tense"},                                               // did against does in an open question
		{"Where did the band rehearse?", "Where does the band rehearse?", "tense"},
		{"How long has she been mayor?", "How long was she mayor?", "tense"},                                                          // how long so far against how long it lasted
		{"How long has the museum on Elm Street been closed?", "How long is the museum on Elm Street closed?", "tense"},               // been after a longer subject
		{"Is the road being shut tonight?", "Has the road been shut tonight?", "tense"},                                               // being and a participle spelled as its verb
		{"How many jobs has the factory cut?", "How many jobs will the factory cut?", "tense"},                                        // has, its subject, a participle spelled as its verb
		{"Will the hotel charge my card unless I cancel by noon?", "Will the hotel charge my card if I cancel by noon?", "condition"}, // unless is if not
		{"Is 60 too old to learn to swim?", "Is 60 old enough to learn to swim?", "degree"},
		{"Is a week and a half enough to see Kyoto?", "Is a week enough to see Kyoto?", "quantity|inserted"},
		{"Hey, is goat cheese safe for babies?", "Is goat milk cheese safe for babies?", "inserted"},                                                    // a greeting and its comma do not hide the inserted word
		{"Can a beginner, who runs twice a week, train for a half marathon?", "Can a beginner who runs twice a week train for a marathon?", "inserted"}, // nor do commas
		{"Is my bike getting repaired today?", "Was my bike repaired today?", "tense"},                                                                  // getting and a participle: now
		{"Can I sell a used book I paid for with a gift voucher?", "Can I sell a book I paid for with a used gift voucher?", "order"},                   // after a participle, gift (a verb too) is a noun
		{"Did the server reboot three times in a row?", "Did the server reboot three times?", "inserted"},                                               // a phrase of its own: in a row
		{"Were we going to close the office on Friday?", "Are we going to close the office on Friday?", "tense"},                                        // a plan that is over against one still on
		{"Is she used to the night shift?", "Did she use to do the night shift?", "tense|replaced|inserted|intent"},                                     // be used to (accustomed) is no past habit
		{"How long's she been coach?", "How long was she coach?", "tense"},                                                                              // how long's: has
		{"Was the SAT optional for transfer students?", "Is the SAT optional for transfer students?", "tense"},                                          // SAT is a name, not sat
		{"Did the payroll job finish on the main cluster?", "Is the payroll job finishing on the main cluster?", "tense"},                               // done against now, a subject of three words
		{"所有订单都支持无门槛优惠券吗", "所有订单都不支持无门槛优惠券吗", "inserted|negation"},                                                                                      // a 不 beside a 无
		{"这些包裹有的破损了吗", "这些包裹都破损了吗", "scope"},                                                                                                            // 有的 after its noun before a verb
		{"这批零件有部分生锈了吗", "这批零件都生锈了吗", "scope"},                                                                                                           // 有部分: some of them
		{"这批订单都已经付款了吗", "这批订单有的已经付款了吗", "scope"},                                                                                                        // 都已经 before no number of time: all of them
		{"每个门店都有停车场吗", "有的门店有停车场吗", "scope"},                                                                                                            // 每个…都: all of them (每天都 is always)
		{"房客能提前退租吗，押金怎么算", "房东可以提前退租吗，押金怎么算", "replaced"},                                                                                               // 可以 = 能: still one word replaced
		{"他不太喜欢加班", "他太不喜欢加班", "negation"},                                                                                                              // a degree adverb inside or outside the negation
		{"工资不全是按时发的", "工资全不是按时发的", "negation"},
		{"我不特别想换工作", "我特别不想换工作", "negation"},                                                           // 特别 is a word: its 别 is no negation
		{"会员卡快到期了", "会员卡已经到期了", "tense"},                                                               // 快…了: about to happen
		{"我的包裹已经被退回了怎么办", "我的包裹要被退回了怎么办", "tense"},                                                     // 要 where the other says 已经: about to happen
		{"How soon after eating can I run?", "How soon after running can I eat?", "order"},             // one verb in two forms (eating / eat) exchanged with another
		{"How do I thank my mentor?", "How do I get my mentor to thank me?", "roles"},                  // the object made the doer
		{"What is the late fee on my loan?", "How do I get rid of the late fee on my loan?", "intent"}, // what it is against how to do something
		{"工厂正在招人吗", "工厂将要招人吗", "tense"},                                                                // now against what is to come
		{"我还在实习期，能请年假吗", "我已过了实习期，能请年假吗", "mood"},                                                      // 还在: still
		{"光喝水能减肥吗", "喝水能减肥吗", "scope"},                                                                 // 光 before a verb: only
		{"物业凭什么收这笔费用", "物业能收这笔费用吗", "intent"},                                                          // 凭什么 asks why
		{"这款沙发有几个颜色，一套多少钱", "这款沙发有哪些颜色，一套多少钱", "intent"},                                               // clause by clause: how many against which
		{"附近有没有好的幼儿园，学费大概多少", "附近有哪些好的幼儿园，学费大概多少", "intent"},                                           // yes or no against which
		{"驾照考试已经通过了吗", "驾照考试能通过吗", "mood"},                                                             // done already against whether it can be (通过 reads as done too)
		{"孩子不怎么吃蔬菜", "孩子怎么不吃蔬菜", "intent"},                                                             // 不怎么 (not much) against 怎么不 (why not)
		{"我差点撞到了前面的车", "我已经撞到了前面的车", "mood"},                                                           // 差点: nearly, so not
		{"办居住证谁都可以代办吗", "办居住证谁可以代办", "intent"},                                                         // a question word before 都 says anyone
		{"物业电话怎么都打不通", "物业电话怎么打不通", "intent"},                                                          // 怎么都: however I try
		{"张伟和王磊下棋，张伟赢了几盘", "张伟和王磊下棋，王磊赢了几盘", "roles"},                                                  // one name said again, the other in the other question
		{"体检查出来的不是胃炎而是胃溃疡，要住院吗", "体检查出来的是胃炎而不是胃溃疡，要住院吗", "negation"},                                   // 不是A而是B against 是A而不是B
		{"宽带连不上，客服电话怎么都打不通，该怎么办", "宽带连不上，客服电话怎么打不通，该怎么办", "intent"},                                    // a clause with a question word against the same clause without one
		{"这张卡哪家银行都能取钱吗", "这张卡哪家银行能取钱", "intent"},                                                       // a question word and its noun before 都: any bank
		{"我买的不是普通版是豪华版，能退差价吗", "我买的是普通版不是豪华版，能退差价吗", "negation"},                                       // 不是A是B without 而
		{"这批货有的被海关扣了吗", "这批货都被海关扣了吗", "scope"},                                                         // 有的 before 被
		{"这款手机最不耐摔的是哪个部位", "这款手机不是最耐摔的是哪个部位", "negation"},                                              // 最 inside or outside the negation
		{"What has the council decided about the bridge?", "What will the council decide about the bridge?", "tense"},
		{"How many teams beat the Patriots this season?", "How many teams did the Patriots beat this season?", "roles"},
		{"How much does painting cost per square foot?", "How much does paint cost per square foot?", "replaced"},
		{"Does the hotel have parking?", "Does the hotel have a park?", "replaced"},
		{"Is it going to rain?", "Is it raining?", "tense"}, // a plan against now
		{"Does he smoke?", "Is he smoking?", "tense"},       // a habit against now
		{"Have the kids eaten?", "Are the kids eating?", "tense"},
		{"Should I have cancelled the order?", "Should I cancel the order?", "tense"},
		{"Would you like coffee?", "Do you like coffee?", "intent"},
		{"Which of the teams beat Brazil?", "Which of the teams did Brazil beat?", "roles"},
		{"Whose car hit the bus?", "Whose car did the bus hit?", "roles"},
		{"Does the tenant own the furniture?", "Does the tenant have furniture?", "replaced"},
		{"Can I see a doctor without an appointment?", "Can I find a doctor without an appointment?", "replaced"},
		{"Count the damaged cartons on every pallet in zone C.", "Count the cartons on every damaged pallet in zone C.", "order"},
		{"Did anyone see the suspect near the bank?", "Did anyone find the suspect near the bank?", "replaced"},
		{"Do you know a good dentist?", "Do you see a good dentist?", "replaced"},
		{"Is it safe to leave my car here overnight?", "Is it okay to leave my car here overnight?", "replaced"},
		{"How long is the training?", "How long is the train?", "replaced"}, // a noun in -ing is a thing of its own
		{"Which setting should I use for delicate fabrics?", "Which set should I use for delicate fabrics?", "replaced"},
		{"Is the new history teacher boring?", "Is the new history teacher bored?", "replaced"},
		// Numerals no facet reads (高一 / 高三), each place they stand; a
		// negation before or after a modal; about to or in progress against
		// done; a noun prefix added (副, 前).
		{"我儿子今年读高一，数学跟不上怎么办", "我儿子今年读高三，数学跟不上怎么办", "replaced"},
		{"我读大一，哪些公司招大一的实习生", "我读大四，哪些公司招大四的实习生", "replaced"},
		{"孕妇可以不打流感疫苗吗，会有影响吗", "孕妇不可以打流感疫苗吗，会有影响吗", "negation"},
		{"商家说马上就发货，还能取消订单吗", "商家说已经发货了，还能取消订单吗", "tense"},
		{"签证正在办理，可以先订机票吗", "签证已经办好了，可以先订机票吗", "tense"},
		{"公司的副总经理下个月调走，工作谁接手", "公司的总经理下个月调走，工作谁接手", "inserted"},
		{"我和丈夫结婚五年了，婚后买的房子离婚怎么分", "我和妻子结婚五年了，婚后买的房子离婚怎么分", "replaced"}, // a two-character word replaced
		{"酒店能提前两天入住吗，需要加钱吗", "酒店能推迟两天入住吗，需要加钱吗", "replaced"},
		{"我的快递显示已经签收了，但是我并没有收到，应该找谁", "我的快递显示还没有签收，但是我已经收到了，应该找谁", "negation"}, // the negation in another clause
		{"你去过故宫吗？门票需要提前预约吗", "你去故宫吗？门票需要提前预约吗", "tense"},                       // 过: ever
		{"请问这里有停车场吗？停多久收费", "请问这里是停车场吗？停多久收费", "replaced"},                     // 有 / 是
		{"长江上游流经哪些省份", "长江中游流经哪些省份", "replaced"},                               // a place character inside a word
		{"这家超市收银台只接受现金付款吗，有没有手续费", "这家超市收银台接受现金付款吗，有没有手续费", "scope"},           // 只 against none
		{"我的会员卡还有三天就过期了，余额还能用吗", "我的会员卡已经过期三天了，余额还能用吗", "tense"},               // still to come / already past
		{"老板敢开除我吗，开除的话要赔多少钱", "老板可以开除我吗，开除的话要赔多少钱", "mood"},                    // dares / may
		{"洗衣机侧面有划痕，可以免费换一台新的吗", "洗衣机侧面有划痕，可以换一台新的吗", "inserted"},               // a two-character word added
		{"家里的空调多久清洗一次比较好", "家里的空调清洗一次要多久比较好", "intent"},                        // how often / how long
		{"我家的猫把邻居家的狗抓伤了，要打疫苗吗", "我家的猫被邻居家的狗抓伤了，要打疫苗吗", "roles|replaced"},
		{"银行还愿意给我批贷款吗，利率会不会高", "银行还能给我批贷款吗，利率会不会高", "mood"},
		{"小区的业主也可以买车位吗，租户能不能办月卡", "小区的业主才可以买车位吗，租户能不能办月卡", "scope"},
		{"这个小区没有一套房子是带电梯的吗", "这个小区有一套房子是不带电梯的吗", "scope|negation|mood"},
		// Future against past.
		{"Will the bank charge a fee for the transfer?", "Did the bank charge a fee for the transfer?", "tense"},
		{"Who runs the Leeds depot?", "Who ran the Leeds depot?", "tense"}, // irregular forms are one word to the embedder
		{"Who pays when a courier loses a parcel?", "Who paid when the courier lost the parcel?", "tense"},
		{"The company will lay off 1,200 workers.", "The company laid off 1,200 workers.", "tense"},
		{"What stung my son?", "What did my son sting?", "intent|roles|order"},
		// One word replaced, a filler added elsewhere.
		{"楼上的邻居半夜还在装修，打什么电话可以投诉", "楼下的邻居半夜还在装修，请问打什么电话可以投诉", "replaced"},
		{"这台空调的外机噪音很大，应该找谁处理", "这台空调的内机噪音很大，应该找谁处理呢？谢谢", "replaced"},
		// Both against either, some of against all, just (only) against none.
		{"Do both owners need to sign the lease?", "Does either owner need to sign the lease?", "scope"},
		{"Why are some of my invoices unpaid?", "Why are my invoices unpaid?", "scope"},
		{"Does the warranty just cover the screen?", "Does the warranty cover the screen?", "scope"},
		// Will against can; a stranded preposition; who did it against to
		// whom; with against none or without; now against then.
		{"Which orders can ship from dock 3 today?", "Which orders will ship from dock 3 today?", "intent"},
		{"Will the landlord return the deposit?", "Can the landlord return the deposit?", "intent"},
		{"What can I exchange for this voucher?", "What can I exchange this voucher for?", "roles"},
		{"The manager who the auditor praised left in May.", "The manager who praised the auditor left in May.", "roles"},
		{"Can I pay with my store card?", "Can I pay my store card?", "roles"},
		{"Can I rent a car with insurance without a deposit?", "Can I rent a car without insurance with a deposit?", "roles"},
		{"Who is loading truck 12 right now?", "Who loaded truck 12?", "tense"},
		// Kinds of review round 23: a passive without its agent against the
		// active with the same subject; have to / want to; used to; a
		// preposition replaced; one of the largest; might; a stranded for
		// dropped; a statement against a question; opposite particles.
		{"Was the courier paid for the late delivery?", "Did the courier pay for the late delivery?", "roles"},
		{"Which fees can I avoid without a premium account?", "Which fees can't I avoid without a premium account?", "negation"},
		{"The bridge, designed by a Danish firm in 1930, was widened in 1975.", "The bridge, designed in 1930, was widened by a Danish firm in 1975.", "roles"},
		// Kinds of review round 25: a negation on another verb, a relative
		// that, so far against usual, one of them against the one.
		{"The nurse told me not to eat before the scan.", "The nurse didn't tell me to eat before the scan.", "negation"},
		{"海关已放行这批货物。", "海关尚未放行这批货物。", "mood|negation"},      // already against not yet
		{"C库调给D库的三十托到了吗？", "D库调给C库的三十托到了吗？", "order|roles"}, // a letter beside Han text is a name
		{"Which firm bought the bakery that the brewery acquired?", "Which firm bought the bakery that acquired the brewery?", "roles"},
		{"How many parcels have we sorted today?", "How many parcels do we sort today?", "tense"},
		{"Is one of the scanners at dock 2 broken?", "Is the scanner at dock 2 broken?", "scope"},
		{"Where do I check my suitcase at Gatwick?", "Where do I get my suitcase at Gatwick?", "replaced"}, // handing over against collecting
		{"The court heard that the suspect entered the building through a side door at night.", "The court heard that the suspect allegedly entered the building through a side door at night.", "inserted"},
		{"The board named the acting director of the museum last week.", "The board named the director of the museum last week.", "inserted"},
		{"这家超市的鸡蛋价格涨到了十二元一盒，还有哪里能买到便宜的", "这家超市的鸡蛋价格涨了十二元一盒，还有哪里能买到便宜的", "roles"}, // to 12 against by 12
		{"List the re-wrapped pallets from the damaged Boston shipment.", "List the damaged pallets from the re-wrapped Boston shipment.", "order|roles"},
		{"Which staff have to stay late on Friday?", "Which staff want to stay late on Friday?", "intent"},
		{"Which shops used to open on Sundays?", "Which shops open on Sundays?", "tense"},
		{"Can I pay by card at the reception?", "Can I pay for a card at the reception?", "replaced"},
		{"Is Lyon one of the biggest cities in France?", "Is Lyon the biggest city in France?", "scope"},
		{"Which trains might be delayed tomorrow?", "Which trains will be delayed tomorrow?", "intent"},
		{"What is this charge for?", "What is this charge?", "intent"},
		{"The council will close the library on Monday.", "Will the council close the library on Monday?", "intent"},
		{"Can I move my booking up a day?", "Can I move my booking back a day?", "particle"},
		// need, have and want as main verbs.
		{"Does this crate need a pallet tag?", "Does this crate have a pallet tag?", "replaced"},
		{"成都是西部最大的城市之一，房价贵吗", "成都是西部最大的城市，房价贵吗", "scope"},
		{"Is it necessary to book a table?", "Can I book a table?", "intent"},
		// A possibility against an assertion, in statements.
		{"The airline may cancel 40 flights on Friday.", "The airline will cancel 40 flights on Friday.", "mood"},
		{"该公司可能裁员三百人。", "该公司将裁员三百人。", "mood"},
		// A modifier moved from the possessor to what it owns.
		{"The former mayor's assistant resigned on Monday.", "The mayor's former assistant resigned on Monday.", "order"},
		{"公司的新董事长是谁", "新公司的董事长是谁", "order"},
		// A modifier before another noun; a passive after a leading year.
		{"她和毕业于复旦大学的姐姐一起开了这家店。", "毕业于复旦大学的她和姐姐一起开了这家店。", "roles"},
		{"我推荐的同事下个月入职", "推荐我的同事下个月入职", "roles"}, // who did it to whom, before 的
		{"被王磊打败的那支球队来自哪里", "打败王磊的那支球队来自哪里", "roles"},
		{"周二到周四能上门取件吗", "周二和周四能上门取件吗", "roles"}, // a range against a list
		{"The cousin of the actor who won the award is a pilot.", "The cousin of the actor is a pilot who won the award.", "roles"},
		{"In 1802 she was succeeded as abbess by her niece, Anne Ward.", "In 1802 she succeeded her niece, Anne Ward, as abbess.", "roles"},
		{"Is the meeting going to be recorded?", "Was the meeting recorded?", "tense"},
		{"Has the refund been issued?", "Will the refund be issued?", "tense"},
		{"Why has the rent gone up?", "Why is the rent gonna go up?", "tense"},
		{"明天的航班会延误吗", "明天的航班延误了吗", "tense"},
		{"这批货即将到港吗", "这批货已经到港了吗", "tense"},
		{"这个漏洞修复过吗", "这个漏洞即将修复吗", "tense"},
		{"When did the Harbour Street branch open?", "When does the Harbour Street branch open?", "tense"}, // when: past against none
		// Possessor against subject.
		{"Can my sister use my gym membership?", "Can I use my sister's gym membership?", "roles"},
		{"Does my tutor need to check my essay?", "Do I need to check my tutor’s essay?", "roles"},
		{"我的同事可以查看我的工资单吗", "我可以查看我同事的工资单吗", "roles"},
		// Two framed subjects that differ: two requests.
		{"Can I reschedule the delivery?", "Can you reschedule the delivery?", "roles"},
		{"How do we export the ledger?", "How do you export the ledger?", "roles"},
		{"Thanks, can we edit the roster?", "Can anyone edit the roster?", "roles"}, // read as the facets read it
		// A conditional against a question without one; what'd against did or would.
		{"What would you change in the plan?", "What do you change in the plan?", "tense"},
		{"Who'd bring the projector?", "Who brought the projector?", "tense"},
		// The opening auxiliaries of two yes/no questions.
		{"Should we renew the lease?", "Can we renew the lease?", "intent"},
		{"Did you invoice the client?", "Do you invoice the client?", "intent"},
		// A pronoun and a noun exchanged around the verb.
		{"My landlord owes me a deposit refund, what now?", "I owe my landlord a deposit refund, what now?", "order|roles"},
		{"Does our supplier owe us a credit note?", "Do we owe our supplier a credit note?", "order|roles"},
		// He and she exchanged.
		{"Does he trust her?", "Does she trust him?", "roles"},
		{"Did his sister invite him?", "Did her sister invite her?", "roles"},
		{"他认识她吗", "她认识他吗", "roles"},
		// Units exchanged around a frame, one in an -es plural.
		{"Do caches slow down the disk?", "Does the disk slow down the cache?", "order|roles"},
		{"How many cm are in an inch?", "How many inches are in a cm?", "roles"},
		{"How many boxes fit in a crate?", "How many crates fit in a box?", "roles"},
		{"Do the Foxes play at home on Saturday?", "Does Fox play at home on Saturday?", "names"}, // a name keeps its -e
		// A moved time adverbial leaves the rest in the check; a time word
		// that is a name or a noun's modifier stays in it.
		{"Did Priya call Tomasz yesterday?", "Yesterday, did Tomasz call Priya?", "order"},
		{"Did April invite Kofi to the launch?", "Did Kofi invite April to the launch?", "order|roles"},
		{"每天发货三千，几个人够用？", "每天发货三千，人够用吗？", "intent"}, // 几 after a number in another clause still asks
		{"Does Noor report to June?", "Does June report to Noor?", "order|roles"},
		{"Is the weekend fee higher than the holiday fee?", "Is the holiday fee higher than the weekend fee?", "order|roles"},
		// A name inside the other one crosses 比 or than alone.
		{"金卡的年费比白金卡高吗？", "白金卡的年费比金卡高吗？", "roles"},
		{"Is the gold card fee higher than the platinum gold card fee?", "Is the platinum gold card fee higher than the gold card fee?", "order|roles"},
		// One word replaced in a long question.
		{"信用卡在国内刷卡消费会不会收取额外的手续费和货币转换费", "信用卡在国外刷卡消费会不会收取额外的手续费和货币转换费", "replaced"},
		{"Shares of the Ohio utility rose 4 percent in early trading after the quarterly earnings report on Monday", "Shares of the Ohio utility fell 4 percent in early trading after the quarterly earnings report on Monday", "replaced"},
		{"Why does my credit card statement show two charges from the same hotel for one night in March?", "Why does my debit card statement show two charges from the same hotel for one night in March?", "replaced"},
		// Kinds of question: a price, a count of units, how long, how far,
		// what it is, why (怎么又), whose.
		{"这种纸箱一捆多少钱", "这种纸箱一捆有多少个", "intent"},
		{"从仓库开车到码头要多久", "从仓库开车到码头要多远", "intent"},
		{"什么是信用卡分期", "信用卡怎么分期", "intent"},
		{"话费怎么又扣了", "话费怎么扣", "intent"},
		{"Whose badge was used at the north gate?", "Who used the badge at the north gate?", "intent"},
		// Negation before or after a quantifier; deixis; and against or.
		{"这批货不一定能在周五之前全部出库吗", "这批货一定不能在周五之前全部出库吗", "negation"},
		{"店里的东西都不能退换吗", "店里的东西不都能退换吗", "negation"},
		{"Why are not all of my deposits showing up in the app?", "Why are all of my deposits not showing up in the app?", "negation"},
		{"并非所有门店都支持自提吗", "所有门店都不支持自提吗", "negation"}, // 并非: not
		{"上次在你们店买的鞋子能换吗", "这次在你们店买的鞋子能换吗", "deixis"},
		{"上一期的账单能分期吗", "这一期的账单能分期吗", "deixis"},
		{"开户需要身份证和户口本吗", "开户需要身份证或户口本吗", "conjunction"},
		{"Do I need a passport and a visa for Peru?", "Do I need a passport or a visa for Peru?", "conjunction"},
		// Particles, out of, the patient of who was, modals of open
		// questions, is against was, a time after for or by, what + noun,
		// 只要 against 只有.
		{"How do I log in to the vendor portal?", "How do I log out of the vendor portal?", "particle|roles"},
		{"How do I sign up for the loyalty program?", "How do I sign in to the loyalty program?", "particle"},
		{"What time is check in at the Harbor Hotel?", "What time is check out at the Harbor Hotel?", "particle"},
		{"Can I move money into my brokerage account?", "Can I move money out of my brokerage account?", "roles|particle"},
		{"Who was promoted last month?", "Who promoted last month?", "roles"},
		{"Which laptops should I buy for video editing?", "Which laptops can I buy for video editing?", "intent"},
		{"Do I get to keep the receipt?", "Do I have to keep the receipt?", "intent"},
		{"盘点发现A区的实际库存比账上记的多，怎么处理", "盘点发现A区的实际库存比账上记的要少，怎么处理", "compare"}, // 比…多 / 比…要少
		{"这趟航班比原定时间早到了多久", "这趟航班比原定时间要晚到多久", "compare"},
		{"Only the night shift handles returns.", "The night shift handles only returns.", "scope"}, // only before the verb's subject / after the verb
		{"Only Maria speaks Spanish at the front desk.", "Maria speaks only Spanish at the front desk.", "scope"},
		{"Can I bring my own laptop when I start at the office?", "Do I have to bring my own laptop when I start at the office?", "intent"}, // a yes/no question with a when inside
		{"Can I park where the trucks unload?", "Must I park where the trucks unload?", "intent"},
		{"房贷利率降了0.4%，每月少还多少", "房贷利率降到0.4%，每月少还多少", "roles"},     // a change by a decimal against reaching it
		{"这台洗衣机原价三千，活动直接减了一千吗", "这台洗衣机原价三千，活动直接减到一千吗", "roles"}, // a repeated number (千), by its place
		{"这个月的奖金发了吗", "这个月的奖金发吗", "tense"},                      // 了吗: has it happened
		{"我的护照办好了吗", "我的护照要办好了吗", "tense"},                      // 要…了: about to
		{"我晚上经常不锻炼，会发胖吗", "我晚上不经常锻炼，会发胖吗", "negation"},          // 经常不 / 不经常
		{"I often don't eat breakfast, is that bad?", "I don't often eat breakfast, is that bad?", "negation"},
		{"这个账号我再不登录会被冻结吗", "这个账号我不再登录会被冻结吗", "negation"}, // 再不 / 不再
		{"孩子出生后前六个月要打几针疫苗", "孩子出生后六个月前要打几针疫苗", "tense"},  // the first months / months ago
		{"这些课程都免费吗", "这些课程也免费吗", "scope"},                // all / also
		{"维修师傅几点上门", "维修师傅哪天上门", "intent"},               // the time of day / the day
		{"Which invoices printed this morning?", "Which invoices print this morning?", "tense"},
		{"Is Lake Tahoe freezing?", "Has Lake Tahoe frozen?", "tense"},                              // now, of a name
		{"Is only the north gate open at night?", "Is the north gate open only at night?", "scope"}, // only right after the auxiliary
		{"Can only admins delete channels?", "Can admins delete only channels?", "scope"},
		{"Where can I book cheap rooms and tickets in Rome?", "Where can I book rooms and cheap tickets in Rome?", "order"}, // a graded adjective before a verb-like noun
		{"要是我上个月把车卖了，要交多少税", "我上个月把车卖了，要交多少税", "mood"},                                                                      // a supposition against a fact
		{"If I quit my job in May, can I still get the bonus?", "I quit my job in May, can I still get the bonus?", "mood"},
		{"那座老桥在重建吗", "那座老桥重建了吗", "tense"},                                                            // going on / done
		{"Can I pay for my brother?", "Can I pay my brother?", "inserted"},                           // a preposition before the object
		{"Can you help me reset my password?", "Can you let me reset my password?", "replaced"},      // help against permission
		{"Is there a bus stop on this block?", "Is there a bus stop behind this block?", "replaced"}, // a preposition of its own sense
		{"Is the gym open on Sundays?", "Is the gym open except Sundays?", "replaced"},
		{"Can I complain about my landlord to the council?", "Can I complain to my landlord about the council?", "roles"}, // the topic and the addressee
		{"这个订单可退吗，运费谁承担", "这个订单退了吗，运费谁承担", "mood"},                                                                        // 可 + verb: can
		{"公积金要不要转到新单位，怎么转", "公积金能不能转到新单位，怎么转", "mood"},                                                                    // a how-clause lets the other clauses be compared
		{"我忘了现在的登录密码怎么办", "我忘了原来的登录密码怎么办", "deixis"},
		{"我们部门的同事都会去团建吗", "我们部门的同事都去团建了吗", "mood|tense"},                                                                                                         // 都会 before a verb: will
		{"我刚买了小米Pro手环，能防水吗", "我刚买了小米手环，能防水吗", "names"},                                                                                                           // a Latin name in Chinese text
		{"结构助词“的”怎么用", "结构助词“得”怎么用", "names"},                                                                                                                    // words in quotation marks are what is asked
		{"custom是什么意思", "customs是什么意思", "names"},                                                                                                                 // a Latin word in Chinese text, unstemmed
		{"I was hired by the county in June. When do I get my first paycheck?", "I was hired by the county in June. When did I get my first paycheck?", "tense"}, // after a shared context
		{"My doctor said I should rest after the surgery. What can I eat?", "My doctor said I should rest after the surgery. What must I eat?", "intent"},
		{"我想问一下你们公司的投诉电话是多少，之前打了三次都没人接", "我想问一下你们公司的投保电话是多少，之前打了三次都没人接", "replaced"}, // one character of a word, however long the question
		{"我的社保是在总公司那边交的，离职后怎么转", "我的社保是在老公司那边交的，离职后怎么转", "replaced"},
		{"身份证丢了咋补办", "身份证丢了能补办吗", "intent"},                                    // 咋: how
		{"Do I have to tip the movers?", "Should I tip the movers?", "intent"}, // required against advised
		{"Must I register the bike?", "Should I register the bike?", "intent"},
		{"We sold our old car privately in May. Do I have to declare it on my taxes?", "We sold our old car privately in May. Should I declare it on my taxes?", "intent"}, // after a statement
		{"A few analysts expected the merger to fail.", "Few analysts expected the merger to fail.", "negation"},
		{"Will my account be frozen for 48 hours?", "Will my account be frozen in 48 hours?", "roles"},
		{"Will the courier come by Friday?", "Will the courier come on Friday?", "roles"},
		{"What suppliers have late deliveries this week?", "How many suppliers have late deliveries this week?", "intent"},
		{"只要绑定银行卡就能提现吗", "只有绑定银行卡就能提现吗", "condition"},
		{"How do I get a refund for the broken kettle?", "How do I give a refund for the broken kettle?", "replaced"},
		// Did not (没) against does not (不); a 了 inside the clause
		// against 会; and against or in an open question.
		{"哪些包裹昨天没签收", "哪些包裹昨天不签收", "mood"},
		{"这次促销卖出了多少台", "这次促销会卖出多少台", "mood"},
		{"国庆去杭州和苏州玩五天怎么安排", "国庆去杭州或苏州玩五天怎么安排", "conjunction"},
		// After review round 14: both happened, then can against must;
		// 不要 is a must; 每次 / 这次; a list with 、; 就 / 才; 几点 / 多久;
		// 几次 / 多久; 有多少 / 多少钱.
		{"已经发货了还能取消订单吗", "已经发货了还需要取消订单吗", "mood"},
		{"新办的信用卡不要激活吗", "新办的信用卡不能激活吗", "mood"},
		{"每次提现都要手续费吗", "这次提现要手续费吗", "deixis"},
		{"开户需要身份证、户口本吗", "开户需要身份证或户口本吗", "conjunction"},
		{"还清欠款就可以恢复额度吗", "还清欠款才可以恢复额度吗", "condition"},
		{"快递几点能送到", "快递多长时间能送到", "intent"},
		{"信用卡逾期多久会上征信", "信用卡逾期几次会上征信", "intent"},
		{"这种纸箱一捆有多少", "这种纸箱一捆多少钱", "intent"},
		// After review round 16: 全部, 完全 with a negation; 都需要 is no
		// list of options; 才能 is can; 前一期 is the previous one.
		{"这批货全部不能退吗", "这批货不能全部退吗", "negation"},
		{"办卡需要身份证和户口本都带上吗", "办卡需要身份证或户口本吗", "conjunction"},
		{"什么情况下才能申请退款", "什么情况下需要申请退款", "mood"},
		{"前一期的账单可以分期吗", "这一期的账单可以分期吗", "deixis"},
		// After heldout9: only against also; a past against a modal; both
		// (都) after and is no list of options.
		{"只有东区仓库受到了停电影响", "东区仓库也受到了停电影响", "scope"},
		{"How many pallets did we load for Target this morning?", "How many pallets do we still need to load for Target this morning?", "tense"},
		{"今天把SKU-31002和SKU-31020都补到拣货位", "今天把SKU-31002或SKU-31020补到拣货位", "conjunction"},
		// After review round 17: 多/少, 借/还, 上/下, 查/改, 个/斤 replaced.
		{"我在超市买东西的时候收银员多收了我二十块钱，能找超市要回来吗", "我在超市买东西的时候收银员少收了我二十块钱，能找超市要回来吗", "replaced"},
		{"公司今年上半年的销售额和利润分别是多少，和去年同期相比增长了多少", "公司今年下半年的销售额和利润分别是多少，和去年同期相比增长了多少", "replaced|compare"},
		// After review round 18: which + noun asks the subject or the
		// object; an -ies plural; not many / many … not.
		{"Which company did Google buy in 2014?", "Which company bought Google in 2014?", "roles"},
		{"Not many stores accept checks.", "Many stores do not accept checks.", "negation"},
		// After heldout10: a leading time phrase ends at its time word;
		// has been + participle is a past; quantifiers are units.
		{"In 2015 the airline was bought by the hotel group.", "In 2015 the airline bought the hotel group.", "roles"},
		{"The station has been closed to passengers after the flood.", "The station will be closed to passengers after the flood.", "tense"},
		{"Most of the staff voted for the plan, but a few opposed it.", "A few of the staff voted for the plan, but most opposed it.", "order|roles"},
		// Did not against does not, whatever modal both share.
		{"不吃晚饭会影响睡眠吗", "没吃晚饭会影响睡眠吗", "mood"},
		// Two neighbours exchanged; the place of only; who + modal asks the
		// subject or the object.
		{"Are all salmon fish?", "Are all fish salmon?", "order"},
		{"我的女儿现在在国外读书，学费可以抵扣个税吗", "我的儿女现在在国外读书，学费可以抵扣个税吗", "order"},
		{"Only the supervisor can approve overtime.", "The supervisor can only approve overtime.", "scope"},
		{"Who will the new director replace?", "Who will replace the new director?", "roles"},
		// Chinese personal pronouns are participants.
		{"他上个月借给我五千块钱没写借条，能要回来吗", "我上个月借给他五千块钱没写借条，能要回来吗", "order|roles"},
		{"我们公司欠你们公司的货款什么时候结清", "你们公司欠我们公司的货款什么时候结清", "order|roles"},
		// Whether it happened against whether it can.
		{"我的贷款申请批下来了吗？", "我的贷款申请能批下来吗？", "mood"},
		{"这个订单退款了吗", "这个订单可以退款吗", "mood"},
		{"这张卡可以提前还款吗", "这张卡需要提前还款吗", "mood"},
		{"为什么这个包裹没有签收", "为什么这个包裹不能签收", "mood"},
		{"这个仓库每周都要盘点吗", "这个仓库每周都能盘点吗", "mood"},
		{"开通会员需要身份证吗", "开通会员可以用身份证吗", "mood"},
		{"现在非得把房子卖掉吗", "现在能把房子卖掉吗", "mood"},
		{"这种止痛药得饭前吃吗", "这种止痛药能饭前吃吗", "mood"}, // 得 after a noun: must
		// One word replaced beside a light edit (still, so, an auxiliary for
		// another), which must not hide it.
		{"Can I bring my dog on the ferry to Victoria?", "So can I still bring my cat on the ferry to Victoria?", "replaced"},
		{"does aetna cover hearing aids for seniors?", "will cigna cover hearing aids for seniors?", "replaced"},
		{"Who is the mayor of Chicago?", "Who was the mayor of Chicago?", "tense"}, // an office's holder now or then
		{"Do I have to pay tax on my pension?", "Do I still have to pay tax on my pension if I retire abroad?", "mood"},
		{"Can I use butter with olive oil in this cake?", "Can I use butter instead of olive oil in this cake?", "roles"},
		{"Apache 怎么把 HTTP 重定向到 HTTPS", "Apache 怎么把 HTTPS 重定向到 HTTP", "order|roles"},                                                                // a name in capitals keeps its S
		{"I already ordered the sofa, can I still change the colour?", "I'm about to order the sofa, can I change the colour?", "tense"},           // about to: what is to come
		{"Do I have to wear a helmet on an e-scooter in Paris?", "Is it okay to wear a helmet on an e-scooter in Paris?", "intent"},                // must against may
		{"Can I bring my cat on the ferry to Victoria?", "Is it possible to bring my dog on the ferry to Victoria?", "replaced"},                   // a modal said around
		{"Can I take my bike on the train to Bruges?", "Is it okay to take my electric bike on the train to Bruges?", "inserted"},                  // a modal said around
		{"Did Bombay use to be the capital of India?", "Is Bombay the capital of India?", "tense"},                                                 // did … use to: a past state
		{"Can I return the shoes I bought on Sunday without a receipt?", "On Sunday, can I return the shoes I bought without a receipt?", "order"}, // the time dates the relative clause
		{"Can I freeze cooked rice at all?", "Can I freeze cooked pasta?", "replaced"},                                                             // at all: emphasis
		{"Does my landlord have to return my deposit?", "Has my landlord returned my deposit?", "mood"},                                            // must against did
		{"Is my account verified?", "Can my account be verified?", "mood"},                                                                         // is so against can be
		{"怎么给台湾寄快递", "在台湾怎么给大陆寄快递", "roles"},                                                                                                       // where it goes against where it is done
		{"这次家长会必须爸爸去吗", "这次家长会可以爸爸去吗", "mood"},                                                                                                     // 会 of a meeting before a modal
		{"Will I be charged a fee tomorrow if I cancel?", "Will I be charged a fee if I cancel tomorrow?", "order"},                                // the time moved into the if-clause
		{"Can I still get a refund if I open the box?", "Can I get a refund if I still open the box?", "order"},                                    // still moved into the if-clause
		{"Is it rude not to tip in Japan?", "Is it not rude to tip in Japan?", "negation"},                                                         // the infinitive negated, or the question
		{"Do I have to not eat before the scan?", "Do I not have to eat before the scan?", "negation"},
		{"我为爸妈买的重疾险能抵税吗", "我爸妈买的重疾险能抵税吗", "roles"},                                                                             // 为: bought for them
		{"借给同事的钱一直不还怎么办", "借同事的钱一直不还怎么办", "tense"},                                                                             // lent against borrowed
		{"孩子考上研究生有补贴吗", "孩子考研究生有补贴吗", "tense"},                                                                                 // admitted against sitting the exam
		{"月薪一万包括公积金吗", "月薪一万有公积金吗", "intent"},                                                                                  // included in it against there is one
		{"中耳发炎能坐飞机吗", "内耳发炎能坐飞机吗", "replaced"},                                                                                 // a container's character inside a name
		{"Can I put my brother on my phone plan?", "Can I put my brother's tablet on my phone plan?", "roles"},                 // the owner of another thing
		{"保修期内换屏幕要钱吗", "保修期过了换屏幕要钱吗", "tense"},                                                                                 // within a span against past it
		{"When do I write 'affect' and when 'effect'?", "When do I write 'affect' and when 'effort'?", "names"},                // words in single quotes
		{"哪几个小区能办停车证", "有几个小区能办停车证", "intent"},                                                                                 // which ones against how many
		{"工作日物业能进屋检修吗，业主不在家", "非工作日物业能进屋检修吗，业主不在家", "negation"},                                                                // 非 beside another negation
		{"合同到期了没收到续约通知怎么办", "合同到期了收到续约通知没回复怎么办", "negation"},                                                                   // the negation on another verb
		{"被锁在门外了怎么办", "锁在门外了怎么办", "inserted"},                                                                                  // 被 with no agent: it was done to me
		{"解绑银行卡要手续费吗", "绑银行卡要手续费吗", "inserted"},                                                                                // undoing
		{"Can I take ibuprofen and aspirin for a headache?", "Can I take ibuprofen or aspirin for a headache?", "conjunction"}, // together against either
		{"Did I remember locking the back door?", "Did I remember to lock the back door?", "tense"},                            // done against to be done
		{"Is my daughter being teased at school?", "Is my daughter teasing at school?", "roles"},                               // done to her against done by her
		{"这家超市几点开门", "那家超市是几点开门的", "replaced"},
		{"膝盖做完手术两个月了还肿，正常吗", "膝盖做完手术两个月了又肿，正常吗", "scope"},                                                               // still against again
		{"宝宝这周又咳嗽了，要去医院吗", "宝宝这周咳嗽了，要去医院吗", "tense"},                                                                    // again: it happened before
		{"帮我妈交医保会影响我的报销吗", "我妈交医保会影响我的报销吗", "roles"},                                                                    // who pays for whom
		{"面包过了保质期还能吃吗", "面包在保质期内还能吃吗", "tense"},                                                                         // past a span against within it
		{"自己在家剪头发麻烦吗", "自己在家剪头发可不可以", "intent"},                                                                         // a hassle against allowed
		{"洗衣机怎么这么吵", "洗衣机这么吵怎么办", "intent"},                                                                             // why against what to do                                                                                           // 这 / 那 beside 是…的
		{"这个路口是不是公交站", "这个路口有没有公交站", "replaced"},                                                                        // is it one against is there one
		{"宝宝半夜总是哭醒是怎么回事", "宝宝早上总是会哭醒是怎么回事", "replaced"},                                                                 // a 会 beside the word replaced
		{"你们食堂用的是什么米", "你们食堂用的米怎么样", "intent"},                                                                          // which one against how good
		{"这笔退款月中能到账吗", "这笔退款月内能到账吗", "replaced"},                                                                        // 中 / 内 inside a word
		{"I just varnished the table, when can I sand it?", "I just sanded the table, when can I varnish it?", "order"}, // two verbs that change form and place
		{"亚运会的志愿者能报销路费吗", "亚运会的志愿者必须报销路费吗", "mood"},                                                                     // 会 ending a noun (亚运会) is no will
		{"太阳能路灯阴天能亮吗", "太阳能路灯阴天必须亮吗", "mood"},
		{"坏了的路由器能退吗", "路由器能退吗", "inserted"},                                                  // a relative clause in the perfective
		{"这家店的蛋糕都是无糖的吗", "这家店有无糖的蛋糕吗", "scope"},                                              // all of them against are there any
		{"上楼的人要给下楼的人让路吗", "下楼的人要给上楼的人让路吗", "order"},                                          // Chinese words exchanged around a frame
		{"Can I bring any dog to the patio?", "Can I bring this dog to the patio?", "scope"}, // any against a given one
		{"Is this mushroom edible?", "Is a mushroom edible?", "scope"},                       // this one against any such
		{"Is Ottawa the capital of Canada?", "Is Ottawa a capital of Canada?", "scope"},      // the one against one of them
		{"Is there a dentist open on Sunday?", "Is the dentist open on Sunday?", "scope"},    // whether one exists against a given one
		{"你好，药房周日开门吗", "药房周日开门了吗", "tense"},                                                  // a greeting or thanks switches no check off
		{"我想知道发票开了吗？谢谢", "发票开吗", "tense"},
		{"开奶茶店怎么样", "怎么开奶茶店", "intent"},                                                      // how good against how to
		{"狗狗今天怎么呕吐了", "狗狗今天呕吐了怎么办", "intent"},                                                // why it happened against what to do
		{"入住要带护照还是身份证", "入住要带护照和身份证", "conjunction"},                                         // which of the two against both
		{"我和妹妹的医保能一起交吗", "我妹妹的医保能一起交吗", "roles"},                                             // both of ours against hers
		{"我替同事交的房租能退吗", "我同事交的房租能退吗", "roles"},                                               // paid for him against paid by him
		{"这张卡还能取多少钱", "这张卡能取多少钱", "scope"},                                                   // what is left against the whole
		{"这个月交了多少电费", "这个月交多少电费", "tense"},                                                   // paid against to pay
		{"周末挂得上号吗", "周末挂上号了吗", "mood"},                                                       // can it be done against was it done
		{"What does my employer have to pay for?", "What does my employer pay for?", "mood"}, // must against does, of someone else
		{"Where does your sister want to study?", "Where does your sister study?", "mood"},
		{"How long does it take to get used to contact lenses?", "How long does it take to get contact lenses?", "tense"},
		{"Will my roommate let me use the car?", "Will my roommate use the car?", "roles"}, // who uses it
		{"Can I get sick from raw cookie dough?", "Can I be sick from raw cookie dough?", "tense"},
		{"Should I not sign the lease?", "Shouldn't I sign the lease?", "negation"},
		{"How much do teenagers sleep?", "How many teenagers sleep?", "intent"},
		{"Do both owners need to be present?", "Does an owner need to be present?", "scope"},
		{"Can I give blood if I had malaria?", "Can I give blood if I have malaria?", "tense"},
		{"这台电脑是在哪买的", "这台电脑在哪买", "tense"},                                                                                       // 是…的: a past event
		{"这首歌是谁唱的", "这首歌是唱给谁的", "roles"},                                                                                        // who sings it against for whom
		{"Did my parrot get bitten?", "Did my parrot bite?", "roles"},                                                           // an animal does things, as a person does
		{"没买票的乘客能进站吗", "买票的乘客不能进站吗", "negation"},                                                                                // in the modifier against in the clause
		{"Could nurses wear jeans at work?", "Can nurses wear jeans at work?", "tense"},                                         // could of others: the past, or a possibility
		{"这双鞋是几码的", "这双鞋有几码", "intent"},                                                                                         // which size it is against how many sizes
		{"How much notice does my employer have to give?", "How much notice do I have to give my employer?", "roles"},           // who gives it to whom
		{"保修期可以免费换电池吗", "保修期过了可以免费换电池吗", "tense"},                                                                               // within a span against past it
		{"Will insurance cover the broken window?", "Will insurance cover the window I broke?", "roles"},                        // who broke it
		{"Can I bring any kind of lighter on the plane?", "Can I bring some kinds of lighters on the plane?", "scope"},          // whichever against certain ones
		{"I'm taking antibiotics, can I drink alcohol?", "I took antibiotics, can I drink alcohol?", "tense"},                   // I'm is I am
		{"I was billed the senior rate but I'm not a senior.", "I'm a senior but I wasn't billed the senior rate.", "negation"}, // another part negated
		{"How many trucks are currently parked at gate 3?", "How many trucks can be parked at gate 3?", "mood"},                 // currently is no subject
		{"外孙女能落户北京吗", "孙女能落户北京吗", "inserted"},                                                                                   // a kinship prefix
		{"一张身份证能注册好几个账号吗", "一张身份证能注册几个账号", "intent"},                                                                            // several against how many
		{"签证要等几个星期", "签证要等到星期几", "intent"},                                                                                      // how many weeks against which day
		{"拔牙后不需要禁食吗", "拔牙后不要禁食吗", "mood"},                                                                                       // no need to against must not
		{"办社保卡就需要身份证吗", "办社保卡需要身份证吗", "inserted"},                                                                               // 就: only
		{"快递公司能拒收包裹吗", "快递公司拒收包裹吗", "inserted"},                                                                                 // may it, of someone else
		{"昨天有停电吗", "昨天停电吗", "inserted"},                                                                                         // 有 before a verb: did it happen
		{"Which airlines have you flown with?", "Which airlines do you fly with?", "tense"},                                     // so far against now
		{"Should I let my son quit football?", "Should I get my son to quit football?", "roles"},                                // allow against cause
		{"Can I be a notary for my own documents?", "Can I get a notary for my own documents?", "roles"},                        // be one against get one
		{"What did the dentist find?", "What did the dentist do?", "intent"},
		{"Can my sister help me pay the rent?", "Can my sister pay the rent?", "roles"},                // who pays
		{"Translate 'we have left' into French.", "Translate 'we had left' into French.", "names"},     // a phrase in single quotes
		{"进口的奶粉能用医保买吗", "奶粉能用医保买吗", "inserted"},                                                        // a kind of the thing
		{"Can I move in early?", "Can I move early?", "particle"},                                      // a phrasal verb before an adverb
		{"上一班地铁几点开", "这一班地铁几点开", "deixis"},                                                             // a term's classifier points with 一
		{"和房东吵架了怎么办", "房东吵架了怎么办", "roles"},                                                             // a role marker opening the question
		{"非会员能进场吗", "会员不能进场吗", "negation"},                                                             // the negation on another word
		{"展馆里能帮我拍照吗", "展馆里能拍照吗", "roles"},                                                              // for me against allowed
		{"Does my cat need a microchip?", "Does my cat already have a microchip?", "replaced"},         // already undone: need against have
		{"Is it okay to eat out during a cleanse?", "Is it okay to eat during a cleanse?", "particle"}, // a verb of its own
	} {
		wantRefused(t, tc.a, tc.b, tc.check)
	}
	for _, tc := range [][2]string{
		{"When will the store open?", "When does the store open?"},
		{"Who was the first mayor of Chicago?", "Who is the first mayor of Chicago?"}, // a first holder is one for all time
		{"Can I pay with Visa or Mastercard?", "Can I pay with Visa and Mastercard?"}, // options
		{"Is my parcel being delivered today?", "Is my parcel delivering today?"},     // a thing's verb reads either way
		{"最近的加油站在哪儿", "最近的加油站在哪里"},
		{"支付宝里的钱能提现吗", "支付宝上的钱能提现吗"},                                                            // a container ending its phrase
		{"Will I be charged if I cancel tomorrow?", "If I cancel tomorrow, will I be charged?"}, // the if-clause moved whole
		{"Why was my parcel returned?", "Why did my parcel get returned?"},                      // an auxiliary brings its own words
		{"Has my order shipped?", "Did my order ship?"},
		{"金卡和白金卡比较，哪个年费高？", "比较金卡和白金卡，哪个年费高？"}, // 比较 compares nothing on its own sides
		{"这个订单能退款吗", "这个订单可以退款吗"},
		{"退款怎么还没到账", "退款为什么还没到账"}, // 怎么还没 asks why
		{"花呗怎么又扣款了", "花呗为什么又扣款了"},
		{"信用卡怎么还款", "信用卡如何还款"},       // 怎么还 is how to repay
		{"运费多少", "运费多少钱"},            // a bare how much is a price
		{"你们两个人互相认识吗", "你们两个人相互认识吗"}, // characters that read alike either way
		{"How do I back up photos on my phone?", "How do I back photos up on my phone?"},
		// A passive said actively: the agent's phrase and the rest of its
		// clause change places around the verb.
		{"Was the Arden Library funded by the Delacroix Foundation?", "Did the Delacroix Foundation fund the Arden Library?"},
		{"The museum was designed in 1921 by a team of Dutch architects.", "A team of Dutch architects designed the museum in 1921."},
		{"这个快递是谁签收的", "这个快递是什么人签收的"},              // 什么人 asks who
		{"洗衣机用了一周就坏了，这是怎么回事", "洗衣机用了一周就坏了，这是为什么"}, // 怎么回事 asks why
		{"我的订单怎么还不发货", "我的订单为什么还不发货"},
		{"Can I get a refund if I cancel my flight online?", "If I cancel my flight online, can I get a refund?"}, // an opening condition moves
		{"如果我提前还款，需要付违约金吗", "我提前还款的话，需要付违约金吗"},
		{"Do all customers who have not paid get a reminder email?", "Do customers who have not paid all get a reminder email?"}, // a negation in a relative clause
		{"Who do I call if my new card didn't arrive?", "Who should I call if my new card didn't arrive?"},                       // did in an if-clause
		{"What can I do to improve my credit score quickly?", "What should I do to improve my credit score quickly?"},
		{"Who can I contact about a missing item in my order?", "Who should I contact about a missing item in my order?"},
		{"The company posted a loss of $40 million for the 12 months to March.", "The company posted a loss of $40 million in the 12 months to March."},
		{"Can a friend of mine use my gym membership?", "Can my friend use my gym membership?"},
		{"How do I return an item that arrived damaged?", "How do I return an item which arrived damaged?"},
		{"这个月的账单怎么还没出", "本月的账单怎么还没出"},                                                               // 这个月 is no identification
		{"Is a 45 min layover enough in Frankfurt?", "Is a 45 minute layover enough in Frankfurt?"}, // unit abbreviations
		{"Can I bring a 10kg bag on board?", "Can I bring a 10 kg bag on board?"},
		{"How much Calpol can I give my 2 year old?", "How much Calpol can I give my 2yo?"},
		{"Can I email a 25MB file?", "Can I email a 25 MB file?"},
		{"Why is there a delay on the ring road?", "What caused the delay on the ring road?"}, // there is in a wh-question presupposes
		{"你好，药房周日开门吗", "药房周日开门吗？谢谢"},
		{"Will my landlord let me hang shelves?", "Will my landlord allow me to hang shelves?"},
		{"Why couldn't my payment go through?", "Why didn't my payment go through?"},
		{"你们店是几点关门的", "你们店几点关门"}, // a schedule: 是…的 after no verb
		{"Could someone check my order?", "Can someone check my order?"},
		{"I'm moving to Ohio, do I need a new license?", "I am moving to Ohio, do I need a new license?"},
		{"Can I be a nurse without a degree?", "Can I become a nurse without a degree?"},
		{"Is the pharmacy still open?", "Is the pharmacy open right now?"},
		{"逾期了最好怎么处理", "逾期了应该怎么处理"}, // 最好 as had better
		{"Why don't many people use Linux?", "Why do many people not use Linux?"},
		{"What do I do if my card was stolen?", "What should I do if my card was stolen?"}, // a past in an if-clause
		{"Why didn't I get my refund?", "Why did I not get my refund?"},
		{"Can I pay by card at the market?", "Can I pay with a card at the market?"}, // by / with, in / with, to / with alike
		// Paraphrases the checks of 2026-12-07 let pass.
		{"Was the Arden Library funded by the Delacroix Foundation?", "Did the Delacroix Foundation fund the Arden Library?"},
		{"Which gate is flight BA117 assigned to?", "To which gate is flight BA117 assigned?"},
		{"Do you take Amex and Discover at the checkout?", "Do you take Discover and Amex at the checkout?"},
		{"Which is cheaper, green tea or black tea?", "Which is cheaper, black tea or green tea?"},
		{"As a new customer, can I get free delivery?", "Can I get free delivery as a new customer?"},
		{"Is it possible to change my seat?", "Can I change my seat?"},
		{"Is it necessary to book a table?", "Do I need to book a table?"},
		{"Has invoice 5521 been paid?", "Did you pay invoice 5521?"},
		{"Will I be able to change my order after it ships?", "Can I change my order after it ships?"},
		{"Will you deliver to my office on Sunday?", "Can you deliver to my office on Sunday?"},
		{"Can I just walk in for a haircut?", "Can I walk in for a haircut?"},
		{"Should I wash or dry-clean a silk shirt?", "Should I dry-clean or wash a silk shirt?"},
		{"Can I book a table for 8pm?", "Can I book a table at 8pm?"},
		{"What is the interest rate on a 3 year bond?", "What is the interest rate for a 3 year bond?"},
		{"Why don't many people use Linux?", "Why do many people not use Linux?"},
		{"Was my parcel delivered yesterday?", "Did my parcel deliver yesterday?"},
		{"Can you recommend some good hiking boots?", "Which hiking boots are good?"},
		{"Where is my manager's new office?", "Where is the new office of my manager?"},
		{"怎么开通手机银行的指纹登录？", "手机银行的指纹登录如何开通？"},
		{"被王磊打败的那支球队来自哪里", "王磊打败的那支球队来自哪里"},
		{"他跑得快吗", "他跑得快吗？"},
		{"不好意思，这件外套能换大一号吗", "这件外套能换大一号吗"},
		{"网上有不少人说空腹喝咖啡伤胃，是真的吗", "网上有很多人说空腹喝咖啡伤胃，是真的吗"},
		{"Can I deposit up to $10,000 in cash?", "Can I deposit in cash up to $10,000?"}, // up to is no particle
		{"What is the rate on a 5 year CD?", "What is the rate for a 5 year CD?"},        // a length that names a kind
		{"Do I need to bring my passport?", "Should I bring my passport?"},
		{"Do I have to show ID?", "Must I show ID?"},
		{"这款耳机比那款便宜多少", "这款耳机比那款便宜了多少"},
		{"今年的报名人数比去年多多少", "今年报名的人数比去年多了多少"},                                                                                              // 多多少: more, then how many
		{"Do I only need my passport for the trip?", "Do I need only my passport for the trip?"},                                         // right before the verb: what follows
		{"Why is my card getting declined abroad? I only have one card.", "Why is my card being declined abroad? I only have one card."}, // only in another sentence
		{"Can I change my seat when I check in?", "Am I able to change my seat when I check in?"},
		{"快递员怎么都联系不上", "快递员怎么也联系不上"}, // any way: 都 = 也
		{"信用卡快到期了怎么办", "信用卡快要到期了怎么办"},
		{"How many quizzes are in the course?", "How many quiz are in the course?"},  // a noun after many, no verb
		{"Is the printer in the storeroom?", "Is the printer inside the storeroom?"}, // in = inside
		{"Do all of the rooms have WiFi?", "Do all the rooms have WiFi?"},            // all of the
		{"单箱重量超过二十五公斤要加费吗", "单箱重量超过25kg要加费吗"},                                        // a unit in Latin letters is no name
		{"“内卷”是什么意思", "“内卷”是啥意思"},
		{"We moved to Denver last month. How do I register my car?", "We moved to Denver last month. How can I register my car?"},
		{"为什么我的卡总是刷不了", "为什么我的卡老是刷不了"}, // 总是 = 老是
		{"怎样才能早点睡着", "怎么才能早点睡着"},
		{"信用卡申请没通过是什么原因", "信用卡申请不通过是什么原因"}, // function characters: the grammar compares them
		{"Do I need to renew my visa?", "Do I have to renew my visa?"},
		{"Our flight was cancelled last night. Do I need to rebook it myself?", "Our flight was cancelled last night. Should I rebook it myself?"},
		{"The landlord kept my deposit. What can I do about it?", "The landlord kept my deposit. What should I do about it?"}, // an open question asks alike
		{"Do I get to choose my seat?", "Can I choose my seat?"},
		{"How do I dispute a charge that I don't recognize?", "How do I dispute a charge I don't recognize?"}, // a relative that
		{"快递没发都两个月了怎么办", "都两个月了快递还没发怎么办"},                                                                     // 都 before a number: already
		{"请问周末和节假日发货吗", "请问周末或节假日发货吗"},                                                                        // a topic after a polite opening
		{"会员卡马上到期了怎么续费", "会员卡就要到期了怎么续费"},
		{"银行卡没办法绑定怎么办", "银行卡不能绑定怎么办"},
		{"为什么微信登不上", "为什么微信登录不了"},
		{"想查一下我的快递到哪了", "想看一下我的快递到哪了"},
		{"为什么不给我退款", "为什么没给我退款"}, // 不 = 没 in a why-question
		{"提现会扣手续费吗", "提现要扣手续费吗"}, // will is can and must
		{"我想注销账号，需要怎么操作", "我想注销账号，可以怎么操作"},
		{"余额宝里的钱为什么取不出来", "余额宝里的钱为什么不能取出来"}, // V不出来 = cannot
		{"我的余额宝里还有多少钱", "我的余额宝里的钱还有多少"},
		{"寄一件衣服到北京大概要多少块钱", "寄一件衣服到北京大概要多少钱"},
		{"异地就医的费用怎样才能报销", "异地就医的费用怎样报销"}, // 就医 is no condition
		{"周末和节假日发货吗", "周末或节假日发货吗"},       // a list as the topic
		{"支付宝上的钱怎么转到银行卡", "支付宝里的钱怎么转到银行卡"},
		{"不管哪家快递春节期间都不送货吗", "无论哪家快递春节期间都不送货吗"},
		{"Is my package delivered?", "Was my package delivered?"},                        // is/was is not compared
		{"Which form do I need to fill out?", "Which form should I fill out?"},           // need to = should
		{"Can I pick up my order in the store?", "Can I pick my order up in the store?"}, // in the store: a preposition
		{"How do I fill out this form?", "How do I fill in this form?"},                  // out, not out of
		{"这些包裹都签收了吗", "这些包裹全都签收了吗"},
		{"每天都要盘点吗", "每天要盘点吗"},                                   // 都 after 每 is no quantifier of its own
		{"Where do I see my IBAN?", "Where do I find my IBAN?"}, // looked up by the asker
		{"How do I know if my card is blocked?", "How do I check if my card is blocked?"},
		{"Is there a 14-day return policy?", "Is there a 14 day return policy?"},                                        // a number and its unit, not a name
		{"How many seats does a stadium for 8,000 people need?", "How many seats does a stadium for 8000 people need?"}, // one number, as the facets read it
		{"Can you tell me how to reset my password?", "How do I reset my password?"},                                    // an ask frame
		{"Do you know when the store closes tonight?", "When does the store close tonight?"},
		{"Is there parking here?", "Is there any parking here?"}, // there is: no place
		{"How do I run A/B tests on my shop?", "How do I run A/B testing on my shop?"},
		{"Is my package delivered?", "Was my package delivered?"}, // a participle: is / was carry no tense of their own
		{"What company bought Instagram?", "Which company bought Instagram?"},
		{"How many vacation days do I have left?", "How many vacation days have I got left?"},
		{"会员卡快要到期了，怎么续费", "会员卡马上到期了，怎么续费"}, // adverbs (function words) replaced
		{"这个正常不，需要找售后吗", "这个正常吗，需要找售后吗"},
		{"你们银行周末的营业时间是什么", "你们银行周末的营业时间是什么时候"},     // the question word's own noun
		{"我在外地上学，就诊卡丢了怎样才能补办", "我在外地上学，就诊卡丢了怎么补办"}, // 才 is no 只
		{"你们周末上不上班？我想周六过去办卡", "你们周末上班吗？我想周六过去办卡"},  // A不A asks
		{"我用支付宝上的余额付款可以吗", "我用支付宝里的余额付款可以吗"},       // 上 / 里 as postpositions   // a final 不 asks
		{"我上周五下的订单发货没，大概什么时候到", "我上周五下的订单发货了吗，大概什么时候到"},
		{"每个月一千五百美元的生活费够用吗", "每个月一千五百美金的生活费够用吗"}, // one amount
		{"买了一件两百块的羽绒服，为什么付了两百五", "买了一件两百元的羽绒服，为什么付了两百五"},
		{"我们俩明天去你们酒店住，需要加床吗", "我们两个人明天去你们酒店住，需要加床吗"},
		{"Is there a gas station close to the highway exit?", "Is there a gas station near the highway exit?"},
		{"How long does the warranty on this laptop last?", "How long is the warranty on this laptop?"},
		{"Does the gym stay open on holidays?", "Is the gym open on holidays?"},
		{"这套两居室的房租每个月多少钱", "这套二居室的房租每个月多少钱"}, // 两 and 二 say one number
		{"How do I log out of the app?", "How do I log off of the app?"},
		{"How much is the late fee if I don't pay on time?", "If I don't pay on time how much is the late fee?"},
		{"What is the forecast for the next 7 days?", "What is the forecast in the next 7 days?"},
		{"For what reason was my account suspended?", "Why was my account suspended?"},
		{"退款多久能到账", "退款什么时候能到账"}, // how long = when, not 几点
		{"花呗可以分期吗", "花呗有分期吗"},    // 有 asks no mood
		{"提现有手续费吗", "提现要手续费吗"},
		{"明天能送到吗", "明天会送到吗"},               // will = can
		{"花呗为什么不能用", "花呗为什么用不了"},           // V不了 = cannot
		{"所有商品是不是都支持退货", "是不是所有商品都支持退货"},   // 是不是 asks, it does not negate
		{"你们店的WiFi密码是多少", "你们店的WiFi密码是什么"}, // X是什么 may ask a value
		{"为什么提现失败了", "提现失败的原因是什么"},
		{"怎么不让别人看到我的朋友圈", "如何不让别人看到我的朋友圈"},                                             // 怎么不让 asks how
		{"能用信用卡和花呗付款吗", "能用信用卡或花呗付款吗"},                                                 // options
		{"How do I print out my bank statement?", "How do I print my bank statement?"}, // a particle against none
		{"Who was Albert Einstein?", "Who is Albert Einstein?"},                        // is/was in open questions
		{"为什么还没发货", "为什么还不发货"},                                                         // 还不 asks what 还没 asks
		{"为了省运费能合并发货吗", "能合并发货省运费吗"},
		{"How do I turn off the alarm?", "How do I turn the alarm off?"}, // a particle after its object
		{"How do I turn off updates on Windows?", "How do I turn off updates in Windows?"},
		{"What caused the outage last night?", "Why was there an outage last night?"},
		{"List the open orders for dock 4.", "Which open orders are at dock 4?"}, // 4 is no time
		{"Can you tell me the status of order 5521?", "Can you give me the status of order 5521?"},
		{"我想问一下我的快递到哪了", "我的快递到哪了"}, // the asker's framing
		{"你们店周末营业吗", "周末你们店营业吗"},
		{"下单以后这个订单能改地址吗", "这个订单下单以后能改地址吗"}, // 下单 is to order
		{"Which is cheaper, the bus or the train?", "Which is cheaper, the bus and the train?"},
		{"退款多久能到账", "退款需要多少天到账"}, // how long = how many days
		{"Which person's signature is needed on the form?", "Whose signature is needed on the form?"},
		{"住在三楼的住户需要每个月交物业费和电梯维护费吗", "住在3楼的住户需要每个月交物业费和电梯维护费吗"},                                         // numbers: the facets compare them
		{"Can you tell me where the returns desk is?", "Could you tell me where the returns desk is?"}, // function words
		{"包裹什么时候能到", "包裹什么时候会到"},                                                                       // will = can when asking when
		{"有人知道怎么才能退款吗", "怎么才能退款"},                                                                      // 有 framing an open question
		{"会员卡需要多久才能办好", "会员卡多久能办好"},                                                                    // 需要多久 asks how long
		{"开会的时候能请假吗", "开会期间可以请假吗"},                                                                     // 开会 is no will
		{"我的贷款批下来了吗", "我的贷款已经批下来了吗"},
		{"Is it going to snow in Oslo tomorrow?", "Will it snow in Oslo tomorrow?"},
		{"Was the Arden grant approved by Mila Ortiz?", "Did Mila Ortiz approve the Arden grant?"},
		{"Is Dunmore Freight owned by Halvard Group?", "Does Halvard Group own Dunmore Freight?"},
		{"Where is my manager's office?", "Where is the office of my manager?"},
		{"What's our team's schedule for Monday?", "What is the schedule of our team for Monday?"},
		{"Can I use two codes on one order?", "Can I use 2 codes on 1 order?"},
		{"Do I get half a dozen free samples?", "Do I get six free samples?"},
		{"明天会下雨吗", "明天下雨吗"},
		{"订单发货了吗", "订单已经发货了吗"},
		{"快递快要到了吗", "快递会到吗"},
		{"仓库还剩十二件外套吗", "仓库还剩12件外套吗"},
		{"三千五的预算能买什么相机", "3500的预算能买什么相机"},
		{"张伟被李娜表扬了吗", "李娜表扬了张伟吗"},
		{"快递被弄丢了怎么办", "快递弄丢了怎么办"},
		{"Did Marta sell her bike to Jonas?", "Did Jonas buy Marta's bike?"},
		{"Was I charged twice for the same order?", "Did I get charged twice for the same order?"},
		{"我们公司的年假有几天", "我公司的年假有几天"},
		{"Can I skip the quiz in the 3rd week?", "Can I skip the quiz in the third week?"}, // an ordinal in digits is no name
		{"Where can I find the lost property desk?", "Where is the lost property desk?"},   // one framed subject: the asker's
		{"Do you have the blue kettle in stock?", "Is the blue kettle in stock?"},
		{"Would you recommend the night train?", "Do you recommend the night train?"},             // two yes/no questions
		{"How can I rotate the token?", "How do I rotate the token?"},                             // an open question asks the same
		{"Who signed delivery note 5521 yesterday?", "Yesterday, who signed delivery note 5521?"}, // one time adverbial moves freely
		{"In 2019, what was the top speed of the Halden ferry?", "What was the top speed of the Halden ferry in 2019?"},
		{"仓库在哪儿", "仓库在哪里"},                                                         // erhua
		{"十几个人能住下吗", "十多个人能住下吗"},                                                   // a vague number asks nothing
		{"这个优惠券是什么时候到期的", "这个优惠券什么时候到期"},                                           // 是…的 may ask about the future: no tense
		{"Was she hired by Tomas?", "Did Tomas hire her?"},                         // she and her are one participant of the voice check
		{"How do I reset a porsche key fob?", "How do I reset a Porsche key fob?"}, // a name against the same word
		{"Does he still work here?", "Is he still working here?"},
		{"Which airports does the airline serve?", "Which airports does the airline currently serve?"},                    // a present question asks about now
		{"Are staff who don't have a badge allowed in the lab?", "Are staff who do not have a badge allowed in the lab?"}, // a contraction stands where its auxiliary does
		{"What did you think of the new album?", "What do you think of the new album?"},                                   // an opinion: did and do ask alike
		{"Can a colleague of mine use my parking spot?", "Can my colleague use my parking spot?"},                         // of mine = my
		{"Where did the word robot come from?", "Where does the word robot come from?"},                                   // an origin
		{"孩子最近不太爱吃饭", "孩子最近不怎么爱吃饭"},                                                                                       // 不怎么 is a degree, not a question word
	} {
		wantPassed(t, tc[0], tc[1])
	}
	for run, want := range map[string]string{"两": "2", "十二": "12", "三千五": "3500", "两万八": "28000", "一千零八": "1008", "一二": "", "十": "10", "0012": "12"} {
		if got := hanValue(run); got != want {
			t.Errorf("hanValue(%q) = %q, want %q", run, got, want)
		}
	}
}
