package text

import (
	"math/big"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// analysis is what the facet extractor and the builtin embedder see of one
// normalized question.
type analysis struct {
	// facets in order of first appearance, before sorting and the seq:
	// facets are added.
	ordered []string
	// content is the meaning-bearing rest, in order: concepts ("c:..."),
	// question forms ("q:..."), English stems ("w:...") and runs of
	// unrecognised Chinese characters ("z:...").
	content []string
}

// tokKind is the kind of a lexical token.
type tokKind int

const (
	tWord tokKind = iota // Latin letters, maybe with digits: "zone", "sku-10234"
	tNum                 // starts with a digit: "20", "16:00", "20s", "2024-06-11"
	tHan                 // a run of Han characters
	tSym                 // one of % $ ¥ € £ #, a minus sign, or an operator (< >= != + * / ^ …)
)

// token is one lexical token of a normalized question.
type token struct {
	kind tokKind
	text string
	adj  bool // nothing (not even a space) between this token and the previous
}

// lexTokens splits a normalized question into tokens. Separators (spaces
// and punctuation other than the symbols of tSym) are dropped.
func lexTokens(s string) []token {
	var toks []token
	adj := false
	rs := []rune(s)
	isAlnum := func(r rune) bool {
		return r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || (r > 127 && unicode.IsLetter(r) && !IsHan(r)) || unicode.IsDigit(r) && r > 127
	}
	for i := 0; i < len(rs); {
		r := rs[i]
		switch {
		case isAlnum(r):
			j := i + 1
			lastComma := -1
			for j < len(rs) {
				if isAlnum(rs[j]) || unicode.Is(unicode.Mn, rs[j]) {
					j++
					continue
				}
				if rs[j] == ',' && ThousandsAt(func(k int) bool { return k < len(rs) && rs[k] >= '0' && rs[k] <= '9' }, i, j, lastComma) {
					lastComma, j = j, j+4 // "8,000,000" is 8000000, not 8 and 000
					continue
				}
				if strings.ContainsRune("-_.'/:", rs[j]) && j+1 < len(rs) && isAlnum(rs[j+1]) {
					if rs[j] == ':' && !(unicode.IsDigit(rs[j-1]) && unicode.IsDigit(rs[j+1])) {
						break
					}
					j += 2
					continue
				}
				break
			}
			k := tWord
			if r >= '0' && r <= '9' {
				k = tNum
			} else if n := langSuffix(rs[j:]); n > 0 {
				j += n // c++, c#, f#: a language, not c
			}
			text := string(rs[i:j])
			if lastComma >= 0 {
				text = strings.ReplaceAll(text, ",", "")
			}
			toks = append(toks, splitContraction(token{kind: k, text: text, adj: adj})...)
			i, adj = j, true
		case IsHan(r):
			j := i + 1
			for j < len(rs) && IsHan(rs[j]) {
				j++
			}
			toks = append(toks, token{kind: tHan, text: string(rs[i:j]), adj: adj})
			i, adj = j, true
		case r == '-' && i+1 < len(rs) && (rs[i+1] == '>' || rs[i+1] == '-'):
			// -> and --: operators ("--i" is not "++i").
			toks = append(toks, token{kind: tSym, text: string(rs[i : i+2]), adj: adj})
			i, adj = i+2, true
		case (r == '-' || r == '−' || r == '–') && i+1 < len(rs) && (rs[i+1] >= '0' && rs[i+1] <= '9' || i+2 < len(rs) && strings.ContainsRune("$¥€£", rs[i+1]) && rs[i+2] >= '0' && rs[i+2] <= '9') && (i == 0 || !isAlnum(rs[i-1])):
			// A minus sign: "-5" (a range "5-10" is one token, or a word
			// and a number).
			toks = append(toks, token{kind: tSym, text: "-", adj: adj})
			i, adj = i+1, true
		case strings.ContainsRune("%$¥€£#", r):
			toks = append(toks, token{kind: tSym, text: string(r), adj: adj})
			i, adj = i+1, true
		case unicodeOperators[r] != "":
			toks = append(toks, token{kind: tSym, text: unicodeOperators[r], adj: adj})
			i, adj = i+1, true
		case strings.ContainsRune(operatorRunes, r):
			j := i + 1
			for j < len(rs) && j-i < 3 && strings.ContainsRune(operatorRunes, rs[j]) {
				j++
			}
			if op := string(rs[i:j]); operators[op] && !emphasis(rs, i, j) {
				toks = append(toks, token{kind: tSym, text: op, adj: adj})
			}
			i, adj = j, true
		default:
			i, adj = i+1, false
		}
	}
	return toks
}

// operatorRunes are the characters of the operators a question may
// compare with: "stock < 10" is not "stock > 10", "x << 2" not "x >> 2".
const operatorRunes = "<>=!+*/^&|"

// operators are the operators read as facets ("sym:<="; not "op:", which
// names warehouse operations like op:ship); other runs of
// operatorRunes are separators.
var operators = map[string]bool{
	"<": true, ">": true, "<=": true, ">=": true, "=": true, "==": true, "===": true, "!=": true, "!==": true,
	"<<": true, ">>": true, "+": true, "++": true, "*": true, "**": true, "/": true, "//": true, "^": true,
	"&&": true, "||": true, "&": true, "|": true, "=>": true, "+=": true, "*=": true, "/=": true,
	"<<=": true, ">>=": true, "&&=": true, "||=": true, "&=": true, "|=": true, "^=": true, "<=>": true, "<>": true,
	"->": true, "--": true,
}

// unicodeOperators are operator characters read as their ASCII spelling
// (≥ is >=).
var unicodeOperators = map[rune]string{'≥': ">=", '≤': "<=", '≠': "!=", '×': "*", '÷': "/", '→': "->"}

// emphasis reports a run of * between rs[i] and rs[j] that marks emphasis
// rather than multiplies: a letter or digit on one side only, a space or
// the end on the other ("*still*", "**30 days**").
func emphasis(rs []rune, i, j int) bool {
	if rs[i] != '*' {
		return false
	}
	word := func(k int) bool { return k >= 0 && k < len(rs) && (unicode.IsLetter(rs[k]) || unicode.IsDigit(rs[k])) }
	blank := func(k int) bool { return k < 0 || k >= len(rs) || unicode.IsSpace(rs[k]) || unicode.IsPunct(rs[k]) }
	return word(i-1) && blank(j) || blank(i-1) && word(j)
}

// langSuffix returns the length of "++" or "#" right after a word when
// nothing alphanumeric follows it (c++, c#, f#, notepad++), else 0.
func langSuffix(rs []rune) int {
	n := 0
	switch {
	case len(rs) >= 2 && rs[0] == '+' && rs[1] == '+':
		n = 2
	case len(rs) >= 1 && rs[0] == '#':
		n = 1
	}
	if n > 0 && n < len(rs) && (unicode.IsLetter(rs[n]) && !IsHan(rs[n]) || unicode.IsDigit(rs[n])) {
		return 0
	}
	return n
}

// ThousandsAt reports a thousands separator at place j of a number that
// starts at place i and whose last separator so far is at place last (-1
// for none); digit tells a digit at a place (false past the end): one to
// three digits before the first comma, three between commas, and exactly
// three digits after this one ("8,000", "1,234,567.5"; not "1,2,3" or
// "3,1415"). It looks at a few places only, however long the number. The
// facets (runes) and the verification (bytes) read numbers with it.
func ThousandsAt(digit func(k int) bool, i, j, last int) bool {
	if !digit(j+1) || !digit(j+2) || !digit(j+3) || digit(j+4) {
		return false
	}
	if last >= 0 {
		return j == last+4
	}
	if j-i < 1 || j-i > 3 {
		return false
	}
	for k := i; k < j; k++ {
		if !digit(k) {
			return false
		}
	}
	return true
}

// Unapostrophed returns the negative contraction a word typed without its
// apostrophe stands for (doesnt: doesn't, cant: can't), or "".
func Unapostrophed(w string) string {
	return unapostrophed[w]
}

var unapostrophed = func() map[string]string {
	m := map[string]string{}
	for _, w := range strings.Fields("don't doesn't didn't isn't aren't wasn't weren't haven't hasn't hadn't can't couldn't shouldn't wouldn't won't mustn't ain't") {
		m[strings.ReplaceAll(w, "'", "")] = w
	}
	return m
}()

// splitContraction turns "isn't" (or "isnt", typed without its
// apostrophe) into "is" + "not" and drops the clitics of "what's",
// "we're", "it'll", "i've", "i'd" and "i'm".
func splitContraction(t token) []token {
	if t.kind == tWord && unapostrophed[t.text] != "" {
		t.text = unapostrophed[t.text]
	}
	if t.kind != tWord || !strings.Contains(t.text, "'") {
		return []token{t}
	}
	w := t.text
	switch w {
	case "can't":
		return []token{{kind: tWord, text: "can", adj: t.adj}, {kind: tWord, text: "not", adj: true}}
	case "won't":
		return []token{{kind: tWord, text: "will", adj: t.adj}, {kind: tWord, text: "not", adj: true}}
	case "o'clock":
		return []token{t}
	}
	if strings.HasSuffix(w, "n't") {
		return []token{{kind: tWord, text: strings.TrimSuffix(w, "n't"), adj: t.adj}, {kind: tWord, text: "not", adj: true}}
	}
	// The auxiliaries are spelled out, so that "i'd like to know" is the
	// stop phrase "i would like to know"; 's (is, has or a possessive) and
	// 'm are dropped.
	for _, c := range [...][2]string{{"'re", "are"}, {"'ll", "will"}, {"'ve", "have"}, {"'d", "would"}, {"'s", ""}, {"'m", ""}, {"'", ""}} {
		if b, ok := strings.CutSuffix(w, c[0]); ok && b != "" {
			if c[0] == "'d" && whWords[b] {
				c[1] = "did" // what'd, where'd, how'd: did, not would
			}
			if c[1] == "" {
				return []token{{kind: tWord, text: b, adj: t.adj}}
			}
			return []token{{kind: tWord, text: b, adj: t.adj}, {kind: tWord, text: c[1], adj: true}}
		}
	}
	return []token{t}
}

// whWords are the English question words.
var whWords = map[string]bool{"what": true, "where": true, "when": true, "why": true, "who": true, "how": true, "which": true}

// analyzer holds the state of one analysis.
type analyzer struct {
	lx         *lexiconTables
	toks       []token
	out        analysis
	pendingOrd bool   // the previous Han run ended with 第
	lastFacet  string // the facet emitted by the previous token, "" if none
	ampmIdx    int    // index in out.ordered of an am/pm facet a clock time may refine, or -1
	// ampmTok and ampmEnd locate the Chinese am/pm word (上午, 下午, 晚上 …)
	// last read: its Han token and the rune after it. A clock is read on
	// the 24-hour clock only right after such a word (ampmAdjacent).
	ampmTok, ampmEnd int
	ampmWord         string // that word as written
	framed           int    // index of the asker's framing pronoun (framedIndex), or -1
	minus            bool   // a minus sign came before the number being read: its facet gets it
	minusNext        bool   // a sign in words (零下) ended the Han run before a number: that number's facet gets it
}

// analyze runs the facet and content analysis over a normalized question.
func analyze(normalized string) analysis {
	a := &analyzer{lx: lexicon(), toks: lexTokens(trimGreetings(normalized)), ampmIdx: -1, ampmTok: -1}
	a.framed = framedIndex(a.toks)
	for i := 0; i < len(a.toks); {
		prevFacets := len(a.out.ordered)
		prevLast := a.lastFacet
		var n int
		// A minus sign goes into the facet of the number or amount after
		// it ("num:-5", "usd:-50"): "-5 degrees" is not "5 degrees", "-3 +
		// 5" not "3 + -5"; "5-10" is a range.
		a.minus = a.signed(i) || a.minusNext
		a.minusNext = false
		switch t := a.toks[i]; t.kind {
		case tWord:
			n = a.word(i)
		case tNum:
			n = a.number(i, t.text, false)
		case tHan:
			n = a.han(i)
		case tSym:
			n = a.sym(i)
		}
		a.minus = false
		if n < 1 {
			n = 1
		}
		if len(a.out.ordered) == prevFacets || a.lastFacet == prevLast {
			// Keep lastFacet only while facets follow each other directly.
			if len(a.out.ordered) == prevFacets {
				a.lastFacet = ""
			}
		}
		i += n
	}
	return a.out
}

// numberNext reports a number token right after token i, with no space
// between.
func (a *analyzer) numberNext(i int) bool {
	nt, ok := a.next(i)
	return ok && nt.kind == tNum && nt.adj
}

// signed reports a minus sign right before token i: at the start, after a
// space, or right after an operator (x^-2, 5+-3); not after a word or a
// number ("5-10", "5%-10%": ranges).
func (a *analyzer) signed(i int) bool {
	if i == 0 || !a.toks[i].adj || a.toks[i-1].kind != tSym || a.toks[i-1].text != "-" {
		return false
	}
	// After Chinese text a minus is a sign too (冷库-18度): no range starts
	// with a character.
	return i == 1 || !a.toks[i-1].adj || a.toks[i-2].kind == tHan || a.toks[i-2].kind == tSym && operators[a.toks[i-2].text]
}

func (a *analyzer) facet(f string) {
	if half, ok := strings.CutPrefix(f, "ampm:today."); ok {
		a.facet("day:today") // tonight, this morning: today's, not any evening's
		f = "ampm:" + half
	}
	f = canonicalUnit(f)
	if a.minus {
		if k := strings.IndexByte(f, ':'); k >= 0 {
			f = f[:k+1] + "-" + f[k+1:]
		} else {
			f = "-" + f
		}
		a.minus = false
	}
	a.out.ordered = append(a.out.ordered, f)
	a.lastFacet = f
	if strings.HasPrefix(f, "ampm:") {
		a.ampmIdx = len(a.out.ordered) - 1
	}
}

// unitScale gives, for a duration or weight unit, the base unit of its
// family and how many base units it is: seconds for s, min and h; days
// for d and w; months for mo and y; kg for kg and jin.
var unitScale = map[string]struct {
	base string
	n    int64
}{
	"s": {"s", 1}, "min": {"s", 60}, "h": {"s", 3600},
	"d": {"d", 1}, "w": {"d", 7}, "mo": {"mo", 1}, "y": {"mo", 12},
}

// canonicalUnit writes a duration in the base unit of its family, so that
// 半个小时 = 30 minutes = 1800 s, 两周 = 14 days, 半年 = 6 months, and a
// weight in jin as kg (两斤 = 1 kg). Days and hours stay apart (a day is
// a date as often as 24 hours).
func canonicalUnit(f string) string {
	switch {
	case strings.HasPrefix(f, "dur:"):
		v := f[4:]
		j := 0
		for j < len(v) && (v[j] >= '0' && v[j] <= '9' || v[j] == '.') {
			j++
		}
		if u, ok := unitScale[v[j:]]; ok && j > 0 {
			if sv := scaleDecimal(v[:j], u.n); sv != "" {
				return "dur:" + sv + u.base
			}
		}
	case strings.HasPrefix(f, "wt:") && strings.HasSuffix(f, "jin"):
		if r, ok := new(big.Rat).SetString(strings.TrimSuffix(f[3:], "jin")); ok {
			r.Quo(r, big.NewRat(2, 1))
			if r.IsInt() {
				return "wt:" + r.Num().String() + "kg"
			}
			return "wt:" + strings.TrimRight(strings.TrimRight(r.FloatString(6), "0"), ".") + "kg"
		}
	}
	return f
}

func (a *analyzer) content(c string) { a.out.content = append(a.out.content, c) }

// next returns token i+1 if it exists.
func (a *analyzer) next(i int) (token, bool) {
	if i+1 < len(a.toks) {
		return a.toks[i+1], true
	}
	return token{}, false
}

// word handles a tWord token and returns how many tokens it consumed.
func (a *analyzer) word(i int) int {
	w := a.toks[i].text
	// A short code right before 区 is a zone: "a区", "b2库区".
	if nt, ok := a.next(i); ok && nt.kind == tHan && nt.adj && len(w) <= 3 {
		if v, n := zoneSuffix(nt.text); n > 0 {
			a.facet("zone:" + w)
			a.consumeHanPrefix(i+1, n)
			_ = v
			return 1
		}
	}
	if strings.ContainsAny(w, "0123456789") {
		a.facet(w)
		return 1
	}
	if v := a.verbSense(i); v != "" {
		a.content("w:" + v)
		return 1
	}
	if a.modalAdjective(i) {
		return 1 // "Is it possible to …" asks what "Can I …" asks
	}
	if approxWords[w] {
		if nt, ok := a.next(i); ok && (nt.kind == tNum || nt.kind == tWord && (isNumberWord(nt.text) || scaleWords[nt.text] > 0 ||
			(nt.text == "a" || nt.text == "one") && i+2 < len(a.toks) && scaleWords[a.toks[i+2].text] > 0)) {
			a.facet("approx") // "about 10 minutes" is not "10 minutes", "about a hundred" not "a hundred"
			return 1
		}
	}
	if n := a.senseRead(i); n > 0 {
		return n
	}
	// Phrases of the lexicon, longest first, over consecutive words.
	maxN := 0
	for j := i; j < len(a.toks) && a.toks[j].kind == tWord && maxN < a.lx.enMax; j++ {
		maxN++
	}
	for n := min(maxN, a.lx.longestEn(w, false)); n >= 1; n-- {
		e, ok := a.lx.lookupEn(a.words(i, n), false)
		if !ok {
			continue
		}
		if n == 1 && e.kind == lexFacet && strings.HasPrefix(e.value, "person:") && i == a.framed {
			return 1 // the asker's framing, not the question's scope (framedIndex)
		}
		if n == 1 {
			if m, month := monthWord(w, a, i); month {
				return m
			}
			if _, isNum := numberWord(w); isNum && e.kind == lexStop {
				break
			}
		}
		return n + a.entry(e, i+n-1, false)
	}
	if m, month := monthWord(w, a, i); month {
		return m
	}
	if f := hyphenNumber(w); f != "" {
		a.facet(f) // "a two-week trip", "the twenty-first floor"
		return 1
	}
	if v, n := a.numberWords(i); n > 0 {
		return n - 1 + a.number(i+n-1, v, true)
	}
	// Then the generated lexicon, which never takes a number or a month.
	for n := min(maxN, a.lx.longestEn(w, true)); n >= 1; n-- {
		if e, ok := a.lx.lookupEn(a.words(i, n), true); ok {
			return n + a.entry(e, i+n-1, false)
		}
	}
	if strings.HasPrefix(w, "non-") && len(w) > 4 {
		a.facet("neg")
		a.content("w:" + stem(w[4:]))
		return 1
	}
	a.content("w:" + stem(w))
	return 1
}

// verbSense returns the verb a word of two senses is at i, or "": left as
// the past of leave, not what remains (leftLeaves); mean after a determiner is the average, not a meaning ("the mean
// pick time" / "what does pick time mean"); a stop verb's -ed or -ing form
// after a determiner is a modifier and stays ("my checked bag").
func (a *analyzer) verbSense(i int) string {
	prev := a.wordAt(i - 1)
	switch w := a.toks[i].text; {
	case w == "left" && a.leftLeaves(i):
		return "leave"
	case w == "mean" && (determiners[prev] || prev == "the"):
		return "average"
	case determiners[prev] && (strings.HasSuffix(w, "ed") || strings.HasSuffix(w, "ing")) && a.stopStem(w):
		return w // "my checked bag", "a checking account": a modifier, not the request verb check
	}
	return ""
}

// approxWords before a number make it approximate.
var approxWords = map[string]bool{"about": true, "around": true, "approximately": true, "roughly": true, "nearly": true, "almost": true, "approx": true}

// isNumberWord reports a spelled number (ten, twenty).
func isNumberWord(w string) bool {
	_, ok := numberWord(w)
	return ok
}

// modalAdjectives say what a modal says when to (or for me to) follows
// them: possible and able (can), necessary, mandatory, obligatory and
// required (must). There they are no antonym facet, as can and must are
// none; the verification compares them as modals.
var modalAdjectives = map[string]bool{"possible": true, "able": true, "necessary": true, "mandatory": true, "obligatory": true, "required": true}

// modalAdjective reports a modal adjective at i before to, or before for
// and a pronoun and to ("possible for me to").
func (a *analyzer) modalAdjective(i int) bool {
	if !modalAdjectives[a.toks[i].text] {
		return false
	}
	return a.wordAt(i+1) == "to" || a.wordAt(i+1) == "for" && a.wordAt(i+3) == "to"
}

// wordAt returns the word token at k, or "" (past either end, or no word).
func (a *analyzer) wordAt(k int) string {
	if k >= 0 && k < len(a.toks) && a.toks[k].kind == tWord {
		return a.toks[k].text
	}
	return ""
}

// stopStem reports a word that is no entry of the lexicon as written but
// whose stem is a stop word (checked, checking: check).
func (a *analyzer) stopStem(w string) bool {
	if _, ok := a.lx.en[w]; ok {
		return false
	}
	b := stem(w)
	e, ok := a.lx.en[b]
	return ok && b != w && e.kind == lexStop
}

// leftBefore are the words after which left is what remains ("left in
// stock", "left over", "left to pick").
var leftBefore = map[string]bool{"in": true, "on": true, "at": true, "over": true, "for": true, "to": true, "from": true, "after": true,
	"before": true, "of": true, "with": true, "by": true, "until": true, "till": true, "today": true, "now": true, "here": true, "there": true, "and": true, "or": true}

// timeNouns name a stretch of time ("left this year").
var timeNouns = map[string]bool{"year": true, "week": true, "month": true, "day": true, "morning": true, "afternoon": true, "evening": true, "quarter": true, "time": true, "shift": true}

// determiners open a noun phrase.
var determiners = map[string]bool{"the": true, "a": true, "an": true, "my": true, "your": true, "our": true, "their": true, "his": true, "her": true, "its": true, "this": true, "that": true, "these": true, "those": true}

// TagNegators before a final 不 or 没 keep it a negation (还没: not yet);
// after any other character it asks, as 吗 does (发货没, 正常不).
const TagNegators = "还也都并从就"

// IsDeterminer reports an English word that opens a noun phrase: an
// article, a demonstrative or a possessive pronoun (the, this, my).
func IsDeterminer(w string) bool { return determiners[w] }

// framedIndex returns the index of the asker's I, we or you right after
// the question's opening auxiliary (see opening), or -1.
func framedIndex(toks []token) int {
	if _, i := opening(toks); i >= 0 {
		switch toks[i].text {
		case "i", "we", "you":
			return i
		}
	}
	return -1
}

// greetingWords are the greetings, longest first, so that "thank you" is
// one.
var greetingWords = []string{"thank you", "hello", "thanks", "hey", "thx", "hi", "你好", "您好", "谢谢", "多谢"}

// greetingBreak reports whether r, right after a greeting, ends it.
func greetingBreak(r rune) bool { return strings.ContainsRune(",.!;:~，。！；：～、", r) }

// TrimGreetings drops the greetings and thanks at either end of a
// normalized (lower-case) question, and an ask frame at its start, as the
// analysis does (trimGreetings): 你好，快递到了吗 is 快递到了吗, 快递到了吗？谢谢 too.
func TrimGreetings(q string) string { return trimGreetings(q) }

// trimGreetings drops a greeting at the start of a normalized question
// when punctuation, or a space and a question word or an auxiliary,
// follows it, or 请问 in Chinese; and one at the end when punctuation
// (and a space) comes before it. Elsewhere a greeting is what the
// question asks about ("how do I say hello", "hello in Japanese", 你好怎么
// 翻译).
func trimGreetings(s string) string {
	for again := true; again; {
		again = false
		for _, g := range greetingWords {
			rest, ok := strings.CutPrefix(s, g)
			if !ok || rest == "" {
				continue
			}
			r, size := utf8.DecodeRuneInString(rest)
			han := hasHan(g)
			switch {
			case greetingBreak(r):
				s, again = strings.TrimLeft(rest[size:], " ,.!;:~，。！；：～、"), true
			case han && strings.HasPrefix(rest, "请问"):
				s, again = rest, true
			case !han && r == ' ':
				w, _, _ := strings.Cut(strings.TrimLeft(rest, " "), " ")
				if whWords[w] || framingAux[w] {
					s, again = strings.TrimLeft(rest, " "), true
				}
			case !han && unicode.IsLetter(r):
				// "history", "hiking": not a greeting
			}
			break
		}
	}
	for _, g := range greetingWords {
		head, ok := strings.CutSuffix(s, g)
		if !ok || head == "" {
			continue
		}
		trimmed := strings.TrimRight(head, " ")
		if r, _ := utf8.DecodeLastRuneInString(trimmed); greetingBreak(r) || r == '?' || r == '？' {
			s = trimmed
		}
		break
	}
	return trimAskFrame(s)
}

// askFrames open a request to answer the question that follows them:
// "can you tell me how …" asks "how …", as "do you know when …" asks
// "when …".
var askFrames = []string{
	"can you please tell me ", "could you please tell me ", "can you tell me ", "could you tell me ", "would you tell me ",
	"please tell me ", "tell me ", "do you know ", "does anyone know ", "i want to know ", "i would like to know ", "i'd like to know ",
	"i wonder ", "i was wondering ",
}

// trimAskFrame drops an ask frame (askFrames) from the start of a
// normalized question when a question word, if or whether follows it.
func trimAskFrame(s string) string {
	for _, f := range askFrames {
		rest, ok := strings.CutPrefix(s, f)
		if !ok {
			continue
		}
		w, _, _ := strings.Cut(rest, " ")
		if whWords[w] || w == "if" || w == "whether" {
			return rest
		}
		return s
	}
	return s
}

// OpeningOf returns the opening auxiliary of a question and the word
// after it (see opening) as the facets read the question: normalized,
// contractions spelled out, greetings at its ends dropped; "" and "" when
// it does not open with an auxiliary. The verification compares them.
func OpeningOf(question string) (aux, subject string) {
	// Only its first words matter: read at most 64 bytes of it.
	if len(question) > 64 {
		cut := 64
		for cut > 0 && !utf8.RuneStart(question[cut]) {
			cut--
		}
		question = question[:cut]
	}
	toks := lexTokens(trimGreetings(Normalize(question)))
	aux, i := opening(toks)
	if i < 0 {
		return "", ""
	}
	return aux, toks[i].text
}

// words returns the texts of the n word tokens from token i, in a new
// slice (lookupEn may rewrite it).
func (a *analyzer) words(i, n int) []string {
	ws := make([]string, n)
	for k := range ws {
		ws[k] = a.toks[i+k].text
	}
	return ws
}

// entry applies a lexicon entry matched by tokens ending at token last and
// returns how many extra tokens after last it consumed.
func (a *analyzer) entry(e lexEntry, last int, han bool) int {
	switch e.kind {
	case lexStop:
	case lexConcept, lexQuestion:
		a.content(e.value)
	case lexFacet:
		a.facet(e.value)
	case lexPlace:
		if nt, ok := a.next(last); ok && !han && nt.kind == tWord && (nt.text == "university" || nt.text == "univ") {
			a.facet("univ:" + e.value)
			a.content("c:univ")
			return 1
		}
		a.facet("place:" + e.value)
	case lexMarker:
		if han {
			// A Han marker with no code before it: 仓库3, 月台 3 become
			// typed when a number follows directly; otherwise a concept.
			if nt, ok := a.next(last); ok && nt.adj && nt.kind == tNum && isDigits(nt.text) {
				a.facet(e.value + ":" + nt.text)
				return 1
			}
			a.content("c:" + e.value)
			return 0
		}
		if nt, ok := a.next(last); ok {
			j := last + 1
			if nt.kind == tSym && nt.text == "#" && j+1 < len(a.toks) {
				j++
				nt = a.toks[j]
			}
			if (nt.kind == tNum && isDigits(nt.text)) || (nt.kind == tWord && len(nt.text) <= 2 && !a.lx.stopWords[nt.text] || nt.text == "a") || (nt.kind == tWord && len(nt.text) <= 4 && strings.ContainsAny(nt.text, "0123456789")) {
				a.facet(e.value + ":" + nt.text)
				return j - last
			}
		}
		a.content("c:" + e.value)
	}
	return 0
}

// zoneSuffix reports whether a Han run starts with a zone marker (区, 库区)
// that is not part of another word (区别, 区分, 区域, 区间), and its length.
func zoneSuffix(run string) (string, int) {
	for _, p := range []string{"库区", "区"} {
		if strings.HasPrefix(run, p) {
			rest := strings.TrimPrefix(run, p)
			if strings.HasPrefix(rest, "别") || strings.HasPrefix(rest, "分") || strings.HasPrefix(rest, "域") || strings.HasPrefix(rest, "间") {
				return "", 0
			}
			return p, utf8.RuneCountInString(p)
		}
	}
	return "", 0
}

// consumeHanPrefix drops the first n runes of Han token i (already used by
// the token before it), removing the token when nothing is left.
func (a *analyzer) consumeHanPrefix(i, n int) {
	rs := []rune(a.toks[i].text)
	if n >= len(rs) {
		a.toks = append(a.toks[:i], a.toks[i+1:]...)
		if i < len(a.toks) {
			a.toks[i].adj = true
		}
		return
	}
	a.toks[i].text = string(rs[n:])
}

var months = map[string]int{
	"january": 1, "jan": 1, "february": 2, "feb": 2, "march": 3, "mar": 3, "april": 4, "apr": 4,
	"may": 5, "june": 6, "jun": 6, "july": 7, "jul": 7, "august": 8, "aug": 8,
	"september": 9, "sep": 9, "sept": 9, "october": 10, "oct": 10, "november": 11, "nov": 11,
	"december": 12, "dec": 12,
}

// monthWord handles an English month name. "may" and the abbreviations
// (apr, mar, oct …) are a month only after a preposition (in, of, since,
// until, before, after, during, by, from, to, last, next, this, early,
// late, mid) or before a day number or a year.
func monthWord(w string, a *analyzer, i int) (int, bool) {
	m, ok := months[w]
	if !ok {
		return 0, false
	}
	nt, hasNext := a.next(i)
	dayNext := hasNext && nt.kind == tNum && dayNumber(nt.text) > 0
	yearNext := hasNext && nt.kind == tNum && len(nt.text) == 4 && (strings.HasPrefix(nt.text, "19") || strings.HasPrefix(nt.text, "20"))
	if (w == "may" || len(w) <= 4 && w != "june" && w != "july") && !yearNext { // an abbreviation names more than a month (the APR of a card)
		prevOK := false
		if i > 0 && a.toks[i-1].kind == tWord {
			switch a.toks[i-1].text {
			case "in", "of", "since", "until", "till", "before", "after", "during", "by", "from", "to", "last", "next", "this", "early", "late", "mid", "end":
				prevOK = w == "may" || a.toks[i-1].text != "of" // the meaning of APR
			}
		}
		if !prevOK && !dayNext {
			return 0, false
		}
	}
	a.facet("month:" + strconv.Itoa(m))
	if dayNext {
		a.facet("day:" + strconv.Itoa(dayNumber(nt.text)))
		return 2, true
	}
	return 1, true
}

// dayNumber parses "3", "03", "3rd", "21st" as a day of the month, or 0.
func dayNumber(s string) int {
	s = strings.TrimRight(s, "stndrh")
	n, err := strconv.Atoi(s)
	if err != nil || n < 1 || n > 31 {
		return 0
	}
	return n
}

var numberWordValues = map[string]int{
	"zero": 0, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
	"nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
	"sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
	"forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "dozen": 12,
}

func numberWord(w string) (int, bool) {
	v, ok := numberWordValues[w]
	return v, ok
}

// numberWords reads English number words starting at token i ("twenty",
// "twenty five", "twenty-five", "a dozen", "half a dozen", "two hundred
// and fifty", "twelve hundred", "a thousand", "three million", and "one"
// only before a unit or a scale word) and returns the value and the
// tokens used, or 0 tokens.
func (a *analyzer) numberWords(i int) (string, int) {
	w := a.toks[i].text
	if w == "half" && i+2 < len(a.toks) && a.toks[i+1].text == "a" && a.toks[i+2].text == "dozen" {
		return "6", 3
	}
	var total, cur int64 // the thousands read, and the number below them
	k := i
	if w == "one" {
		nt, ok := a.next(i)
		switch {
		case ok && nt.kind == tWord && scaleWords[nt.text] > 0:
			cur, k = 1, i+1 // "one thousand"
		case ok && nt.kind == tWord && englishUnits[nt.text] != "":
			return "1", 1
		default:
			return "", 0
		}
	}
	if scaleWords[w] > 0 && i > 0 && a.toks[i-1].text == "a" {
		cur = 1 // "a hundred": the article was read as a stop word
	}
	afterScale := k > i // a small number may follow: "a hundred and five"
	lastScale, curStart := int64(0), k
	for k < len(a.toks) && a.toks[k].kind == tWord {
		t := a.toks[k].text
		if s := scaleWords[t]; s > 0 && cur > 0 && (s != 100 || cur < 100) { // one hundred a group: "hundred hundred" is no number
			if s == 100 {
				cur *= 100
			} else {
				if lastScale > 0 && s >= lastScale {
					cur, k = 0, curStart // "one thousand two thousand" is two numbers: the scales only fall
					break
				}
				total, cur, lastScale = total+cur*s, 0, s
			}
			k, afterScale = k+1, true
			continue
		}
		if k > i && !afterScale {
			break
		}
		if t == "and" && afterScale && k+1 < len(a.toks) && a.toks[k+1].kind == tWord && a.toks[k+1].text != "a" {
			if _, n := a.smallNumberWords(k + 1); n > 0 {
				k++
				continue
			}
		}
		v, n := a.smallNumberWords(k)
		if n == 0 {
			break
		}
		if cur == 0 || cur%100 == 0 && afterScale {
			curStart = k // where the number below the last scale starts
		}
		cur += v
		k, afterScale = k+n, false
	}
	if k == i || total+cur == 0 && k-i > 1 {
		return "", 0
	}
	return strconv.FormatInt(total+cur, 10), k - i
}

// hyphenNumber reads a number word joined by a hyphen to a unit ("two-week",
// "ten-minute") or a tens word to an ordinal ("twenty-first"), and returns
// its facet, or "".
func hyphenNumber(w string) string {
	n, rest, ok := strings.Cut(w, "-")
	if !ok {
		return ""
	}
	v, isNum := numberWordValues[n]
	if n == "one" {
		v, isNum = 1, true // one-year, one-week
	}
	if !isNum {
		return ""
	}
	if u, isOrd := ordinalUnits[rest]; isOrd && v >= 20 && v < 100 && v%10 == 0 {
		return "ord:" + strconv.Itoa(v+u)
	}
	return unitAfterHyphen(strconv.Itoa(v), "-"+rest)
}

// NumberWithUnit reports a word that is a number joined to its unit by a
// hyphen ("14-day", "3-year", "two-week"): a quantity the facets read, not
// a code or a name.
func NumberWithUnit(w string) bool {
	if hyphenNumber(w) != "" {
		return true
	}
	n, unit, ok := strings.Cut(w, "-")
	return ok && isDigits(n) && unitAfterHyphen(n, "-"+unit) != ""
}

// unitAfterHyphen returns the facet of the number num said with the unit
// after a hyphen in suf ("-week", "-kg"), or "" when suf is no such unit.
// One-letter units ("-s", "-t") are left out: they are codes as often.
func unitAfterHyphen(num, suf string) string {
	unit, ok := strings.CutPrefix(suf, "-")
	if tpl := englishUnits[unit]; ok && len(unit) > 1 && tpl != "" {
		return strings.ReplaceAll(tpl, "#", num)
	}
	return ""
}

// ordinalUnits are the ordinals a tens word takes after a hyphen.
var ordinalUnits = map[string]int{
	"first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8, "ninth": 9,
}

// beOpens reports a form of be among the words before token i in its
// clause, with no other auxiliary (does, will, can) nor to among them:
// "Is the beach close" (an adjective), not "When does the beach close".
func (a *analyzer) beOpens(i int) bool {
	be := false
	for k := i - 1; k >= 0 && a.toks[k].kind == tWord; k-- {
		switch a.toks[k].text {
		case "is", "are", "was", "were", "isn't", "aren't":
			be = true
		case "do", "does", "did", "will", "would", "can", "could", "should", "to", "may", "might", "must":
			return false
		}
	}
	return be
}

// senseRead reads a word whose lexicon entry is not its sense here, and
// returns the tokens used, or 0: "close to" is near (not closed); "last"
// ending a clause with do, will or can before it is the verb ("How long
// does the warranty last?"), not an antonym of first or present (nor "is":
// "How long does the cable last?" is not "How long is the cable?"); "stay"
// and "remain" before open or closed say what "is" says ("Does the gym
// stay open on holidays?"); "best" in "the best way to" asks how; "in a
// year" is one year's time, not "a year" (annually).
func (a *analyzer) senseRead(i int) int {
	w := a.toks[i].text
	nt, hasNext := a.next(i)
	next := ""
	if hasNext && nt.kind == tWord {
		next = nt.text
	}
	switch {
	case w == "close" && (next == "to" || next == "" && a.beOpens(i)):
		// "Is the pharmacy close?" asks near, not closed.
		if e, ok := a.lx.lookupEn([]string{"near"}, true); ok {
			return 1 + a.entry(e, i, false)
		}
	case w == "last" && next == "" && i > 0 && a.toks[i-1].text != "the":
		for k := i - 1; k >= 0 && k >= i-8; k-- {
			if oneOfWords(a.toks[k].text, "do does did will would can could should might") {
				a.content("w:last") // the verb: how long a warranty lasts, not a cable's length
				return 1
			}
		}
	case oneOfWords(w, "stay stays stayed remain remains remained") && oneOfWords(next, "open opened closed close shut"):
		return 1
	case w == "best" && (next == "way" || next == "ways") && i+2 < len(a.toks) && oneOfWords(a.toks[i+2].text, "to of"):
		return 1
	case (w == "in" || w == "within") && next == "a" && i+2 < len(a.toks) && oneOfWords(a.toks[i+2].text, "year month week day"):
		a.facet(strings.ReplaceAll(englishUnits[a.toks[i+2].text], "#", "1"))
		return 3 // "in a year" is a year from now, not "a year" (per year, annually)
	}
	return 0
}

// leftLeaves reports "left" at i that is the past of leave, not what
// remains: before its object ("orders have left the warehouse", "cartons
// left zone C"; not "are left in zone C", "left over", "left today"), or
// wherever remainLeft does not read it as remain ("Who left after the
// alarm?" / "How many are left?").
func (a *analyzer) leftLeaves(i int) bool {
	word := a.wordAt
	prev, next := word(i-1), word(i+1)
	if determiners[next] && !timeNouns[word(i+2)] || // not "left this year"
		next != "" && !determiners[next] && !leftBefore[next] && !timeNouns[next] && !strings.HasSuffix(next, "ed") &&
			!oneOfWords(prev, "have has are is were was still") {
		return true
	}
	return !a.remainLeft(i)
}

// remainLeft reports "left" at i that says what remains: after a form of
// be or get, there, still, a number or a quantity word ("are left", "got
// left", "3 left", "any left"); after have when a do-form asks ("How many
// days do I have left?", not "How many people have left?"); before in or
// to ("stock left in zone A", "orders left to pick"); or ending its clause
// after a noun ("units left?", not "Who left?" or "Has anybody left?").
// Anywhere else it is the past of leave ("Who left after the alarm?",
// "guests left at midnight", "left for Europe").
func (a *analyzer) remainLeft(i int) bool {
	prev := token{}
	if i > 0 {
		prev = a.toks[i-1]
	}
	switch {
	case prev.kind == tNum,
		prev.kind == tWord && oneOfWords(prev.text, "is are was were be been being am got get gets still there any none some much many more nothing anything everything enough few little all"):
		return true
	case prev.kind == tWord && oneOfWords(prev.text, "have has had"):
		for k := i - 2; k >= 0 && k >= i-6; k-- {
			if oneOfWords(a.toks[k].text, "do does did") {
				return true
			}
		}
		return false
	}
	nt, ok := a.next(i)
	if ok && nt.kind == tWord && oneOfWords(nt.text, "in to") {
		return true
	}
	return (!ok || nt.kind != tWord) && prev.kind == tWord && !oneOfWords(prev.text, "who anybody anyone somebody someone everybody everyone nobody he she they i you we it which what")
}

// oneOfWords reports w among the space-separated words.
func oneOfWords(w, words string) bool {
	for f := range strings.FieldsSeq(words) {
		if f == w {
			return true
		}
	}
	return false
}

// scaleWords multiply the number words before them.
var scaleWords = map[string]int64{"hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000}

// smallNumberWords reads a number word below a hundred at token i
// ("seven", "twenty", "twenty five", "twenty-five", "dozen") and returns its
// value and the tokens used, or 0 tokens.
func (a *analyzer) smallNumberWords(i int) (int64, int) {
	w := a.toks[i].text
	if parts := strings.Split(w, "-"); len(parts) == 2 {
		t, ok1 := numberWordValues[parts[0]]
		u := unitWordValue(parts[1])
		if ok1 && t >= 20 && t%10 == 0 && u > 0 {
			return int64(t + u), 1 // twenty-one
		}
	}
	v, ok := numberWordValues[w]
	if w == "one" && i > 0 && (a.toks[i-1].text == "and" || scaleWords[a.toks[i-1].text] > 0) {
		v, ok = 1, true // "two hundred and one", "one thousand one hundred"
	}
	if !ok {
		return 0, 0
	}
	if v >= 20 && v%10 == 0 && v < 100 {
		if nt, ok := a.next(i); ok && nt.kind == tWord {
			if u := unitWordValue(nt.text); u > 0 {
				return int64(v + u), 2 // twenty one
			}
		}
	}
	return int64(v), 1
}

// unitWordValue returns the value of a number word from one to nine, or 0.
func unitWordValue(w string) int {
	if w == "one" {
		return 1 // not in numberWordValues: alone, one is no number
	}
	if v, ok := numberWordValues[w]; ok && v > 0 && v < 10 {
		return v
	}
	return 0
}

// englishUnits maps unit words after a number to a facet template; "#" is
// replaced by the number.
var englishUnits = map[string]string{
	"s": "dur:#s", "sec": "dur:#s", "secs": "dur:#s", "second": "dur:#s", "seconds": "dur:#s",
	"ms": "dur:#ms", "msec": "dur:#ms", "millisecond": "dur:#ms", "milliseconds": "dur:#ms",
	"min": "dur:#min", "mins": "dur:#min", "minute": "dur:#min", "minutes": "dur:#min",
	"h": "dur:#h", "hr": "dur:#h", "hrs": "dur:#h", "hour": "dur:#h", "hours": "dur:#h",
	"day": "dur:#d", "days": "dur:#d", "week": "dur:#w", "weeks": "dur:#w",
	"wk": "dur:#w", "wks": "dur:#w", "mo": "dur:#mo", "mos": "dur:#mo", "yr": "dur:#y", "yrs": "dur:#y",
	"month": "dur:#mo", "months": "dur:#mo", "year": "dur:#y", "years": "dur:#y",
	"kg": "wt:#kg", "kgs": "wt:#kg", "kilogram": "wt:#kg", "kilograms": "wt:#kg",
	"lb": "wt:#lb", "lbs": "wt:#lb", "pound": "wt:#lb", "pounds": "wt:#lb",
	"km": "dist:#km", "kms": "dist:#km", "kilometer": "dist:#km", "kilometers": "dist:#km", "kilometre": "dist:#km", "kilometres": "dist:#km",
	"t": "wt:#t", "ton": "wt:#t", "tons": "wt:#t", "tonne": "wt:#t", "tonnes": "wt:#t",
	"unit": "qty:#pcs", "units": "qty:#pcs", "piece": "qty:#pcs", "pieces": "qty:#pcs", "pcs": "qty:#pcs", "each": "qty:#pcs", "ea": "qty:#pcs",
	"case": "qty:#case", "cases": "qty:#case", "carton": "qty:#case", "cartons": "qty:#case", "ctn": "qty:#case",
	"pallet": "qty:#pallet", "pallets": "qty:#pallet", "plt": "qty:#pallet",
	"yuan": "cny:#", "rmb": "cny:#", "cny": "cny:#", "usd": "usd:#", "dollar": "usd:#", "dollars": "usd:#",
	"eur": "eur:#", "euro": "eur:#", "euros": "eur:#", "percent": "pct:#", "pct": "pct:#",
	"times": "times:#", "x": "times:#", "retries": "times:#", "attempts": "times:#",
	"o'clock": "clock:#", "oclock": "clock:#",
	"kbyte": "data:#kbyte", "mbyte": "data:#mbyte", "gbyte": "data:#gbyte", "tbyte": "data:#tbyte", // Normalize spells data units out (SpellDataUnits)
	"kbit": "data:#kbit", "mbit": "data:#mbit", "gbit": "data:#gbit", "tbit": "data:#tbit",
	"pbyte": "data:#pbyte", "pbit": "data:#pbit",
	"kbyte/s": "rate:#kbyte", "mbyte/s": "rate:#mbyte", "gbyte/s": "rate:#gbyte", "tbyte/s": "rate:#tbyte", "pbyte/s": "rate:#pbyte",
	"kbit/s": "rate:#kbit", "mbit/s": "rate:#mbit", "gbit/s": "rate:#gbit", "tbit/s": "rate:#tbit", "pbit/s": "rate:#pbit",
}

// unitWords writes the English unit words and abbreviations after a
// number as one word each, so that the verification reads "5 mins" as
// "5 minutes" and "10kg" as "10 kilograms" (the facets read them alike,
// through englishUnits). The names are words, not englishUnits'
// templates: the verification reads time words by name ("for the 5
// years", "a 5 year CD").
var unitWords = map[string]string{
	"s": "second", "sec": "second", "secs": "second", "second": "second", "seconds": "second",
	"ms": "millisecond", "msec": "millisecond", "millisecond": "millisecond", "milliseconds": "millisecond",
	"min": "minute", "mins": "minute", "minute": "minute", "minutes": "minute",
	"h": "hour", "hr": "hour", "hrs": "hour", "hour": "hour", "hours": "hour",
	"day": "day", "days": "day", "wk": "week", "wks": "week", "week": "week", "weeks": "week",
	"mo": "month", "mos": "month", "month": "month", "months": "month",
	"yr": "year", "yrs": "year", "year": "year", "years": "year",
	"kg": "kilogram", "kgs": "kilogram", "kilogram": "kilogram", "kilograms": "kilogram",
	"lb": "pound", "lbs": "pound", "pound": "pound", "pounds": "pound",
	"kbyte": "kbyte", "mbyte": "mbyte", "gbyte": "gbyte", "tbyte": "tbyte", "pbyte": "pbyte", "kbit": "kbit", "mbit": "mbit", "gbit": "gbit", "tbit": "tbit", "pbit": "pbit",
	"kbyte/s": "kbyte/s", "mbyte/s": "mbyte/s", "gbyte/s": "gbyte/s", "tbyte/s": "tbyte/s", "pbyte/s": "pbyte/s",
	"kbit/s": "kbit/s", "mbit/s": "mbit/s", "gbit/s": "gbit/s", "tbit/s": "tbit/s", "pbit/s": "pbit/s",
	"km": "kilometer", "kms": "kilometer", "kilometer": "kilometer", "kilometers": "kilometer", "kilometre": "kilometer", "kilometres": "kilometer",
}

// SplitUnit returns a word that is a number with a unit after it, or a
// unit word after a number (after says the token before is a number),
// as the number and the unit's full word: "10kg" is "10" and "kilogram",
// "2-week" is "2" and "week", "mins" after 5 is "minute"; an age is the
// unit and "old" ("3yo" and "3-year-old" are "3" and "year old"). ok is
// false for any other word.
func SplitUnit(w string, after bool) (num, unit string, ok bool) {
	low := strings.ToLower(w)
	if u, found := unitWords[low]; found && after {
		return "", u, true
	}
	j := 0
	for j < len(low) && low[j] >= '0' && low[j] <= '9' {
		j++
	}
	suf := low[j:]
	if j == 0 || suf == "s" { // 1990s is a decade
		return "", "", false
	}
	if suf == "yo" {
		return w[:j], "year old", true // an age: 3yo
	}
	suf, old := strings.CutSuffix(strings.TrimPrefix(suf, "-"), "-old") // 3-year-old, 2-week
	if u, found := unitWords[suf]; found && (old || suf != low[j:] || len(suf) > 1) {
		if old {
			u += " old"
		}
		return w[:j], u, true
	}
	return "", "", false
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// number handles a number at token i (text v, which for number words is
// already the value) and returns how many tokens it consumed.
func (a *analyzer) number(i int, v string, fromWords bool) int {
	if a.pendingOrd {
		a.pendingOrd = false
		a.facet("ord:" + v)
		return 1
	}
	if !fromWords && !isDigits(v) {
		return a.numberToken(i, v)
	}
	nt, hasNext := a.next(i)
	if hasNext && nt.kind == tWord && scaleWords[nt.text] > 0 && scaleWords[a.toks[i].text] == 0 { // one scale word: "3.5 million", not "3 hundred hundred …"
		if sv := scaleDecimal(v, scaleWords[nt.text]); sv != "" {
			return 1 + a.number(i+1, sv, true) // "3.5 million" is 3500000
		}
	}
	if hasNext {
		switch {
		case nt.kind == tSym && nt.text == "%": // "10%" and "10 %" alike
			a.facet("pct:" + v)
			return 2
		case nt.kind == tWord:
			if tpl, ok := englishUnits[nt.text]; ok {
				a.facet(strings.ReplaceAll(tpl, "#", v))
				return 2
			}
			if nt.text == "pm" || nt.text == "p.m" || nt.text == "am" || nt.text == "a.m" {
				if f, ok := clock12(v, "0", nt.text[0] == 'p'); ok {
					a.facet(f)
					return 2
				}
			}
			if nt.adj {
				if d := dayNumber(v + nt.text); d > 0 && (nt.text == "st" || nt.text == "nd" || nt.text == "rd" || nt.text == "th") {
					a.facet("ord:" + v)
					return 2
				}
			}
		case nt.kind == tHan && nt.adj:
			if f, m := hanMultiplier([]rune(nt.text)); m > 0 {
				// A mixed numeral: "1.5万" is 15000, "3千件" 3000 pieces.
				if sv := scaleDecimal(v, f); sv != "" {
					rest := len([]rune(nt.text)) > m
					a.consumeHanPrefix(i+1, m)
					if nt2, ok := a.next(i); ok && rest {
						if cf, n := hanClassifier(sv, []rune(nt2.text), a, numeral{i, -1}); n > 0 && cf != "" {
							a.facet(cf)
							a.consumeHanPrefix(i+1, n)
							return 1
						}
					}
					a.facet("num:" + sv)
					return 1
				}
			}
			if f, n := hanClassifier(v, []rune(nt.text), a, numeral{i, -1}); n > 0 {
				if f != "" {
					a.facet(f)
				}
				a.consumeHanPrefix(i+1, n)
				return 1
			}
			if strings.HasPrefix(nt.text, "号") {
				// 8号: a day of the month or a number, kept apart from 八号.
				a.facet("hao:" + v)
				a.consumeHanPrefix(i+1, 1)
				return 1
			}
		}
	}
	if fromWords {
		a.facet("num:" + v)
		return 1
	}
	if len(v) == 4 && (strings.HasPrefix(v, "19") || strings.HasPrefix(v, "20")) {
		a.facet("year:" + v)
		return 1
	}
	a.facet("num:" + v)
	return 1
}

// numberToken handles a digit-led token that is not a plain integer:
// decimals, times, dates, numbers with a unit suffix ("20s", "3pm") and
// identifiers ("3a-17").
func (a *analyzer) numberToken(i int, v string) int {
	if j := strings.IndexByte(v, ':'); j > 0 && isDigits(v[:j]) && isDigits(v[j+1:]) && len(v[j+1:]) == 2 {
		pm := false
		ampm := false
		if nt, ok := a.next(i); ok && nt.kind == tWord && (nt.text == "pm" || nt.text == "p.m" || nt.text == "am" || nt.text == "a.m") {
			pm, ampm = nt.text[0] == 'p', true
		}
		h, _ := strconv.Atoi(v[:j])
		if half := a.ampmAdjacent(numeral{i, -1}); half != "" && !ampm && h >= 1 && h <= 12 {
			if f, ok := clock24(v[:j], v[j+1:], half, a.ampmWord); ok {
				a.dropAmPm()
				a.facet(f) // 下午3:30 is 15:30, as 下午三点半 is
				return 1
			}
		}
		if !ampm && h >= 1 && h <= 12 && v[0] != '0' {
			// 5:00 with no half of the day may be 5 am or 5 pm (下午3:30到5:00):
			// never equal to either; 05:00 is on the 24-hour clock.
			a.facet("clock:" + v)
			return 1
		}
		if f, ok := clock12(v[:j], v[j+1:], pm); ok && (ampm || strings.HasPrefix(f, "time:")) {
			a.facet(f)
			if ampm {
				return 2
			}
			return 1
		}
		a.facet("clock:" + v)
		return 1
	}
	if p := strings.Split(v, "-"); len(p) == 3 && len(p[0]) == 4 && isDigits(p[0]) && isDigits(p[1]) && isDigits(p[2]) {
		m, _ := strconv.Atoi(p[1])
		d, _ := strconv.Atoi(p[2])
		a.facet("date:" + p[0] + "-" + strconv.Itoa(m) + "-" + strconv.Itoa(d))
		return 1
	}
	// Split the leading number from a letter suffix.
	j := 0
	for j < len(v) && (v[j] >= '0' && v[j] <= '9' || v[j] == '.') {
		j++
	}
	num, suf := v[:j], v[j:]
	// An age: "a 3-year-old", "my 3yo", "her 18-month-old" read as "3 year
	// old" does.
	if unit, old := strings.CutSuffix(suf, "-old"); old || suf == "yo" {
		if suf == "yo" {
			unit = "year"
		}
		if tpl := englishUnits[strings.TrimPrefix(unit, "-")]; tpl != "" && strings.HasPrefix(tpl, "dur:") {
			a.facet(strings.ReplaceAll(tpl, "#", num))
			if e, ok := a.lx.lookupEn([]string{"old"}, true); ok {
				a.entry(e, i, false)
			}
			return 1
		}
	}
	if f := unitAfterHyphen(num, suf); f != "" {
		a.facet(f) // "a 2-week trip" is two weeks
		return 1
	}
	if suf == "'s" {
		suf = "" // "wave 4's pick list" is wave 4's
	}
	if strings.Count(num, ".") <= 1 && !strings.HasSuffix(num, ".") {
		if suf == "" {
			return a.number(i, num, true) // a decimal: same unit handling
		}
		if suf == "pm" || suf == "am" {
			if f, ok := clock12(num, "0", suf == "pm"); ok {
				a.facet(f)
				return 1
			}
		}
		if suf == "st" || suf == "nd" || suf == "rd" || suf == "th" {
			a.facet("ord:" + num)
			return 1
		}
		if suf == "k" {
			// "3k" and "1.5k" are thousands: the same as 3000 and 1500.
			if sv := scaleDecimal(num, 1000); sv != "" {
				return a.number(i, sv, true)
			}
		}
		if tpl, ok := englishUnits[suf]; ok && suf != "x" && suf != "t" && suf != "s" || suf == "s" || suf == "x" {
			if suf == "s" && len(num) == 4 {
				a.facet("decade:" + num) // "1990s"
				return 1
			}
			if tpl == "" {
				tpl = englishUnits[suf]
			}
			a.facet(strings.ReplaceAll(tpl, "#", num))
			return 1
		}
	}
	a.facet(v)
	return 1
}

// eraBefore reports an era named right before the number at pos (era),
// and whether it is 公元前 (bc), not 公元.
func (a *analyzer) eraBefore(pos numeral) (bc, era bool) {
	var before string
	switch {
	case pos.at > 0:
		before = string([]rune(a.toks[pos.tok].text)[:pos.at])
	case pos.at < 0 && pos.tok > 0 && a.toks[pos.tok-1].kind == tHan && a.toks[pos.tok].adj:
		before = a.toks[pos.tok-1].text
	}
	return strings.HasSuffix(before, "公元前"), strings.HasSuffix(before, "公元前") || strings.HasSuffix(before, "公元")
}

// timeDeixis reports a facet of a day, week or term said relative to now
// (后天, 上学期, 下周).
func timeDeixis(f string) bool {
	return strings.HasPrefix(f, "day:") || strings.HasPrefix(f, "term:") || strings.HasPrefix(f, "week:")
}

// splitsWord reports that a boundary before rs[k] would split a word of
// the most probable segmentation (HanSegment) of the runes around it:
// rs[k-1] and rs[k] are one word (期间 in 上学期间, 天气 in 后天气).
func splitsWord(rs []rune, k int) bool {
	if k <= 0 || k >= len(rs) {
		return false
	}
	lo, hi := max(0, k-8), min(len(rs), k+8) // the words around k: a bounded window, however long the run
	chars := make([]string, hi-lo)
	for i, r := range rs[lo:hi] {
		chars[i] = string(r)
	}
	seg := HanSegment(chars)
	return seg[k-1-lo] == seg[k-lo]
}

// head returns the first runes of rs (at most maxHead) as a string: what
// a reading of the text at rs looks at, so that reading every position of
// a long run does not copy the rest of the run each time.
func head(rs []rune) string { return string(rs[:min(len(rs), maxHead)]) }

// maxHanNumeral bounds a run of Chinese numerals read as one number (no
// number is said in more; a longer run is read in pieces, so that reading
// a run of numerals stays linear in its length).
const maxHanNumeral = 24

// maxHead bounds head: longer than any word the readings look for after a
// position (上上个礼拜三, 号仓库, 百分之).
const maxHead = 12

// weekOfDay reads the week of a weekday said after it at the start of rs
// (每周三, 下周三, 下个星期三, 上上礼拜五, 这周日) and returns its facet and the
// runes before the weekday's own word (周三, 星期三, 礼拜三), or 0 runes.
func weekOfDay(rs []rune) (string, int) {
	s := head(rs)
	for _, d := range []struct{ prefix, facet string }{
		{"上上", "week:before_last"}, {"下下", "week:after_next"}, {"每", "freq:week"},
		{"上", "week:last"}, {"下", "week:next"}, {"这", "week:this"}, {"本", "week:this"},
	} {
		rest, ok := strings.CutPrefix(s, d.prefix)
		if !ok {
			continue
		}
		n := utf8.RuneCountInString(d.prefix)
		if r, ok := strings.CutPrefix(rest, "个"); ok {
			rest, n = r, n+1 // 下个星期三, 每个周三
		}
		for _, week := range []string{"周", "星期", "礼拜"} {
			if day, ok := strings.CutPrefix(rest, week); ok && day != "" && strings.ContainsRune("一二三四五六日天", []rune(day)[0]) {
				if dr := []rune(day); len(dr) > 1 && strings.ContainsRune("个位名次件天人点号份张台辆箱", dr[1]) {
					return "", 0 // 这周三个人: three people this week, not Wednesday
				}
				return d.facet, n
			}
		}
		return "", 0
	}
	return "", 0
}

// numeral is where a number being read stands: its token and, for Chinese
// numerals inside a Han run, the rune it starts at (at is -1 for a digit
// token).
type numeral struct{ tok, at int }

// ampmAdjacent returns the am/pm facet ("ampm:pm") of the Chinese half of
// the day written right before the numeral n (下午两点, 下午2点, 下午2:30),
// or "": the clock then reads on the 24-hour clock and the facet goes
// (dropAmPm), so that 下午4点 = 4 pm = 16:00. A half of the day elsewhere
// in the question (下午下的单8:00前) is no such word.
func (a *analyzer) ampmAdjacent(n numeral) string {
	if a.ampmTok < 0 || a.ampmIdx < 0 || a.ampmIdx >= len(a.out.ordered) {
		return ""
	}
	half := a.out.ordered[a.ampmIdx]
	switch {
	case n.at >= 0 && n.tok == a.ampmTok && n.at == a.ampmEnd:
		return half // 下午两点: one Han run
	case n.at < 0 && n.tok == a.ampmTok+1 && a.toks[n.tok].adj && a.ampmEnd == utf8.RuneCountInString(a.toks[a.ampmTok].text):
		return half // 下午2点, 下午2:30: the digits right after the run
	}
	return ""
}

// dropAmPm removes the am/pm facet a clock time has taken in.
func (a *analyzer) dropAmPm() {
	a.out.ordered = slices.Delete(a.out.ordered, a.ampmIdx, a.ampmIdx+1)
	a.ampmIdx, a.ampmTok = -1, -1
}

// clock24 is clock on the 24-hour clock for an hour 1..12 said with a half
// of the day (its facet, and the word as written), where the two agree on
// one hour: the morning 1–11 (and 凌晨十二点, 0), 下午 any (12 stays noon),
// 中午 11, 12, 1 and 2, the evening 6–11 (18–23) and 12 (24: 晚上十二点
// ends the day, 周五晚上十二点 is not 周五零点, a day earlier). Any other
// pairing (晚上一点, 上午十二点) is not read (false): the half's facet stays
// beside an ambiguous clock.
func clock24(h, m, half, word string) (string, bool) {
	hh, _ := strconv.Atoi(h)
	switch half {
	case "ampm:am":
		switch {
		case hh < 12:
			return clock(h, m, false)
		case word == "凌晨":
			return clock("0", m, false)
		}
	case "ampm:pm":
		return clock(h, m, true) // 下午一点 13:00, 下午十二点 12:00
	case "ampm:noon":
		switch {
		case hh >= 11:
			return clock(h, m, false) // 中午十一点半, 中午十二点
		case hh <= 2:
			return clock(h, m, true) // 中午一点 13:00
		}
	case "ampm:evening":
		switch {
		case hh >= 6 && hh < 12:
			return clock(h, m, true) // 晚上八点 20:00
		case hh == 12:
			if mm, err := strconv.Atoi(m); err == nil && mm <= 59 {
				return "time:24:" + pad2(mm), true
			}
		}
	}
	return "", false // 晚上一点 (1 am or 1 pm?), 上午十二点, 中午八点: not read
}

// clock12 is clock for an hour written with am or pm: 12 am is 0, 12 pm
// is 12 (a 24-hour hour 13..23 is taken as written).
func clock12(h, m string, pm bool) (string, bool) {
	if h == "12" {
		if !pm {
			h = "0"
		}
		return clock(h, m, false)
	}
	return clock(h, m, pm)
}

// clock returns the facet of hour h (and minute m) on a 12-hour clock with
// a known half ("time:15:00"), or on a 24-hour clock when pm is false. The
// callers leave an hour 1..12 without a half of the day out ("clock:5:00"
// or "clock:5"), which never equals a time: facet.
func clock(h, m string, pm bool) (string, bool) {
	hh, err1 := strconv.Atoi(h)
	mm, err2 := strconv.Atoi(m)
	if err1 != nil || err2 != nil || hh > 23 || mm > 59 {
		return "", false
	}
	return "time:" + strconv.Itoa(hh+boolInt(pm && hh < 12)*12) + ":" + pad2(mm), true
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func pad2(n int) string {
	if n < 10 {
		return "0" + strconv.Itoa(n)
	}
	return strconv.Itoa(n)
}

// operand returns token k as an operand of an operator: a number (with
// its minus sign) or a word (x, price); else "".
func (a *analyzer) operand(k int) string {
	if k < 0 || k >= len(a.toks) {
		return ""
	}
	t := a.toks[k]
	switch {
	case t.kind == tSym && t.text == "-" && k+1 < len(a.toks) && a.toks[k+1].kind == tNum && a.toks[k+1].adj:
		return "-" + a.toks[k+1].text
	case t.kind == tNum:
		return t.text
	case t.kind == tWord:
		return t.text
	}
	return ""
}

// sym handles a symbol token.
func (a *analyzer) sym(i int) int {
	t := a.toks[i]
	if operators[t.text] {
		a.facet("sym:" + t.text)
		// Its operands, in order: "2^x" is not
		// "x^2", "x > 5" not "5 > x".
		switch l, r := a.operand(i-1), a.operand(i+1); {
		case t.text == "++" || t.text == "--":
			// Unary: on the operand it touches, i++ is not ++i.
			if t.adj && l != "" {
				a.facet("expr:" + l + t.text)
			} else if i+1 < len(a.toks) && a.toks[i+1].adj && r != "" {
				a.facet("expr:" + t.text + r)
			}
		case l != "" && r != "":
			a.facet("expr:" + l + t.text + r)
		}
		return 1
	}
	nt, ok := a.next(i)
	if !ok || nt.kind != tNum || !nt.adj {
		return 1
	}
	switch t.text {
	case "$":
		a.facet("usd:" + nt.text)
		return 2
	case "¥":
		a.facet("cny:" + nt.text)
		return 2
	case "€":
		a.facet("eur:" + nt.text)
		return 2
	case "£":
		a.facet("gbp:" + nt.text)
		return 2
	}
	return 1
}

const hanDigits = "零〇一二两三四五六七八九"

// hanUnits are the Chinese numeral units; 十 may start a numeral (十五),
// the others may not (万一 "in case", 千万 "by all means", 百分之 "percent").
const hanUnits = "十百千万亿"

// measures are the measure words after which a digit counts something
// else (一块五一斤: the 一 counts the 斤).
const measures = "个件只条张本块米斤两克元毛分天次箱瓶包盒袋人"

// maoAmount reads a sum in tenths of a yuan after the numeral v: 两毛五 is
// 0.25 yuan (v 毛, then a digit of hundredths, before no measure word).
// It returns the amount and the runes read after v, or 0.
func maoAmount(v string, rest []rune) (string, int) {
	tenths, err := strconv.Atoi(v)
	if len(rest) < 2 || rest[0] != '毛' && rest[0] != '角' || err != nil || tenths > 9 {
		return "", 0
	}
	d, ok := hanDigit(rest[1])
	if !ok || len(rest) > 2 && strings.ContainsRune(measures, rest[2]) {
		return "", 0
	}
	return strings.TrimRight(strings.TrimRight(big.NewRat(int64(tenths*10+d), 100).FloatString(2), "0"), "."), 2
}

// colloquialDecimal reads the decimals a Chinese length, price or
// temperature carries after its unit, 米, 块 or 度: 七五 in 一米七五, 零七 in
// 一米零七, 五 in 一块五 and 三十八度五, 半 (.5) in 一块半 —
// one or two digits, perhaps after 零, with no numeral or measure word after
// them (一块五一斤 is 1.5 yuan a jin; 三米五个 reads nothing). It returns the
// decimals and how many runes, unit included, it read.
func colloquialDecimal(rest []rune) (string, int) {
	if len(rest) >= 3 && strings.ContainsRune("元块", rest[0]) && strings.ContainsRune("角毛", rest[2]) {
		if d, ok := hanDigit(rest[1]); ok {
			return strconv.Itoa(d), 3 // 一元五角, 一块五毛: 1.5 yuan
		}
	}
	if len(rest) < 2 || !strings.ContainsRune("米块度", rest[0]) {
		return "", 0
	}
	if rest[1] == '半' {
		return "5", 2 // 一米半, 一块半, 三十八度半
	}
	digits, j := "", 1
	if rest[j] == '零' {
		digits, j = "0", 2
	}
	for k := 0; k < 2 && j < len(rest); k++ {
		d, ok := hanDigit(rest[j])
		if !ok || rest[j] == '两' {
			break
		}
		digits += string(rune('0' + d))
		j++
	}
	switch {
	case digits == "" || digits == "0":
		return "", 0
	case j == len(rest):
		return digits, j
	case strings.ContainsRune(measures, rest[j]) && len(digits) == 2 && digits[0] != '0':
		return digits[:1], j - 1 // 一块五一斤: the 一 counts the 斤
	case strings.ContainsRune(measures+hanDigits+hanUnits, rest[j]):
		return "", 0 // 三米五个人, 一块五毛, 一米七五六: not one reading
	}
	return digits, j
}

// hanFraction reads N分之M at the start of rs (三分之一, 千分之五, 万分之三)
// as "M/N", with the runes read, or 0.
func hanFraction(rs []rune) (string, int) {
	var den string
	n := 0
	switch {
	case strings.HasPrefix(head(rs), "千分之"):
		den, n = "1000", 1
	case strings.HasPrefix(head(rs), "万分之"):
		den, n = "10000", 1
	default:
		v, m, _ := parseHanNumber(rs)
		if m == 0 || !isDigits(v) {
			return "", 0
		}
		den, n = v, m
	}
	if !strings.HasPrefix(head(rs[n:]), "分之") || den == "100" {
		return "", 0
	}
	num, m, _ := parseHanNumber(rs[n+2:])
	if m == 0 || !isDigits(num) {
		return "", 0
	}
	return num + "/" + den, n + 2 + m
}

// hanDecimals reads the decimals after 点 at the start of rest: one or
// more digits (零 to 九), not followed by 分, 刻 or 半 nor by 十 or 百 (a
// clock: 三点零五分, 三点一刻, 三点五十). It returns the digits and the
// runes read, 点 included, or 0.
func hanDecimals(rest []rune) (string, int) {
	if len(rest) < 2 || rest[0] != '点' {
		return "", 0
	}
	digits, j := "", 1
	for ; j < len(rest); j++ {
		d, ok := hanDigit(rest[j])
		if !ok || rest[j] == '两' {
			break
		}
		digits += string(rune('0' + d))
	}
	if digits == "" || j < len(rest) && strings.ContainsRune("分刻半十百千万钟", rest[j]) {
		return "", 0
	}
	return digits, j
}

// halfable reports a facet whose number may take a half (dur, wt, dist,
// age, cny, qty, or a count with its measure word): not a clock, a day, a
// floor or a warehouse.
func halfable(f string) bool {
	for _, p := range []string{"dur:", "wt:", "dist:", "age:", "cny:", "qty:", "num:"} {
		if strings.HasPrefix(f, p) {
			return true
		}
	}
	return false
}

// halfOf reads the unit at the start of rest for the number v (0.5 after
// 半, 1.5 after 一个半): the facet and the runes it used, or 0 when rest
// starts with no unit that takes a half.
func halfOf(v string, rest []rune, a *analyzer, pos numeral) (string, int) {
	f, m := hanClassifier(v, rest, a, pos)
	if m == 0 || !halfable(f) || f == "num:"+v {
		return "", 0 // 半个 alone: half of what?
	}
	return f, m
}

// hanDigit returns the value of a Chinese digit (零 and 〇 are 0, 两 is 2).
func hanDigit(r rune) (int, bool) {
	switch r {
	case '〇':
		return 0, true
	case '两':
		return 2, true
	}
	d := slices.Index([]rune("零一二三四五六七八九"), r)
	return d, d >= 0
}

// hanDigitValue is hanDigit for a rune known to be a digit.
func hanDigitValue(r rune) int {
	d, _ := hanDigit(r)
	return d
}

// parseHanNumber reads a Chinese numeral at the start of rs. It returns the
// value as a decimal string, the runes used, and whether it was written
// digit by digit (二〇二三), which only a year may be.
//
// Colloquial forms are read as spoken: a digit right after 百, 千, 万 or 亿
// at the end of the numeral carries the next lower unit (三万六 = 36000,
// 一千八 = 1800, 两百五 = 250), unless 零 comes before it (一百零五 = 105);
// 两 is 2. A numeral that starts with a unit other than 十 is not read.
func parseHanNumber(rs []rune) (string, int, bool) {
	n := 0
	for n < len(rs) && n < maxHanNumeral && strings.ContainsRune(hanDigits+hanUnits, rs[n]) {
		n++
	}
	if n == 0 || strings.ContainsRune("百千万亿", rs[0]) {
		return "", 0, false
	}
	// In a numeral with units two digits never touch (a 零 may precede a
	// digit): 一千八一个月 is 一千八 and then 一个月.
	for k := 1; k < n; k++ {
		if strings.ContainsRune(hanUnits, rs[k-1]) {
			continue
		}
		if isDigitRune(rs[k]) && isDigitRune(rs[k-1]) && strings.ContainsFunc(string(rs[:k]), func(r rune) bool { return strings.ContainsRune(hanUnits, r) }) {
			n = k
			break
		}
	}
	plain := true
	for _, r := range rs[:n] {
		if strings.ContainsRune(hanUnits, r) {
			plain = false
		}
	}
	if plain {
		var b strings.Builder
		for _, r := range rs[:n] {
			b.WriteString(strconv.Itoa(hanDigitValue(r)))
		}
		return b.String(), n, n > 1
	}
	unitOf := map[rune]int64{'十': 10, '百': 100, '千': 1000, '万': 10000, '亿': 100000000}
	var total, wan, section, num int64
	for k, r := range rs[:n] {
		switch r {
		case '十', '百', '千':
			if num == 0 {
				num = 1
			}
			section += num * unitOf[r]
			num = 0
		case '万':
			wan += (section + num) * 10000
			section, num = 0, 0
		case '亿':
			total += (wan + section + num) * 100000000
			wan, section, num = 0, 0, 0
		default:
			num = int64(hanDigitValue(r))
			// The implied unit: the last digit right after 百/千/万/亿.
			if k == n-1 && k >= 2 && strings.ContainsRune("百千万亿", rs[k-1]) {
				num *= unitOf[rs[k-1]] / 10
			}
		}
	}
	return strconv.FormatInt(total+wan+section+num, 10), n, false
}

// isDigitRune reports a Chinese digit other than 零 (一 … 九, 两).
func isDigitRune(r rune) bool { return r != '零' && r != '〇' && strings.ContainsRune(hanDigits, r) }

// vagueHanNumber reads an approximate Chinese numeral at the start of rs:
// 十几, 几十, 几百, 二十几, 三十多, 一百多, 百余, 十来 ("ten-odd", "some
// tens"). It returns the runes used, or 0. Such a number never equals a
// specific one: it becomes the facet "approx:" + the numeral as written.
func vagueHanNumber(rs []rune) int {
	n := 0
	for n < len(rs) && n < maxHanNumeral && strings.ContainsRune(hanDigits+hanUnits+"几", rs[n]) {
		n++
	}
	if n == 0 {
		return 0
	}
	hasJi, hasUnit := false, false
	for _, r := range rs[:n] {
		hasJi = hasJi || r == '几'
		hasUnit = hasUnit || strings.ContainsRune(hanUnits, r)
	}
	if hasJi && hasUnit {
		return n // 十几, 几十, 二十几万
	}
	// Two neighbouring digits in a row are a range: 两三百, 四五十, 一两千,
	// 十一二 (eleven or twelve), 二三十万.
	for k := 1; k < n; k++ {
		a, okA := hanDigit(rs[k-1])
		b, okB := hanDigit(rs[k])
		if okA && okB && rs[k-1] != '零' && rs[k-1] != '〇' && b == a+1 && (k+1 < n || hasUnit || n < len(rs)) {
			return n
		}
	}
	if hasUnit && !hasJi && n < len(rs) && strings.ContainsRune("多余来", rs[n]) && strings.ContainsRune(hanUnits, rs[n-1]) {
		n++ // 三十多, 百余, 十来
		for n < len(rs) && strings.ContainsRune("万亿", rs[n]) {
			n++ // 十多万
		}
		return n
	}
	return 0
}

// approxValue is the facet value of an approximate numeral: 几 after a
// unit, and 余, mean what 多 means there (十几 = 十多 = 十余, 二十几 = 二十多),
// so they are written 多. 几十 ("some tens") and 十来 ("about ten") stay as
// written.
func approxValue(rs []rune) string {
	out := []rune(string(rs))
	for k := 1; k < len(out); k++ {
		if (out[k] == '几' || out[k] == '余') && strings.ContainsRune(hanUnits, out[k-1]) {
			out[k] = '多' // 十几万 = 十多万
		}
	}
	return string(out)
}

// hanMultiplier reads a Chinese unit after an Arabic number ("1.5万",
// "3千", "2亿") and returns its factor and runes used, or 0. 千 followed by
// 克, 米, 瓦 or 字节 is a metric prefix, and 百分 a percentage: not read.
func hanMultiplier(rs []rune) (int64, int) {
	if len(rs) == 0 {
		return 0, 0
	}
	next := ""
	if len(rs) > 1 {
		next = head(rs[1:])
	}
	switch rs[0] {
	case '万':
		return 10000, 1
	case '亿':
		return 100000000, 1
	case '千':
		for _, p := range []string{"克", "米", "瓦", "字节", "卡", "帕", "兆"} {
			if strings.HasPrefix(next, p) {
				return 0, 0
			}
		}
		return 1000, 1
	case '百':
		if strings.HasPrefix(next, "分") {
			return 0, 0
		}
		return 100, 1
	}
	return 0, 0
}

// scaleDecimal returns the decimal number v times f as a decimal string
// ("1.5" × 10000 = "15000"), or "" when v is not a decimal number.
func scaleDecimal(v string, f int64) string {
	r, ok := new(big.Rat).SetString(v)
	if !ok {
		return ""
	}
	r.Mul(r, new(big.Rat).SetInt64(f))
	if r.IsInt() {
		return r.Num().String()
	}
	return strings.TrimRight(strings.TrimRight(r.FloatString(6), "0"), ".")
}

// hanClassifier reads a Chinese classifier or unit at the start of rs,
// after the number v, and returns the facet and the runes it used (0 when
// rs does not start with one). pos is where the number stands: inside a
// Han run (pos.at >= 0) it was written in Chinese numerals.
func hanClassifier(v string, rs []rune, a *analyzer, pos numeral) (string, int) {
	han := pos.at >= 0
	s := head(rs)
	has := func(p string) bool { return strings.HasPrefix(s, p) }
	type unit struct{ prefix, tpl string }
	for _, u := range []unit{
		{"号仓库", "wh:#"}, {"号仓", "wh:#"}, {"号库", "wh:#"}, {"仓", "wh:#"},
		{"号月台", "dock:#"}, {"号门", "dock:#"}, {"号道口", "dock:#"},
		{"号巷道", "aisle:#"}, {"号通道", "aisle:#"}, {"号区", "zone:#"}, {"库区", "zone:#"},
		{"毫秒", "dur:#ms"}, {"秒钟", "dur:#s"}, {"秒", "dur:#s"}, {"分钟", "dur:#min"},
		{"个小时", "dur:#h"}, {"小时", "dur:#h"}, {"天", "dur:#d"}, {"个星期", "dur:#w"}, {"周岁", "age:#"},
		{"星期", "dur:#w"}, {"个礼拜", "dur:#w"}, {"礼拜", "dur:#w"}, {"周", "dur:#w"}, {"个月", "dur:#mo"},
		{"公斤", "wt:#kg"}, {"千克", "wt:#kg"}, {"磅", "wt:#lb"}, {"吨", "wt:#t"}, {"斤", "wt:#jin"},
		{"公里", "dist:#km"}, {"千米", "dist:#km"}, {"岁", "age:#"},
		{"件", "qty:#pcs"}, {"箱", "qty:#case"}, {"托盘", "qty:#pallet"}, {"托", "qty:#pallet"},
		{"美元", "usd:#"}, {"美金", "usd:#"}, {"港币", "hkd:#"}, {"港元", "hkd:#"}, {"英镑", "gbp:#"}, {"日元", "jpy:#"},
		{"日币", "jpy:#"}, {"韩元", "krw:#"}, {"欧元", "eur:#"}, {"元", "cny:#"}, {"块钱", "cny:#"},
		{"次", "times:#"}, {"遍", "times:#"}, {"层", "floor:#"}, {"楼", "floor:#"},
		{"年级", "grade:#"}, {"级", "level:#"}, {"班", "class:#"}, {"季度", "quarter:#"},
		{"期", "phase:#"}, {"届", "cohort:#"}, {"版", "ver:#"},
		// A generic measure word (个, and 名 for people) gives a bare
		// number; any other keeps its word, which tells what is counted:
		// 两片药 is not 两盒药, 两张票 not 两台票 (the number is the same, the
		// thing counted is not, and the measure word leaves the content).
		{"个", "num:#"}, {"名", "num:#"}, {"位", "num:#位"},
		{"条", "num:#条"}, {"张", "num:#张"}, {"台", "num:#台"}, {"所", "num:#所"}, {"家", "num:#家"},
		{"瓶", "num:#瓶"}, {"杯", "num:#杯"}, {"本", "num:#本"}, {"辆", "num:#辆"}, {"只", "num:#只"}, {"份", "num:#份"},
		{"双", "num:#双"}, {"把", "num:#把"}, {"支", "num:#支"}, {"盒", "num:#盒"}, {"袋", "num:#袋"}, {"套", "num:#套"},
		{"根", "num:#根"}, {"颗", "num:#颗"}, {"片", "num:#片"}, {"篇", "num:#篇"}, {"首", "num:#首"}, {"部", "num:#部"},
		{"间", "num:#间"}, {"座", "num:#座"}, {"栋", "num:#栋"}, {"棵", "num:#棵"}, {"头", "num:#头"}, {"艘", "num:#艘"},
		{"架", "num:#架"}, {"趟", "num:#趟"}, {"顿", "num:#顿"}, {"场", "num:#场"}, {"门", "num:#门"}, {"节", "num:#节"},
		{"倍", "num:#倍"}, {"番", "num:#番"}, {"成", "num:#成"}, {"环", "num:#环"}, {"档", "num:#档"}, {"代", "num:#代"}, {"星级", "num:#星"},
		{"星", "num:#星"}, {"匹", "num:#匹"}, {"角", "num:#角"}, {"毛", "num:#毛"}, {"桌", "num:#桌"},
	} {
		if has(u.prefix) {
			return strings.ReplaceAll(u.tpl, "#", v), utf8.RuneCountInString(u.prefix)
		}
	}
	if has("块") {
		// 三百块, 三百块的衣服: yuan; 两块蛋糕: two pieces.
		if len(rs) == 1 || !IsHan(rs[1]) || strings.ContainsRune("的左多吗呢吧啊了一", rs[1]) {
			return "cny:" + v, 1
		}
		return "num:" + v + "块", 1
	}
	if _, n := zoneSuffix(s); n > 0 {
		return "zone:" + v, n
	}
	if has("年") {
		if bc, era := a.eraBefore(pos); era {
			if bc {
				return "year:-" + v, 1 // 公元前221年 (221 BC) is not 公元221年, nor 221 years
			}
			return "year:" + v, 1 // 公元221年 is the year 221 (221年 alone may be a duration)
		}
		switch {
		case len(v) == 4 && (han || isDigits(v)):
			return "year:" + v, 1
		case len(v) == 2 && isDigits(v):
			return "year2:" + v, 1 // "23年": never equal to a four-digit year
		}
		return "dur:" + v + "y", 1
	}
	if has("月") {
		if m, _ := strconv.Atoi(v); m >= 1 && m <= 12 {
			return "month:" + strconv.Itoa(m), 1
		}
		return "", 0
	}
	if has("日") || has("号") {
		if strings.HasPrefix(a.lastFacet, "month:") {
			return "day:" + v, 1
		}
		if has("日") {
			return "dom:" + v, 1
		}
		return "", 0 // 号 alone is ambiguous: handled by the caller
	}
	if has("折") {
		// A discount as the percentage paid: 八折 80, 八五折 and 8.5折 85.
		d := strings.Replace(v, ".", "", 1)
		if len(d) == 1 {
			d += "0"
		}
		return "discount:" + d, 1
	}
	if has("点") {
		h, _ := strconv.Atoi(v)
		if half := a.ampmAdjacent(pos); half != "" && h >= 1 && h <= 12 {
			m, mn := hanMinutes(rs[1:])
			if f, ok := clock24(v, m, half, a.ampmWord); ok {
				a.dropAmPm()
				return f, 1 + mn
			}
		}
		if h >= 13 && h <= 23 || h == 0 {
			m, mn := hanMinutes(rs[1:])
			f, _ := clock(v, m, false)
			if half := a.ampmAdjacent(pos); h >= 13 && (half == "ampm:pm" || half == "ampm:evening") {
				a.dropAmPm() // 晚上二十点 = 二十点; 晚上零点 and 凌晨零点 keep theirs (a day apart)
			}
			return f, 1 + mn
		}
		if m, mn := hanMinutes(rs[1:]); mn > 0 {
			return "clock:" + v + ":" + pad2(atoi(m)), 1 + mn // 九点半, 三点一刻: the minutes, whatever the half of the day
		}
		return "clock:" + v, 1
	}
	return "", 0
}

func atoi(s string) int {
	n, _ := strconv.Atoi(s)
	return n
}

// hanMinutes reads the minutes after 点 on a clock, perhaps after 过: 半
// (30), 一刻 (15), 三刻 (45), a numeral with 分 (零五分, 四十五分) or a
// two-digit numeral at the end of the run or before a word of time (六点四十,
// 六点四十出发, 六点四十的车; a measure word may follow anything else). It returns "0" and 0
// when none follow. 二十点五公斤 is 20.5 kg (a decimal, read first), 晚上七点三十桌菜
// thirty tables.
func hanMinutes(rs []rune) (string, int) {
	skip := 0
	if len(rs) > 1 && rs[0] == '过' {
		skip, rs = 1, rs[1:] // 九点过五分
	}
	v, n := hanMinutesAt(rs)
	if n == 0 {
		return v, 0
	}
	return v, n + skip
}

// hanMinutesAt is hanMinutes after any 过.
func hanMinutesAt(rs []rune) (string, int) {
	s := head(rs)
	switch {
	case strings.HasPrefix(s, "半"):
		return "30", 1
	case strings.HasPrefix(s, "一刻"):
		return "15", 2
	case strings.HasPrefix(s, "三刻"):
		return "45", 2
	}
	v, n, _ := parseHanNumber(rs)
	if n == 0 {
		return "0", 0
	}
	if m, err := strconv.Atoi(v); err != nil || m > 59 {
		return "0", 0
	}
	if n < len(rs) && rs[n] == '分' {
		return v, n + 1
	}
	if strings.ContainsRune(string(rs[:n]), '十') && (n == len(rs) || strings.ContainsRune("的到前后左开出起见准整之", rs[n])) {
		return v, n // 六点四十, 六点四十出发: two-digit minutes need no 分 (not 七点三十桌, 四点二十车货)
	}
	return "0", 0
}

// han handles a run of Han characters and returns the tokens it consumed
// (always 1, or 2 when a following number was taken, e.g. 仓库3).
func (a *analyzer) han(i int) int {
	rs := []rune(a.toks[i].text)
	for k := 1; k < len(rs); k++ {
		if rs[k] == '儿' && rs[k-1] == '哪' {
			rs[k] = '里' // 哪儿 = 哪里: erhua (not 那儿子, 那 + 儿子)
		}
	}

	var resid []rune
	flush := func() {
		if len(resid) > 0 {
			a.content("z:" + string(resid))
			resid = resid[:0]
		}
	}
	consumed := 1
	for p := 0; p < len(rs); {
		// A final 不 or 没 asks, as 吗 does (这个正常不, 发货没), unless
		// 还, 也, 都 … make it a negation (还没: not yet).
		if p == len(rs)-1 && p > 0 && (rs[p] == '不' || rs[p] == '没') && !strings.ContainsRune(TagNegators, rs[p-1]) {
			if nt, ok := a.next(i); !ok || !nt.adj {
				flush()
				p++
				continue
			}
		}
		// Ordinals: 第二, 第 2.
		if rs[p] == '第' {
			if v, n, _ := parseHanNumber(rs[p+1:]); n > 0 {
				flush()
				if k := p + 1 + n; k < len(rs) && strings.ContainsRune("几多余来", rs[k]) {
					// 第十几名: some rank past ten, never 第十名.
					a.facet("ord:approx:" + approxValue(rs[p+1:k+1]))
					p = k + 1
					continue
				}
				a.facet("ord:" + v)
				p += 1 + n
				continue
			}
			if p == len(rs)-1 {
				if nt, ok := a.next(i); ok && nt.kind == tNum && nt.adj {
					flush()
					a.pendingOrd = true
					p++
					continue
				}
			}
		}
		// Percentages: 百分之五 is 5%.
		if strings.HasPrefix(head(rs[p:]), "百分之") {
			if v, n, _ := parseHanNumber(rs[p+3:]); n > 0 {
				flush()
				if d, m := hanDecimals(rs[p+3+n:]); m > 0 && isDigits(v) {
					v, n = v+"."+d, n+m // 百分之五点三 is 5.3%
				}
				a.facet("pct:" + v)
				p += 3 + n
				continue
			}
		}
		// Fractions: 三分之一 is 1/3, 千分之五 5/1000 (百分之 is a percentage,
		// above).
		if v, m := hanFraction(rs[p:]); m > 0 {
			flush()
			a.facet("frac:" + v)
			p += m
			continue
		}
		// A sign in words: 零下十五度 is below zero, 负三 minus three, 负增长 a
		// negative growth.
		if strings.HasPrefix(head(rs[p:]), "零下") || rs[p] == '负' && p+1 < len(rs) && strings.ContainsRune(hanDigits+hanUnits+"增", rs[p+1]) {
			flush()
			if strings.HasPrefix(head(rs[p:]), "负增长") {
				a.facet("neg-growth") // 负增长百分之二 is no growth of 2%
				p += 3
				continue
			}
			p += 1 + boolInt(rs[p] == '零')
			if p == len(rs) && a.numberNext(i) {
				a.minusNext = true // 零下5度: the sign goes to the number after the run, as in -5度
				continue
			}
			a.facet("minus") // its own facet: the numeral after it may give none (零下五度)
			continue
		}
		// Counted from the end: 倒数第二 is ord:-2.
		if strings.HasPrefix(head(rs[p:]), "倒数第") {
			if v, n, _ := parseHanNumber(rs[p+3:]); n > 0 {
				flush()
				a.facet("ord:-" + v)
				p += 3 + n
				continue
			}
		}
		// A range with one unit: 三到五天 is 3 to 5 days, 一至三岁 1 to 3 years
		// of age (both ends read, in order).
		if v, n, digitForm := parseHanNumber(rs[p:]); n > 0 && !digitForm && p+n+1 < len(rs) && (rs[p+n] == '到' || rs[p+n] == '至') && isDigits(v) {
			if w, m, _ := parseHanNumber(rs[p+n+1:]); m > 0 && p+n+1+m < len(rs) && rs[p+n+1+m] != '点' { // not a clock: its reading has side effects on the half of the day
				rest := rs[p+n+1+m:]
				if f2, k := hanClassifier(w, rest, a, numeral{i, p + n + 1}); k > 0 && f2 != "" {
					if f1, _ := hanClassifier(v, rest, a, numeral{i, p}); f1 != "" {
						flush()
						a.facet(f1)
						a.facet(f2)
						p += n + 1 + m + k
						continue
					}
				}
			}
		}
		// A unit and a half before the lexicon, which holds 一年 (per year):
		// 一年半 is 1.5 years.
		if v, n, digitForm := parseHanNumber(rs[p:]); n > 0 && !digitForm && isDigits(v) && p+n < len(rs) && rs[p+n] != '点' {
			if f, m := hanClassifier(v, rs[p+n:], a, numeral{i, p}); m > 0 && p+n+m < len(rs) && rs[p+n+m] == '半' && halfable(f) && !strings.HasPrefix(f, "num:") {
				f, _ = hanClassifier(v+".5", rs[p+n:], a, numeral{i, p})
				flush()
				a.facet(f)
				p += n + m + 1
				continue
			}
		}
		// A unit and a half after 个: 一个半小时 is 1.5 hours, 两个半月 2.5
		// months (before the lexicon, which holds 一个).
		if v, n, digitForm := parseHanNumber(rs[p:]); n > 0 && !digitForm && isDigits(v) && strings.HasPrefix(head(rs[p+n:]), "个半") {
			if f, m := halfOf(v+".5", append([]rune("个"), rs[p+n+2:]...), a, numeral{i, p}); m > 1 {
				flush()
				a.facet(f)
				p += n + m + 1
				continue
			}
		}
		// A week and a day of it: 每周三 is freq:week and wd:3, 下周三
		// week:next and wd:3, 这礼拜三 week:this and wd:3 (the lexicon's
		// 每周, 下周 would take the 周 of 周三).
		if f, n := weekOfDay(rs[p:]); n > 0 {
			flush()
			a.facet(f)
			p += n
			continue
		}
		// Half of a unit: 半个小时, 半年, 半斤 (not 上半年, 一半, 大半).
		if rs[p] == '半' && (p == 0 || !strings.ContainsRune("上下前后一大多过", rs[p-1])) {
			if f, m := halfOf("0.5", rs[p+1:], a, numeral{i, p}); m > 0 {
				flush()
				a.facet(f)
				p += 1 + m
				continue
			}
		}
		// A number said to be near (近一万, 将近一万, 大约三十, 小两万) is no exact
		// one, as "about 500 dollars" is not "500 dollars".
		if n := hanApproxBefore(rs, p); n > 0 {
			flush()
			a.facet("approx")
			p += n
			continue
		}
		// Approximate numbers (十几, 几十, 三十多) never equal a specific one.
		if n := vagueHanNumber(rs[p:]); n > 0 {
			flush()
			a.facet("approx:" + approxValue(rs[p:p+n]))
			p += n
			continue
		}
		// 我们俩 is 我们两个, 他们仨 他们三个 (not 伎俩, a trick): the count of 个.
		if rs[p] == '俩' && (p == 0 || rs[p-1] != '伎') || rs[p] == '仨' {
			flush()
			v := "2"
			if rs[p] == '仨' {
				v = "3"
			}
			// The 个 they hold, then what it counts: 仨月 = 三个月, 俩人 = 两个人.
			f, m := hanClassifier(v, append([]rune("个"), []rune(head(rs[p+1:]))...), a, numeral{i, p})
			a.facet(f)
			p += max(m, 1)
			continue
		}
		// A不A and A没A ask (上不上班, 营不营业, 安全不安全, 到没到, 发货没发货):
		// no negation; they read as A (上班, 营业, 安全, 到).
		if (rs[p] == '不' || rs[p] == '没') && p > 0 && p+1 < len(rs) && rs[p-1] == rs[p+1] {
			p += 2
			continue
		}
		if (rs[p] == '不' || rs[p] == '没') && p > 1 && p+2 < len(rs) && rs[p-2] == rs[p+1] && rs[p-1] == rs[p+2] {
			p += 3 // AB不AB: 安全不安全; AB没AB: 发货没发货
			continue
		}
		// 非 inside a word of jieba's table is no negation (非常, 非洲, 除非):
		// a character of the content.
		if rs[p] == '非' && (p+1 < len(rs) && HanWord(string(rs[p:p+2])) || p > 0 && HanWord(string(rs[p-1:p+1]))) {
			if _, lex := a.lx.zh[string(rs[p:min(p+2, len(rs))])]; !lex {
				resid = append(resid, rs[p])
				p++
				continue
			}
		}
		// The lexicon, longest match first.
		matched := false
		for n := min(a.lx.zhMax, len(rs)-p); n >= 1; n-- {
			e, ok := a.lx.zh[string(rs[p:p+n])]
			if !ok || e.kind == lexFacet && timeDeixis(e.value) && splitsWord(rs, p+n) ||
				e.kind == lexPlace && n > 1 && (splitsWord(rs, p) || splitsWord(rs, p+n)) ||
				e.kind == lexStop && rs[p] == '了' && n > 1 && p+n < len(rs) && rs[p+n] != '吗' && rs[p+n] != '呢' {
				continue // 上学期间 is 上学 + 期间, not 上学期; 三天后天气 is 后 + 天气; 世界上海拔 is 世界 + 上 + 海拔, no 上海; 了没 asks only at the end of its run (抓了没出血 says not)
			}
			if e.kind == lexLiteral {
				resid = append(resid, rs[p:p+n]...)
				p += n
				matched = true
				break
			}
			flush()
			if e.kind == lexPlace {
				rest := head(rs[p+n:])
				switch {
				case strings.HasPrefix(rest, "大学"):
					a.facet("univ:" + e.value)
					a.content("c:univ")
					n += 2
				case strings.HasPrefix(rest, "省") || strings.HasPrefix(rest, "市"):
					a.facet("place:" + e.value)
					n++
				default:
					a.facet("place:" + e.value)
				}
			} else if e.kind == lexMarker && p+n == len(rs) {
				consumed += a.entry(e, i, true)
			} else if e.kind == lexMarker {
				a.content("c:" + e.value)
			} else {
				a.entry(e, i, true)
				if strings.HasPrefix(a.lastFacet, "ampm:") {
					a.ampmTok, a.ampmEnd, a.ampmWord = i, p+n, string(rs[p:p+n])
				}
			}
			p += n
			matched = true
			break
		}
		if matched {
			continue
		}
		// Chinese numerals, converted only before a classifier or unit
		// that gives them exactly one reading.
		if v, n, digitForm := parseHanNumber(rs[p:]); n > 0 {
			rest := rs[p+n:]
			if digitForm && !strings.HasPrefix(head(rest), "年") && !strings.HasPrefix(head(rest), "折") {
				// 二三 is not a number unless it is a year.
				resid = append(resid, rs[p:p+n]...)
				p += n
				continue
			}
			if d, m := hanDecimals(rest); m > 0 && isDigits(v) && a.ampmAdjacent(numeral{i, p}) == "" {
				// 六点八, 三点八五, 三十八点五度: a decimal, not a clock (which
				// 分, 刻 or 半 would follow, or a half of the day precede).
				flush()
				dv := v + "." + d
				f, k := hanClassifier(dv, rest[m:], a, numeral{i, p})
				if k == 0 || !halfable(f) {
					f, k = "num:"+dv, 0
				}
				a.facet(f)
				p += n + m + k
				continue
			}
			if cny, m := maoAmount(v, rest); m > 0 {
				flush()
				a.facet("cny:" + cny) // 两毛五 = 0.25 yuan
				p += n + m
				continue
			}
			if dec, m := colloquialDecimal(rest); m > 0 && isDigits(v) {
				// 一米七五 is 1.75 m, 一块五 is 1.5 yuan: the digits after the
				// unit are its decimals (一米零七 = 1.07).
				flush()
				if rest[0] == '块' || rest[0] == '元' {
					a.facet("cny:" + v + "." + dec)
				} else {
					a.facet("num:" + v + "." + dec)
					resid = append(resid, rest[0]) // 米 stays content, as after 1.75
				}
				p += n + m
				continue
			}
			if f, m := hanClassifier(v, rest, a, numeral{i, p}); m > 0 && !(v == "1" && strings.HasPrefix(f, "num:")) && !(f != "" && strings.HasPrefix(f, "clock:") && v == "1") {
				flush()
				if m < len(rest) && rest[m] == '半' && halfable(f) && isDigits(v) {
					// 三年半, 两吨半, 一岁半: the unit and a half.
					f, _ = hanClassifier(v+".5", rest, a, numeral{i, p})
					m++
				}
				if f != "" {
					a.facet(f)
				}
				p += n + m
				continue
			}
			if n >= 2 && strings.ContainsRune(string(rs[p:p+n]), '十') || strings.ContainsAny(string(rs[p:p+n]), "百千万亿") {
				// A numeral with a unit has exactly one reading (三万六 is
				// 36000), even with no classifier after it.
				if len(rest) == 0 || rest[0] != '号' {
					flush()
					a.facet("num:" + v)
					p += n
					continue
				}
			}
			if len(rest) > 0 && rest[0] == '号' {
				// 八号: a day of the month or a number; keep it as written so
				// that it never equals 8号.
				flush()
				a.facet("hao:" + string(rs[p:p+n]))
				p += n + 1
				continue
			}
		}
		resid = append(resid, rs[p])
		p++
	}
	flush()
	return consumed
}

// facetsOf returns the sorted, deduplicated facets of an analysis, plus one
// "seq:TYPE:v1>v2" facet for every facet type that occurs with two or more
// values, in their order of appearance, so that "from zone A to zone B"
// never equals "from zone B to zone A".
func facetsOf(an analysis) []string {
	seen := map[string]bool{}
	var out []string
	byType := map[string][]string{}
	var types []string
	for _, f := range an.ordered {
		if seen[f] {
			continue
		}
		seen[f] = true
		out = append(out, f)
		typ, val := f, f
		if j := strings.IndexByte(f, ':'); j > 0 {
			typ, val = f[:j], f[j+1:]
		} else if strings.ContainsAny(f, "0123456789") {
			typ = "id"
		}
		if _, ok := byType[typ]; !ok {
			types = append(types, typ)
		}
		byType[typ] = append(byType[typ], val)
	}
	for _, typ := range types {
		if vals := byType[typ]; len(vals) > 1 {
			out = append(out, "seq:"+typ+":"+strings.Join(vals, ">"))
		}
	}
	sort.Strings(out)
	if out == nil {
		out = []string{}
	}
	return out
}

// hanApproxBefore returns the length of a word at rs[p] that makes the
// numeral after it approximate (将近, 接近, 大约, 大概, 近, 约; 小 before 两万,
// 三千), or 0: not 最近三天 (lately), 附近, 预约三天 (a booking), nor 近 before
// a span of time (近三个月: the last three months).
func hanApproxBefore(rs []rune, p int) int {
	for _, w := range []string{"将近", "接近", "大约", "大概", "近", "约", "小"} {
		m := []rune(w)
		if p+len(m) >= len(rs) || string(rs[p:p+len(m)]) != w {
			continue
		}
		if len(m) == 1 && p > 0 && strings.ContainsRune("最附邻靠亲预签合节制公婚邀大将接", rs[p-1]) {
			return 0
		}
		v, n, _ := parseHanNumber(rs[p+len(m):])
		if n == 0 || v == "" {
			return 0
		}
		if w == "小" && (n < 2 || !strings.ContainsRune("十百千万亿", rs[p+len(m)+n-1])) {
			return 0 // 小两万, 小三千; not 小一号, 小二
		}
		if rest := string(rs[p+len(m)+n:]); w == "近" && rest != "" && strings.ContainsRune("个天年周日月期", []rune(rest)[0]) {
			return 0 // 近三个月, 近一年: the last three months, not about three
		}
		return len(m)
	}
	return 0
}
