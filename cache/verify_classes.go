package cache

// The closed classes the verification compares beside names, roles and
// order (verify.go): Chinese moods (hanMood), the modals of English
// questions, phrasal-verb particles, quantifiers and the negation's place
// before or after them, deixis, and/or, only/also, the kinds of question
// (qtypesFit), and the one-word-replaced check. signature reads them
// (scopeWords); verifyPair compares them.

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/cache/text"
)

// replacedWord returns the one content unit of q that s replaces at the
// same place (or at each place it stands), every other token equal, when
// the two do not read as one word: the same light stem, or the same
// non-empty content for the builtin embedder (a concept of the lexicon).
// Function words (can / could, 的, 是) are not content.
func replacedWord(q, s vsig) (a, b string, ok bool) {
	at := replacedAt(q, s)
	if at < 0 {
		return "", "", false
	}
	x, y := &q.seq[at], &s.seq[at]
	// Two prepositions of different kinds before the same words ("pay by
	// check" / "pay for a check", "a taxi to / at the airport"); in, on and
	// at alike, and to, into and onto.
	if px, py := roleMarkers[x.low], roleMarkers[y.low]; px != "" && py != "" && px != py && x.low[0] < utf8.RuneSelf && y.low[0] < utf8.RuneSelf && px != "and" && py != "and" &&
		!(timeAfter(q, at) && timePreposition[x.low] && timePreposition[y.low]) &&
		!oneOf2(x.low, y.low, "by", "with") && !oneOf2(x.low, y.low, "in", "with") && !oneOf2(x.low, y.low, "to", "with") && // pay by / with card, in / with cash, speak to / with
		(verbBefore(q, at) || directional[px] || directional[py]) { // after a noun, "rate on / for" say alike; "taxi to / at" do not
		return x.low, y.low, true
	}
	// A Chinese role marker for another role, the rest in place (我家的猫把
	// 邻居家的狗抓伤了 / 我家的猫被邻居家的狗抓伤了): who does it to whom.
	if px, py := roleMarkers[x.low], roleMarkers[y.low]; px != py && directional[px] && directional[py] && isHanTok(x.low) && isHanTok(y.low) && !inHanWord(q, at) && !inHanWord(s, at) {
		return x.low, y.low, true
	}
	// 有 (there is, has) against 是 (is): 这里有停车场吗 / 这里是停车场吗. A place
	// character against another inside a word: 上游 / 中游, 上旬 / 中旬, 楼上 /
	// 楼里 (as a postposition, 支付宝上 / 支付宝里 say alike).
	if isHanTok(x.low) && isHanTok(y.low) && (oneOf2(x.low, y.low, "有", "是") && !inHanWord(q, at) && !inHanWord(s, at) ||
		oneOf(placeChars, x.low) && oneOf(placeChars, y.low) && (inHanWord(q, at) || inHanWord(s, at))) {
		return x.low, y.low, true
	}
	// need, have and want as main verbs ("Does this pallet need / have a
	// label?"): a requirement, a state, a wish; "need to" = "have to".
	if cx, cy := stanceVerbs[x.low], stanceVerbs[y.low]; cx != 0 && cy != 0 && cx != cy && (at+1 >= len(q.seq) || q.seq[at+1].low != "to") {
		return x.low, y.low, true
	}
	numeral := func(w string) bool { return strings.ContainsAny(w, "0123456789") || oneOf(hanNumerals, w) }
	// A numeral the facets did not read (高一 / 高三, 一审 / 二审, 两打 /
	// 三打: no unit they know follows) is compared by its value: 两 / 二
	// say one number, 一 / 三 two.
	if vx, vy := numeralValue(x.low), numeralValue(y.low); vx >= 0 && vy >= 0 && vx != vy {
		return x.low, y.low, true
	}
	// One preposition for another, one of them of a definite sense (on /
	// behind schedule, open on / except Mondays, in / since 2024); the
	// light ones (in, on, at, for, to, with, by …) trade places freely
	// (the rate on / for my account, sales in / for 2023).
	if px, py := prepositions[x.low], prepositions[y.low]; px != "" && py != "" && px != py && (!lightPrepositions[x.low] || !lightPrepositions[y.low]) {
		return x.low, y.low, true
	}
	// Let (leave) against a request's verb (help, show): "Can you help me
	// cancel …" asks for help, "Can you let me cancel …" for permission.
	if (x.low == "let") != (y.low == "let") && imperatives[x.low] && imperatives[y.low] {
		return x.low, y.low, true
	}
	// A request's verb (tell, show, get) is a content word after a
	// subject or to: "How do I get a refund?" / "How do I give a refund?".
	content := func(u *vunit) bool {
		return u.unit || oneOf(hanDirectional, u.low) && !(u.low == "多" && at > 0 && numeral(q.seq[at-1].low)) || // not 十多 / 十余 (the facets' approx)
			at > 0 && imperatives[u.low] && subjectOrTo[q.seq[at-1].low] &&
				(at+1 >= len(q.seq) || q.seq[at+1].low != "me" && q.seq[at+1].low != "us") // not "can you tell me"
	}
	if !content(x) || !content(y) || x.low == "" || y.low == "" || stemLight(x.low) == stemLight(y.low) || numeral(x.low) || numeral(y.low) ||
		lookVerbs[x.low]&lookVerbs[y.low] != 0 && lookUp(q, s, at) || // see / check my balance, find / get my statements
		strongParticles[x.low] || strongParticles[y.low] || // log out / log off: the particles are compared apart
		hanAlike(x.low, y.low) && !(containers(x.low, y.low) && (inHanWord(q, at) || inHanWord(s, at) || at+1 < len(q.seq) && !containerEnds(q.seq[at+1].low)) &&
			!(at > 0 && hanAlikeWords[q.seq[at-1].low+x.low] != "" && hanAlikeWords[q.seq[at-1].low+x.low] == hanAlikeWords[s.seq[at-1].low+y.low])) {
		return "", "", false
	}
	nx, ny := text.Normalize(x.low), text.Normalize(y.low)
	if cx, cy := text.Content(nx), text.Content(ny); len(cx) > 0 && slices.Equal(cx, cy) && !(len(cx) == 1 && strings.HasPrefix(cx[0], "q:")) {
		return "", "", false // one concept (left / remaining); but a question form's words ask apart when one replaces the other (safe / okay, how much / how many)
	}
	if fx, fy := text.Facets(nx), text.Facets(ny); len(fx) > 0 && slices.Equal(fx, fy) {
		return "", "", false // 3rd / third, 12 / 十二: the facets compare them
	}
	if isHanTok(x.low) && unitOfNumber(q, s, at) {
		return "", "", false // 一千美元 / 一千美金, 两百元 / 两百块: one amount
	}
	return x.low, y.low, true
}

// unitOfNumber reports a Han character at i, one or two after a numeral,
// that the facets read as the unit of that number: the two questions have
// equal facets and equal content, so the characters that differ went into
// the number's facet (美元 / 美金, 元 / 块).
func unitOfNumber(q, s vsig, i int) bool {
	near := false
	for k := max(i-2, 0); k < i; k++ {
		if numeralValue(q.seq[k].low) >= 0 || oneOf("十百千万亿", q.seq[k].low) {
			near = true
		}
	}
	if !near {
		return false
	}
	nq, ns := text.Normalize(q.text), text.Normalize(s.text)
	fq := text.Facets(nq)
	return len(fq) > 0 && slices.Equal(fq, text.Facets(ns)) && slices.Equal(text.Content(nq), text.Content(ns))
}

// replacedAt returns where s replaces one token of q (the same token at
// each place it stands: 大一…大一 / 大四…大四), every other token equal, or
// -1.
func replacedAt(q, s vsig) int {
	if len(q.seq) != len(s.seq) {
		return -1
	}
	at := -1
	for i := range q.seq {
		x, y := &q.seq[i], &s.seq[i]
		if x.low == y.low || x.word == y.word {
			continue
		}
		if at >= 0 && (x.low != q.seq[at].low || y.low != s.seq[at].low) {
			return -1 // another word replaced as well
		}
		if at < 0 {
			at = i
		}
	}
	return at
}

// formReplaced returns the two forms of one English stem that q and s say
// at one place, all else equal but fillers (fq and fs are q and s without
// them), when they say different things (participleApart).
func formReplaced(q, s, fq, fs vsig) (string, string, bool) {
	at := replacedAt(fq, fs)
	if at < 0 || !fq.seq[at].unit || !fs.seq[at].unit {
		return "", "", false
	}
	x, y := &fq.seq[at], &fs.seq[at]
	if !participleApart(q, q.index[x.text], s, s.index[y.text]) {
		return "", "", false
	}
	return x.low, y.low, true
}

// participleApart reports two forms of one English stem that say
// different things, the one at i in q and the one at j in s: -ing against
// -ed (boring / bored: what bores against who is bored), or a noun in
// -ing against the word without it (the training / the train, which
// setting / which set, does painting cost / does paint cost, have parking
// / have a park: the -ing noun names a thing of its own). An -ing after a
// form of be, a subject pronoun or to is the verb's own form, which the
// tense checks read.
func participleApart(q vsig, i int, s vsig, j int) bool {
	x, y := q.seq[i].low, s.seq[j].low
	if strings.HasSuffix(y, "ing") {
		q, i, s, j, x, y = s, j, q, i, y, x
	}
	if !strings.HasSuffix(x, "ing") || strings.HasSuffix(y, "ing") {
		return false
	}
	nx, ny := text.Normalize(x), text.Normalize(y)
	cx, cy := text.Content(nx), text.Content(ny)
	fx, fy := text.Facets(nx), text.Facets(ny)
	if !(len(cx) == 1 && slices.Equal(cx, cy) || len(fx) > 0 && slices.Equal(fx, fy) || stemLight(x) == stemLight(y)) {
		return false // not one stem
	}
	if strings.HasSuffix(y, "ed") {
		return true
	}
	if strings.HasSuffix(y, "s") && !strings.HasSuffix(y, "ss") {
		return false // A/B tests / A/B testing: a plural names the things the -ing noun does
	}
	determined := func(v vsig, k int) bool {
		det := func(k int) bool {
			w := v.seq[k].low
			return (objectStart[w] || v.seq[k].poss || w == "which" || w == "what" || w == "any" || w == "each" || w == "every") && w != "it" && w != "them"
		}
		return k > 0 && det(k-1) || k > 1 && v.seq[k-1].unit && det(k-2) // the setting, the best seasoning
	}
	if determined(q, i) || determined(s, j) {
		return true
	}
	return i > 0 && !verbFormBefore[q.seq[i-1].low] // does painting cost; not is painting, we painting, to painting
}

// verbFormBefore are the words an -ing verb form follows: be, a subject
// pronoun, to.
var verbFormBefore = setOf("am is are was were be been being 's 're i you he she we they it to keep keeps kept stop stops start starts")

// inHanWord reports a Han character at i that is part of a word of the
// segmentation (把握, 被子), not a word of its own.
func inHanWord(v vsig, i int) bool {
	seg := v.seq[i].seg
	return seg != 0 && (i > 0 && v.seq[i-1].seg == seg || i+1 < len(v.seq) && v.seq[i+1].seg == seg)
}

// numeralValue returns the value of a one-character Chinese numeral below
// ten or a digit run ("3", "三", "两" = 2), or -1.
func numeralValue(w string) int {
	if isDigits(w) && len(w) <= 9 {
		n := 0
		for i := 0; i < len(w); i++ {
			n = n*10 + int(w[i]-'0')
		}
		return n
	}
	r, size := utf8.DecodeRuneInString(w)
	if size != len(w) || size < 2 {
		return -1
	}
	switch r {
	case '两':
		return 2
	case '〇':
		return 0
	}
	if i := strings.IndexRune("零一二三四五六七八九", r); i >= 0 {
		return i / len("零")
	}
	return -1
}

// modifierMoved returns a unit that modifies the possessor in one question
// and the thing possessed in the other: "the former prime minister's
// adviser" / "the prime minister's former adviser", 前总理的顾问 /
// 总理的前顾问. The possessive (X's, or 的 after X) is in both; the unit
// stands in the possessor's phrase (before it, with at most two content
// units between) on one side and opens the possessed thing's phrase
// (right after the possessive) on the other.
func modifierMoved(q, s vsig) (string, bool) {
	// anchors maps a possessive to its position: "minister's", or "理的"
	// for 的 after 理.
	anchors := func(v vsig) map[string]int {
		m := map[string]int{}
		for i := range v.seq {
			switch u := &v.seq[i]; {
			case u.poss && !u.rep:
				m[u.text] = i
			case u.low == "的" && i > 0 && v.seq[i-1].unit:
				k := v.seq[i-1].text + "的"
				if _, dup := m[k]; dup {
					m[k] = -1 // twice: not one place
				} else {
					m[k] = i
				}
			}
		}
		return m
	}
	// side: -1 in the possessor's phrase, +1 in the possessed one's, 0
	// neither.
	side := func(v vsig, at, x int) int {
		lo, hi, dir := x, at, -1
		if x > at {
			lo, hi, dir = at, x, 1
		}
		if dir == 1 && x != at+1 || dir == -1 && at-x > 3 {
			return 0 // right after the possessive; at most two units before the possessor's last
		}
		for k := lo + 1; k < hi; k++ {
			if !v.seq[k].unit || v.seq[k].clause != v.seq[x].clause {
				return 0
			}
		}
		return dir // at is a possessive (anchors): past X's or X的, or before them
	}
	qa, sa := anchors(q), anchors(s)
	for k, qi := range qa {
		si, ok := sa[k]
		if !ok || qi < 0 || si < 0 {
			continue
		}
		for x := range q.seq {
			u := &q.seq[x]
			y, ok := s.index[u.text]
			if !u.unit || u.rep || !ok || x == qi || y == si || u.poss || x == qi-1 && u.low != "" && k == u.text+"的" {
				continue
			}
			if a, b := side(q, qi, x), side(s, si, y); a != 0 && b != 0 && a != b {
				return u.word, true
			}
		}
	}
	return "", false
}

// withoutFillers returns s with its fillers left out, for the checks that
// align two questions token by token: the particles 呢 啊 吧 呀 嘛 哦, 请问,
// a closing 谢谢 or thanks, please, the articles, and the clause breaks
// they leave at the end ("…还是直接调整库存呢" aligns with "…还是直接调整库存");
// and with 可以 written 能 (可不可以 = 能不能), two spellings of one modal, so
// that a word replaced elsewhere is still one word replaced (房东能提前收回吗 /
// 中介可以提前收回吗).
func withoutFillers(s vsig) vsig {
	if fillerFree(s) == len(s.seq) && !slices.ContainsFunc(s.seq, func(u vunit) bool { return u.low == "可" }) {
		return s // nothing to leave out or respell (most questions)
	}
	seq := make([]vunit, 0, len(s.seq))
	for i := 0; i < len(s.seq); i++ {
		if n := fillerAt(s.seq, i); n > 0 {
			i += n - 1
			continue
		}
		if n := canModalAt(s.seq, i); n > 0 {
			u := s.seq[i]
			u.text, u.low = "能", "能"
			seq = append(seq, u)
			i += n - 1
			continue
		}
		seq = append(seq, s.seq[i])
	}
	for len(seq) > 0 && seq[len(seq)-1].text[0] == '|' {
		seq = seq[:len(seq)-1]
	}
	s.seq = seq
	return s
}

// canModalAt reports 可以 at i (2 tokens), or the first 可 of 可不可以 (1),
// which withoutFillers writes 能; 0 otherwise.
func canModalAt(seq []vunit, i int) int {
	if seq[i].low != "可" || i+1 >= len(seq) {
		return 0
	}
	switch {
	case seq[i+1].low == "以":
		return 2
	case seq[i+1].low == "不" && i+2 < len(seq) && seq[i+2].low == "可":
		return 1
	}
	return 0
}

// fillerFree counts the tokens withoutFillers keeps, without copying.
func fillerFree(s vsig) int {
	n, trail := 0, 0
	for i := 0; i < len(s.seq); i++ {
		if k := fillerAt(s.seq, i); k > 0 {
			i += k - 1
			continue
		}
		if k := canModalAt(s.seq, i); k > 1 {
			i += k - 1 // one token kept for two
		}
		n++
		if s.seq[i].text[0] == '|' {
			trail++
		} else {
			trail = 0
		}
	}
	return n - trail // withoutFillers drops the clause breaks left at the end
}

// fillerAt returns how many tokens from i are a filler (0 for none): a
// particle, please, thanks or a determiner (1), 请问, 谢谢 or thank you (2).
// A determiner is one for the alignment only: the facets compare my,
// your and their (person), all and every.
func fillerAt(seq []vunit, i int) int {
	w, next := seq[i].low, ""
	if i+1 < len(seq) {
		next = seq[i+1].low
	}
	switch {
	case oneOf("呢啊吧呀嘛哦", w), w == "please", w == "thanks", determiner(w):
		return 1
	case i == 0 && (w == "hi" || w == "hey" || w == "hello") && i+1 < len(seq) && seq[i+1].text[0] == '|':
		return 2 // "Hey, is …": a greeting and its comma opening the question
	case seq[i].text[0] == '|' && i > 0 && i+1 < len(seq) && seq[i-1].low != "" && seq[i-1].low[0] < utf8.RuneSelf:
		return 1 // a clause break inside an English question: commas come and go ("a beginner, who can barely run, …")
	case w == "请" && next == "问", w == "谢" && next == "谢", w == "thank" && next == "you":
		return 2
	}
	return 0
}

// beAuxiliary reports a be-form at i that is an auxiliary: a past
// participle ("Is my package delivered?", "Was it shipped by Acme?") or an
// -ing form of a verb ("Is it shipping?") follows it in its clause, whose
// tense the other checks read.
func (s *vsig) beAuxiliary(i int) bool {
	for j := i + 1; j < len(s.seq) && s.seq[j].clause == s.seq[i].clause; j++ {
		if s.seq[j].named {
			continue // "Was the SAT required?": a name, not sat
		}
		if w := s.seq[j].low; participle(w) || pastForm(w) || ingForm(w) {
			// A participle before as says what the subject is, as a noun
			// would: "Is Pluto classified as a planet?" / "Was Pluto
			// classified as a planet?" (its status now, or then); so does
			// the participle of a verb of state ("Was the SAT required?",
			// text.IsStative), where the participle of an event ("Was my
			// order shipped?") asks what "Is my order shipped?" asks.
			if v, _ := text.VerbTense(w); v != "" && text.IsStative(v) && !ingForm(w) {
				return false
			}
			return j+1 >= len(s.seq) || s.seq[j+1].low != "as"
		}
	}
	return false
}

// existentialThere follow the there of "there is", which points nowhere.
var existentialThere = setOf("is are was were 's be been will would may might must should can could seems seem used")

// determiner reports a word that stands before a noun phrase: an article,
// a demonstrative, a possessive pronoun (text.IsDeterminer) or any.
func determiner(w string) bool { return text.IsDeterminer(w) || w == "any" }

// insertedSpan returns the longer of q and s and where n tokens stand in
// it that the other lacks, every other token equal; -1 when the two
// differ otherwise.
func insertedSpan(q, s vsig, n int) (vsig, int) {
	if len(s.seq) < len(q.seq) {
		q, s = s, q
	}
	if len(s.seq) != len(q.seq)+n {
		return s, -1
	}
	i := 0
	for i < len(q.seq) && q.seq[i].low == s.seq[i].low {
		i++
	}
	for k := i; k < len(q.seq); k++ {
		if q.seq[k].low != s.seq[k+n].low {
			return s, -1
		}
	}
	return s, i
}

// insertedPhrase returns an English phrase of n words (2 or 3) that s
// has and q lacks (or the reverse), all else equal without fillers, when
// it is a phrase of its own opened by a preposition: "twice in a row",
// "two tablets at a time" (the fillers, articles among them, are out);
// not "at all", "of mine", "so far", "going to be".
func insertedPhrase(q, s vsig, n int) (string, bool) {
	s, i := insertedSpan(q, s, n)
	if i < 0 {
		return "", false
	}
	content := false
	words := make([]string, 0, n)
	for k, u := range s.seq[i : i+n] {
		if u.low == "" || u.low[0] >= utf8.RuneSelf || u.text[0] == '|' {
			return "", false
		}
		words = append(words, u.low)
		if k > 0 && u.unit && !u.named && roleMarkers[words[0]] != "" && !quantifiers[u.low] && !strings.HasPrefix(u.text, "p:") && possessivePronouns[u.low] == "" && persons[u.low] == "" && !ownPronouns[u.low] && !presentAdverbs[u.low] && !sentenceAdverbials[u.low] {
			content = true // a phrase of its own opened by a preposition: in a row, at a time, at once
		}
	}
	return strings.Join(words, " "), content
}

// hanRelativeInserted returns the n Chinese characters (3 or more) that s
// has and q lacks (or the reverse), all else equal without fillers, when
// they are a relative clause in the perfective before a noun: a run that
// ends in 的 right before another character and holds a 了 after its
// first (得了病的番茄秧 / 番茄秧, 用了三年的电池 / 电池: the sick plants, the old
// battery, not all of them).
func hanRelativeInserted(q, s vsig, n int) (string, bool) {
	s, i := insertedSpan(q, s, n)
	if i < 0 || n < 3 || i+n >= len(s.seq) || s.seq[i+n-1].low != "的" || !isHanTok(s.seq[i+n].low) {
		return "", false
	}
	var run strings.Builder
	perfective := false
	for k, u := range s.seq[i : i+n] {
		if !isHanTok(u.low) {
			return "", false
		}
		perfective = perfective || k > 0 && u.low == "了"
		run.WriteString(u.low)
	}
	return run.String(), perfective
}

// sentenceAdverbials end the phrases that say how the question is put,
// not what it asks: in general, in particular, in fact, in short, in
// total, in advance.
var sentenceAdverbials = setOf("general particular fact short total advance")

// ownPronouns are the possessive pronouns that stand alone (a friend of
// mine = my friend).
var ownPronouns = setOf("mine yours hers ours theirs")

// insertedWord returns the one English content word s has and q lacks
// (or the reverse), all else equal (q and s without their fillers): "the
// alleged fraud", "the acting director", "tried to enter", "nearly won".
func insertedWord(q, s vsig) (string, bool) {
	s, i := insertedSpan(q, s, 1)
	if i < 0 {
		return "", false
	}
	u := &s.seq[i]
	if isHanTok(u.low) {
		if s.negationAt(i) {
			return u.low, true // 都不支持无理由退货 / 都支持无理由退货: a negation beside another (无) that the facets count as one
		}
		// A prefix that makes another noun of the one it opens (副校长 /
		// 校长, 前总裁 / 总裁): deputy, former, acting, prospective, chief,
		// fake, sub-; not inside a word (以前, 提前).
		if oneOf(nounPrefixes, u.low) && i+1 < len(s.seq) && isHanTok(s.seq[i+1].low) && (i == 0 || !text.HanWord(s.seq[i-1].low+u.low)) {
			return u.low, true
		}
		// A character of a closed class that turns what the verb or noun
		// says (verbModifiers): the passive 被, an undoing prefix (解绑 / 绑,
		// 退订 / 订), a result that went wrong (看错 / 看, 漏交 / 交), a manner
		// (偷拍 / 拍, 多扣 / 扣), kinship not by blood (干女儿 / 女儿).
		if oneOf(verbModifiers, u.low) && (i+1 < len(s.seq) && isHanTok(s.seq[i+1].low) || i > 0 && isHanTok(s.seq[i-1].low)) &&
			(u.low != "被" || i+1 < len(s.seq) && text.HanVerbal(s.seq[i+1].low) && (i == 0 || s.seq[i-1].text[0] == '|' || persons[s.seq[i-1].low] != "")) && // 被 with no agent after it, done to a person (被追尾了 / 追尾了); 被邻居的狗咬伤 = 邻居的狗咬伤, 快递被弄丢了 = 快递弄丢了
			(i == 0 || !text.HanWord(s.seq[i-1].low+u.low)) && (i+1 >= len(s.seq) || !text.HanWord(u.low+s.seq[i+1].low) || oneOf("解退", u.low)) {
			return u.low, true
		}
		return "", false
	}
	if next := ""; roleMarkers[u.low] != "" && u.low[0] < utf8.RuneSelf && u.low != "of" && !strongParticles[u.low] && !weakParticles[u.low] && i > 0 && i+1 < len(s.seq) { // not of: all of the buses = all the buses
		next = s.seq[i+1].low
		if objectStart[next] || persons[next] != "" || s.seq[i+1].unit {
			return u.low, true // "Can I pay for my friend?" / "Can I pay my friend?": another role
		}
	}
	if !u.unit || u.named || u.low == "" || u.low[0] >= utf8.RuneSelf || persons[u.low] != "" || strings.ContainsAny(u.low, "0123456789") ||
		strongParticles[u.low] || weakParticles[u.low] { // print out / print: a particle often only completes the verb
		return "", false
	}
	if presentAdverbs[u.low] && !s.past && !s.future && !s.pastVerb() {
		return "", false // "How many moons does Jupiter currently have?": a present question asks about now already
	}
	return u.low, true
}

// presentAdverbs say "at present", which a question in the present tense
// asks without them.
var presentAdverbs = setOf("currently presently now")

// hanWordInserted returns the two-character Chinese word s has and q
// lacks (or the reverse), all else equal without fillers (全额报销 / 报销,
// 轻微损坏 / 损坏, 提前退租 / 退租): a word of the segmentation's table, not
// a function word or a modal (一直, 马上, 可以 add nothing the checks do
// not read). q and s are without their fillers.
func hanWordInserted(q, s vsig) (string, bool) {
	s, i := insertedSpan(q, s, 2)
	if i < 0 {
		return "", false
	}
	a, b := s.seq[i].low, s.seq[i+1].low
	w := a + b
	if !isHanTok(a) || !isHanTok(b) || s.seq[i].seg == 0 || s.seq[i].seg != s.seq[i+1].seg || inHanWordWith(s, i-1, i) || inHanWordWith(s, i+1, i+2) ||
		i > 0 && s.seq[i-1].low == "么" || // 营业时间是什么 / 是什么时候: the question word's own noun
		text.HanStop(w) || // 一共, 现在: the lexicon's stop words
		!text.HanWord(w) || text.HanFunction(w) || hanMood(a, "", "", b, "")|hanMood(b, "", a, "", "") != 0 {
		return "", false
	}
	return w, true
}

// inHanWordWith reports tokens i and j of v in one word of the
// segmentation.
func inHanWordWith(v vsig, i, j int) bool {
	return i >= 0 && j < len(v.seq) && v.seq[i].seg != 0 && v.seq[i].seg == v.seq[j].seg
}

// hanWordReplaced returns a two-character Chinese word of q that s replaces
// by another, both of its characters changed, at the same place, every
// other token equal (支持 / 反对, 丈夫 / 妻子, 盈利 / 亏损): both words of the
// segmentation's table, neither a closed-class word (HanFunction: 无论 /
// 不管, 马上 / 快要 say alike; numerals, time and place words are compared
// by the facets) nor a modal (the moods compare those).
func hanWordReplaced(q, s vsig) (string, string, bool) {
	if len(q.seq) != len(s.seq) {
		return "", "", false
	}
	at := -1 // the first of the two places that differ, next to each other
	for i := range q.seq {
		if q.seq[i].low == s.seq[i].low {
			continue
		}
		if at >= 0 && i != at+1 {
			return "", "", false
		}
		if at < 0 {
			at = i
		}
	}
	if at < 0 || at+1 >= len(q.seq) || q.seq[at+1].low == s.seq[at+1].low {
		return "", "", false
	}
	a, b := q.seq[at].low+q.seq[at+1].low, s.seq[at].low+s.seq[at+1].low
	low := func(v vsig, i int) string {
		if i >= 0 && i < len(v.seq) {
			return v.seq[i].low
		}
		return ""
	}
	word := func(v vsig) bool {
		modal := hanMood(low(v, at), low(v, at-2), low(v, at-1), low(v, at+1), low(v, at+2)) | hanMood(low(v, at+1), low(v, at-1), low(v, at), low(v, at+2), low(v, at+3))
		return v.seq[at].seg != 0 && v.seq[at].seg == v.seq[at+1].seg && modal == 0 // 应该 / 最好: the moods compare modals
	}
	if !isHanTok(q.seq[at].low) || !isHanTok(q.seq[at+1].low) || !isHanTok(s.seq[at].low) || !isHanTok(s.seq[at+1].low) ||
		!word(q) || !word(s) || !text.HanWord(a) || !text.HanWord(b) || text.HanFunction(a) || text.HanFunction(b) {
		return "", "", false
	}
	return a, b, true
}

// possessionReversed returns an English possessor and the unit it owns
// right after it ("patient's doctor") when the other question has them
// the other way round ("doctor's patient") and not also this way.
func possessionReversed(q, s vsig) (string, string, bool) {
	pairs := func(v vsig) map[[2]string]bool {
		m := map[[2]string]bool{}
		for i := range v.seq {
			if u := &v.seq[i]; u.poss && i+1 < len(v.seq) && v.seq[i+1].unit && v.seq[i+1].clause == u.clause {
				m[[2]string{stemLight(strings.TrimSuffix(u.low, "'s")), stemLight(v.seq[i+1].low)}] = true
			}
		}
		return m
	}
	pq, ps := pairs(q), pairs(s)
	for p := range pq {
		if p[0] != p[1] && ps[[2]string{p[1], p[0]}] && !ps[p] {
			return p[0], p[1], true
		}
	}
	return "", "", false
}

// placeChars are the Chinese characters of place and position: above,
// middle, below, in, within, outside, before, after.
const placeChars = "上中下里内外前后"

// nounPrefixes are the Chinese prefixes (区别词) that make another noun of
// the one after them: 副 deputy, 前 and 原 former, 代 acting, 准
// prospective, 总 chief, 伪 fake, 次 sub-.
const nounPrefixes = "副前原代准总伪次"

// verbModifiers are single characters of closed classes that change what
// the word beside them says (insertedWord): 被 (with no agent after it, of
// a person),
// the undoing 解 and 退, the results 错 and 漏, the manners 偷, 多, 少, 白 and
// 乱, the verb prefixes 免 (exempt), 补 (make up), 缓 (defer), 转 (on, as in
// 转租 sublet) and 续 (renew), and the kinship prefixes 干, 外, 表, 堂, 继 and 养
// (外孙女 / 孙女, 表兄弟 / 兄弟).
const verbModifiers = "被解退错漏偷多少白乱干免补缓转续外表堂继养"

// stanceVerbs are main verbs of a requirement (1), a state (2), a wish
// (3) and ownership (4).
var stanceVerbs = map[string]uint8{
	"need": 1, "needs": 1, "require": 1, "requires": 1,
	"have": 2, "has": 2, "include": 2, "includes": 2, "contain": 2, "contains": 2,
	"own": 4, "owns": 4, // ownership: "Does the tenant own the furniture?" is not "… have furniture?"
	"want": 3, "wants": 3,
}

// headMoved returns the two heads of a modifier that stands before one
// noun in one question and before another in the other, both nouns in
// both questions: 毕业于北京大学的哥哥 / 毕业于北京大学的他 (the 的-phrase), "the
// brother of the singer who died" / "the painter who died" (a relative
// clause after its head). The modifier is keyed by the unit before 的, or
// by the unit after who, which or that.
func headMoved(q, s vsig) (string, string, bool) {
	heads := func(v vsig) map[string]string {
		m := map[string]string{}
		for i := 1; i+1 < len(v.seq); i++ {
			var key, head string
			switch u := &v.seq[i]; {
			case u.low == "的" && v.seq[i-1].unit && v.seq[i+1].unit:
				key, head = v.seq[i-1].text+"的", v.seq[i+1].word
			case (u.low == "who" || u.low == "which") && v.seq[i-1].unit && v.seq[i+1].unit && v.seq[i-1].low[0] < utf8.RuneSelf:
				key, head = u.low+" "+v.seq[i+1].word, v.seq[i-1].word
			default:
				continue
			}
			if _, dup := m[key]; dup {
				m[key] = "" // twice: not one place
			} else {
				m[key] = head
			}
		}
		return m
	}
	qh, sh := heads(q), heads(s)
	for k, a := range qh {
		if b, ok := sh[k]; ok && a != "" && b != "" && a != b && q.hasWord(b) && s.hasWord(a) && !hanAlike(a, b) {
			return a, b, true
		}
	}
	return "", "", false
}

// deClauseSwapped returns the last words of a 的-clause that ends on one
// word in q and on another in s, each of the two in the other's clause
// too: 我邀请的好友 / 邀请我的好友 (the verb against me), 这家公司收购的企业 /
// 收购这家公司的企业. The clause is the words (text.HanSegment) before 的,
// back to a clause break or another 的; the 的 is the one before the same
// head. 了, 过, 被 and 把 are not words of it here (被张伟击败的 = 张伟击败的).
func deClauseSwapped(q, s vsig) (string, string, bool) {
	type clause struct {
		last  string
		words map[string]bool
	}
	clauses := func(v vsig) map[string]*clause {
		m := map[string]*clause{}
		for i := 1; i+1 < len(v.seq); i++ {
			if v.seq[i].low != "的" || v.seq[i+1].text[0] == '|' {
				continue
			}
			c := &clause{words: map[string]bool{}}
			word, wseg := "", -1
			for k := i - 1; k >= 0 && v.seq[k].text[0] != '|' && v.seq[k].low != "的" && len(c.words) < 6; k-- {
				u := &v.seq[k]
				if oneOf("了过被把", u.low) || u.seg == 0 {
					continue
				}
				if u.seg == wseg {
					word = u.low + word
					continue
				}
				if word != "" {
					c.words[word] = true
					if c.last == "" {
						c.last = word
					}
				}
				word, wseg = u.low, u.seg
			}
			if word != "" {
				c.words[word] = true
				if c.last == "" {
					c.last = word
				}
			}
			key := v.seq[i+1].text
			if _, dup := m[key]; dup {
				m[key] = nil
			} else {
				m[key] = c
			}
		}
		return m
	}
	qc, sc := clauses(q), clauses(s)
	for k, a := range qc {
		if b := sc[k]; a != nil && b != nil && a.last != b.last && b.words[a.last] && a.words[b.last] {
			return a.last, b.last, true
		}
	}
	return "", "", false
}

// negations counts the negations of s (not, n't, never, no, without; 不,
// 没, 别, 未, 非 as negWord reads them; not the 不 of A不A or 不管).
func negations(s vsig) int {
	n := 0
	for _, c := range clauseNegations(s) {
		n += c
	}
	return n
}

// clauseNegations counts the negations of each clause, by clause number:
// negationAt, no and without.
func clauseNegations(s vsig) []int {
	var out []int
	for i := range s.seq {
		c := s.seq[i].clause
		for len(out) <= c {
			out = append(out, 0)
		}
		if w := s.seq[i].low; s.negationAt(i) || w == "no" || w == "without" {
			out[c]++
		}
	}
	return out
}

// sameClause reports that clause c of q shares more of its units with
// clause c of s than with any other clause of s: the two questions say
// their clauses in the same order (都三天了，订单还没发货吗 / 订单还没发货吗？都三天了
// do not).
func sameClause(q, s vsig, c int) bool {
	units := func(v vsig) []map[string]bool {
		var out []map[string]bool
		for i := range v.seq {
			k := v.seq[i].clause
			for len(out) <= k {
				out = append(out, map[string]bool{})
			}
			if v.seq[i].unit {
				out[k][v.seq[i].word] = true
			}
		}
		return out
	}
	uq, us := units(q), units(s)
	if c >= len(uq) || c >= len(us) {
		return false
	}
	overlap := func(a, b map[string]bool) int {
		n := 0
		for w := range a {
			if b[w] {
				n++
			}
		}
		return n
	}
	best := overlap(uq[c], us[c])
	for k := range us {
		if k != c && overlap(uq[c], us[k]) >= best {
			return false
		}
	}
	return best > 0
}

// negationAt reports a negation at i (negWord, not the 不 of A不A).
func (s *vsig) negationAt(i int) bool {
	prev, next := "", ""
	if i > 0 {
		prev = s.seq[i-1].low
	}
	if i+1 < len(s.seq) {
		next = s.seq[i+1].low
	}
	if s.seq[i].low == "别" && inHanWordWith(*s, i-1, i) {
		return false // 特别, 区别, 分别: a word, not don't
	}
	return negWord(s.seq[i].low, prev, next) && !aNotA(s.seq, i)
}

// negatedWord returns the content word a single negation of s negates
// (the first unit within three tokens after it), or "".
func negatedWord(s vsig) string {
	found := ""
	for i := range s.seq {
		if !s.negationAt(i) {
			continue
		}
		if found != "" {
			return "" // two negations: the count check reads them
		}
		for k := i + 1; k < len(s.seq) && k <= i+3; k++ {
			u := &s.seq[k]
			if u.low == "" || u.low[0] >= utf8.RuneSelf || auxiliaries[u.low] || persons[u.low] != "" || !verbLike(u.low) {
				continue
			}
			if p := s.seq[k-1].low; !nominal[p] && !quantifiers[p] && possessivePronouns[p] == "" {
				found = stemWord(u.low) // "told me not to take" / "didn't tell me to take"
				if v, _ := text.VerbTense(u.low); v != "" {
					found = v
				}
				break
			}
		}
		if found == "" {
			return ""
		}
	}
	return found
}

// modifierAttached returns a modifier that stands right before one noun
// in q and right before another in s, both nouns in both questions: "a
// 17th-century wooden altar" / "the 17th-century church … a wooden
// altar", "the damaged cartons on every pallet" / "the cartons on every
// damaged pallet". A verb, a particle or a function word is no such
// modifier ("call back customer service", "learn F# or C#"), and neither
// noun may be a verb or a function word ("zone C bins need" / "bins in
// zone C need", "all the rooms" / "the rooms all").
func modifierAttached(q, s vsig) (string, bool) {
	next := func(v vsig, i int) string { // the noun a modifier goes with: not a verb, but a noun in -ing (the new training)
		if w := v.seq[i+1:]; len(w) > 0 && w[0].unit && w[0].clause == v.seq[i].clause && (!verbLike(w[0].low) || ingForm(w[0].low) || text.IsVerb(w[0].low) && (strings.HasSuffix(v.seq[i].low, "ed") || participle(v.seq[i].low) || pastForm(v.seq[i].low)) || gradedAdjective(v.seq[i].low) && (len(w) == 1 || !w[1].unit || w[1].clause != w[0].clause)) && !functionWords[w[0].low] { // a base form after a participle is a noun (a used gift card), and so is a verb-like word that ends its phrase after a graded adjective (cheap flights and, not next general election)
			return v.seq[i+1].word
		}
		return ""
	}
	for i := range q.seq {
		u := &q.seq[i]
		if !u.unit || u.rep || u.low == "" || u.low[0] >= utf8.RuneSelf || text.IsVerb(u.low) || strongParticles[u.low] || functionWords[u.low] {
			continue
		}
		j, ok := s.index[u.text]
		if !ok {
			continue
		}
		a, b := next(q, i), next(s, j)
		if a != "" && b != "" && a != b && q.hasWord(b) && s.hasWord(a) {
			return u.word, true
		}
	}
	return "", false
}

// repeatSwapped reports two questions with the same units, where one unit
// occurs more often in q and another more often in s: the score counts a
// repeated word once, so "林丹 … 林丹赢了几次" and "林丹 … 李宗伟赢了几次"
// look alike to it.
func repeatSwapped(q, s vsig) (string, string, bool) {
	repeats := func(v vsig) bool {
		return slices.ContainsFunc(v.seq, func(u vunit) bool { return u.unit && strings.Contains(u.text, "#") })
	}
	if !repeats(q) || !repeats(s) {
		return "", "", false // each unit once in one of them: no repeat to exchange
	}
	count := func(v vsig) map[string]int {
		m := map[string]int{}
		for i := range v.seq {
			if v.seq[i].unit {
				base, _, _ := strings.Cut(v.seq[i].text, "#")
				m[base]++
			}
		}
		return m
	}
	cq, cs := count(q), count(s)
	if len(cq) != len(cs) {
		return "", "", false
	}
	more, less := "", ""
	for w, n := range cq {
		m, ok := cs[w]
		switch {
		case !ok:
			return "", "", false
		case n > m:
			if more == "" || w < more {
				more = w
			}
		case n < m:
			if less == "" || w < less {
				less = w
			}
		}
	}
	return more, less, more != "" && less != ""
}

// negationMoved reports one negation in each of q and s, with the same
// words around it but for where it stands, and a relative word (who,
// that, which) before it in both: the negation goes with the relative
// clause in one and with the main clause in the other. A contraction
// counts as its auxiliary ("who don't" = "who do not").
func negationMoved(q, s vsig) bool {
	read := func(v vsig) (words []string, at int, rel bool) {
		at = -1
		for i := range v.seq {
			w := v.seq[i].low
			if w == "" {
				continue
			}
			if v.negationAt(i) {
				if at >= 0 || w[0] >= utf8.RuneSelf {
					return nil, -1, false // two negations, or Chinese: other checks read them
				}
				if strings.HasSuffix(w, "n't") {
					words = append(words, strings.TrimSuffix(w, "n't")) // the negation after its auxiliary, as in "do not"
				}
				at = len(words)
				continue
			}
			rel = rel || at < 0 && i > 0 && relativeWord(w, v.seq[i-1].low)
			words = append(words, w)
		}
		return words, at, rel
	}
	has := func(v vsig) bool {
		for i := range v.seq {
			if v.negationAt(i) {
				return true
			}
		}
		return false
	}
	if !has(q) || !has(s) {
		return false // most questions: nothing to read
	}
	wq, aq, rq := read(q)
	ws, as, rs := read(s)
	return aq >= 0 && as >= 0 && aq != as && rq && rs && slices.Equal(wq, ws)
}

// agentMoved returns an agent (the unit after by) that follows one past
// participle in q and another in s, both participles in both questions:
// "built by Italian craftsmen …, restored in 1890" / "built …, restored
// by Italian craftsmen in 1890".
func agentMoved(q, s vsig) (string, bool) {
	agents := func(v vsig) map[string]string {
		m := map[string]string{}
		for i := 0; i+1 < len(v.seq); i++ {
			if v.seq[i].low != "by" {
				continue
			}
			agent := ""
			for k := i + 1; k < len(v.seq) && v.seq[k].clause == v.seq[i].clause; k++ {
				if v.seq[k].unit {
					agent = v.seq[k].word
					break
				}
			}
			for k := i - 1; k >= 0 && v.seq[k].clause == v.seq[i].clause && agent != ""; k-- {
				if verb, t := text.VerbTense(v.seq[k].low); t == "past" {
					m[agent] = verb
					break
				}
			}
		}
		return m
	}
	qa, sa := agents(q), agents(s)
	for a, vq := range qa {
		if vs, ok := sa[a]; ok && vq != vs && q.hasVerb(vs) && s.hasVerb(vq) {
			return a, true
		}
	}
	return "", false
}

// conjunctions join two conjuncts that may come in either order.
var conjunctions = setOf("and or 和 与 或 跟 、")

// conjuncts returns the conjunction of s that has i in one conjunct and j
// in the other (runs of content units and determiners on its two sides, in
// its clause, of as many units), and the words of its left and right
// conjuncts; at is -1 when there is none.
func conjuncts(s vsig, i, j int) (at int, left, right []string) {
	lo, hi := min(i, j), max(i, j)
	for c := lo + 1; c < hi; c++ {
		if !conjunctions[s.seq[c].low] {
			continue
		}
		// The right conjunct runs to a marker or the clause's end; the left
		// one takes as many content units ("gift cards and phone cases").
		r, n := c+1, 0
		for r < len(s.seq) && s.seq[r].clause == s.seq[c].clause && (s.seq[r].unit || nominal[s.seq[r].low] && r == c+1) && !conjunctions[s.seq[r].low] {
			if s.seq[r].unit {
				n++
			}
			r++ // to a marker, the clause's end or a determiner past the first word ("wash or dry-clean a coat")
		}
		l := c - 1
		for l >= 0 && n > 0 && s.seq[l].clause == s.seq[c].clause && (s.seq[l].unit || nominal[s.seq[l].low]) && !conjunctions[s.seq[l].low] {
			if s.seq[l].unit {
				n--
			}
			l--
		}
		if lo <= l || hi >= r {
			return -1, nil, nil // i or j outside the two conjuncts
		}
		words := func(from, to int) []string {
			var w []string
			for k := from; k < to; k++ {
				if s.seq[k].unit {
					w = append(w, s.seq[k].word)
				}
			}
			slices.Sort(w)
			return w
		}
		return c, words(l+1, c), words(c+1, r)
	}
	return -1, nil, nil
}

// conjunctsSwapped reports two units of two conjuncts that came in the
// other order: "Visa and Mastercard" / "Mastercard and Visa", "brown rice
// or white rice" / "white rice or brown rice" (the same conjunction, each
// conjunct whole on the other side).
func conjunctsSwapped(q, s vsig, ax, ay, bx, by int) bool {
	qc, ql, qr := conjuncts(q, ax, ay)
	sc, sl, sr := conjuncts(s, bx, by)
	return qc >= 0 && sc >= 0 && q.seq[qc].low == s.seq[sc].low && slices.Equal(ql, sr) && slices.Equal(qr, sl) && !slices.Equal(ql, qr)
}

// swappedPair returns two neighbouring content units of q that s has in
// the other order, every other token equal. Chinese compounds whose two
// characters read alike either way (互相 / 相互, 合适 / 适合) pass.
func swappedPair(q, s vsig) (a, b string, ok bool) {
	if len(q.seq) != len(s.seq) {
		return "", "", false
	}
	at := -1
	for i := 0; i < len(q.seq); i++ {
		x, y := &q.seq[i], &s.seq[i]
		if x.low == y.low {
			continue
		}
		if at >= 0 || i+1 >= len(q.seq) || q.seq[i+1].low != y.low || s.seq[i+1].low != x.low {
			return "", "", false
		}
		at = i
		i++
	}
	if at < 0 || !q.seq[at].unit || !q.seq[at+1].unit {
		return "", "", false
	}
	x, y := q.seq[at].low, q.seq[at+1].low
	if reversibleHan[x+y] || reversibleHan[y+x] || strongParticles[x] || strongParticles[y] || weakParticles[x] || weakParticles[y] { // pick up orders / pick orders up
		return "", "", false
	}
	return x, y, true
}

// reversibleHan are Chinese words whose characters say the same in either
// order.
var reversibleHan = setOf("互相 合适 积累 代替 离别 样式 演讲 觉察 力气 喜欢")

// onlyPlace returns where "only" stands against the first modal or, in a
// sentence without one, the first finite verb of an English question: 1
// before it, limiting the subject ("Only the manager can approve refunds",
// "Only the manager knew about the layoffs"), 2 after it or right before
// the verb, limiting what follows ("The manager can only approve refunds",
// "The manager knew only about the layoffs", "I only need my passport"),
// 0 when it has no only or neither.
func (s *vsig) onlyPlace() uint8 {
	only := slices.IndexFunc(s.seq, func(u vunit) bool { return u.low == "only" })
	switch {
	case only < 0:
		return 0
	case s.seq[only].clause == s.seq[0].clause && auxiliaries[s.seq[0].low]:
		// A yes/no question: only right after its auxiliary limits the
		// subject ("Can only doctors prescribe antibiotics?", "Is only
		// the library open?"), elsewhere what follows.
		if only == 1 {
			return 1
		}
		return 2
	}
	modal, verb := -1, -1 // in the clause of only
	for i := range s.seq {
		switch w := s.seq[i].low; {
		case i == only || s.seq[i].clause != s.seq[only].clause:
		case modalBits(w, "") != 0 && modal < 0:
			modal = i
		case verb < 0 && s.finiteAt(i):
			verb = i
		}
	}
	anchor := modal
	if anchor < 0 {
		anchor = verb
	}
	switch {
	case anchor < 0:
		return 0
	case only < anchor && !(modal < 0 && only+1 == anchor):
		return 1
	}
	return 2
}

// finiteAt reports an English finite verb form at i (knew, needs), as
// finiteVerbs reads them: not an -ing form, not after an auxiliary, to or
// a determiner.
func (s *vsig) finiteAt(i int) bool {
	u := s.seq[i]
	if !u.unit || u.named || u.low == "" || u.low[0] >= utf8.RuneSelf || ingForm(u.low) || i > 0 && s.seq[i-1].clause == u.clause && notFinite[s.seq[i-1].low] {
		return false
	}
	_, tense := text.VerbTense(u.low)
	return tense == "past" || tense == "present"
}

// hanDirectional are function characters for the order checks that are
// what a question asks when one replaces another (多收了 / 少收了, 借的钱 /
// 还的钱, 上半年 / 下半年, 想查一下 / 想改一下, 一个多少钱 / 一斤多少钱).
const hanDirectional = "多少还查看问上下来去个"

// hanAlike reports two Chinese characters that say the same in a
// question for the one-word check: the groups of hanAlikeGroups (支付宝里的钱 =
// 支付宝上的钱, 每日 = 每天), and 查 and 看, 总是 and 老是, which that older check
// reads alike even inside a word (查房 / 看房: hanSpanReplaced reads words).
func hanAlike(a, b string) bool {
	for _, groups := range [][]string{hanAlikeGroups, {"查看", "总老"}} {
		for _, g := range groups {
			if oneOf(g, a) && oneOf(g, b) {
				return true
			}
		}
	}
	return false
}

// containers reports two of a container's characters (里, 内, 中, 上, 儿):
// alike after a noun (店里 = 店内), not inside a word (月中 / 月内, 儿科 /
// 内科).
func containers(a, b string) bool { return oneOf(hanAlikeGroups[0], a) && oneOf(hanAlikeGroups[0], b) }

// containerEnds reports the token after a container's character that
// lets it end its phrase (店里有 = 店内有, 店里的 = 店内的): no Han character, a
// function character, or a verb; before another noun's character it is
// part of a name (中环 / 内环, 上校 / 中校).
func containerEnds(next string) bool {
	return next == "" || !isHanTok(next) || strings.Contains(hanFunction+hanParticles+"的了过在", next) || text.HanVerbal(next)
}

// hanAlikeGroups are Chinese characters that say alike wherever they
// stand, by group: a container's 里, 内, 中, 上, 儿, 日 and 天, 您 and 你, 账
// and 帐, 款 and 钱 (hanAlike and hanAlikeChars read them).
var hanAlikeGroups = []string{"里内中上儿", "日天", "您你", "账帐", "款钱"}

// lookVerbs ask for information alike within a class: inspecting (1:
// "How do I check / see my balance?"), obtaining (2: "Where can I find /
// get my statements?"; see and know are both) and presenting (4: show,
// tell). Across classes
// they do not ("check my bags" is handing them over, "get my bags"
// collecting them; "show my ticket" / "get my ticket").
var lookVerbs = map[string]uint8{
	"check": 1, "view": 1, "look": 1,
	"find": 2, "get": 2, "access": 2,
	"see": 1 | 2, "know": 1 | 2, // "Where do I see / find my IBAN?"
	"show": 4, "tell": 4,
}

// lookUp reads q and s without their fillers (replacedWord), where a
// unit's mine tells the my or our dropped before it. It reports a verb at
// i that the asker looks something up with: after
// I, we or to and before my, our, if or whether ("Where do I see / find my
// IBAN?", "where to check my balance", "how do I know / check if my card
// is blocked"), in no past ("Did anyone see / find the
// suspect?"). Others see and know, check and find what is no information
// of theirs ("Can you see / check my screen?", "Do you know / see a good
// dentist?", "Can I see / find a doctor?", "Do I need to know / get the
// password?").
func lookUp(q, s vsig, i int) bool {
	if i == 0 || i+1 >= len(q.seq) || q.past || s.past {
		return false
	}
	prev, next := q.seq[i-1].low, &q.seq[i+1]
	return (prev == "i" || prev == "we" || prev == "to") && (next.mine || next.low == "if" || next.low == "whether") // a thing of one's own: my balance, if my card is blocked
}

// subjectOrTo come before a verb that is the question's own.
var subjectOrTo = setOf("i we you they he she it to")

// mood is how a Chinese question asks about what it names: a set of
// these bits.
type mood uint8

const (
	moodAbility mood = 1 << iota // 能, 可以, 可否, 无法, V不了: whether it can happen (会, will, is both can and must)
	moodNeed                     // 需要, 必须, 应该, 该, 要: whether it must
	moodDone                     // 了, 过, 已, 没: whether it happened
	moodNot                      // 不 before a verb: that it does not, or will not, happen
	moodWilling                  // 愿意, 肯, 乐意, 敢: whether one is willing to, or dares
)

// modalMoods are the moods of a modal: can, must, is willing to.
const modalMoods = moodAbility | moodNeed | moodWilling

func (m mood) String() string {
	var out []string
	for i, name := range []string{"can or will (能, 可以, 会)", "must (需要, 应该)", "did (了, 过, 没)", "does not (不)", "is willing to (愿意, 肯, 敢)"} {
		if m&(1<<i) != 0 {
			out = append(out, name)
		}
	}
	return strings.Join(out, ", ")
}

// hanComplements are the result and direction complements a potential
// 得 comes before (看得到, 考得上, 赶得上, 好得了, 要得回来).
const hanComplements = "到上下了起完动出回过住见好懂清开进来去着"

// hanMood reads the mood a Chinese character w gives its question, with
// the two characters before it and the two after it in its clause: 能
// but not 可能, 功能, 能力, 太阳能; 要 but not 只要, 重要, 要是, 要多久; 会 but not
// 会员, 开会, 机会, 奥运会 (a noun of jieba's dictionary, text.HanModalNoun, with no
// verb after it). Will and can are one mood (明天能送到吗 = 明天会送到吗),
// 有 none (有手续费吗 = 要手续费吗, 有分期吗 = 可以分期吗).
func hanMood(w, prev2, prev, next, next2 string) mood {
	if (w == "会" || w == "能") && prev2 != "" && text.HanModalNoun(prev2+prev+w) && !text.HanVerbal(next) {
		return 0 // NBA球员能参加奥运会吗: the Olympics, not will
	}
	switch w {
	case "能":
		if !oneOf("可功性智技体本职效热动潜万全", prev) && !oneOf("力源量耗", next) { // 才能 is only then can
			return moodAbility
		}
	case "可":
		if oneOf("以否", next) || text.HanVerbal(next) && !oneOf("能是爱惜乐靠怕观口怜笑见", next) {
			return moodAbility // 可以, 可否, 可退 (can be returned); not 可能, 可是, 可靠
		}
	case "法":
		if oneOf("无没", prev) {
			return moodAbility
		}
	case "需":
		if next == "要" && !oneOf("多几", next2) {
			return moodNeed
		}
	case "必":
		if next == "须" {
			return moodNeed
		}
	case "得":
		if text.HanVerbal(prev) && !text.HanWord(prev+w) && oneOf(hanComplements, next) {
			return moodAbility // 看得到, 考得上, 到得了: can be done
		}
		if oneOf("非就还也都总", prev) || prev != "" && next != "" && isHanTok(prev) && !text.HanVerbal(prev) && !text.HanWord(prev+w) && !text.HanWord(w+next) && !oneOf(hanParticles, next) {
			return moodNeed // 非得, 就得; 药得饭后吃: must (děi), not the 得 of 跑得快, 觉得, 得到
		}
	case "应":
		if oneOf("该当", next) {
			return moodNeed
		}
	case "该":
		demonstrative := text.HanWord(w+next) || // 该国, 该市: this country, this city
			(prev == "" || oneOf("在从对由向与和把被将据于经为", prev)) && !text.HanVerbal(next) && !oneOf("怎不如何多几", next) // 该产品支持退货吗
		if !oneOf("应活", prev) && !demonstrative {
			return moodNeed // 我该提前还款吗
		}
	case "要":
		if !oneOf("需只重主快就将不想", prev) && !oneOf("多几是求么紧点素领害", next) {
			return moodNeed // 要手续费吗, 每周都要盘点吗 (明天要下雨吗, a will, is read as a must too)
		}
	case "会":
		if !oneOf("开机社学协大总晚约聚年工商体理误领交相国省部宴舞", prev) && !oneOf("员议计所场话谈面长费籍期展客诊务馆必可能需应该得", next) && // 家长会必须: a meeting before a modal
			!(prev == "都" && (next == "" || oneOf("市人区圈的女男风夜", next))) { // 都会 (a city) before a noun; 大家都会参加 is will
			return moodAbility | moodNeed // will: 明天会送到吗 = 能送到吗, 会扣手续费吗 = 要扣手续费吗
		}
	case "愿":
		if next == "意" || prev == "情" || prev == "自" {
			return moodWilling // 愿意, 情愿, 自愿
		}
	case "肯":
		if !oneOf("首中", prev) && next != "定" {
			return moodWilling // 肯 before a verb; not 肯定, 首肯, 中肯
		}
	case "乐":
		if next == "意" {
			return moodWilling
		}
	case "敢":
		if prev != "勇" && prev != "果" {
			return moodWilling // 敢 before a verb: dares to; not 勇敢, 果敢
		}
	case "没":
		switch {
		case next == "办" && next2 == "法":
			return moodAbility // 没办法绑定: cannot
		case next != "法":
			return moodDone // 没到账: it did not
		}
	case "不":
		// 不发货 does not (or will not) do it, 没发货 did not; V不了 cannot
		// (用不了 = 不能用); 不能, 不会, 不要 are their modals' (read at their
		// own characters), 是不是 and 安不安全 ask, 不是, 不一定, 不到 and the
		// like have no mood, 还不 asks what 还没 asks.
		switch {
		case oneOf("了出动起开完清懂着进上", next) && prev != "" && !oneOf(hanFunction, prev), next == "让":
			return moodAbility // V不了, 取不出来, 登不上, 不让: cannot
		case next == "要" || next == "用":
			return moodNeed | moodNot // 不要激活吗: whether it must; 不要手续费 = 不收手续费
		case prev != "还" && prev != next && !oneOf("能会要用需可是一到同错过少多好然但仅只如管论久行对够必该得太很再", next):
			return moodNot
		}
	}
	return 0
}

// moodsConflict reports two moods that name no common one, compared as
// facts (did, does not: 不吃早饭会胖吗 / 没吃早饭会胖吗, whatever modal both
// share), as modals (can, must: 已经发货了还能取消吗 / 已经发货了还需要取消吗,
// though both happened) and whole (退款了吗 / 可以退款吗).
func moodsConflict(a, b mood) bool {
	for _, part := range []mood{moodDone | moodNot, moodAbility | moodNeed | moodWilling, ^mood(0)} {
		if x, y := a&part, b&part; x != 0 && y != 0 && x&y == 0 {
			return true
		}
	}
	return false
}

// timeAsked reports a question about when or how long: 几天就能到 asks
// what 几天才能到 asks.
func (s *vsig) timeAsked() bool {
	return s.qtype == "when" || s.qtype == "duration" || s.timeCount
}

// moodAsked returns the mood of s as it is compared with o: in two
// why-questions 不 asks what 没 asks (为什么不给我退款 / 为什么没给我退款); in
// two how-, where- or when-questions can and must ask alike (需要怎么操作 /
// 可以怎么操作, 应该去哪里办 / 可以去哪里办).
func (s *vsig) moodAsked(o vsig) mood {
	m := s.mood
	if s.qtype == o.qtype {
		switch s.qtype {
		case "why":
			if m&moodNot != 0 {
				m = m&^moodNot | moodDone
			}
		case "how", "where", "when":
			m &^= moodAbility | moodNeed
		}
	}
	return m
}

// scopeWords reads the words whose place or kind the facets lose:
// negation before or after a quantifier (不都 / 都不, not all / all not),
// Chinese deixis before a classifier (上次 / 这次), and and against or.
func (s *vsig) scopeWords() {
	seq := s.seq
	low := func(j int) string {
		if j >= 0 && j < len(seq) {
			return seq[j].low
		}
		return ""
	}
	negAt := -1 // the first negation of the clause, or -1
	clause, clauseStart := -1, 0
	for i := range seq {
		w := seq[i].low
		if seq[i].clause != clause {
			clause, negAt, clauseStart = seq[i].clause, -1, i
		}
		if w == "" {
			continue
		}
		if relativeWord(w, low(i-1)) {
			negAt = -1 // "all customers who have not paid": the negation is the relative clause's
		}
		if s.negationAt(i) && negAt < 0 {
			negAt = i
		}
		q := scopeWord(w, low(i-1))
		if q == "" && (oneOf("很太", w) || oneOf("全最", w) && !inHanWord(*s, i) ||
			w == "特" && low(i+1) == "别" || w == "怎" && low(i+1) == "么" && low(i-1) == "不") {
			q = "degree" // 不很 / 很不, 不太 / 太不, 不全是 / 全不是, 不特别 / 特别不, 不怎么 (not much)
		}
		if q == "" && !oneOf("不没", w) && isHanTok(w) && hanMood(w, low(i-2), low(i-1), low(i+1), low(i+2))&(moodAbility|moodNeed) != 0 {
			q = "modal" // 不可以打 (must not) / 可以不打 (may skip), 不能 / 能不
		}
		if q != "" && !(w == "都" && douAlready(seq, i)) { // 都两个月了, 都快一年了, 都已经三天了: already
			place := "" // no negation in its clause
			if q == "many" && negAt >= 0 && !(negAt == i-1 && seq[negAt].low == "not") {
				negAt = -1 // "Why don't many people …" negates the verb, as "… many people not …" does; "not many" the quantity
			}
			if negAt >= 0 {
				place = q + ":neg-before"
			} else {
				for j := i + 1; j < len(seq) && seq[j].clause == clause && !relativeWord(seq[j].low, seq[j-1].low); j++ {
					if s.negationAt(j) {
						place = q + ":neg-after"
						break
					}
				}
			}
			if place != "" && !slices.Contains(s.negScope, place) {
				s.negScope = append(s.negScope, place)
			}
		}
		if (strongParticles[w] && !(w == "up" && (low(i+1) == "to" || low(i+1) == "front")) || weakParticles[w] && !objectStart[low(i+1)]) &&
			i > 0 && seq[i-1].clause == clause && !isDigits(strings.TrimSuffix(low(i-1), "%")) { // not "10% off", "up to $500", "in the store"
			s.particles = append(s.particles, w+" "+seq[i-1].word)
			if w == "out" && low(i+1) == "of" {
				s.particles = append(s.particles, "outof@ "+seq[i-1].word) // "stay out of the fridge"; not "fill out the form" (= fill in)
			}
		} else if (w == "in" || w == "inside" || w == "into") && i > 0 && seq[i-1].clause == clause && objectStart[low(i+1)] {
			s.particles = append(s.particles, "in@ "+seq[i-1].word) // "stay in the fridge": against "stay out of the fridge"
		}
		if !(w == "get" || w == "gets") || !objectStart[low(i+2)] { // "get to keep it", not "get to the airport"
			if m := modalBits(w, low(i+1)); m != 0 {
				s.modals |= m
				s.haveTo = s.haveTo || (w == "have" || w == "has") && low(i+1) == "to"
				if v := low(i + 2); persons[low(i+1)] != "" && askVerbs[v] {
					s.modalAsksWhom = true // "What can I do", "Who should I contact"
				}
			}
		}
		switch {
		case w == "may" || w == "might" || w == "could" || w == "能" && low(i-1) == "可" || w == "许" && (low(i-1) == "也" || low(i-1) == "或"):
			s.maybe = true // 可能, 也许, 或许
		}
		switch {
		case w == "both" && low(i+1) != "and":
			s.both |= 1 // both parents, both of us; not "both … and"
		case w == "either" && low(i+1) != "or":
			s.both |= 2
		case w == "之" && low(i+1) == "一" && low(i-1) != "分" && (i+2 >= len(seq) || !oneOf(hanNumerals, low(i+2))):
			s.oneOf = true // 最大的城市之一: one of them, not the largest (not 三分之一)
		case w == "one" && low(i+1) == "of" && low(i+2) == "the" && superlative(low(i+3)):
			s.oneOf = true // "one of the largest cities": not the largest
		case w == "some" && low(i+1) == "of":
			s.few |= 4 | 8 // some of my emails: not all of them
		case w == "some":
			s.few |= 4 // some emails, some ways to
		}
		switch {
		case w == "just" && !justRecent(low(i+1)) && !(persons[low(i-1)] != "" && modalBits(low(i-2), "") != 0):
			s.only |= 1 // "Do I just need my passport?": only; "Can I just walk in?" asks what "Can I walk in?" asks
		case w == "only":
			s.only |= 1
		case w == "仅" && low(i-1) != "不" || w == "只" && low(i+1) != "要" && (low(i+1) != "是" || i > clauseStart) ||
			w == "光" && text.HanVerbal(low(i+1)) && !inHanWord(*s, i): // 只是针对新用户 (not 只是 opening a clause: but), 光吃蔬菜
			s.only |= 1 // 只有北部城区 / 北部城区也
			if !(w == "只" && low(i+1) == "有" && s.condLater(i)) {
				s.only |= 4 // 只接受现金 / 接受现金; not 只有…才, a condition
			}
		case w == "also" || w == "也":
			s.only |= 2
		}
		switch {
		case w == "都" && !douAlready(seq, i) && !oneOf("么谁哪也连", low(i-1)) && !everyTime(seq, clauseStart, i):
			s.hanQuant |= 1 // 这些订单都付款了吗, 都已经发货了吗, 每个员工都有: all of them (not 都两个月了, 每天都, 什么都)
		case w == "有" && !oneOf("没所拥具含只还", low(i-1)) && (existentialDe(seq, i) || low(i+1) == "一" && oneOf(hanClassifiers, low(i+2))),
			w == "些" && low(i-1) == "有", w == "的" && low(i-1) == "有" && i-1 == clauseStart,
			(w == "的" || w == "人") && low(i-1) == "有" && i-2 >= clauseStart && !oneOf("没所拥具含只还我你您他她它们", low(i-2)) && someDoes(low(i+1)),
			w == "分" && low(i-1) == "部" && low(i-2) == "有" && i-3 >= clauseStart && !oneOf("没所拥具含只还", low(i-3)):
			s.hanQuant |= 2 // 这些订单有付款的吗, 有些订单, 有的订单, 有一套是, 商品有的可以退, 同学有人及格了, 货有部分破损: some of them (not 我有的书, what I have)
		case w == "有" && low(i-1) == "没" && (low(i+1) == "一" && oneOf(hanClassifiers, low(i+2)) || low(i+1) == "任"):
			s.hanQuant |= 4 // 没有一套是带电梯的, 没有任何: none of them
		}
		if w == "才" && oneOf("可能会要需得", low(i+1)) && !hanBefore(seq, clauseStart, i, "只") {
			s.only |= 1 // 业主才可以买车位: only they (not 只有…才, a condition)
		}
		if (w == "is" || w == "are" || w == "am" || w == "was" || w == "were") && s.beTense == "" && !s.beAuxiliary(i) {
			s.beTense = "present" // "Is Pluto a planet?" / "Was Pluto a planet?"
			if w == "was" || w == "were" {
				s.beTense = "past"
			}
		}
		if w == "过" && i > 0 && text.HanVerbal(low(i-1)) && !oneOf("要会能想该得可", low(i-1)) && !text.HanFunction(low(i-1)+w) && !text.HanWord(w+low(i+1)) {
			s.experienced = true // 看过, 去过, 合作过: ever done (not 经过, 通过, 不过, nor 要过期 after a modal)
		}
		switch {
		case w == "here":
			s.place |= 1
		case w == "there" && !existentialThere[low(i+1)] && !existentialThere[low(i-1)]:
			s.place |= 2 // "park there", not "there is" or "is there a pharmacy"
		}
		if w == "few" || w == "little" {
			if low(i-1) == "a" {
				s.few |= 1 // "a few analysts": some
			} else {
				s.few |= 2 // "few analysts": hardly any
			}
		}
		switch {
		case w == "只" && low(i+1) == "要", w == "就" && s.cond == "" && !oneOf("医诊业读近餐职任座位算是", low(i+1)) && !oneOf("成迁造", low(i-1)):
			s.cond = "if" // 只要…就: if
		case w == "只" && low(i+1) == "有", w == "才" && !oneOf("刚方", low(i-1)):
			s.cond = "only if" // 只有…才: only if
		}
		// and/or after a verb (需要身份证和户口本, need a passport and a visa),
		// not in a list that opens the clause as its topic (退货和换货需要付运费吗,
		// 周末和节假日发货吗: each of them is asked about; 请问, 你好 not counted).
		topic := func() bool {
			if oneOf("和与及跟、或", w) {
				return hanUnitsBefore(seq, clauseStart, i) <= 3
			}
			return i-clauseStart <= 3
		}
		switch w {
		case "and", "和", "与", "及", "跟", "、":
			if !topic() {
				s.conj |= 1
			}
		case "or", "或":
			if !topic() {
				s.conj |= 2
			}
		case "还":
			if next := low(i + 2); low(i+1) == "是" && !topic() && isHanTok(next) && (!text.HanVerbal(next) || text.HanWord(next+low(i+3))) && !oneOf("不没要想得会能可在觉还也都就", next) {
				s.conj |= 2 // 身份证还是户口本: which of the two; not 还是想退 (still)
			}
		case "上", "下", "这", "那", "本", "每", "前":
			next := low(i + 1)
			if w == "前" && next != "一" {
				break // 前一期 is the previous one; 前面, 之前 are no deixis
			}
			one := next == "一"
			if one {
				next = low(i + 2) // 上一期, 这一次
			}
			if oneOf("次期笔批轮回趟家单"+hanClassifiers, next) && !(w == "下" && low(i+1) == "单") && !(w == "本" && next == "个") ||
				oneOf(hanTermClassifiers, next) && (one || w != "上" && w != "下") { // 上一班, 这一届; not 上班, 上任 (verbs)
				s.deixis |= deixisClass[w]
			}
		}
	}
}

// hanTermClassifiers are the measure words of a run, a term or a stop
// (班, 任, 届, 站, 胎, 季, 集, 代, 版): after 上 or 下 they point only with 一
// between (上一班 the last train; 上班 is to go to work).
const hanTermClassifiers = "班任届站胎季集代版"

// superlative reports most, least, best, worst or an -est adjective.
func superlative(w string) bool {
	switch w {
	case "most", "least", "best", "worst", "biggest", "largest", "longest", "oldest", "highest":
		return true
	}
	return len(w) > 5 && strings.HasSuffix(w, "est") && !strings.HasSuffix(w, "rest") && !strings.HasSuffix(w, "test") && !strings.HasSuffix(w, "quest")
}

// justRecent reports a just that means a moment ago or exactly, not
// only: before a past form ("I just ordered"), now, like, in case, about.
func justRecent(next string) bool {
	switch next {
	case "now", "like", "in", "about", "as", "":
		return true
	}
	return pastForm(next)
}

// deixisClass: 上, 前一 the previous one (1), 下 the next (2), 这, 那, 本
// this one (4), 每 every one (8).
var deixisClass = map[string]uint8{"上": 1, "前": 1, "下": 2, "这": 4, "那": 4, "本": 4, "每": 8}

// degreeWords before many or much make an amount, not a quantifier
// ("how much", "so many").
var degreeWords = setOf("how so too very as")

// strongParticles are the particles of English phrasal verbs that are
// never a preposition (out of is counted as out): sign up / sign in, pick
// up / pick, log out / log in, out of customs / in customs.
var strongParticles = setOf("out up down off back away")

// objectStart open a noun phrase: in or on before one is a preposition
// ("in the store"), not a particle.
var objectStart = setOf("the a an my your his her its our their this that these those it them him me us")

// weakParticles may be a particle or a preposition (sign in, in stock):
// only a strong particle against one of them tells.
var weakParticles = setOf("in on over")

// particleDiffers returns a strong particle that one question has after
// a word that takes in, on or over in the other question: "sign out" /
// "sign in", "sign up" / "sign in", "check out time" / "check in time",
// "out of customs" / "in customs". A particle against none passes: it
// often only completes the verb ("print out", "clean up", "free up"); so
// do two strong ones ("log out" / "log off"), and in, on or over before
// an object ("in the store") is a preposition.
func particleDiffers(q, s vsig) (string, bool) {
	for _, side := range [][2]vsig{{q, s}, {s, q}} {
		a, b := side[0], side[1]
		for _, x := range a.particles {
			p, before, _ := strings.Cut(x, " ")
			if !strongParticles[p] && p != "outof@" || slices.Contains(b.particles, x) {
				continue
			}
			for _, y := range b.particles {
				if o, ob, _ := strings.Cut(y, " "); ob == before && (p == "outof@") == (o == "in@") && (o == "in@" || weakParticles[o] || strongParticles[o] && o != p && !(oneOf2(p, o, "out", "off"))) {
					return strings.TrimSuffix(p, "@") + "/" + strings.TrimSuffix(o, "@"), true // sign in / sign out, move up / move back (log out = log off), stay in the fridge / stay out of it
				}
			}
		}
	}
	return "", false
}

// timeAfter reports a time after the preposition at i ("for Monday", "in
// the next 7 days", "for the 12 months"), where for, in and on say alike.
func timeAfter(q vsig, i int) bool {
	for k := i + 1; k < len(q.seq) && k <= i+3; k++ {
		w := q.seq[k].low
		if isTimeWord(w) || w != "" && w[0] >= '0' && w[0] <= '9' && (strings.IndexFunc(w, unicode.IsLetter) >= 0 || strings.Contains(w, ":") || k+1 < len(q.seq) && timeUnit(q.seq[k+1].low)) ||
			timeModifier(w) || w == "past" || w == "coming" || w == "first" {
			return true
		}
		if w != "the" && w != "a" && w != "an" {
			return false
		}
	}
	return false
}

// timeUnit reports a unit of time (days, months …).
func timeUnit(w string) bool {
	switch strings.TrimSuffix(w, "s") {
	case "second", "minute", "hour", "day", "week", "month", "year", "night":
		return true
	}
	return false
}

// verbBefore reports a verb within three tokens before i in its clause,
// the head a preposition at i goes with ("travel to Mexico with", "pay
// by"), not after a determiner ("the mean").
func verbBefore(q vsig, i int) bool {
	for k := i - 1; k >= 0 && k >= i-3 && q.seq[k].clause == q.seq[i].clause && q.seq[k].text[0] != '|'; k-- {
		if u := &q.seq[k]; u.low != "" && u.low[0] < utf8.RuneSelf && (verbLike(u.low) || beForms[u.low] && k == i-1) && (k == 0 || !nominal[q.seq[k-1].low] && !quantifiers[q.seq[k-1].low] && possessivePronouns[q.seq[k-1].low] == "") {
			return true // "pay by", "travel … with", "are at / for dock 4"
		}
	}
	return false
}

// beForms are the forms of be.
var beForms = setOf("is are was were be been am")

// verbLike reports a verb or a verb form (pay, paid, designed).
func verbLike(w string) bool {
	if text.IsVerb(w) {
		return true
	}
	_, t := text.VerbTense(w)
	return t != ""
}

// timePreposition say alike before a time: for, in, on, at, during,
// within ("appointments for / on Monday"); to (change it to Monday) and by
// (a deadline) do not.
var timePreposition = setOf("for in on at during within")

// oneOf2 reports {a, b} = {x, y}.
func oneOf2(a, b, x, y string) bool { return a == x && b == y || a == y && b == x }

// askVerbs after a modal and a subject ask what to do or whom to ask,
// whatever the modal.
var askVerbs = setOf("do contact call ask talk speak email reach message see write")

// modalBits classes a modal ("Which stocks can I buy?" asks what is
// allowed, "Which stocks should I buy?" and "What do I need to bring?"
// what is advised or required): 1 can, 2 should or must.
func modalBits(w, next string) uint8 {
	switch w {
	case "can", "could", "may", "can't", "cannot", "couldn't":
		return 1
	case "should", "shouldn't", "ought":
		return 2
	case "must", "mustn't":
		return 2 // advice and obligation ask alike ("Which form should I / do I need to fill out?")
	case "need", "needs", "have", "has":
		if next == "to" {
			return 2
		}
	case "get", "gets":
		if next == "to" {
			return 1 // "Do I get to keep it?" is allowed, "Do I have to keep it?" required
		}
	case "will", "won't":
		if next == "you" {
			return 1 // "Will you deliver on Saturday?" asks what "Can you …" asks
		}
		return 4 // "Which trucks will leave?" is a plan, "Which trucks can leave?" a permission
	case "going":
		if next == "to" {
			return 4 // going to: will
		}
	case "want", "wants":
		if next == "to" {
			return 8 // "Which pickers want to work?" is a wish, "… have to work?" a duty
		}
	case "might", "mightn't":
		return 1 // a possibility, as may and could
	case "possible", "able", "okay", "ok", "alright", "allowed", "permitted":
		if next == "to" || next == "for" {
			return 1 // "Is it possible to …", "Am I able to …", "Is it okay to …": can
		}
	case "necessary", "mandatory", "obligatory", "required":
		if next == "to" || next == "for" {
			return 2
		}
	}
	return 0
}

// options reports a question about options, where and and or ask alike:
// a can or will without a must (能用信用卡和花呗付款吗, "Can I pay by card
// and cash?"), or 都可以, 都能, 都行 after the list (身份证或护照都可以吗).
func (s *vsig) options() bool {
	if s.mood&moodAbility != 0 && s.mood&moodNeed == 0 || s.modals&1 != 0 && s.modals&2 == 0 || s.modal == "ability" {
		return true
	}
	for i := range s.seq {
		if s.seq[i].low == "都" && i+1 < len(s.seq) && oneOf("可能行", s.seq[i+1].low) {
			return true // 都可以, 都行: either will do; not 都需要, 都补到 (both)
		}
	}
	return false
}

// hanUnitsBefore counts the Chinese content units from from to i, not the
// personal pronouns nor the 好 of a greeting (你好, 您好); a role marker
// (把, 给, 在 …) before i counts as many as there are tokens.
func hanUnitsBefore(seq []vunit, from, i int) (n int) {
	for j := from; j < i; j++ {
		u := &seq[j]
		if r := roleMarkers[u.low]; r != "" && r != "of" {
			return i // 把SKU-1和SKU-2: an object, not a topic
		}
		if u.unit && !strings.HasPrefix(u.text, "p:") && !(u.low == "好" && j > 0 && oneOf("你您", seq[j-1].low)) {
			n++
		}
	}
	return n
}

// hanThis reports 这 or 那 pointing at a thing the question asks about
// (这羽绒服是什么牌子的, 这个是什么): before 是 or a measure word for things,
// not a time (这个月, 这次) nor 这张卡 or 这笔 (which card, which payment: a
// deixis, compared apart), nor 那 as "then" (那我该怎么办).
func hanThis(zh string) bool {
	rs := []rune(zh)
	for i := 0; i+1 < len(rs); i++ {
		if rs[i] != '这' && rs[i] != '那' {
			continue
		}
		switch next := rs[i+1]; {
		case strings.ContainsRune("是款件种本只双台部辆首羽衣", next):
			return true
		case next == '个':
			if i+2 >= len(rs) || !strings.ContainsRune("月周星次季年天礼", rs[i+2]) {
				return true
			}
		}
	}
	return false
}

// hanBest reports 最好 asking which is best (哪个最好, 最好的, 最好用), not
// "had better" (最好先还款, 最好怎么办).
func hanBest(zh string) bool {
	for i := 0; ; {
		j := strings.Index(zh[i:], "最好")
		if j < 0 {
			return false
		}
		at := i + j
		after := zh[at+len("最好"):]
		before := zh[:at]
		if after == "" || strings.HasPrefix(after, "的") || strings.HasPrefix(after, "用") || strings.HasPrefix(after, "呢") ||
			strings.HasPrefix(after, "吗") || strings.HasSuffix(before, "哪个") || strings.HasSuffix(before, "哪家") || strings.HasSuffix(before, "什么") {
			return true
		}
		i = at + len("最好")
	}
}

// whichAsked reports a "which" that asks ("Which courier …?", "In which
// bin …?"), not one that opens a relative clause ("an item which arrived
// damaged").
func whichAsked(lower []string) bool {
	for i, w := range lower {
		if w == "which" && !relativeWord(w, prevWord(lower, i)) {
			return true
		}
	}
	return false
}

// prevWord returns the word before i, or "".
func prevWord(lower []string, i int) string {
	if i == 0 {
		return ""
	}
	return lower[i-1]
}

// relativeWord reports a word that opens a relative clause after a noun:
// who, that, which, whom, whose (not the question's own opening word).
func relativeWord(w, prev string) bool {
	return prev != "" && prev[0] < utf8.RuneSelf && !functionWords[prev] && (w == "who" || w == "that" || w == "which" || w == "whom" || w == "whose")
}

// negWord reports a negation: not, never, n't; 不, 没, 别, 未, and 非
// after 并, 绝 or 决 (并非所有: not all; not 非常, 除非). 不少 (many),
// 不好意思 (sorry) and 别的 (other) negate nothing.
func negWord(w, prev, next string) bool {
	if (w == "不" || w == "没") && next == "" && prev != "" && !oneOf(text.TagNegators, prev) {
		return false // a final 不 or 没 asks (正常不, 发货没), as the facets read it
	}
	return w == "not" || w == "never" || strings.HasSuffix(w, "n't") ||
		w == "不" && next != "少" && next != "好" || w == "别" && next != "的" || oneOf("没未", w) || w == "非" && oneOf("并绝决", prev) ||
		w == "无" && prev == "都" // 都无效: none of them
}

// aNotA reports the 不 of a question form A不A (是不是, 安不安全) at i:
// it asks, it does not negate.
func aNotA(seq []vunit, i int) bool {
	return seq[i].low == "不" && (i > 0 && i+1 < len(seq) && seq[i-1].low == seq[i+1].low ||
		i+1 < len(seq) && oneOf("管论仅但过然如少", seq[i+1].low)) // 不管, 不论 (whatever), 不仅 (not only): no negation
}

// scopeWord returns the class of a word whose scope a negation may take
// (all, every, always, often, necessarily; 都, 一定, 所有, 全, 总, 一直, 常, 再)
// or "".
func scopeWord(w, prev string) string {
	switch {
	case w == "all" || w == "every" || w == "everything" || w == "everyone" || w == "都" || w == "有" && prev == "所" || w == "部" && prev == "全" || w == "全" && prev == "完":
		return "all"
	case w == "always" || w == "总" || w == "直" && prev == "一":
		return "always"
	case w == "often" || w == "usually" || w == "frequently" || w == "常":
		return "often" // 经常不吃 / 不经常吃, often don't / don't often
	case w == "再":
		return "again" // 再不用 (if it stays unused) / 不再用 (no longer)
	case (w == "many" || w == "much") && !degreeWords[prev]:
		return "many" // not "how much"
	case w == "necessarily" || w == "定" && prev == "一":
		return "sure"
	}
	return ""
}

// condLater reports 才 or 就 after i in its clause: 只有…才 is a condition.
func (s *vsig) condLater(i int) bool {
	for j := i + 1; j < len(s.seq) && s.seq[j].clause == s.seq[i].clause; j++ {
		if s.seq[j].low == "才" || s.seq[j].low == "就" {
			return true
		}
	}
	return false
}

// hanBefore reports the character ch in seq[from:i].
func hanBefore(seq []vunit, from, i int, ch string) bool {
	return slices.ContainsFunc(seq[from:i], func(u vunit) bool { return u.low == ch })
}

// douAlready reports the 都 at i that means already, not all: before a
// number of time, at most three characters on (都两个月了, 都已经三天了, 都快一年了,
// 都过了一周).
func douAlready(seq []vunit, i int) bool {
	for k := i + 1; k < len(seq) && k <= i+3 && seq[k].clause == seq[i].clause; k++ {
		w := seq[k].low
		if oneOf(hanNumerals, w) || isDigits(w) || oneOf("半几", w) {
			return true
		}
		if !oneOf("快已经过了", w) {
			return false
		}
	}
	return false
}

// everyTime reports a 每 before i in seq[from:i] that counts times (每天,
// 每周, 每个月, 每次): a 都 after it says always, not all of them (每个员工都 is
// all of them).
func everyTime(seq []vunit, from, i int) bool {
	for k := from; k < i; k++ {
		if seq[k].low != "每" {
			continue
		}
		next := ""
		if k+1 < i {
			next = seq[k+1].low
		}
		if next == "个" && k+2 < i {
			next = seq[k+2].low
		}
		if oneOf("天周月年次回晚日早星礼小", next) {
			return true
		}
	}
	return false
}

// someDoes reports what may follow 有的 or 有人 after their noun when they
// say some of them do it: a verb, an adjective, a modal or an adverb
// (货有的破损了, 同学有人及格了, 商品有的可以退), not a noun (店里有的东西, what it has).
func someDoes(next string) bool {
	return text.HanVerbal(next) || oneOf("可能会要需得已不没还也在正都无被把", next)
}

// existentialDe reports 有 at i that asks whether any of them does it: its
// clause ends in 的, before a final particle (这些订单有付款的吗, 有没有发出去的),
// or in 的 and a noun of up to three characters (菜单上有清真的菜吗: are any
// of the dishes halal).
func existentialDe(seq []vunit, i int) bool {
	last := i
	for j := i + 1; j < len(seq) && seq[j].clause == seq[i].clause; j++ {
		if seq[j].low != "" && !oneOf("吗呢吧啊呀", seq[j].low) {
			last = j
		}
	}
	for k := last; k > i+1 && k >= last-3; k-- {
		if seq[k].low == "的" {
			return true
		}
		if !isHanTok(seq[k].low) {
			return false
		}
	}
	return false
}

// modalsCompared reports a question whose modals ask something of their
// own: not a plain how or when ("How should I" asks what "How can I"
// asks, "When should I expect it" what "When can I expect it" asks), nor
// a modal before do or a verb of asking someone ("What can I do to …" =
// "What should I do to …", "Who can I contact …" = "Who should I …").
func modalsCompared(s vsig) bool {
	return s.qtype != "when" && !(s.qtype == "how" && s.howManner) && !s.modalAsksWhom
}

// qtypesFit reports two kinds of question that ask the same: "which"
// against who, where or when ("which person", "in which location", "on
// which day"); how long (多久) against when or how many (多少天); a price
// (多少钱) against a bare how much (运费多少), not against a count of
// units (一盒有几个).
func qtypesFit(q, s vsig) bool {
	a, b := q.qtype, s.qtype
	if a > b {
		a, b = b, a
		q, s = s, q
	}
	switch a + "/" + b {
	case "when/which", "where/which", "which/who", "which/whose":
		return true
	case "duration/when":
		return !s.clock // 多久能到 = 什么时候能到; 几点 asks the clock
	case "count/duration":
		return q.timeCount // 多少天 = 多久; 几次 is no length of time
	case "count/price":
		return !q.units
	}
	return false
}

// whatNoun reports "what" before a noun ("What customers have overdue
// invoices?"): which ones, not what it is.
func whatNoun(lower []string) bool {
	for i, w := range lower {
		if w == "what" && i+1 < len(lower) {
			n := lower[i+1]
			return n[0] < utf8.RuneSelf && !functionWords[n] && !auxiliaries[n] && roleMarkers[n] == "" && !strings.Contains(n, "'") && !isDigits(n) &&
				!quantityNouns[n] // "What amount can I withdraw?" asks how much
		}
	}
	return false
}

// openingModal is the class of the opening auxiliary, with "Do I have
// to …" read as an obligation, as "Must I …" is, "Do I need to …" as a
// need (either: modalsAlike), and "Do I get to …" as "Can I …". "Should
// I …" asks for advice: "Do I have to report it?" / "Should I report it?"
// differ when the law says no and prudence yes.
func (s *vsig) openingModal() string {
	switch {
	case s.modal == "future" && s.modals&1 != 0:
		return "ability" // will you, will I be able to: can
	case s.modal == "present" && s.modals&2 != 0 && s.haveTo:
		return "obligation" // do I have to: must I
	case s.modal == "present" && s.modals&2 != 0:
		return "need" // do I need to: either must I or should I
	case s.modal == "present" && s.modals&1 != 0:
		return "ability" // do I get to: can I
	}
	return s.modal
}

// demonstrativeThat reports a "that" that points at something ("What is
// that noise?"), not one that opens a clause ("a charge that I don't
// recognize", "the bill that was sent").
func demonstrativeThat(lower []string) bool {
	for i, w := range lower {
		if w != "that" || relativeWord(w, prevWord(lower, i)) {
			continue // "an item that arrived damaged"
		}
		if i+1 >= len(lower) {
			return true
		}
		if n := lower[i+1]; persons[n] == "" && !auxiliaries[n] && !passiveAux[n] && !strings.Contains(n, "'") {
			return true
		}
	}
	return false
}

// quantityNouns after what ask how many or how much (and what reason
// asks why): not which.
var quantityNouns = setOf("amount amounts number quantity total sum price cost costs percentage percent fee fees rate reason reasons purpose")

// hanUnitsAsked reports a Chinese question that counts units: 几 or 多少
// before a classifier (几个, 多少件, 几天).
func hanUnitsAsked(zh string) bool {
	if hanCountQuestion(zh) {
		return true
	}
	for i := 0; ; {
		j := strings.Index(zh[i:], "多少")
		if j < 0 {
			return false
		}
		i += j + len("多少")
		if r, n := utf8.DecodeRuneInString(zh[i:]); strings.ContainsRune(hanClassifiers, r) && !(r == '块' && strings.HasPrefix(zh[i+n:], "钱")) {
			return true // not 多少块钱, a price
		}
	}
}

// hanTimeCount reports a Chinese count of units of time: 几 or 多少,
// perhaps 个, then 天, 年, 月, 周, 星期, 小时, 分钟 (多少天, 几个月).
func hanTimeCount(zh string) bool {
	for _, q := range []string{"几", "多少"} {
		for i := 0; ; {
			j := strings.Index(zh[i:], q)
			if j < 0 {
				break
			}
			i += j + len(q)
			rest := strings.TrimPrefix(zh[i:], "个")
			for _, u := range []string{"天", "年", "月", "周", "星期", "小时", "分钟", "礼拜"} {
				if strings.HasPrefix(rest, u) {
					return true
				}
			}
		}
	}
	return false
}

// hanDefinition reports a Chinese question that asks what something is:
// 什么是 (not 为什么是), 啥是, 什么意思. (X是什么 may ask X's value, as
// X是多少 does: WiFi密码是什么.)
func hanDefinition(zh string) bool {
	if strings.Contains(zh, "什么意思") || strings.HasPrefix(zh, "啥是") {
		return true
	}
	for i := 0; ; {
		j := strings.Index(zh[i:], "什么是")
		if j < 0 {
			break
		}
		if !strings.HasSuffix(zh[:i+j], "为") {
			return true
		}
		i += j + len("什么是")
	}
	return false
}

// modalsAlike reports two opening classes that ask the same: a need (do I
// need to) asks what an obligation (must I, do I have to) or advice
// (should I) asks, and those two differ from each other.
func modalsAlike(a, b string) bool {
	return a == b || a == "need" && (b == "obligation" || b == "advice") || b == "need" && (a == "obligation" || a == "advice")
}

// lastQuestionModal is the opening class (openingModal) of the last
// sentence of q when it is a yes/no question and a statement comes before
// it ("We agreed to settle it
// ourselves. Do I have to report it?"), or "" for one sentence: the
// opening auxiliary is read at the start of the question, where such a
// question has its context.
func lastQuestionModal(q string) string {
	q = strings.TrimSpace(q)
	cut := -1
	for i := 0; i+1 < len(q); i++ {
		if sentenceEndAt(q, i) {
			cut = i + 1
		}
	}
	if cut < 0 {
		return ""
	}
	last := q[cut:]
	words := strings.FieldsFunc(strings.ToLower(last), func(r rune) bool { return !unicode.IsLetter(r) && r != '\'' })
	if len(words) == 0 || !auxiliaries[words[0]] {
		return "" // an open question: "What can I do" asks what "What should I do" asks
	}
	aux, _ := text.OpeningOf(last)
	m := vsig{modal: modalClass[aux]}
	for i, w := range words {
		next := ""
		if i+1 < len(words) {
			next = words[i+1]
		}
		m.modals |= modalBits(w, next)
		m.haveTo = m.haveTo || (w == "have" || w == "has") && next == "to"
	}
	return m.openingModal()
}

// hanGradable are Chinese gradable adjectives by the scale they measure
// and their direction on it, the predicate of a comparison with 比 (A比B多
// / A比B少, 比去年早 / 比去年晚).
var hanGradable = map[rune]string{
	'多': "+多少", '少': "-多少", '大': "+大小", '小': "-大小", '高': "+高低", '低': "-高低",
	'长': "+长短", '短': "-长短", '快': "+快慢", '慢': "-快慢", '早': "+早晚", '晚': "-早晚",
	'重': "+轻重", '轻': "-轻重", '远': "+远近", '近': "-远近", '强': "+强弱", '弱': "-强弱",
	'贵': "+贵贱", '便': "-贵贱", '厚': "+厚薄", '薄': "-厚薄", '深': "+深浅", '浅': "-深浅",
	'宽': "+宽窄", '窄': "-宽窄", '热': "+冷热", '冷': "-冷热", '胖': "+胖瘦", '瘦': "-胖瘦",
	'好': "+好坏", '坏': "-好坏", '差': "-好坏", '新': "+新旧", '旧': "-新旧", '难': "+难易", '易': "-难易",
}

// hanComparison is the predicate of a comparison with 比: its adjective,
// and the scale and direction it measures (hanGradable).
type hanComparison struct {
	adjective rune
	scale     string // "+多少", "-多少": the direction, then the scale
}

// hanComparisons returns, for each 比 of q that compares two things
// (hanThan), the predicate of its comparison: the last gradable adjective
// of its clause (比系统记录的要少: 少), leaving out 多 that asks how much or
// how far (多少, 多久, 多大: the adjective after it is the predicate, 比去年大多少
// is 大), and 便 only before 宜.
func hanComparisons(q string) []hanComparison {
	if !strings.ContainsRune(q, '比') {
		return nil
	}
	rs := []rune(q)
	toks := make([]string, len(rs))
	for i, r := range rs {
		toks[i] = string(r)
	}
	var out []hanComparison
	for i, r := range rs {
		if r != '比' || !hanThan(toks, i) {
			continue
		}
		var c hanComparison
		for j := i + 1; j < len(rs) && !strings.ContainsRune("，,。.？?！!；;吗呢", rs[j]); j++ {
			d, ok := hanGradable[rs[j]]
			switch {
			case !ok, rs[j] == '便' && (j+1 >= len(rs) || rs[j+1] != '宜'):
				continue
			case rs[j] == '多' && j+1 < len(rs) && (rs[j+1] == '少' || rs[j+1] == '久' || hanGradable[rs[j+1]] != ""):
				continue // 多少, 多久, 多大: how much, how long, how big
			case rs[j] == '少' && rs[j-1] == '多':
				continue
			}
			c = hanComparison{adjective: rs[j], scale: d}
		}
		if c.scale != "" {
			out = append(out, c)
		}
	}
	return out
}

// comparisonsOpposed returns the first place where two lists of
// comparisons (hanComparisons) measure the same scale in opposite
// directions, or -1.
func comparisonsOpposed(a, b []hanComparison) int {
	for i := range min(len(a), len(b)) {
		if x, y := a[i].scale, b[i].scale; x[1:] == y[1:] && x[0] != y[0] {
			return i
		}
	}
	return -1
}

// leAsked reports a question that is the other one with a 了 before its
// final particle or a break added (今天发货了吗 / 今天发货吗, 居民医保还交了吗 /
// 还交吗): whether it has happened against whether it happens.
func leAsked(a, b string) bool {
	return removedOnce(a, b, "了", func(_, after string) bool {
		r, _ := utf8.DecodeRuneInString(after)
		return after == "" || strings.ContainsRune("吗呢没么嘛，,。.？?！!；; ", r)
	})
}

// hanFirstAgo counts the 前 of q that open a count (前三个月: the first
// three months, 前10名) and those that close a span of time (三个月前:
// three months ago).
func hanFirstAgo(q string) (first, ago int) {
	if !strings.Contains(q, "前") {
		return 0, 0
	}
	rs := []rune(q)
	for i, r := range rs {
		if r != '前' {
			continue
		}
		if i+1 < len(rs) && (rs[i+1] >= '0' && rs[i+1] <= '9' || strings.ContainsRune("一二两三四五六七八九十几半", rs[i+1])) {
			first++
		}
		if i > 0 && strings.ContainsRune("年月天日周时钟秒", rs[i-1]) && i > 1 && !strings.ContainsRune("上下这那本每", rs[i-2]) {
			ago++
		}
	}
	return first, ago
}

// imminentAdded reports a question that is the other one with 要, 快, 快要,
// 就要 or 马上 added before a 了 (会员要到期了 / 会员到期了, 订单要发货了 /
// 订单发货了), or put where the other says 已经 or 已 (快递要被退回了 /
// 快递已经被退回了): about to happen against done; not 快 / 快要, both about to.
func imminentAdded(a, b string) bool {
	for _, done := range []string{"", "已经", "已"} {
		for _, m := range []string{"快要", "就要", "马上", "要", "快"} {
			at := func(before, after string) bool {
				return strings.Contains(after, "了") && !strings.HasSuffix(before, "快") && !strings.HasSuffix(before, "就") && !strings.HasSuffix(before, "马上") &&
					!strings.HasPrefix(after, "要") && !strings.HasPrefix(after, "快")
			}
			if done == "" && removedOnce(a, b, m, at) ||
				done != "" && withoutEach(b, done, func(before, after string) bool { return removedOnce(a, before+after, m, at) }) {
				return true
			}
		}
	}
	return false
}

// scopeReplaced reports 都, 也, 只 or 仅 replaced by another of them in a
// at sp, all else equal (这些商品都包邮吗 / 这些商品也包邮吗): all, also and only; not after a
// question word or 一点, where 都 and 也 both say any (怎么都打不通 =
// 怎么也打不通, 一点都不 = 一点也不).
func scopeReplaced(a string, sp textSpan) (string, string, bool) {
	x, y, at := sp.x, sp.y, sp.at
	if !sp.ok || len(x) != len("都") || !strings.Contains("都也只仅", x) || !strings.Contains("都也只仅", y) || strings.Contains("只仅", x) && strings.Contains("只仅", y) {
		return "", "", false
	}
	if at > 0 && strings.ContainsRune("么谁哪啥几点", []rune(a)[at-1]) {
		return "", "", false
	}
	return x, y, true
}

// bareFinite reports verb in its base form used as a finite present in s:
// right after its subject, after no auxiliary, modal or to ("Which orders
// ship today?", where another question has it past: "Which orders shipped
// today?").
func (s *vsig) bareFinite(verb string) bool {
	for i := range s.seq {
		u := s.seq[i]
		if u.low == verb && u.unit && !u.named {
			if i == 0 {
				return false
			}
			prev := s.seq[i-1].low
			return s.seq[i-1].unit && !notFinite[prev] && !quantifiers[prev] && prev != "much" && !numberish(prev) && !slices.ContainsFunc(s.seq[:i], func(p vunit) bool {
				return auxiliaries[p.low] || modalBits(p.low, "") != 0 || p.low == "to" || strings.HasSuffix(p.low, "n't") || p.low == "not" || p.low == "never"
			})
		}
	}
	return false
}

// gradedAdjective reports a word with an antonym facet that is no verb
// and no numeral (cheap, new, large): before a word that could be a verb,
// it makes that word its noun ("cheap flights and hotels" / "flights and
// cheap hotels").
func gradedAdjective(w string) bool { return !text.IsVerb(w) && !numberish(w) && text.HasAntonym(w) }

// removedOnce reports b as a with one occurrence of m taken out, where
// at allows it given the text before and after that occurrence.
func removedOnce(a, b, m string, at func(before, after string) bool) bool {
	return len(a) == len(b)+len(m) && withoutEach(a, m, func(before, after string) bool { return before+after == b && at(before, after) })
}

// withoutEach calls f with the text before and after each occurrence of
// m in a, in order, until f returns true; it reports whether one did.
func withoutEach(a, m string, f func(before, after string) bool) bool {
	for k := strings.Index(a, m); k >= 0; {
		if f(a[:k], a[k+len(m):]) {
			return true
		}
		j := strings.Index(a[k+len(m):], m)
		if j < 0 {
			break
		}
		k += len(m) + j
	}
	return false
}

// conditionAdded reports a question that is the other one opened by a
// condition (要是我去年把股票卖了，… / 我去年把股票卖了，…; "If I sold …" / "I
// sold …"): a supposition against a fact.
func conditionAdded(a, b string) bool {
	clauseStart := func(before, _ string) bool {
		before = strings.TrimRight(before, " ")
		r, _ := utf8.DecodeLastRuneInString(before)
		return before == "" || strings.ContainsRune("，,。.？?！!；;：:", r)
	}
	if d := len(a) - len(b); d != len("要是") && d != len("if ") {
		return false
	}
	a, b = strings.ToLower(a), strings.ToLower(b)
	for _, m := range []string{"要是", "如果", "假如", "假设", "万一", "倘若", "若是", "if "} {
		if removedOnce(a, b, m, clauseStart) {
			return true
		}
	}
	return false
}

// progressiveDone reports a question asking whether something is going on
// (巴黎圣母院在修复吗) against the other asking whether it is done (修复了吗): a
// with one 在 or 正在 taken out is b with its 了 before the final particle
// taken out.
func progressiveDone(a, b string) bool {
	for _, m := range []string{"正在", "在"} {
		if withoutEach(a, m, func(before, after string) bool { return leAsked(b, before+after) }) {
			return true
		}
	}
	return false
}

// prepositions are the English prepositions, each with the entry of the
// words that say alike (in the building = inside the building).
var prepositions = func() map[string]string {
	m := map[string]string{}
	for _, g := range strings.Fields(`about above across after against along among around at before behind below|beneath|underneath beside
		besides between beyond by despite down during except for from in|inside|within into|onto near of off on|upon opposite outside over past
		per since through|throughout till|until to toward|towards under up via with without`) {
		for w := range strings.SplitSeq(g, "|") {
			m[w] = g
		}
	}
	return m
}()

// lightPrepositions say little of their own: which one a question uses
// follows its noun (the rate on / for, speak to / with, pay with / in cash).
var lightPrepositions = setOf("in on at for to with by of from about into onto upon via per")

// clauseMood adds m to the moods of clause c (clauseModals).
func (s *vsig) clauseMood(c int, m mood) {
	if c >= len(s.clauseModals) {
		s.clauseModals = append(s.clauseModals, make([]mood, c+1-len(s.clauseModals))...)
	}
	s.clauseModals[c] |= m
}

// clauseAsks reports a question word in clause c (怎么, 哪里, 什么时候, how,
// where, when …).
func (s *vsig) clauseAsks(c int) bool {
	return slices.ContainsFunc(s.seq, func(u vunit) bool {
		return u.clause == c && (oneOf("怎哪谁啥几何什", u.low) || whWords[u.low])
	})
}

// textSpan is where two questions of one length in bytes differ, all
// else equal (spanReplaced): x in the one, y in the other, from the rune
// at on; ok is false when they differ otherwise.
type textSpan struct {
	x, y string
	at   int
	ok   bool
}

// spanReplaced returns the runs of a and b, of one length in bytes, that
// differ, all else equal: one run of at most two runes, or the same run
// replaced the same way wherever it stands (李想…李想 / 李明…李明), and the
// place in runes of its first one.
func spanReplaced(a, b string) textSpan {
	if len(a) != len(b) || a == b {
		return textSpan{}
	}
	ra, rb := []rune(a), []rune(b)
	if len(ra) != len(rb) {
		return textSpan{}
	}
	sp := textSpan{at: -1}
	for i := 0; i < len(ra); i++ {
		if ra[i] == rb[i] {
			continue
		}
		j := i
		for j < len(ra) && ra[j] != rb[j] {
			j++
		}
		if j-i > 2 || sp.x != "" && (string(ra[i:j]) != sp.x || string(rb[i:j]) != sp.y) {
			return textSpan{}
		}
		if sp.at < 0 {
			sp.at = i
		}
		sp.x, sp.y = string(ra[i:j]), string(rb[i:j])
		i = j
	}
	sp.ok = true
	return sp
}

// nowWords and thenWords say now and before (现在的支付密码 / 原来的支付密码).
var (
	nowWords  = setOf("现在 目前 当前 如今 现今")
	thenWords = setOf("原来 以前 之前 原先 过去 从前 先前")
)

// latinName reports a Latin word in Chinese text that names something
// (Plus, nova, Pro): no number, no unit or time the facets read (25kg,
// pm); an English antonym (pro) is a name there.
func latinName(w string) bool {
	return !strings.ContainsAny(w, "0123456789") && !slices.ContainsFunc(text.Facets(w), func(f string) bool { return !strings.HasPrefix(f, "ant.") })
}

// quoted returns the short runs of q between quotation marks (“了”,
// "beside", 「过」, 'whom'): words mentioned, what the question asks about.
func quoted(q string) []string {
	var out []string
	for _, pair := range []string{"“”", "\"\"", "「」", "『』", "《》"} {
		opening, closing := []rune(pair)[0], []rune(pair)[1]
		rest := q
		for {
			i := strings.IndexRune(rest, opening)
			if i < 0 {
				break
			}
			rest = rest[i+utf8.RuneLen(opening):]
			j := strings.IndexRune(rest, closing)
			if j < 0 {
				break
			}
			if utf8.RuneCountInString(rest[:j]) <= 12 {
				out = append(out, strings.ToLower(rest[:j])) // a word or a term, not a quoted sentence
			}
			rest = rest[j+utf8.RuneLen(closing):]
		}
	}
	// A word or a short phrase in single quotes ('who' vs 'whom', 'I have
	// eaten'), not an apostrophe (don't, the customers' orders): the quote
	// opens a word and closes one.
	for i := 0; i < len(q); i++ {
		if q[i] != '\'' || i > 0 && q[i-1] != ' ' && q[i-1] != '(' {
			continue
		}
		// The closing quote is the first one not inside a word: 'I'm hungry'
		// closes after hungry.
		end := -1
		for k := i + 1; k < len(q) && k <= i+41; k++ {
			if q[k] == '\'' && (k+1 == len(q) || strings.ContainsRune(" ?.,!;:)", rune(q[k+1]))) {
				end = k
				break
			}
		}
		if end <= i+1 || strings.Count(q[i+1:end], " ") > 5 {
			continue // a word or a short phrase ('I have eaten'), not a passage
		}
		out = append(out, strings.ToLower(q[i+1:end]))
		i = end
	}
	return out
}

// afterSharedContext returns what follows the sentences that q and s open
// with alike ("I was hired in May. When do I get my first paycheck?" /
// "I was hired in May. When did I get my first paycheck?"), when both
// have such sentences and something after them.
func afterSharedContext(q, s string) (string, string, bool) {
	shared := -1 // the end of the last shared sentence
	for i := 0; i < len(q) && i < len(s) && q[i] == s[i]; i++ {
		if sentenceEndAt(q, i) && sentenceEndAt(s, i) {
			_, n := utf8.DecodeRuneInString(q[i:])
			shared = i + n
		}
	}
	if shared <= 0 {
		return "", "", false
	}
	qt, st := strings.TrimSpace(q[shared:]), strings.TrimSpace(s[shared:])
	return qt, st, qt != "" && st != ""
}

// hanSpanReplaced returns the characters where two Chinese questions
// differ (sp), one or two in a row, all else equal (投诉电话 / 投保电话, 白天 / 夜里,
// 一审 / 终审), when one of them is a content character: function
// characters (没 / 不, 才 / 就, 什么 / 多少) are compared by the checks of
// grammar, and some say alike: particles (吗 / 么), 你 / 您, 帐 / 账, a
// container's 里 / 内 / 中 / 上 / 儿, 款 / 钱, 和 / 或, 如何 / 怎么 / 怎样, 非常 /
// 特别 / 十分 / 相当; the unit of a number is compared by the facets (一千美金 /
// 一千美元).
func hanSpanReplaced(q, s vsig, sp textSpan) (string, string, bool) {
	if !sp.ok {
		return "", "", false
	}
	x, y, at := sp.x, sp.y, sp.at
	rq, rs := []rune(q.text), []rune(s.text)
	xs, ys := []rune(x), []rune(y)
	for _, r := range append(xs, ys...) {
		if !text.IsHan(r) {
			return "", "", false
		}
	}
	if hanAlikeWords[x] != "" && hanAlikeWords[x] == hanAlikeWords[y] || len(xs) == 2 && xs[0] == ys[1] && xs[1] == ys[0] && (reversibleHan[x] || reversibleHan[y]) {
		return "", "", false // 互相 / 相互
	}
	content := false
	for i := range xs {
		k := at + i
		inWord := inHanWordAt(rq, k, true, true) || inHanWordAt(rs, k, true, true)
		next := ""
		if k+1 < len(rq) {
			next = string(rq[k+1])
		}
		if xs[i] == ys[i] || hanAlikeChars(xs[i], ys[i]) && !(containers(string(xs[i]), string(ys[i])) && (inWord || !containerEnds(next))) || alikeWithNeighbour(rq, rs, k) {
			continue // 怎样 / 怎么, 有的 / 有些, 之后 / 以后, 总是 / 老是
		}
		closed := strings.ContainsRune(hanFunction+hanClosed, xs[i]) && strings.ContainsRune(hanFunction+hanClosed, ys[i])
		if !closed || inHanWordAt(rq, k, i == 0, i == len(xs)-1) && inHanWordAt(rs, k, i == 0, i == len(xs)-1) {
			content = true // a content character, or a function one inside a word in both (查房 / 看房, 总公司 / 老公司)
		}
	}
	// 这 against 那 before a measure word or a noun (这家店 / 那家店, 这边 /
	// 那边): here against there; not 这么 / 那么, 这样 / 那样 (so, such).
	if len(xs) == 1 && oneOf2(x, y, "这", "那") && at+1 < len(rq) && !strings.ContainsRune("么样", rq[at+1]) {
		content = true
	}
	if !content {
		return "", "", false
	}
	// A unit right after a number: the facets read it (一千美金 / 一千美元).
	for k := max(at-2, 0); k < at; k++ {
		if rq[k] != '一' && numeralValue(string(rq[k])) >= 0 || strings.ContainsRune("十百千万亿", rq[k]) {
			return "", "", false // not the 一 of 一下
		}
	}
	return x, y, true
}

// alikeWithNeighbour reports the two-character words that the runes at k
// of a and b make with the rune before or after them, of one group of
// hanAlikeWords (总是 / 老是, 不太 / 不大).
func alikeWithNeighbour(a, b []rune, k int) bool {
	for _, w := range [][2]int{{k - 1, k + 1}, {k, k + 2}} {
		if w[0] >= 0 && w[1] <= len(a) {
			x, y := string(a[w[0]:w[1]]), string(b[w[0]:w[1]])
			if g := hanAlikeWords[x]; g != "" && g == hanAlikeWords[y] {
				return true
			}
		}
	}
	return false
}

// inHanWordAt reports the rune at k of rs inside a two-character word of
// jieba's table with the rune before it (when left) or after it (when
// right): 查 of 查房.
func inHanWordAt(rs []rune, k int, left, right bool) bool {
	return left && k > 0 && text.HanWord(string(rs[k-1:k+1])) || right && k+1 < len(rs) && text.HanWord(string(rs[k:k+2]))
}

// hanClosed are closed-class characters beside hanFunction that the
// grammar checks read (才 / 就, 十余 / 十几, 的 / 些, 必须 / 非得, 马上 / 快要),
// and classifiers (几张 / 几个, 几回 / 几次).
const hanClosed = "才余的地得需否无论管所每快马上必须非应该最全日天样二两个张回次条件只位本台辆"

// hanAlikeWords are two-character words that say alike, by group.
var hanAlikeWords = map[string]string{
	"如何": "how", "怎么": "how", "怎样": "how",
	"非常": "very", "特别": "very", "十分": "very", "相当": "very",
	"无论": "any", "不论": "any", "不管": "any",
	"之后": "after", "以后": "after", "之前": "before", "以前": "before",
	"哪里": "where", "哪儿": "where", "这里": "here", "这儿": "here", "那里": "there", "那儿": "there",
	"有的": "some", "有些": "some", "其他": "other", "其它": "other", "别的": "other",
	"总是": "always", "老是": "always", "不太": "not very", "不大": "not very",
	"应该": "should", "应当": "should", "最好": "should",
}

// hanAlikeChars reports two characters that say alike wherever they stand
// (hanAlikeGroups), and particles, 和 / 或, 至 / 到, 仍 / 还.
func hanAlikeChars(a, b rune) bool {
	for _, groups := range [][]string{hanAlikeGroups, {hanParticles, "和或及与跟", "至到", "仍还"}} {
		for _, g := range groups {
			if strings.ContainsRune(g, a) && strings.ContainsRune(g, b) {
				return true
			}
		}
	}
	return false
}

// sentenceEndAt reports a sentence ending at byte i of t: 。？！； or . ? ! ;
// before a space or the end ("Node.js" and "3.5" end none).
func sentenceEndAt(t string, i int) bool {
	r, n := utf8.DecodeRuneInString(t[i:])
	switch r {
	case '。', '？', '！', '；':
		return true
	case '.', '?', '!', ';':
		return i+n == len(t) || t[i+n] == ' '
	}
	return false
}

// objectMadeDoer reports a participant right after a verb in p (its
// object, past a determiner or possessive) that stands before the same
// verb in o, where a personal pronoun follows it instead ("How do I
// forgive my partner?" / "How do I get my partner to forgive me?"), or
// where a personal pronoun does it in p ("How much notice do I have to
// give the utility?" / "… does the utility have to give?"): who does it
// to whom changed. It returns the participant and the verb.
func objectMadeDoer(p, o vsig) (string, string, bool) {
	for k, u := range p.seq {
		j, ok := o.index[u.text]
		if !ok || !u.unit || u.named || u.rep || o.seq[j].rep || !text.IsVerb(u.low) {
			continue
		}
		n := p.nextUnit(k)
		m := o.nextUnit(j)
		if n < 0 || strings.HasPrefix(p.seq[n].text, "p:") {
			continue
		}
		b, ok := o.index[p.seq[n].text]
		if !ok || b >= j || p.seq[n].rep {
			continue
		}
		// A pronoun after the verb in o ("get my partner to forgive me"), or
		// a pronoun doing it in p where the participant does it in o ("do I
		// have to give the utility" / "does the utility have to give").
		if m >= 0 && strings.HasPrefix(o.seq[m].text, "p:") || p.doerOf(k) >= 0 && strings.HasPrefix(p.seq[p.doerOf(k)].text, "p:") && o.doerOf(j) == b {
			return p.seq[n].word, u.word, true
		}
	}
	return "", "", false
}

// doerOf returns the place of the unit right before the verb at seq[k],
// past auxiliaries, modals, have, need, to and not only (I have to give,
// the utility has to give), or -1.
func (s *vsig) doerOf(k int) int {
	for i := k - 1; i >= 0 && s.seq[i].clause == s.seq[k].clause; i-- {
		switch w := s.seq[i].low; {
		case s.seq[i].unit && !verbChain[w]:
			return i
		case !auxiliaries[w] && modalBits(w, "") == 0 && !verbChain[w]:
			return -1
		}
	}
	return -1
}

// verbChain are the words between a subject and its verb besides the
// auxiliaries and modals.
var verbChain = setOf("have has had need needs to not")

// nextUnit returns the place of the unit after seq[k] in its clause, past
// determiners (possessives among them) only, or -1.
func (s *vsig) nextUnit(k int) int {
	for i := k + 1; i < len(s.seq); i++ {
		u := s.seq[i]
		switch {
		case u.unit:
			return i
		case u.clause != s.seq[k].clause || !text.IsDeterminer(u.low):
			return -1
		}
	}
	return -1
}

// whatIsAsked reports a question that opens with what is, are, was or
// were (or what's): what a thing is, unless it names a way to do
// something ("What is the best way to …", "What are the steps to …").
func whatIsAsked(lower []string) bool {
	if len(lower) < 2 || lower[0] != "what's" && (lower[0] != "what" || !presentBe(lower[1]) && lower[1] != "was" && lower[1] != "were") {
		return false
	}
	return !slices.ContainsFunc(lower, func(w string) bool { return mannerNouns[w] })
}

// mannerNouns name a way to do something: "What is the way to …" asks how.
var mannerNouns = setOf("way ways process procedure procedures steps step method methods how instructions trick tricks fastest quickest easiest best")

// sameLightWords reports q and s with the same light words in the same
// order (lightEdit), read without copying either: undone, they would
// differ as they do.
func sameLightWords(q, s vsig, aux bool) bool {
	i, j := 0, 0
	for {
		for i < len(q.seq) && lightEdit(q, i, aux) == "" {
			i++
		}
		for j < len(s.seq) && lightEdit(s, j, aux) == "" {
			j++
		}
		if i == len(q.seq) || j == len(s.seq) {
			return i == len(q.seq) && j == len(s.seq)
		}
		if q.seq[i].low != s.seq[j].low {
			return false
		}
		i, j = i+1, j+1
	}
}

// lightUndone returns v (without its fillers) with the edits undone that
// leave an English question's ask as it was, or that the checks before
// read: the adverbs of emphasis (still, so, just, really, actually,
// currently, ever, at all), and with aux, have to, has to, required to =
// need to, the auxiliaries and modals as one (does / will, how do / how
// can: the tense and modal checks compare them) and a modal said around
// (withoutPeriphrasis). Undone, two questions may only be told apart,
// never made one.
func lightUndone(v vsig, aux bool) vsig {
	seq := make([]vunit, 0, len(v.seq))
	for i, u := range v.seq {
		switch w := lightEdit(v, i, aux); w {
		case "":
		case "-":
			continue
		default:
			u.low, u.word, u.text = w, w, w
		}
		seq = append(seq, u)
	}
	if aux {
		seq = withoutPeriphrasis(seq)
	}
	v.seq = seq
	return v
}

// withoutPeriphrasis takes out of seq (its auxiliaries written "aux:")
// what says a modal around it: an adjective of one before to (able to,
// possible to, okay to), the it or there before that, and the subject
// right after an opening auxiliary (Can I / Is it possible to / Am I able
// to keep the dog).
func withoutPeriphrasis(seq []vunit) []vunit {
	out := seq[:0:0]
	for i := 0; i < len(seq); i++ {
		u := seq[i]
		next := func(k int) string {
			if i+k < len(seq) {
				return seq[i+k].low
			}
			return ""
		}
		switch {
		case modalAdjectives[u.low] && next(1) == "to":
			i++ // and its to
			continue
		case (u.low == "it" || u.low == "there") && modalAdjectives[next(1)] && next(2) == "to":
			continue
		case u.low == "there" && next(1) == "way" && next(2) == "to":
			i += 2 // is there a way to: can
			continue
		case strings.HasPrefix(u.text, "p:") && len(out) > 0 && out[len(out)-1].low == "aux:" && (len(out) == 1 || out[len(out)-2].text[0] == '|'):
			continue
		}
		out = append(out, u)
	}
	return out
}

// auxVerbs come with an auxiliary changed (did get declined, does stay
// open, does look blue, does it last / cost / weigh = how long / much is
// it): a word of the voice, the tense, a copula or a measure, not of what
// is asked.
var auxVerbs = setOf("get got gets getting stay stays remain remains keep keeps become becomes be been being have has had look looks seem seems appear appears feel feels sound sounds last lasts cost costs weigh weighs")

// modalAdjectives say with to what a modal says (able to, okay to: can).
var modalAdjectives = setOf("possible able okay ok alright allowed permitted necessary mandatory required")

// withoutLightAdverbs returns v (without its fillers) without its adverbs
// of emphasis.
func withoutLightAdverbs(v vsig) vsig {
	if !slices.ContainsFunc(v.seq, func(u vunit) bool { return lightAdverbs[u.low] || u.low == "so" || u.low == "at" }) {
		return v
	}
	return lightUndone(v, false)
}

// lightEdit returns what lightUndone writes for the token at i of
// v: "-" for none, a word for another, "" to keep it.
func lightEdit(v vsig, i int, aux bool) string {
	u := v.seq[i]
	switch {
	case lightAdverbs[u.low] || u.low == "so" && (i+1 == len(v.seq) || !soPhrases[v.seq[i+1].low]),
		u.low == "at" && i+1 < len(v.seq) && v.seq[i+1].low == "all", u.low == "all" && i > 0 && v.seq[i-1].low == "at",
		u.low == "right" && i+1 < len(v.seq) && v.seq[i+1].low == "now":
		return "-" // at all, right now: emphasis too
	case !aux:
	case (u.low == "have" || u.low == "has" || u.low == "needs" || u.low == "required") && i+1 < len(v.seq) && v.seq[i+1].low == "to":
		return "need"
	case lightAuxiliaries[u.low]:
		return "aux:"
	}
	return ""
}

// heldAsked returns "now" or "then" for a wh-question that asks, with is
// or was, who holds an office ("Who is the prime minister of …", "Who was
// the head coach of …"): today's holder and a past one differ. "" for any
// other question ("Who was Albert Einstein?" and "Who was the first
// president?" ask the same as "Who is …").
func heldAsked(lower []string) string {
	i := 0
	switch {
	case len(lower) > 2 && (lower[0] == "who" || lower[0] == "what" || lower[0] == "where" || lower[0] == "which"):
		i = 1
	case len(lower) > 3 && lower[0] == "how" && (lower[1] == "much" || lower[1] == "many"):
		i = 2
	default:
		return ""
	}
	if lower[i+1] != "the" {
		return ""
	}
	// The description names a person's office (the head coach, the prime
	// minister), not a first or a last one, whom no time changes.
	office := false
	for _, w := range lower[i+2:] {
		if roleMarkers[w] != "" || w == "to" || w == "who" || w == "that" {
			break
		}
		if fixedOffices[w] || ordinalDigits(w) || strings.HasSuffix(w, "est") {
			return ""
		}
		office = office || text.IsPerson(w)
	}
	if !office {
		return ""
	}
	switch lower[i] {
	case "is", "are":
		return "now"
	case "was", "were":
		return "then"
	}
	return ""
}

// fixedOffices name one holder of an office whom no time changes (the
// first, the founding, the former president).
var fixedOffices = setOf("first second third fourth fifth sixth seventh eighth ninth tenth last only most former previous founding original late next")

// lightAdverbs add emphasis, not meaning, to a question ("Can I still
// return it?"), as so does before any word but soPhrases' (so far, so
// much, so that); lightAuxiliaries are the auxiliaries and modals
// lightUndone writes as one.
var (
	lightAdverbs     = setOf("still just really actually currently ever now already")
	soPhrases        = setOf("far much many long that as few little")
	lightAuxiliaries = setOf("is are am was were do does did can could will would should shall may might must")
)

// sameVerb reports two forms of one English verb (get / getting, arrive /
// arrived).
func sameVerb(a, b string) bool {
	v := verbOf(a)
	return v != "" && v == verbOf(b)
}

// conditionAppended reports a question that is the other one with an if-
// or unless-clause added at its end ("Do we have to go through probate?" /
// "Do we have to go through probate if there's a will?"): an answer for
// every case against one for that case. a and b are without their fillers.
func conditionAppended(a, b vsig) bool {
	k := slices.IndexFunc(a.seq, func(u vunit) bool { return u.low == "if" || u.low == "unless" })
	if k <= 0 || k >= len(a.seq)-1 {
		return false
	}
	trim := func(seq []vunit) []vunit {
		for len(seq) > 0 && seq[len(seq)-1].text[0] == '|' {
			seq = seq[:len(seq)-1]
		}
		return seq
	}
	x, y := trim(a.seq[:k]), trim(b.seq)
	return len(x) == len(y) && len(x) > 0 && !slices.ContainsFunc(x, func(u vunit) bool { return u.low == "if" }) &&
		slices.EqualFunc(x, y, func(p, q vunit) bool { return p.low == q.low })
}

// replacedBy reports instead of, rather than or in place of in one
// English question only: a thing taken in another's place, against one
// taken with it or alone ("Can I take it with ibuprofen?" / "Can I take it
// instead of ibuprofen?").
func replacedBy(a, b vsig) bool {
	has := func(v vsig) bool {
		for i := 0; i+1 < len(v.seq); i++ {
			w, next := v.seq[i].low, v.seq[i+1].low
			if w == "instead" || w == "rather" && next == "than" || w == "place" && next == "of" || strings.HasPrefix(w, "substitut") || strings.HasPrefix(w, "replac") || strings.HasPrefix(w, "swap") {
				return true
			}
		}
		return false
	}
	return a.latin && b.latin && has(a) != has(b)
}

// hanLightForms are the Chinese forms withoutHanLightEdits writes
// shorter: an A-not-A question as its A (是不是 is kept apart from the
// 是 taken out, as \x01), 可以 as 能, 请问, 现在 and 一下 left out, 看看 as 看.
var hanLightForms = strings.NewReplacer("请问", "", "是不是", "\x01", "有没有", "有", "能不能", "能", "会不会", "会", "要不要", "要", "可不可以", "能", "可以", "能", "现在", "", "一下", "", "看看", "看")

// hanAskFrames open a Chinese question by saying that it asks, as the
// English ask frames do (I want to know, can you check).
var hanAskFrames = []string{"我想知道", "想知道", "我想问一下", "我想问", "想问一下", "想问", "请帮我看看", "请帮我查一下", "请帮我查查", "帮我看看", "帮我查一下", "帮我查查", "麻烦问一下", "麻烦你", "麻烦您", "不好意思"}

// hanUnframed returns a Chinese question without what frames it and that
// the embedder drops: greetings and thanks at either end, an ask frame at
// its start (hanAskFrames), a final 呢, 啊 or 呀 (not 吗, which asks yes
// or no) and the punctuation left before a thanks; 你好，这家店周日开门吗 and
// 我想知道这家店周日开门吗，谢谢 are 这家店周日开门吗.
func hanUnframed(q string) string {
	if isASCII(q) || strings.IndexFunc(q, text.IsHan) < 0 {
		return q // English greetings may be what is asked (translate to French: thank you); the verification reads them
	}
	q = strings.TrimSpace(q)
	ends := "呢啊呀，,、；; "
	if lower := strings.ToLower(q); len(lower) == len(q) { // greetings are matched in lower case (Hello，快递到了吗), cut from q as written
		if t := text.TrimGreetings(lower); t != lower {
			i := strings.Index(lower, t)
			q, ends = q[i:i+len(t)], ends+"？?！!。." // what a greeting or thanks left: 到了吗？谢谢 is 到了吗
		}
	}
	for again := true; again; {
		again = false
		for _, f := range hanAskFrames {
			if rest, ok := strings.CutPrefix(q, f); ok && rest != "" && !strings.HasPrefix(rest, "们") && !strings.HasPrefix(rest, "题") { // 麻烦你们店, 想问题: no frame
				q, again = strings.TrimLeft(rest, "，, "), true
				break
			}
		}
	}
	return strings.TrimRightFunc(q, func(r rune) bool { return strings.ContainsRune(ends, r) }) // 吗 stays: it asks yes or no
}

// withoutHanLightEdits returns q with the edits that leave a Chinese
// question's ask as it was undone (the A-not-A form as its A, 现在 and
// 一下 left out, 是…的 and a 会 of will left out), and whether it
// had one: two questions that differ in one word beside such an edit
// are compared as the one-word checks compare them (这家店几点关门 / 那家店是几点关门的).
func withoutHanLightEdits(q string) (string, bool) {
	light := hanLightForms.Replace(q) // q is a reading's text: signature took its frames off (hanUnframed)
	rs := []rune(light)
	out := make([]rune, 0, len(rs))
	for i, r := range rs {
		prev, next := rune(0), rune(0)
		if i > 0 {
			prev = rs[i-1]
		}
		if i+1 < len(rs) {
			next = rs[i+1]
		}
		switch {
		case r == '的' && (next == 0 || !text.IsHan(next) || strings.ContainsRune(hanParticles, next)): // the 的 of 是…的 ends its clause; a modifier's 的 stays (开会的时候 / 开会期间)
			continue
		case (r == '是' || r == '会') && !strings.ContainsRune("就但可总还要于凡只不也都若倒", prev) && next != '否' &&
			!text.HanWord(string([]rune{prev, r})) && !text.HanWord(string([]rune{r, next})):
			continue // a copula or a modal will, not a word's (会员, 机会)
		case r == '\x01':
			r = '是'
		}
		out = append(out, r)
	}
	light = string(out)
	return light, light != q
}

// hanFunctionEdit compares two Chinese questions (without their light
// edits; sp is where they differ, spanReplaced) that differ in one
// function character, or in a span said as past it against within it,
// all else equal; "" when they do not:
//   - an adverb of time or scope for another (还 / 也 / 就 / 又 / 再 / 才 /
//     都 / 只: still, also, already, again, only), outside a word;
//   - a result after a verb in one only (考上 / 考, 办好 / 办), and 借给 /
//     借, 租给 / 租 (lent against borrowed);
//   - a negation added beside another, outside a word (非紧急 / 紧急);
//   - 又 or 再 (again) in one only: it happened before;
//   - who it is done for or from (帮, 替, 给, 跟, 问, 向, 找 opening a clause;
//     为 or 替 anywhere) in one only, or another of them (帮老公还信用卡 /
//     老公还信用卡, 跟同事借的钱 / 同事借的钱): who does it changes;
//   - included (包括, 包含) against there is (有), in a question;
//   - the negation on another verb (没收到传票 / 收到传票没去);
//   - 过了 a span against within it (过了保质期 / 在保质期内);
//   - 麻烦吗 (is it a hassle) against a question of whether one may.
func hanFunctionEdit(a, b string, sp textSpan) (check, reason string) {
	const adverbs, again, openers = "还也就又再才都只仅", "又再", "帮替给跟问向找和与同把"
	ra, rb := []rune(a), []rune(b)
	inWord := func(rs []rune, k int) bool { return inHanWordAt(rs, k, true, true) }
	clauseStart := func(rs []rune, k int) bool {
		return k == 0 || strings.ContainsRune("，,。.？?！!；;：:", rs[k-1])
	}
	if sp.ok && utf8.RuneCountInString(sp.x) == 1 {
		x, y := []rune(sp.x)[0], []rune(sp.y)[0]
		switch {
		case strings.ContainsRune(adverbs, x) && strings.ContainsRune(adverbs, y) && !inWord(ra, sp.at) && !inWord(rb, sp.at) &&
			!(sp.at > 0 && strings.ContainsRune("么谁哪啥几点", ra[sp.at-1])): // 怎么都 = 怎么也: any
			return "scope", fmt.Sprintf("an adverb of time or scope differs: %c in the question, %c in the cached one (still, also, already, again, only)", x, y)
		case strings.ContainsRune(openers+"请", x) && strings.ContainsRune(openers+"请", y) && clauseStart(ra, sp.at) && !inWord(ra, sp.at) && !inWord(rb, sp.at):
			return "roles", fmt.Sprintf("who it is done for or by differs: %c in the question, %c in the cached one", x, y)
		}
	}
	for _, side := range [][2][]rune{{ra, rb}, {rb, ra}} {
		long, short := side[0], side[1]
		if len(long) != len(short)+1 {
			continue
		}
		k := 0
		for k < len(short) && long[k] == short[k] {
			k++
		}
		if !slices.Equal(long[k+1:], short[k:]) {
			continue
		}
		c := long[k]
		// A result after a verb (考上大学 / 考大学, 办好了 / 办了, 看中 / 看): achieved
		// against only attempted; 借给 / 借, 租给 / 租: lent against borrowed.
		if k > 0 && (strings.ContainsRune("上好中", c) && text.HanVerbal(string(long[k-1])) && !strings.ContainsRune("能可会要想得该需", long[k-1]) &&
			(k+1 == len(long) || !strings.ContainsRune("午下面次周个年月天", long[k+1]) && !text.HanWord(string(long[k:k+2]))) ||
			c == '给' && strings.ContainsRune("借租", long[k-1])) {
			return "tense", fmt.Sprintf("%c after %c is in one question only: done (or lent) against only tried (or borrowed)", c, long[k-1])
		}
		if inWord(long, k) {
			continue
		}
		switch {
		case strings.ContainsRune("不没非无未", c):
			return "negation", fmt.Sprintf("%c (not) is in one question only, beside another negation the facets count as one", c)
		case strings.ContainsRune(again, c):
			return "tense", fmt.Sprintf("%c (again) is in one question only: it happened before", c)
		case strings.ContainsRune(openers, c) && clauseStart(long, k),
			strings.ContainsRune("为替", c) && k+1 < len(long) && !strings.ContainsRune("什何啥了", long[k+1]) && (k == 0 || !strings.ContainsRune("因认成作称以行", long[k-1])):
			return "roles", fmt.Sprintf("%c (for, from) is in one question only: who it is done for or by changes", c)
		}
	}
	// Included in it (包括, 包含) against there is (有): 年薪包括年终奖吗 / 年薪有年终奖吗.
	for _, m := range []string{"包括", "包含", "含"} {
		if !strings.ContainsAny(a+b, "吗？?") {
			break // statements: 例子有 = 例子包括
		}
		if strings.Contains(a, m) && strings.Replace(a, m, "有", 1) == b || strings.Contains(b, m) && strings.Replace(b, m, "有", 1) == a {
			return "intent", "one question asks whether it is included (包括), the other whether there is one (有)"
		}
	}
	// One negation on another verb (没收到传票 / 收到传票没去): what did not happen.
	if strings.ContainsAny(a, "不没") && strings.ContainsAny(b, "不没") {
		if x, y := hanNegated(ra), hanNegated(rb); x != 0 && y != 0 && x != y && (strings.ContainsRune(a, y) || strings.ContainsRune(b, x)) {
			return "negation", fmt.Sprintf("the negation is on another verb: 不 or 没 before %c in the question, before %c in the cached one", x, y)
		}
	}
	if pastWithin(a, b) || pastWithin(b, a) {
		return "tense", "one question is past a span (过了保质期), the other within it (保质期内)"
	}
	if hanHassle(a) != hanHassle(b) {
		return "intent", "one question asks whether it is a hassle (麻烦吗), the other whether one may"
	}
	return "", ""
}

// pastWithin reports a span said past (过了 X, 超过 X, X 过了, X 过后) in a
// and within (X内, X之内, X以内) in b, X of two to four characters.
func pastWithin(a, b string) bool {
	rb := []rune(b)
	for i := range rb {
		if rb[i] != '内' {
			continue
		}
		for n := 2; n <= 4 && i-n >= 0; n++ {
			x := string(rb[i-n : i])
			for _, after := range []string{"过了", "过后", "以后", "之后", "结束后"} {
				if strings.Contains(a, x+after) && !strings.Contains(a, x+"内") {
					return true // 犹豫期过了 / 犹豫期内
				}
			}
		}
	}
	rs := []rune(a)
	for _, m := range []string{"过了", "超过", "超出"} {
		mr := []rune(m)
		for i := 0; i+len(mr) < len(rs); i++ {
			if string(rs[i:i+len(mr)]) != m {
				continue
			}
			for n := 2; n <= 4 && i+len(mr)+n <= len(rs); n++ {
				x := string(rs[i+len(mr) : i+len(mr)+n])
				if strings.Contains(b, x+"内") || strings.Contains(b, x+"之内") || strings.Contains(b, x+"以内") {
					return !strings.Contains(a, x+"内")
				}
			}
		}
	}
	return false
}

// hanHassle reports a question ending in 麻烦吗 or 麻不麻烦: whether it is
// a hassle, where 麻烦 elsewhere is a polite filler (麻烦帮我查一下).
func hanHassle(q string) bool {
	q = strings.TrimRight(q, "？?！!。. ")
	return strings.HasSuffix(q, "麻烦吗") || strings.HasSuffix(q, "麻不麻烦") || strings.HasSuffix(q, "麻烦不麻烦")
}

// stateAgainstModal returns the participle that p, opening with a form of
// be, says its subject is, and o, opening with a modal, says it can, may,
// should or must be ("Is my phone unlocked?" / "Can my phone be
// unlocked?").
func stateAgainstModal(p, o vsig) (string, bool) {
	first := func(v vsig) string {
		for _, u := range v.seq {
			if u.low != "" && u.text[0] != '|' {
				return u.low
			}
		}
		return ""
	}
	if pf := first(p); !beForms[pf] && !presentBe(pf) {
		return "", false
	}
	if !stateModals[first(o)] {
		return "", false
	}
	for i := 0; i+1 < len(o.seq); i++ {
		if o.seq[i].low == "be" && participle(o.seq[i+1].low) && p.hasLow(o.seq[i+1].low) && !o.seq[i+1].named {
			return o.seq[i+1].low, true
		}
	}
	return "", false
}

// stateModals open a question about what can or must be (can, may, should …).
var stateModals = setOf("can could may might should must will would can't cannot couldn't shouldn't mustn't ought")

// clauseOpeners open a subordinate clause whose words belong to it, not
// to the question's main clause (after, before, until and once are left
// out: they open a phrase as often, "after school programs").
var clauseOpeners = setOf("if unless when whenever while")

// subordinate returns, for each token of s, whether it stands in a
// subordinate clause: from an opener (if, when, after …) to the next
// clause break, or to the end.
func (s *vsig) subordinate() (sub []bool, opener string) {
	sub = make([]bool, len(s.seq))
	in := false
	for i, u := range s.seq {
		switch {
		case u.text[0] == '|':
			in = false
		case clauseOpeners[u.low] && u.low[0] < utf8.RuneSelf:
			if opener == "" {
				opener = u.low
			} else if opener != u.low {
				opener = "*"
			}
			in = true
			continue
		}
		sub[i] = in
	}
	return sub, opener
}

// movedAcrossClause returns a word that stands in the subordinate clause
// of one question and in the main clause of the other, both opening that
// clause with the same word (if, when …), the word once in each: a time,
// a place, a frequency or an adverb moved from one event to the other.
func movedAcrossClause(q, s vsig) (string, bool) {
	if !q.latin || !s.latin {
		return "", false
	}
	qs, qo := q.subordinate()
	ss, so := s.subordinate()
	if qo == "" || qo == "*" || qo != so || openUnbounded(q) || openUnbounded(s) {
		return "", false
	}
	for i, u := range q.seq {
		if u.text[0] == '|' || u.rep || clauseOpeners[u.low] || strings.HasPrefix(u.text, "p:") || auxiliaries[u.low] || u.low == "to" {
			continue
		}
		j, ok := s.index[u.text]
		if !ok || s.seq[j].rep || qs[i] == ss[j] {
			continue
		}
		if u.unit || lightAdverbs[u.low] || u.low == "not" || u.low == "again" || u.low == "always" || u.low == "usually" || u.low == "never" {
			return u.word, true
		}
	}
	return "", false
}

// openUnbounded reports a question that opens with a subordinate clause
// no break ends ("If I don't pay on time how much is the late fee?"):
// where its main clause starts is not read.
func openUnbounded(s vsig) bool {
	return len(s.seq) > 0 && clauseOpeners[s.seq[0].low] && !slices.ContainsFunc(s.seq[:len(s.seq)-1], func(u vunit) bool { return u.text[0] == '|' })
}

// negatesInfinitive reports a not right before or after the to of an
// infinitive (not to cry, to not eat).
func negatesInfinitive(s vsig) bool {
	for i := 0; i+1 < len(s.seq); i++ {
		if a, b := s.seq[i].low, s.seq[i+1].low; a == "not" && b == "to" || a == "to" && b == "not" {
			return true
		}
	}
	return false
}

// possessorAdded returns X where one question says X's Y at the place the
// other says X, all else equal ("Can I add my girlfriend to my policy?" /
// "Can I add my girlfriend's car to my policy?").
func possessorAdded(q, s vsig) (string, bool) {
	for _, side := range [][2]vsig{{q, s}, {s, q}} {
		long, short := side[0].seq, side[1].seq
		if len(long) != len(short)+1 {
			continue
		}
		i := 0
		for i < len(short) && long[i].low == short[i].low {
			i++
		}
		if i >= len(short) || !long[i].poss || stemLight(long[i].low) != stemLight(short[i].low) {
			continue
		}
		if slices.EqualFunc(long[i+2:], short[i+1:], func(a, b vunit) bool { return a.low == b.low }) {
			return short[i].low, true
		}
	}
	return "", false
}

// hanNegated returns the character right after the one 不 or 没 of rs
// before another Han character: a 不 that is a word of its own in the
// segmentation (not 不过, 不少), any 没 but that of 没收 (confiscate; 没收到
// did not receive), not in an A-not-A form (上不上班); 0 when it has none or
// more than one.
func hanNegated(rs []rune) rune {
	toks := make([]string, len(rs))
	for i, r := range rs {
		toks[i] = string(r)
	}
	seg := text.HanSegment(toks)
	var at rune
	for k := 0; k+1 < len(rs); k++ {
		if rs[k] != '不' && rs[k] != '没' || !text.IsHan(rs[k+1]) || k > 0 && rs[k-1] == rs[k+1] ||
			rs[k] == '不' && (seg[k] == seg[k+1] || k > 0 && seg[k] == seg[k-1]) || // 不过, 不少: words
			rs[k] == '没' && rs[k+1] == '收' && !(k+2 < len(rs) && rs[k+2] == '到') { // 没收 confiscates; 没收到 did not receive
			continue
		}
		if at != 0 {
			return 0
		}
		j := k + 1
		for j+1 < len(rs) && strings.ContainsRune("有太很大怎么给是会能要用", rs[j]) {
			j++ // 没有发货, 不太方便, 不给交: the verb after the auxiliary or degree
		}
		at = rs[j]
	}
	return at
}

// combines reports an English question whose verb takes, mixes or gives
// things together (take, mix, combine, drink, give, use): "Can I take
// Zyrtec and Benadryl?" asks about both at once, "… or …" about either;
// options (options) are alike only for other verbs (pay with Visa or
// Mastercard).
func (s *vsig) combines() bool {
	return s.latin && slices.ContainsFunc(s.seq, func(u vunit) bool { return combineVerbs[verbOf(u.low)] })
}

// combineVerbs take, mix or give things together.
var combineVerbs = setOf("take mix combine drink give use eat swallow apply inject pair stack")

// gerundOrInfinitive returns a verb after which -ing and to say different
// things (remember taking it: it was done; remember to take it: it is to
// be done; stop eating / stop to eat) when q has one and s the other.
func gerundOrInfinitive(q, s vsig) (string, bool) {
	form := func(v vsig) map[string]string {
		var out map[string]string
		for i := 0; i+1 < len(v.seq); i++ {
			verb := gerundVerbs[v.seq[i].low]
			if verb == "" {
				continue
			}
			f := ""
			if next := v.seq[i+1].low; next == "to" {
				f = "to"
			} else if _, t := text.VerbTense(next); t == "ing" {
				f = "ing"
			}
			if f != "" {
				if out == nil {
					out = map[string]string{}
				}
				out[verb] = f
			}
		}
		return out
	}
	fq := form(q)
	if fq == nil {
		return "", false
	}
	for verb, b := range form(s) {
		if a := fq[verb]; a != "" && a != b {
			return verb, true
		}
	}
	return "", false
}

// gerundVerbs are the forms of the verbs after which -ing and to say
// different things, with their verb.
var gerundVerbs = func() map[string]string {
	m := map[string]string{}
	for _, g := range []string{"remember remembers remembered remembering", "forget forgets forgot forgotten forgetting",
		"stop stops stopped stopping", "try tries tried trying", "regret regrets regretted regretting", "quit quits quitting"} {
		forms := strings.Fields(g)
		for _, f := range forms {
			m[f] = forms[0]
		}
	}
	return m
}()

// passiveAgainstActive returns a verb that q says in the passive (being
// bullied, get paid, got towed) and s in the active (bullying, pay), or
// the other way round, neither with an agent after by: who does it and
// who has it done change.
func passiveAgainstActive(q, s vsig) (string, bool) {
	auxed := func(u vunit) bool { return passiveAuxes[u.low] }
	if !slices.ContainsFunc(q.seq, auxed) && !slices.ContainsFunc(s.seq, auxed) || q.hasLow("by") || s.hasLow("by") {
		return "", false
	}
	forms := func(v vsig) (passive, active map[string]bool) {
		passive, active = map[string]bool{}, map[string]bool{}
		// A person has it done: a thing's verb reads either way (my order is
		// being shipped = is shipping); no subject before to is the asker.
		person := func(k int) bool {
			if k < 0 {
				return true
			}
			w := v.seq[k]
			return strings.HasPrefix(w.text, "p:") || text.IsAnimate(w.low) || text.IsAnimate(stemLight(w.low)) || w.low == "to"
		}
		for i, u := range v.seq {
			b := verbOf(u.low)
			if b == "" {
				continue
			}
			_, t := text.VerbTense(u.low)
			prev := ""
			if i > 0 {
				prev = v.seq[i-1].low
			}
			switch {
			case passiveAuxes[prev] && (t == "past" || participles[u.low]) && person(i-2):
				passive[b] = true
			case t == "ing" && prev != "being" || prev == "to" && t == "":
				active[b] = true
			}
		}
		return passive, active
	}
	qp, qa := forms(q)
	sp, sa := forms(s)
	for _, side := range [][4]map[string]bool{{qp, qa, sp, sa}, {sp, sa, qp, qa}} {
		for v := range side[0] {
			if side[3][v] && !side[2][v] && !side[1][v] {
				return v, true
			}
		}
	}
	return "", false
}

// passiveAuxes make a passive of the participle after them (being
// bullied, get paid, got towed).
var passiveAuxes = setOf("being get gets got getting")

// verbOf returns the verb w is a form of (take for took, takes, taking),
// w itself when it is a verb, or "".
func verbOf(w string) string {
	if v, _ := text.VerbTense(w); v != "" {
		return v
	}
	if text.IsVerb(w) {
		return w
	}
	return ""
}

// hanWord is a word of a Chinese question's segmentation (text.HanSegment)
// or a token of no Han run, numbered when it repeats ("的#2"), and whether
// it holds a content unit.
type hanWord struct {
	text    string
	content bool
}

// hanWords returns the words of s in order.
func hanWords(s vsig) []hanWord {
	words := make([]hanWord, 0, len(s.seq))
	seen := map[string]int{}
	for i := 0; i < len(s.seq); {
		j := i + 1
		for s.seq[i].seg != 0 && j < len(s.seq) && s.seq[j].seg == s.seq[i].seg {
			j++
		}
		var w strings.Builder
		content := false
		for _, u := range s.seq[i:j] {
			w.WriteString(u.low)
			content = content || u.unit
		}
		key := w.String()
		seen[key]++
		if n := seen[key]; n > 1 {
			key += "#" + strconv.Itoa(n)
		}
		words = append(words, hanWord{key, content})
		i = j
	}
	return words
}

// hanWordsExchanged returns two content words that exchange places in
// two Chinese questions made of the same words, around a content word that
// stays between them in both (下山的人要给上山的人让路吗 / 上山的人要给下山的人让路吗: who
// gives way to whom); conjuncts around 和 exchange freely (苹果和香蕉 /
// 香蕉和苹果), and a word moved to the front keeps no frame.
func hanWordsExchanged(q, s vsig) (x, y, frame string, ok bool) {
	if len(q.seq) != len(s.seq) {
		return "", "", "", false // not the same characters
	}
	qw, sw := hanWords(q), hanWords(s)
	if len(qw) != len(sw) {
		return "", "", "", false
	}
	at := make(map[string]int, len(sw))
	for j, w := range sw {
		at[w.text] = j
	}
	for _, w := range qw {
		if _, found := at[w.text]; !found {
			return "", "", "", false // not the same words
		}
	}
	for i, a := range qw {
		for j := i + 1; j < len(qw); j++ {
			b := qw[j]
			ai, bi := at[a.text], at[b.text]
			if !a.content || !b.content || ai < bi {
				continue
			}
			for _, z := range qw[i+1 : j] {
				if k := at[z.text]; z.content && k > bi && k < ai {
					return a.text, b.text, z.text, true
				}
			}
		}
	}
	return "", "", "", false
}

// detClass is the class of an English determiner: "def" (the), "dem"
// (this, that, these, those), "indef" (a, an), "any", "both" or "some";
// "" for any other word.
func detClass(w string) string {
	switch w {
	case "the":
		return "def"
	case "this", "that", "these", "those":
		return "dem"
	case "a", "an":
		return "indef"
	case "any":
		return "any"
	case "both":
		return "both"
	case "some":
		return "some"
	}
	return ""
}

// determinerClash returns a noun phrase that two English questions
// determine apart, with the two determiners: any (whichever one) against
// the or this (a given one: "Can I see any doctor with my insurance?" /
// "… the doctor …?"); this against a (this one against any such: "Is this
// spider poisonous?" / "Is a spider poisonous?"); and the against a where
// one is unique ("Is Elon Musk the founder of Tesla?" / "… a founder of
// …?") or a yes/no question's there is asks whether one exists ("Is
// there a pharmacy open?" / "Is the pharmacy open?"; "Why is there a
// delay?" asks what "What caused the delay?" asks).
func determinerClash(q, s vsig) (noun, a, b string, ok bool) {
	for k, u := range q.seq {
		if !u.unit || k == 0 {
			continue
		}
		j, found := s.index[u.text]
		if !found || j == 0 || !s.seq[j].unit {
			continue
		}
		ca, cb := detClass(q.seq[k-1].low), detClass(s.seq[j-1].low)
		if ca == "" || cb == "" || ca == cb {
			continue
		}
		pair := map[string]bool{ca: true, cb: true}
		of := ofAfter(q, k) && ofAfter(s, j)
		freeChoice := len(q.seq) > 0 && modalBits(q.seq[0].low, "") == 1 // can, could, may: any is whichever one
		if pair["any"] && (pair["def"] || pair["dem"] || pair["some"] && freeChoice) || pair["dem"] && pair["indef"] || pair["both"] && pair["indef"] ||
			pair["def"] && pair["indef"] && (of || q.qtype == "yesno" && s.qtype == "yesno" && (existentialAt(q, k-1) || existentialAt(s, j-1))) {
			return u.word, q.seq[k-1].low, s.seq[j-1].low, true
		}
	}
	return "", "", "", false
}

// ofAfter reports of within three words after the noun phrase that
// opens at k (the official language of).
func ofAfter(s vsig, k int) bool {
	for i := k + 1; i < len(s.seq) && i <= k+3; i++ {
		if s.seq[i].low == "of" {
			return true
		}
		if !s.seq[i].unit {
			return false
		}
	}
	return false
}

// existentialAt reports there right before the determiner at d, after a
// form of be: "Is there a pharmacy …", "there are any".
func existentialAt(s vsig, d int) bool {
	return d >= 2 && s.seq[d-1].low == "there" && beForms[s.seq[d-2].low]
}

// hanHowTo reports a Chinese question that asks how to do something: 如何,
// or 怎么 or 咋 before a verb (怎么去, 咋办理), not 怎么样, 怎么办, 怎么回事.
func hanHowTo(q string) bool {
	if strings.Contains(q, "如何") {
		return true
	}
	rs := []rune(q)
	for i, r := range rs {
		var next rune
		switch {
		case r == '么' && i > 0 && rs[i-1] == '怎' && i+1 < len(rs):
			next = rs[i+1]
		case r == '咋' && i+1 < len(rs):
			next = rs[i+1]
		default:
			continue
		}
		if !strings.ContainsRune("样办回么了", next) && text.HanVerbal(string(next)) {
			return true
		}
	}
	return false
}

// hanWhyDone reports a Chinese clause in which 怎么 comes right before a
// short account of what has happened, the clause ending in 了: 孩子怎么发烧了
// asks why, where 孩子发烧了怎么办 asks what to do (not 怎么样了, 怎么也提现不了,
// 怎么才能确认…了, 怎么查走到哪一步了).
func hanWhyDone(q string) bool {
	return hanClauseEnds(q, "吗呢啊呀", func(clause string) bool {
		i := strings.Index(clause, "怎么")
		if i < 0 || !strings.HasSuffix(clause, "了") {
			return false
		}
		rest := []rune(clause[i+len("怎么") : len(clause)-len("了")])
		return len(rest) > 0 && len(rest) <= 4 && !strings.ContainsRune("样办回么也都才能可", rest[0]) && !strings.ContainsRune("不得", rest[len(rest)-1]) &&
			!strings.ContainsAny(string(rest), "哪谁什啥多几") // not 怎么样了, 怎么也提现不了 (no matter how), 怎么查走到哪一步了 (how to)
	})
}

// hanInsertion is the run of characters that the longer of two Chinese
// questions has and the other lacks, all else equal: the longer
// question's runes, where the run starts (-1 when the two differ
// otherwise) and how long it is. hanWordEdit reads it once for all its
// checks.
type hanInsertion struct {
	rs    []rune
	at, n int
}

// hanInserted returns the insertion between a and b.
func hanInserted(a, b string) hanInsertion {
	ra, rb := []rune(a), []rune(b)
	if len(ra) < len(rb) {
		ra, rb = rb, ra
	}
	n := len(ra) - len(rb)
	if n == 0 {
		return hanInsertion{ra, -1, 0}
	}
	i := 0
	for i < len(rb) && ra[i] == rb[i] {
		i++
	}
	if !slices.Equal(ra[i+n:], rb[i:]) {
		return hanInsertion{ra, -1, n}
	}
	return hanInsertion{ra, i, n}
}

// of returns the longer question's runes and where a run of n characters
// is inserted, or -1 when the insertion is not n characters long.
func (e hanInsertion) of(n int) ([]rune, int) {
	if e.n != n {
		return e.rs, -1
	}
	return e.rs, e.at
}

// hanPastSpan reports 过了 after a span in one Chinese question only, all
// else equal: past it, against within it (驾照实习期过了可以上高速吗 / 驾照实习期可以上高速吗).
func hanPastSpan(e hanInsertion) bool {
	rs, i := e.of(2)
	return i > 0 && string(rs[i:i+2]) == "过了"
}

// hanPronounLinked returns the character one Chinese question has right
// after a personal pronoun where the other has none, all else equal, when
// it joins the pronoun to the noun after it as a participant: 和, 跟, 与,
// 同 (我和老公的社保: both of ours) or 帮, 替, 给, 为, 把 (我帮老公还信用卡: I pay
// it for him); without it the pronoun owns the noun (我老公的社保, 我老公还信用卡).
func hanPronounLinked(e hanInsertion) (string, bool) {
	rs, i := e.of(1)
	if i <= 0 || !strings.ContainsRune("和跟与同帮替给为把", rs[i]) || !strings.ContainsRune("我你您他她们", rs[i-1]) {
		return "", false
	}
	return string(rs[i]), true
}

// hanRemaining reports 还 in one Chinese question only, all else equal,
// in a question of how much or how long: what is left, against the whole
// (这张信用卡还能刷多少 / 这张信用卡能刷多少, 年假还有几天 / 年假有几天).
func hanRemaining(e hanInsertion) bool {
	rs, i := e.of(1)
	if i < 0 || rs[i] != '还' {
		return false
	}
	q := string(rs)
	return strings.Contains(q, "几") || strings.Contains(q, "多少") || strings.Contains(q, "多久") || strings.Contains(q, "多长")
}

// hanPerfective reports 了 right after a character in one Chinese question
// only, all else equal: what was done against what is done (医保报销了多少钱
// / 医保报销多少钱), after a time against during it (过了年 / 过年), no longer
// against not (不发烧了还要吃药吗 / 不发烧还要吃药吗).
func hanPerfective(e hanInsertion) bool {
	rs, i := e.of(1)
	return i > 0 && rs[i] == '了' && text.IsHan(rs[i-1]) && !strings.Contains(string(rs[max(0, i-4):i]), "不了") && // 开不了机了: cannot, now as before
		!strings.ContainsRune(string(rs[:i]), '比') // 比那款便宜了多少: a difference, either way
}

// modalAdded reports a modal in one English question only, the other
// asking what is so, of someone other than the asker: what one must or
// may do against what one does ("What does my landlord have to fix?" /
// "What does my landlord fix?", "Does my passport have to be valid?" / "Is
// my passport valid?"), or what one wants to do, of anyone but the asker
// ("Where do you want to live?" / "Where do you live?"). Will is left to
// the tense checks; of the asker, a modal asks what the plain question
// asks ("What do I do if …" / "What should I do if …").
func modalAdded(q, s vsig) bool {
	mq, ms := q.modals&^4, s.modals&^4
	if (mq == 0) == (ms == 0) {
		return false
	}
	subject := askedSubject(q)
	if subject != askedSubject(s) || subject == "1" || subject == "" {
		return false
	}
	if mq == 0 && q.did || ms == 0 && s.did {
		return false // "Why couldn't my payment go through?" asks what "Why didn't it" asks
	}
	return (mq|ms)&8 != 0 || subject != "2"
}

// askedSubject returns the subject right after the first auxiliary,
// modal or be of a question's last clause (in its first five words): "1" for I or we, "2"
// for you, else its first content word ("Does my passport have to be
// valid?": passport); "" when none is found.
func askedSubject(s vsig) string {
	start := 0 // the last sentence's: "I'm moving. How can I forward my mail?"
	for i := len(s.seq) - 2; i > 0; i-- {
		if s.seq[i].text[0] == '|' {
			start = i + 1
			break
		}
	}
	for i := start; i < len(s.seq); i++ {
		u := s.seq[i]
		if i > start+4 {
			break
		}
		if !auxiliaries[u.low] && !beForms[u.low] && modalBits(u.low, "") == 0 {
			continue
		}
		for _, v := range s.seq[i+1:] {
			switch {
			case strings.HasPrefix(v.text, "p:1"):
				return "1" // p:1s, p:1p, p:1s#2 (a repeat)
			case strings.HasPrefix(v.text, "p:2"):
				return "2"
			case lightAdverbs[v.low] || presentAdverbs[v.low]:
				// "How many pallets are currently staged?": the subject is before it
			case v.unit:
				return v.word
			}
		}
		return ""
	}
	return ""
}

// accustomed returns, for be or get used to in one English question (a
// habit formed, not the used to of a past habit), whether the other has
// the thing it is used to right after a verb, without: "How long does it
// take to get used to braces?" / "… to get braces?", "Are you used to
// driving on the left?" / "Are you driving on the left?"; not "… adjust
// to glasses?".
func accustomed(q, s vsig) bool {
	for _, side := range [2][2]*vsig{{&q, &s}, {&s, &q}} {
		a, b := side[0], side[1]
		for i := 1; i+2 < len(a.seq); i++ {
			if a.seq[i].low != "used" || a.seq[i+1].low != "to" || !(beForms[a.seq[i-1].low] || getForms[a.seq[i-1].low] || a.seq[i-1].low == "be" || persons[a.seq[i-1].low] != "") {
				continue
			}
			if j, ok := b.index[a.seq[i+2].text]; ok && j > 0 && b.seq[j-1].low != "to" && !b.hasLow("used") {
				return true
			}
		}
	}
	return false
}

// getForms are the forms of get.
var getForms = setOf("get gets got getting gotten")

// causedDoing returns the verb a causative (let, make, have) gives
// someone else to do in one English question, where the other has the
// verb and no causative: "Will my landlord let me paint the walls?" /
// "Will my landlord paint the walls?" (who paints changes), "Can my
// employer have me work on Sunday?" / "Can my employer work on Sunday?".
func causedDoing(q, s vsig) (string, bool) {
	for _, side := range [2][2]*vsig{{&q, &s}, {&s, &q}} {
		a, b := side[0], side[1]
		for i := 0; i+2 < len(a.seq); i++ {
			w := a.seq[i].low
			if !causatives[w] || (w == "have" || w == "has" || w == "had") && persons[a.seq[i+1].low] == "" {
				continue
			}
			if persons[a.seq[i+1].low] == "" && !a.seq[i+1].unit {
				continue
			}
			v := a.seq[i+2]
			if _, ok := b.index[v.text]; !ok || !v.unit || verbOf(v.low) == "" {
				continue
			}
			if !slices.ContainsFunc(b.seq, func(u vunit) bool { return causatives[u.low] || toCausatives[u.low] }) {
				return v.word, true
			}
		}
	}
	return "", false
}

// causatives are the verbs that give someone else a thing to do, or help
// them do it; toCausatives say it with to (allow me to hang shelves, get
// him to quit).
var causatives, toCausatives = setOf("let lets make makes made have has had help helps helped"), setOf("allow allows allowed permit permits permitted force forces forced get gets got")

// becomingBeing returns an adjective after get in one English question and
// after be in the other: becoming against being ("Can I get pregnant while
// breastfeeding?" / "Can I be pregnant …?").
func becomingBeing(q, s vsig) (string, bool) {
	for k, u := range q.seq {
		j, ok := s.index[u.text]
		if !u.unit || !ok || k == 0 || j == 0 {
			continue
		}
		a, b := q.seq[k-1].low, s.seq[j-1].low
		if getForms[a] && (beForms[b] || b == "be") || getForms[b] && (beForms[a] || a == "be") {
			if _, t := text.VerbTense(u.low); t == "" {
				return u.word, true // an adjective; get married / be married: a participle reads alike
			}
		}
	}
	return "", false
}

// notAfterSubject reports a question that opens with a modal, its subject
// and not: the modal's permission to skip it ("Can I not go to jury
// duty?"), against a negative question ("Can't I go to jury duty?").
func notAfterSubject(s vsig) bool {
	return len(s.seq) > 2 && modalBits(s.seq[0].low, "") != 0 && s.seq[2].low == "not"
}

// negativeOpening reports a question that opens with a negated auxiliary
// or modal (can't, shouldn't, isn't).
func negativeOpening(s vsig) bool {
	return len(s.seq) > 0 && strings.HasSuffix(s.seq[0].low, "n't")
}

// howMuchDone reports how much before an auxiliary: how much of an
// activity ("How much do Americans save?"), against how many of them.
func howMuchDone(s vsig) bool {
	for i := 0; i+2 < len(s.seq); i++ {
		if s.seq[i].low == "how" && s.seq[i+1].low == "much" && doForms[s.seq[i+2].low] {
			return true
		}
	}
	return false
}

// doForms are the forms of do.
var doForms = setOf("do does did")

// howManyAsked reports how many.
func howManyAsked(s vsig) bool {
	for i := 0; i+1 < len(s.seq); i++ {
		if s.seq[i].low == "how" && s.seq[i+1].low == "many" {
			return true
		}
	}
	return false
}

// haveTense returns, for have as a main verb after a subject (a person,
// who, that or a noun) and before its object, "past" for had and
// "present" for have or has, with the word before it; "" when it has
// none. An illness one had is over, one that one has is not: "Can I
// donate blood if I had COVID?" / "… if I have COVID?".
func haveTense(s vsig) (tense, before string) {
	for i := 1; i+1 < len(s.seq); i++ {
		w := s.seq[i].low
		if w != "had" && w != "have" && w != "has" {
			continue
		}
		prev := s.seq[i-1]
		if !(strings.HasPrefix(prev.text, "p:") || prev.low == "who" || prev.low == "that" || prev.unit) || auxiliaries[prev.low] || modalBits(prev.low, "") != 0 {
			continue
		}
		k := i + 1
		for k < len(s.seq) && determiner(s.seq[k].low) {
			k++
		}
		if k >= len(s.seq) || !s.seq[k].unit || participle(s.seq[k].low) || s.seq[k].low == "to" || s.seq[k].low == "been" || s.seq[k].low == "got" {
			continue
		}
		if w == "had" {
			return "past", prev.text
		}
		return "present", prev.text
	}
	return "", ""
}

// hanShiDe reports a Chinese clause with a question word of time, place
// or person that ends in a verb and 的, or a verb, 的 and its object (the
// 是…的 that asks about a past event: 新馆是什么时候开的, 这个包在哪买的, 是谁收的货:
// when it opened, where it was bought, who took the goods); not 的 after a
// noun or 谁 (这是谁的), nor 怎么 (是怎么确定的 asks how it is done).
func hanShiDe(q string) bool {
	return hanClauseEnds(q, "吗呢啊呀", func(clause string) bool {
		rs := []rune(clause)
		de := -1
		for k := len(rs) - 1; k >= max(1, len(rs)-3); k-- {
			if rs[k] == '的' {
				de = k
				break
			}
		}
		if de < 1 || !text.HanVerbal(string(rs[de-1])) {
			return false
		}
		c := string(rs[:de])
		return strings.Contains(c, "什么") || strings.Contains(c, "哪") || strings.Contains(c, "谁") || strings.Contains(c, "几") || strings.Contains(c, "啥时候")
	})
}

// hanWhoMarked reports whether a Chinese question's 谁 follows a role
// marker (写给谁, 跟谁, 为谁: to, with, for whom), and whether it has 谁.
func hanWhoMarked(q string) (marked, has bool) {
	prev := rune(0)
	for _, r := range q {
		if r == '谁' {
			has = true
			marked = marked || strings.ContainsRune("给为替跟和同向对与找问", prev)
		}
		prev = r
	}
	return marked, has
}

// particleDropped returns a phrasal verb (text.IsPhrasal: work out, eat
// out, sleep in) that one English question has where the other has the
// verb with no particle after it and that particle nowhere: "Can I work
// out while pregnant?" / "Can I work while pregnant?" (fill out / fill in,
// log out / log off are particleDiffers'). The verb stands where a verb
// does (after a person, to, or an auxiliary or modal: not "the shift lead
// on"), with no object after the particle: before one, in or on is a
// preposition (count on a bin, work in Starbucks) and up or out often says
// only that it is done through (clean up my hard drive).
func particleDropped(q, s vsig) (string, bool) {
	for _, side := range [2][2]*vsig{{&q, &s}, {&s, &q}} {
		a, b := side[0], side[1]
		for i := 1; i+1 < len(a.seq); i++ {
			v, p := verbOf(a.seq[i].low), a.seq[i+1].low
			if v == "" || v == "be" || !text.IsPhrasal(v+" "+p) || b.hasLow(p) {
				continue
			}
			prev := a.seq[i-1]
			if !strings.HasPrefix(prev.text, "p:") && prev.low != "to" && !auxiliaries[prev.low] && modalBits(prev.low, "") == 0 {
				continue
			}
			if next := a.seqAt(i + 2); determiner(next.low) || strings.HasPrefix(next.text, "p:") || next.named ||
				next.unit && roleMarkers[next.low] == "" && !frontedOpeners[next.low] && !isTimeWord(next.low) && !whenAdverbs[next.low] {
				continue // an object after it: a preposition (work in Starbucks), or a particle of completion (clean up my drive)
			}
			for j, u := range b.seq {
				if verbOf(u.low) == v && (j+1 == len(b.seq) || !phrasalParticles[b.seq[j+1].low] || b.seq[j+1].low == a.seqAt(i+2).low) { // sleep in on Sunday / sleep on Sunday
					return v + " " + p, true
				}
			}
		}
	}
	return "", false
}

// seqAt returns the unit at i, or an empty one past the end.
func (s *vsig) seqAt(i int) vunit {
	if i < len(s.seq) {
		return s.seq[i]
	}
	return vunit{}
}

// whenAdverbs are adverbs of time, place and manner that follow a verb
// and its particle (move in early, sign up online): no object.
var whenAdverbs = setOf("early late later soon online again first together alone home")

// phrasalParticles are the particles of WordNet's phrasal verbs.
var phrasalParticles = setOf("out in on up off down away back over")

// hanNegationSide returns where a Chinese question's negations stand
// against its first 的 before a noun: 1 before it (in the modifier: 没交社保的人,
// those who did not pay), 2 after it (in the clause: 交社保的人不能买房), 3
// both, 0 when it has no such 的 or no negation; an A-not-A form (能不能)
// is no negation.
func hanNegationSide(q string) int {
	rs := []rune(q)
	de := -1
	for i, r := range rs {
		if r == '的' && i > 0 && i+1 < len(rs) && text.IsHan(rs[i+1]) && !strings.ContainsRune(hanParticles, rs[i+1]) {
			de = i
			break
		}
	}
	if de < 0 {
		return 0
	}
	side := 0
	for i, r := range rs {
		if (r != '不' && r != '没') || hanANotA(rs, i) {
			continue
		}
		if i < de {
			side |= 1
		} else {
			side |= 2
		}
	}
	return side
}

// hanANotA reports the 不 or 没 at rs[i] inside an A-not-A form, which asks
// and does not negate: A不A (来不来, 到没到) or AB不AB (安全不安全, 发货没发货).
func hanANotA(rs []rune, i int) bool {
	return i > 0 && i+1 < len(rs) && rs[i-1] == rs[i+1] ||
		i > 1 && i+2 < len(rs) && rs[i-2] == rs[i+1] && rs[i-1] == rs[i+2]
}

// withoutNegation returns a Chinese question without its 不 and 没 (but
// those of an A-not-A form): two questions that differ only in where they
// negate are equal so.
func withoutNegation(q string) string {
	rs := []rune(q)
	out := make([]rune, 0, len(rs))
	for i, r := range rs {
		if (r == '不' || r == '没') && !hanANotA(rs, i) {
			continue
		}
		out = append(out, r)
	}
	return string(out)
}

// couldOfOthers reports could opening one English question and can the
// other, of someone other than the asker or the one asked: could is then
// the past or a possibility ("Could women vote in Switzerland?"), not the
// polite can of "Could I …", "Could you …", "Could someone …", nor a
// possibility either way (could or can this rash be shingles).
func couldOfOthers(q, s vsig) bool {
	if len(q.seq) == 0 || len(s.seq) == 0 {
		return false
	}
	a, b := q.seq[0].low, s.seq[0].low
	if !(a == "could" && b == "can" || a == "can" && b == "could") {
		return false
	}
	subject := askedSubject(q)
	if subject == "" || subject == "1" || subject == "2" || subject != askedSubject(s) || indefinitePersons[subject] || q.hasLow("be") || s.hasLow("be") {
		return false // Could someone reset it? asks a favour; Could this rash be shingles? a possibility, as can
	}
	return true
}

// indefinitePersons are the pronouns of someone unnamed.
var indefinitePersons = setOf("someone somebody anyone anybody everyone everybody one")

// hanWhichNumber reports a Chinese question that asks which numbered one
// a thing is (这款奶粉是几段的, 这是几楼), where the other asks how many there
// are (有几段, 有几楼).
func hanWhichNumber(a, b string) bool {
	return strings.Contains(a, "是几") && !strings.Contains(a, "有几") && strings.Contains(b, "有几") && !strings.Contains(b, "是几")
}

// doerAdded returns a verb that one English question says of a noun as a
// participle ("the broken toilet") and the other as a relative clause
// with a person doing it ("the toilet I broke"): the second says who did
// it.
func doerAdded(q, s vsig) (string, bool) {
	for _, side := range [2][2]*vsig{{&q, &s}, {&s, &q}} {
		a, b := side[0], side[1]
		for k := 0; k+2 < len(a.seq); k++ {
			n, p, v := a.seq[k], a.seq[k+1], a.seq[k+2]
			if !n.unit || !strings.HasPrefix(p.text, "p:") || verbOf(v.low) == "" {
				continue
			}
			if j, ok := b.index[n.text]; ok && j > 0 && verbOf(b.seq[j-1].low) == verbOf(v.low) && !strings.HasPrefix(b.seqAt(j+1).text, "p:") {
				return verbOf(v.low), true
			}
		}
	}
	return "", false
}

// negatedWords returns the content words of the parts of an English
// question that hold a negation, the parts split at clause breaks, but
// and and: "I was charged the student rate but I'm not a student" has
// student negated, "I'm a student but I wasn't charged the student rate"
// charged, student and rate.
func negatedWords(s vsig) map[string]bool {
	out := map[string]bool{}
	start := 0
	flush := func(end int) {
		neg := false
		for i := start; i < end; i++ {
			neg = neg || s.negationAt(i)
		}
		if neg {
			for i := start; i < end; i++ {
				if u := s.seq[i]; u.unit && !strings.HasPrefix(u.text, "p:") && u.low != "but" && u.low != "and" {
					out[u.word] = true
				}
			}
		}
		start = end + 1
	}
	for i, u := range s.seq {
		if u.text[0] == '|' || u.low == "but" || u.low == "and" {
			flush(i)
		}
	}
	flush(len(s.seq))
	return out
}

// butNegationMoved reports two English questions joined by but that
// negate different parts of what they say: a word negated in one and said
// in the other outside its negated part ("I was charged the student rate but I'm
// not a student" / "I'm a student but I wasn't charged the student rate").
func butNegationMoved(q, s vsig) bool {
	if !q.hasLow("but") && !s.hasLow("but") {
		return false
	}
	a, b := negatedWords(q), negatedWords(s)
	if len(a) == 0 || len(b) == 0 {
		return false
	}
	for w := range maps.Keys(a) {
		if !b[w] && s.hasWord(w) {
			return true
		}
	}
	for w := range maps.Keys(b) {
		if !a[w] && q.hasWord(w) {
			return true
		}
	}
	return false
}

// hanAmountOrAsk reports 好几 (several: an amount) in one Chinese question
// where the other asks 几 (how many): 一个人能办好几张信用卡吗 / 一个人能办几张信用卡.
func hanAmountOrAsk(a, b string) bool {
	return strings.Contains(a, "好几") && !strings.Contains(b, "好几") && strings.Contains(b, "几")
}

// hanCountOrDay reports a count of weeks or months (几个星期, 几个月) in one
// Chinese question where the other asks which day or month (星期几, 几月).
func hanCountOrDay(a, b string) bool {
	for _, p := range [][2]string{{"几个星期", "星期几"}, {"几个礼拜", "礼拜几"}, {"几个月", "几月"}, {"几周", "周几"}} {
		if strings.Contains(a, p[0]) && !strings.Contains(b, p[0]) && strings.Contains(b, p[1]) {
			return true
		}
	}
	return false
}

// hanNoNeed reports no need to (不需要, 不用, 不必) in one Chinese question where
// the other says must not (不要, 不能): 手术前不需要空腹吗 / 手术前不要空腹吗.
func hanNoNeed(a, b string) bool {
	noNeed := func(q string) bool {
		return strings.Contains(q, "不需要") || strings.Contains(q, "不用") || strings.Contains(q, "不必")
	}
	mustNot := func(q string) bool {
		return strings.Contains(strings.ReplaceAll(q, "不需要", ""), "不要") || strings.Contains(q, "不能") || strings.Contains(q, "不准")
	}
	return noNeed(a) && !mustNot(a) && mustNot(b) && !noNeed(b)
}

// hanOneAdded returns the character one Chinese question has that the
// other lacks, all else equal, when it changes what is asked: 就 (only:
// 办护照就需要身份证吗), 有 before a verb (did it happen: 今天有下雨吗) or opening
// a clause before a noun (a condition of having it: 有孩子能申请公租房吗), or a
// modal (能, 要, 得, 该) in a yes/no question said of someone other than the
// asker (航空公司能超售机票吗: may it, against does it); the caller leaves
// out the pairs with 会 (will), which the light edits take out.
func hanOneAdded(e hanInsertion) (string, bool) {
	rs, i := e.of(1)
	if i < 0 {
		return "", false
	}
	next := rune(0)
	if i+1 < len(rs) {
		next = rs[i+1]
	}
	prev := rune(0)
	if i > 0 {
		prev = rs[i-1]
	}
	switch rs[i] {
	case '就':
		return "就", next != 0 && next != '快' && next != '要' && (text.HanVerbal(string(next)) || strings.ContainsRune("能得该需可是", next)) // not 就快, 就要 (about to)
	case '有':
		if prev == '没' || text.HanWord(string([]rune{'有', next})) {
			return "", false // 没有; 有效, 有用: a word
		}
		return "有", text.HanVerbal(string(next)) || i == 0 || strings.ContainsRune("，,。？?", prev)
	case '能', '要', '得', '该':
		// Of someone else, in a yes/no question (一天要吃几次 asks what 一天吃几次 asks).
		q := string(rs)
		asker := strings.ContainsAny(string(rs[:i]), "我你您")
		yesNo := strings.HasSuffix(strings.TrimRight(q, "？?"), "吗") && !strings.ContainsAny(q, "几多哪谁什怎啥")
		return string(rs[i]), !asker && yesNo && i > 0 && text.HanVerbal(string(next))
	}
	return "", false
}

// causeKind returns the class of the first causative of an English
// question with a person after it (past determiners): "permit" for let,
// allow and permit, "cause" for make, have, get and force; "" for none
// (help, which helps either way, has no class).
func causeKind(s vsig) string {
	for i := 0; i+2 < len(s.seq); i++ {
		w := s.seq[i].low
		if !causatives[w] && !toCausatives[w] {
			continue
		}
		if n := s.nextUnit(i); n < 0 || !strings.HasPrefix(s.seq[n].text, "p:") && !text.IsAnimate(s.seq[n].low) {
			continue
		}
		switch w {
		case "let", "lets", "allow", "allows", "allowed", "permit", "permits", "permitted":
			return "permit"
		case "make", "makes", "made", "have", "has", "had", "get", "gets", "got", "force", "forces", "forced":
			return "cause"
		}
	}
	return ""
}

// beOrOther returns a noun that one English question has after be and a
// determiner (being one: "Can I be a lawyer?") and the other after another
// verb and a determiner (dealing with one: "Can I get a lawyer?").
func beOrOther(q, s vsig) (string, bool) {
	for _, side := range [2][2]*vsig{{&q, &s}, {&s, &q}} {
		a, b := side[0], side[1]
		for k := 2; k < len(a.seq); k++ {
			if !a.seq[k].unit || !determiner(a.seq[k-1].low) || a.seq[k-2].low != "be" {
				continue
			}
			j, ok := b.index[a.seq[k].text]
			if !ok || j < 2 || !determiner(b.seq[j-1].low) {
				continue
			}
			if v := b.seq[j-2]; v.low != "be" && !beForms[v.low] && verbOf(v.low) != "" && !copulas[verbOf(v.low)] {
				return a.seq[k].word, true
			}
		}
	}
	return "", false
}

// copulas are the verbs that say what be says of a role: become, remain,
// stay.
var copulas = setOf("become remain stay")

// doAsked reports a wh-question whose last word is the main verb do ("What
// did the mechanic do?"), where the other ends in another verb ("What did
// the mechanic find?").
func doAsked(q, s vsig) bool {
	last := func(v vsig) string {
		for i := len(v.seq) - 1; i >= 0; i-- {
			if v.seq[i].text[0] != '|' {
				return v.seq[i].low
			}
		}
		return ""
	}
	a, b := last(q), last(s)
	return q.open && s.open && (a == "do") != (b == "do") && verbOf(a) != "" && verbOf(b) != ""
}

// hanModifierAdded returns a modifier of two characters and 的 that one
// Chinese question puts before a noun and the other lacks, all else
// equal: a kind of the thing (异地的公积金 / 公积金: another city's), not a
// possessor or a pointer (我们的, 这个的), nor a word of the function table.
func hanModifierAdded(e hanInsertion) (string, bool) {
	rs, i := e.of(3)
	if i < 0 || rs[i+2] != '的' || i+3 >= len(rs) || !text.IsHan(rs[i+3]) {
		return "", false
	}
	w := string(rs[i : i+2])
	if !text.IsHan(rs[i]) || !text.IsHan(rs[i+1]) || strings.ContainsAny(w, "我你您他她它们这那哪自每各某") || text.HanFunction(w) {
		return "", false
	}
	return w + "的", true
}

// hanNegationTarget returns the characters two Chinese questions negate
// when they are alike but for where the negation stands: 非会员能进吗 negates
// 会, 会员不能进吗 negates 能 (a non-member may, against a member may not).
func hanNegationTarget(a, b string) (string, string, bool) {
	strip := func(q string) (string, rune) {
		rs := []rune(q)
		out := make([]rune, 0, len(rs))
		var target rune
		for i, r := range rs {
			if strings.ContainsRune("不没非未无", r) && i+1 < len(rs) && text.IsHan(rs[i+1]) && !hanANotA(rs, i) {
				if target == 0 {
					target = rs[i+1]
				}
				continue
			}
			out = append(out, r)
		}
		return string(out), target
	}
	sa, ta := strip(a)
	sb, tb := strip(b)
	if ta == 0 || tb == 0 || ta == tb || sa != sb {
		return "", "", false
	}
	return string(ta), string(tb), true
}

// hanForSomeone reports 帮我 or 替我 (or 他, 她) before a verb in one
// Chinese question that asks whether it can be done, where the other asks
// only whether it may (博物馆里能帮我拍照吗 / 博物馆里能拍照吗).
func hanForSomeone(e hanInsertion) bool {
	rs, i := e.of(2)
	if i < 0 || i+2 >= len(rs) || !strings.ContainsRune("帮替", rs[i]) || !strings.ContainsRune("我他她", rs[i+1]) {
		return false
	}
	return text.HanVerbal(string(rs[i+2])) && strings.ContainsRune(string(rs), '能')
}

// hanWordEdit compares two Chinese questions without their light edits
// (lq, ls) for one word or character that one has and the other lacks,
// or has in another place, all else equal, where it changes what is
// asked: 好几 / 几, 几个星期 / 星期几, 不需要 / 不要, 就, 有 or a modal added (not
// when either says 会, which the light edits take out), a modifier with 的,
// the negation on another word, 帮我 before a verb, 过了 after a span, 了,
// 还 in a how-much question, 和 or 帮 after a pronoun; "" when none is.
func hanWordEdit(lq, ls string, will bool) (check, reason string) {
	e := hanInserted(lq, ls)
	if hanAmountOrAsk(lq, ls) || hanAmountOrAsk(ls, lq) {
		return "intent", "intent differs: several (好几) in one question, how many (几) in the other"
	}
	if hanCountOrDay(lq, ls) || hanCountOrDay(ls, lq) {
		return "intent", "intent differs: how many weeks or months (几个星期) in one question, which day or month (星期几) in the other"
	}
	if hanNoNeed(lq, ls) || hanNoNeed(ls, lq) {
		return "mood", "no need to (不需要) in one question, must not (不要) in the other"
	}
	if c, ok := hanOneAdded(e); ok && !will {
		return "inserted", fmt.Sprintf("%q is in one question only, all else equal: it changes what is asked (only, did it happen, a condition, may it)", c)
	}
	if m, ok := hanModifierAdded(e); ok {
		return "inserted", fmt.Sprintf("%q is in one question only, all else equal: a kind of the thing", m)
	}
	if x, y, ok := hanNegationTarget(lq, ls); ok {
		return "negation", fmt.Sprintf("the negation goes with %q in one question, with %q in the other", x, y)
	}
	if hanForSomeone(e) {
		return "roles", "one question asks whether it can be done for someone (帮我, 替我), the other whether it may be done (给我退款 asks what 退款 asks)"
	}
	if hanPastSpan(e) {
		return "tense", "tense differs: past a span (过了) in one question, within it in the other"
	}
	if hanPerfective(e) {
		return "tense", "tense differs: 了 in one question only (done, or past a time, or no longer)"
	}
	if hanRemaining(e) {
		return "scope", "还 in one question only: how much is left, against how much in all"
	}
	if c, ok := hanPronounLinked(e); ok {
		return "roles", fmt.Sprintf("%q after a pronoun in one question only: the pronoun takes part (我和老公的, 我帮老公还), where without it it owns (我老公的)", c)
	}
	return "", ""
}
