package text_test

import (
	"slices"
	"testing"

	"github.com/sluice-dev/sluice/cache/text"
)

func TestNormalize(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{"How many SKU-10234 are left in zone A?", "how many sku-10234 are left in zone a"},
		{"List SKUs with a return rate above 5%", "list skus with a return rate above 5%"},
		{"   Show  open\tinbound\r\norders   ", "show open inbound orders"},
		{"ＳＫＵ－１０２３４ 在 Ｂ 区的库位是哪个？", "sku-10234在b区的库位是哪个"},
		{"熔断器半开状态是什么意思。。", "熔断器半开状态是什么意思"},
		{"3\u3000号仓今天有多少待上架的托盘", "3号仓今天有多少待上架的托盘"},
		{"zone\u00a0D？", "zone d"},
		{"③号仓 5㎏ ﬁle x²", "3号仓5kg file x^2"}, // a superscript is a power: x² is x^2, not x2
		{"u\u0308ber", "über"},
		{"三号仓", "三号仓"},
		{"wait...!?~ 、", "wait"},
		{"a #1 'b' c-d", "a #1 'b' c-d"},
		{"帮我 check 一下 wave W-1107 的 status", "帮我check一下wave w-1107的status"},
		{"", ""},
	} {
		if got := text.Normalize(tc.in); got != tc.want {
			t.Errorf("Normalize(%q) = %q; want %q", tc.in, got, tc.want)
		}
		if got := text.Normalize(text.Normalize(tc.in)); got != tc.want {
			t.Errorf("Normalize is not idempotent on %q: %q", tc.in, got)
		}
	}
}

func TestFacets(t *testing.T) {
	t.Parallel()
	f := func(q string) []string { return text.Facets(text.Normalize(q)) }
	same := [][2]string{
		{"How many SKU-62140 are left in zone A?", "A 区的 SKU-62140 还剩多少？"},
		{"can my 3 year old swim", "can my 3yo swim"}, // an age, abbreviated or hyphenated
		{"can my 3 year old swim", "can my 3-year-old swim"},
		{"a 2 yr warranty", "a 2 year warranty"},
		{"货到了吗", "货到没到"},                          // A没A asks: no negation
		{"send a 25MB file", "send a 25 mb file"}, // data units: B is a byte, b after a capital a bit
		{"a 100 Mbps plan", "a 100Mbit/s plan"},
		{"冷库-18度", "冷库零下18度"}, // a sign in words before a number in digits
		{"zone A", "A区"},
		{"5 号仓", "五号仓"},
		{"warehouse 3", "3号仓"},
		{"TTL of 20 秒", "TTL of 二十秒"},
		{"TTL of 20 seconds", "TTL of 20s"},
		{"20 seconds", "20 秒"},
		{"inbound orders today", "今天的入库单"},
		{"What is the tuition at Zhejiang University?", "浙江大学学费多少？"},
		{"minimum score in Henan", "河南最低分"},
		{"in May", "5月"},
		{"五月", "5月"},
		{"half a dozen pallets", "6 pallets"},
		{"due before 4 pm", "due before 16:00"},
		{"下午4点", "4 pm"},
		{"did it not ship", "没有发货"},
		{"收货了没有", "收货了吗"},
		{"orders of at least 500 units", "订单至少500件"},
		{"身高一米七五", "身高1.75米"}, // the digits after 米 are its decimals
		{"两块五一斤", "2.5元一斤"},
		{"世界上海拔最高的湖", "世界海拔最高的湖"},                                               // no 上海 across 世界上 + 海拔
		{"the meaning of APR on my card", "the meaning of the rate on my card"}, // an abbreviation is a month only beside a date
		{"due Apr 2027", "due April 2027"},
		{"no more than 3 pallets", "不超过3托"},
		{"salary above 5000", "工资超过5000"},
	}
	for _, p := range same {
		if a, b := f(p[0]), f(p[1]); !slices.Equal(a, b) {
			t.Errorf("facets differ: %q %v vs %q %v", p[0], a, p[1], b)
		}
	}
	differ := [][2]string{
		{"costs 500 annually", "costs 500 per month"}, // one period against another
		{"can my 3yo swim", "can my 4-year-old swim"},
		{"货到了吗", "货没到"},
		{"下载速度10MB/s", "下载速度10Mb/s"},
		{"is 5GB enough", "is 5Gb enough"},
		{"is the post office close", "is the post office closed"}, // near against shut
		{"10⁵是多少", "105是多少"},                                      // a superscript is a power
		{"白天5度，晚上零下5度", "白天零下5度，晚上5度"},
		{"被狗咬了没出血", "被狗咬出血了"}, // 了没 asks only at the end: here it says not
		{"SKU-10234", "SKU-10243"},
		{"zone A", "zone B"},
		{"zone O", "zone 0"},
		{"in 2023", "in 23"},
		{"2023年", "23年"},
		{"in 2023", "in 2024"},
		{"inbound", "outbound"},
		{"入库单 7731", "出库单 7731"},
		{"minimum", "maximum"},
		{"最小", "最大"},
		{"enable AOF", "disable AOF"},
		{"开启 AOF", "关闭 AOF"},
		{"add 40 units", "remove 40 units"},
		{"before 3 pm", "after 3 pm"},
		{"packed", "not packed"},
		{"已经拣货完成", "还没有拣货完成"},
		{"需要面试", "不需要面试"},
		{"never", "always"},
		{"today", "yesterday"},
		{"今天", "昨天"},
		{"上午", "下午"},
		{"above 5%", "above 5"},
		{"at least 5000", "more than 5000"}, // 5000 itself is at least 5000
		{"一米七的女生", "一米七五的女生"},
		{"一米七", "一米零七"},
		{"at most 20 minutes", "less than 20 minutes"},
		{"5000以上", "超过5000"},
		{"30 seconds", "30 milliseconds"},
		{"多少箱", "多少件"},
		{"pallets", "cases"},
		{"第二波次", "波次 2"},
		{"八号的出库单", "8 号出库单"},
		{"at four", "16:00"},
		{"from zone A to zone B", "from zone B to zone A"},
		{"山东", "山西"},
		{"Henan", "Hebei"},
		{"理科", "文科"},
		{"undergraduate", "graduate"},
		{"colleges", "majors"},
		{"picker", "packer"},
		{"HTTP 502", "HTTP 504"},
		{"retry 3 times", "retry 5 times"},
		{"May", "March"},
	}
	for _, p := range differ {
		if a, b := f(p[0]), f(p[1]); slices.Equal(a, b) {
			t.Errorf("facets equal: %q %v vs %q %v", p[0], a, p[1], b)
		}
	}
	if got := f("How may I help?"); slices.Contains(got, "month:5") {
		t.Errorf("modal 'may' read as a month: %v", got)
	}
	if got := f("no facets here"); got == nil {
		t.Error("Facets returned nil; want an empty slice")
	}
	if got, want := f("Cancel outbound order OB-40017"), []string{"flow:out", "ob-40017"}; !slices.Equal(got, want) {
		t.Errorf("facets %v; want %v", got, want)
	}
}
