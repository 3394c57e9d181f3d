package cache

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/sluice-dev/sluice/cache/text"
)

// The verification stage runs after the embedding score and the facet
// guard, on a candidate that passed both, for every embedder. It reads the
// two questions as written (NFKC, case kept) into tokens — English words
// (lightly stemmed), identifiers, single Han characters, role markers,
// clause breaks — and refuses the hit when they ask different things in
// ways a bag of features or a model embedding can miss:
//
//   - names: a name (a capitalised word that is not a function word, a
//     Latin word inside Chinese text, an identifier) is in one question and
//     nowhere in the other, unless the other has no Latin word at all (a
//     translation);
//   - roles: every unit (a content word, name or Han character) takes the
//     role of the nearest marker before it in its clause (from/从/自,
//     to/给/向/到/对, by/被/让/由, 把/将, of/的, than/比, and/和/与,
//     at/在 …); a shared unit whose role changes between two directions
//     (from ↔ to, 把 ↔ 被) is refused, and so are two units that change
//     places and exchange their roles;
//   - order: two shared units that change places while a third token (a
//     word, a marker, a clause break) stays between them in both questions:
//     an exchange around a frame ("A reports to B" / "B reports to A"). A
//     paraphrase moves whole phrases past each other and keeps no such
//     frame. Repeats are numbered ("to#2") so that they still count;
//   - intent: the kind of question (how many, which, who, where, when, why,
//     how, yes/no), a yes/no question against an open one, recommendation
//     (which X is good, 什么牌子好) vs not, identification (what X is this,
//     这是什么牌子) vs not; two comparisons ("difference between A and B")
//     must compare the same things, in either order.
//
// It reads no vocabulary beyond closed classes (function words, role
// markers, question words), so it holds for names it has never seen. What
// it gets wrong is documented in docs/cache.md: some real paraphrases
// (active vs passive) are refused, which costs a miss, and it cannot tell
// 张伟 from 张玮 (the embedding must).

// maxVerifyTokens and maxVerifyBytes bound the question the verification
// reads; a longer question is refused (exact tier only), since a change
// past the bound would go unseen.
const (
	maxVerifyTokens = 256
	maxVerifyBytes  = 8 << 10
)

// maxVerifyUnits bounds the shared units of two questions the order check
// compares pairwise, and so its cost (quadratic in the shared units).
const maxVerifyUnits = 64

// maxVerify is the number of candidates above the threshold with equal
// facets that a lookup verifies, best score first, before it misses.
const maxVerify = 3

// Verification is what the verification stage said about the best
// candidate that passed the score and the facets.
type Verification struct {
	Passed   bool   `json:"passed"`
	Check    string `json:"check,omitempty"` // the check that refused: "names", "roles", "order", "intent", "compare" or "length"
	Reason   string `json:"reason"`
	Question string `json:"question"` // the candidate verified
}

// vunit is one unit of a question for the order check.
type vunit struct {
	text   string // the token, lower case, lightly stemmed; the k-th repeat (k >= 2) has "#k" appended
	word   string // the token without the repeat number
	role   string // role class of the nearest marker before it in its clause
	clause int
	named  bool // a name (see the names check)
	unit   bool // a content unit (not a marker, function word or clause break)
	rep    bool // its word occurs more than once in the question
	reps   int  // how often its word occurs in the question
}

// vsig is what the verification stage reads of one question.
type vsig struct {
	seq                              []vunit        // every token and clause break, in order
	index                            map[string]int // seq index of each text (repeats numbered)
	qtype                            string         // "count", "yesno", "which", "who", "where", "when", "why", "how" or "" (what, or none)
	latin                            bool           // it has a Latin word
	open                             bool           // it has a question word (what, 什么 …)
	whArg                            string         // "subj" (who replaced X), "obj" (who did X replace) or "" (neither)
	long                             bool           // past maxVerifyBytes or maxVerifyTokens: not read
	recommend, identify, comparative bool
}

// roleMarkers maps English prepositions and Chinese role particles to a
// role class.
var roleMarkers = map[string]string{
	"to": "to", "into": "to", "onto": "to", "toward": "to", "towards": "to",
	"from": "from", "by": "by", "of": "of", "for": "for", "with": "with",
	"in": "at", "on": "at", "at": "at", "inside": "at", "within": "at",
	"than": "than", "between": "between", "and": "and", "or": "and", "vs": "and", "versus": "and",
	"before": "before", "after": "after", "over": "over", "under": "under", "above": "over", "below": "under",
	"via": "via", "through": "via", "against": "against", "about": "about", "as": "as",
	"把": "obj", "将": "obj", "被": "by", "让": "by", "叫": "by", "由": "by",
	"给": "to", "向": "to", "对": "to", "朝": "to", "往": "to", "到": "to", "至": "to",
	"从": "from", "自": "from", "在": "at", "于": "at", "比": "than",
	"和": "and", "与": "and", "跟": "and", "同": "and", "及": "and", "或": "and",
	"为": "for", "替": "for", "的": "of",
}

// directional role classes: a unit moving between two of them changes who
// does what to whom.
var directional = map[string]bool{"to": true, "from": true, "by": true, "obj": true, "than": true}

// functionWords are English closed-class words: never units, never names.
var functionWords = setOf(`a an the this that these those it its is are was were be been being am do does did done
i me my we us our you your he him his she her they them their who whom whose what which where when why how
will would can could shall should may might must has have had having not no yes please kindly
there here if then so just also only any some all each every one ones many much more most less few`)

// auxiliaries open a yes/no question ("Is it …", "Does it …").
var auxiliaries = setOf("is are was were do does did can could will would should shall has have had may might must")

// imperatives open a request ("Show the orders", "List the bins"): function
// words at the start of a clause, content words elsewhere ("turn a list into
// a map").
var imperatives = setOf("let tell show list give get find check see know want need help explain describe compare")

// hanFunction are Chinese function characters: never units.
const hanFunction = "了吗呢吧啊呀嘛么是都还也就又再很最更太这那哪个些什么怎谁几多少请帮我你您他她它们一下查看问告诉想知道能可以会要有没不啥"

func setOf(words string) map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(words) {
		m[w] = true
	}
	return m
}

// stemLight folds the commonest English inflections so that "reports" and
// "report" are one unit.
func stemLight(w string) string {
	w = strings.TrimSuffix(w, "'s")
	if len(w) > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") {
		w = w[:len(w)-1]
	}
	return w
}

// verifyTokens splits a question into words (Latin letters and digits,
// with inner - _ . ' / :), single Han characters, and clause breaks ("|").
func verifyTokens(q string) (toks []string, hasHan bool) {
	if !isASCII(q) {
		q = norm.NFKC.String(q)
	}
	word := func(r rune) bool { return unicode.IsLetter(r) && !text.IsHan(r) || unicode.IsDigit(r) }
	toks = make([]string, 0, 32)
	for i := 0; i < len(q) && len(toks) <= maxVerifyTokens; {
		r, n := utf8.DecodeRuneInString(q[i:])
		switch {
		case word(r):
			j := i + n
			for j < len(q) {
				r2, n2 := utf8.DecodeRuneInString(q[j:])
				if word(r2) {
					j += n2
					continue
				}
				if strings.ContainsRune("-_.'/:", r2) && j+n2 < len(q) {
					if r3, _ := utf8.DecodeRuneInString(q[j+n2:]); word(r3) {
						j += n2
						continue
					}
				}
				break
			}
			toks = append(toks, q[i:j])
			i = j
		case text.IsHan(r):
			toks = append(toks, q[i:i+n])
			hasHan = true
			i += n
		default:
			if strings.ContainsRune(",;.?!:()[]{}\n\"“”，；。？！：（）【】", r) {
				toks = append(toks, "|")
			}
			i += n
		}
	}
	return toks, hasHan
}

// signature reads a question for verification.
func signature(q string) vsig {
	if len(q) > maxVerifyBytes {
		return vsig{long: true}
	}
	toks, hasHan := verifyTokens(q)
	if len(toks) > maxVerifyTokens {
		return vsig{long: true}
	}
	s := vsig{seq: make([]vunit, 0, len(toks))}
	// first: the clause's first token; lead: only function words so far.
	clause, role, first, lead := 0, "", true, true
	var lower []string
	for i, t := range toks {
		if t == "|" {
			// A clause break is a frame token: two units on its two sides
			// that trade sides have exchanged clauses.
			if len(s.seq) > 0 && s.seq[len(s.seq)-1].text[0] != '|' {
				s.seq = append(s.seq, vunit{text: "|" + strconv.Itoa(clause), clause: clause})
			}
			clause++
			role, first, lead = "", true, true
			continue
		}
		lt := strings.ToLower(t)
		lower = append(lower, lt)
		han := utf8.RuneCountInString(t) == 1 && text.IsHan([]rune(t)[0])
		tok := lt
		if !han {
			tok = stemLight(lt)
		}
		if r, ok := roleMarkers[lt]; ok {
			s.seq = append(s.seq, vunit{text: tok, role: role, clause: clause})
			role = r
			first = false
			continue
		}
		if han && strings.Contains(hanFunction, t) || !han && (functionWords[lt] || lead && imperatives[lt]) {
			s.seq = append(s.seq, vunit{text: tok, role: role, clause: clause})
			first = false
			continue
		}
		lead = false
		u := vunit{text: lt, role: role, clause: clause}
		if !han {
			s.latin = s.latin || strings.IndexFunc(t, unicode.IsLetter) >= 0
			u.text = stemLight(lt)
			upper := unicode.IsUpper([]rune(t)[0])
			digits := strings.ContainsAny(t, "0123456789")
			letters := strings.IndexFunc(t, unicode.IsLetter) >= 0
			inHan := hasHan && (i > 0 && isHanTok(toks[i-1]) || i+1 < len(toks) && isHanTok(toks[i+1]) || len(t) > 1)
			u.named = digits && letters || upper && !first || inHan && letters
		}
		first = false
		u.unit = true
		s.seq = append(s.seq, u)
	}
	// Number the repeats (the k-th "text" becomes "text#k", so that 查查克
	// still shows where its characters went) and index every token.
	count := make(map[string]int, len(s.seq))
	for i := range s.seq {
		u := &s.seq[i]
		u.word = u.text
		count[u.text]++
		if k := count[u.text]; k > 1 {
			u.text += "#" + strconv.Itoa(k)
		}
	}
	s.index = make(map[string]int, len(s.seq))
	for i := range s.seq {
		u := &s.seq[i]
		u.reps = count[u.word]
		u.rep = u.reps > 1
		s.index[u.text] = i
	}
	s.intent(q, lower)
	return s
}

func isHanTok(t string) bool {
	r, _ := utf8.DecodeRuneInString(t)
	return text.IsHan(r)
}

// intent sets the question-intent flags of s from the question's words.
func (s *vsig) intent(q string, lower []string) {
	// English phrases (one or two words) are looked up among the words and
	// word pairs; Chinese ones inside the Han text.
	var zhb strings.Builder
	for _, w := range lower {
		if w[0] >= utf8.RuneSelf {
			zhb.WriteString(w)
		}
	}
	zh := zhb.String()
	hasEN := func(p string) bool {
		first, second, two := strings.Cut(p, " ")
		for i, w := range lower {
			if w == first && (!two || i+1 < len(lower) && lower[i+1] == second) {
				return true
			}
		}
		return false
	}
	has := func(ps ...string) bool {
		for _, p := range ps {
			if p[0] < utf8.RuneSelf && hasEN(p) || p[0] >= utf8.RuneSelf && zh != "" && strings.Contains(zh, p) {
				return true
			}
		}
		return false
	}
	wh := has("what", "which", "who", "whom", "whose", "where", "when", "why", "how", "什么", "哪", "谁", "多少", "几", "怎么", "怎样", "如何", "为什么", "为啥", "何", "啥")
	s.open = wh
	yesno := false
	if len(lower) > 0 {
		i := 0
		if lower[0] == "please" && len(lower) > 1 {
			i = 1
		}
		polite := i+1 < len(lower) && lower[i+1] == "you" && (lower[i] == "can" || lower[i] == "could" || lower[i] == "would" || lower[i] == "will")
		yesno = auxiliaries[lower[i]] && !wh && !polite
	}
	if !wh && (strings.HasSuffix(strings.TrimRight(zh, "?？ "), "吗") || has("是否", "是不是", "有没有", "能不能", "会不会", "可不可以", "要不要", "对不对", "行不行", "好不好", "了没")) {
		yesno = true
	}
	// The kind of question, the most specific first.
	switch {
	case has("how many", "how much", "number of", "quantity", "amount of", "多少", "数量") || hanCountQuestion(zh):
		s.qtype = "count"
	case yesno:
		s.qtype = "yesno"
	case has("who", "whom", "whose", "谁"):
		s.qtype = "who"
	case has("where", "哪里", "哪儿", "在哪", "什么地方"):
		s.qtype = "where"
	case has("when", "什么时候", "何时", "几点", "啥时候"):
		s.qtype = "when"
	case has("why", "为什么", "为啥", "为何"):
		s.qtype = "why"
	case has("which", "哪"):
		s.qtype = "which"
	case has("how", "怎么", "如何", "怎样"):
		s.qtype = "how"
	}
	s.whArg = whArgument(lower)
	s.recommend = has("recommend", "recommended", "recommendation", "best", "better", "good", "worth", "suggest",
		"推荐", "值得", "最好", "比较好", "好用", "建议") || zh != "" && hanGoodAtEnd(q)
	s.identify = !s.recommend && wh && has("this", "that", "these", "those", "这", "那")
	s.comparative = has("difference", "differences", "differ", "vs", "versus", "compare", "compared", "comparison",
		"区别", "差别", "不同", "差异", "对比", "相比")
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// whArgument tells which argument an English who/what question asks for:
// with do-support ("Who did X replace?") the object, with a lexical verb
// right after the question word ("Who replaced X?") the subject; "" when
// neither form is plain (passives, "who is", no such word). The two forms
// share every word and ask opposite things.
func whArgument(lower []string) string {
	for i, w := range lower {
		if w != "who" && w != "whom" && w != "what" {
			continue
		}
		if i+1 >= len(lower) {
			return ""
		}
		switch next := lower[i+1]; {
		case next == "do" || next == "does" || next == "did" || next == "didn't" || next == "doesn't" || next == "don't":
			return "obj"
		case auxiliaries[next] || functionWords[next] || next[0] >= utf8.RuneSelf || strings.Contains(next, "'"):
			return ""
		case w == "what" && !strings.HasSuffix(next, "ed"):
			return "" // "what time", "what SKU": a determiner, not the subject
		default:
			return "subj"
		}
	}
	return ""
}

// hanClassifiers are measure words: 几 before one asks for a count (几个,
// 几门, 几天), unless 哪 comes first (哪几门 asks which ones).
const hanClassifiers = "个件箱托天次位名条台种家所年周层辆张本只门口间道块份批单笔斤米步遍趟场期节根套瓶包杯首部座棵双样项款级页章分秒岁人小"

// hanCountQuestion reports 几 before a classifier (几个, 几件, 几天): a
// request for a count. 几点 asks the time, 几号 and 几月 the date, 几乎 is
// "almost", 哪几个 asks which ones.
func hanCountQuestion(zh string) bool {
	rs := []rune(zh)
	for i := 0; i+1 < len(rs); i++ {
		if rs[i] == '几' && (i == 0 || rs[i-1] != '哪') && strings.ContainsRune(hanClassifiers, rs[i+1]) {
			return true
		}
	}
	return false
}

// hanGoodAtEnd reports 好 closing a clause, only particles after it
// (什么牌子的羽绒服好, 哪个好呢): "which is good", a recommendation.
func hanGoodAtEnd(q string) bool {
	for _, clause := range strings.FieldsFunc(norm.NFKC.String(q), func(r rune) bool {
		return strings.ContainsRune(",;.?!，；。？！\n", r)
	}) {
		c := strings.TrimRight(strings.TrimSpace(clause), "呢吗啊呀吧些")
		if strings.HasSuffix(c, "好") && !strings.HasSuffix(c, "你好") && !strings.HasSuffix(c, "您好") {
			return true
		}
	}
	return false
}

// verifyPair decides whether the answer to stored may answer query. It
// returns "" and a reason when it may, or the check that refused and why.
func verifyPair(query, stored vsig) (check, reason string) {
	if query.long || stored.long {
		return "length", fmt.Sprintf("too long to verify (over %d tokens or %d KiB)", maxVerifyTokens, maxVerifyBytes>>10)
	}
	// Intent.
	if query.qtype != "" && stored.qtype != "" && query.qtype != stored.qtype && !whichFits(query.qtype, stored.qtype) {
		return "intent", fmt.Sprintf("intent differs: the question asks %s, the cached one %s", qtypeName(query.qtype), qtypeName(stored.qtype))
	}
	if query.qtype == "yesno" && stored.qtype != "yesno" && stored.open || stored.qtype == "yesno" && query.qtype != "yesno" && query.open {
		return "intent", "intent differs: a yes/no question against an open question"
	}
	for _, f := range []struct {
		name string
		a, b bool
	}{
		{"a recommendation (which is good)", query.recommend, stored.recommend},
		{"an identification (what is this)", query.identify, stored.identify},
	} {
		if f.a != f.b {
			if f.a {
				return "intent", "intent differs: the question asks " + f.name + ", the cached one does not"
			}
			return "intent", "intent differs: the cached question asks " + f.name + ", this one does not"
		}
	}
	if query.whArg != "" && stored.whArg != "" && query.whArg != stored.whArg {
		return "roles", "roles differ: one question asks who did it, the other whom it was done to"
	}
	// Names present in one question only.
	for _, side := range []struct {
		s     vsig
		other vsig
		where string
	}{{query, stored, "the question"}, {stored, query, "the cached question"}} {
		for _, u := range side.s.seq {
			// A name written in Latin letters must be in the other question
			// unless that one has no Latin word at all (a translation).
			if u.named && side.other.latin && !side.other.hasWord(u.word) {
				return "names", fmt.Sprintf("name %q is only in %s", u.text, side.where)
			}
		}
	}
	// Comparisons compare the same things.
	if query.comparative && stored.comparative && query.latin == stored.latin {
		for _, side := range []struct{ s, other vsig }{{query, stored}, {stored, query}} {
			for _, u := range side.s.seq {
				if u.unit && !side.other.hasWord(u.word) && !isCompareWord(u.word) {
					return "compare", fmt.Sprintf("the comparisons differ: %q is compared in one question only", u.text)
				}
			}
		}
	}
	// Order and roles of the shared units.
	qi, si := query.index, stored.index
	for _, u := range query.seq {
		a, okA := qi[u.text]
		b, okB := si[u.text]
		if !u.unit || u.rep {
			continue
		}
		if okA && okB && query.seq[a].role != stored.seq[b].role && directional[query.seq[a].role] && directional[stored.seq[b].role] {
			return "roles", fmt.Sprintf("roles differ: %q is %s in the question, %s in the cached one", u.text, roleName(query.seq[a].role), roleName(stored.seq[b].role))
		}
	}
	var shared []string // units of both (repeats numbered), in the question's order
	for _, u := range query.seq {
		if j, ok := si[u.text]; ok && u.unit && stored.seq[j].unit && len(shared) < maxVerifyUnits {
			shared = append(shared, u.text)
		}
	}
	symmetric := query.comparative && stored.comparative
	for i, x := range shared {
		for _, y := range shared[i+1:] {
			ax, ay, bx, by := qi[x], qi[y], si[x], si[y]
			if (ax < ay) == (bx < by) {
				continue // same order: a phrase may have moved as a whole
			}
			if symmetric && compareRole(query.seq[ax].role) && compareRole(query.seq[ay].role) &&
				compareRole(stored.seq[bx].role) && compareRole(stored.seq[by].role) {
				continue // "between A and B" = "between B and A"
			}
			// x and y changed places. A paraphrase moves phrases past each
			// other, each with its role; an exchange swaps the roles, or
			// keeps a frame between them: some token z stays between x and
			// y in both questions (a repeated token counts when it occurs
			// as often in both).
			rx, ry := query.seq[ax].role, query.seq[ay].role
			if rx != ry && stored.seq[bx].role == ry && stored.seq[by].role == rx {
				return "roles", fmt.Sprintf("%q and %q exchange roles (%s, %s)", x, y, roleName(rx), roleName(ry))
			}
			lo, hi := min(ax, ay), max(ax, ay)
			blo, bhi := min(bx, by), max(bx, by)
			for k := lo + 1; k < hi; k++ {
				z := query.seq[k].text
				if j, ok := si[z]; ok && query.seq[k].reps == stored.seq[j].reps && j > blo && j < bhi {
					return "order", fmt.Sprintf("%q and %q exchange places around %q", x, y, query.seq[k].word)
				}
			}
		}
	}
	return "", "verification passed: same names, roles, order and intent"
}

// whichFits reports "which" against who, where or when: "which person",
// "in which location", "on which day" ask the same.
func whichFits(a, b string) bool {
	other := map[string]bool{"who": true, "where": true, "when": true}
	return a == "which" && other[b] || b == "which" && other[a]
}

func qtypeName(t string) string {
	switch t {
	case "count":
		return "how many"
	case "yesno":
		return "yes or no"
	}
	return t
}

func compareRole(r string) bool { return r == "" || r == "and" || r == "between" }

func isCompareWord(w string) bool {
	switch w {
	case "difference", "differ", "compare", "compared", "comparison", "区", "别", "差", "异", "同", "对", "相", "比":
		return true
	}
	return false
}

func roleName(r string) string {
	switch r {
	case "obj":
		return "the object (把/将)"
	case "":
		return "unmarked"
	}
	return "after " + r
}

// hasWord reports whether the question has the token w (lower case,
// lightly stemmed), whatever its kind.
func (s *vsig) hasWord(w string) bool {
	for i := range s.seq {
		if s.seq[i].word == w {
			return true
		}
	}
	return false
}
