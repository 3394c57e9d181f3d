package cache

import (
	"context"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/cache/text"
)

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
		check, why := verifyPair(signature(tc.b), signature(tc.a))
		if !strings.Contains("|"+tc.check+"|", "|"+check+"|") || check == "" {
			t.Errorf("%q / %q: check %q (%s), want %q", tc.a, tc.b, check, why, tc.check)
		}
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
		if check, why := verifyPair(signature(tc[1]), signature(tc[0])); check != "" {
			t.Errorf("%q / %q: refused by %s: %s", tc[0], tc[1], check, why)
		}
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
		check, why := verifyPair(signature(tc.b), signature(tc.a))
		if !strings.Contains("|"+tc.check+"|", "|"+check+"|") || check == "" {
			t.Errorf("%.40q / %.40q: check %q (%s), want %q", tc.a, tc.b, check, why, tc.check)
		}
	}
	for _, tc := range [][2]string{
		{"difference between tcp and udp", "what is the difference between udp and tcp"},
		{"从杭州寄到成都要几天", "从杭州寄到成都需要几天"},
	} {
		if check, why := verifyPair(signature(tc[1]), signature(tc[0])); check != "" {
			t.Errorf("%q / %q: refused by %s: %s", tc[0], tc[1], check, why)
		}
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
