package cache

import (
	"fmt"
	"regexp"
	"slices"
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
//     frame. Personal pronouns are units too, one per person (I = me), so
//     "My sister owes me" / "I owe my sister" exchange around "owe".
//     Repeats are numbered ("to#2") so that they still count. One time
//     adverbial on each side, at an edge of the question and in no
//     comparison (adverbialTime: "… yesterday?", "Yesterday, …"), moves
//     freely and is left out; two are ordered by the facets;
//   - intent: the kind of question (how many, which, who, where, when, why,
//     how, yes/no), a yes/no question against an open one, recommendation
//     (which X is good, 什么牌子好) vs not, identification (what X is this,
//     这是什么牌子) vs not; two comparisons ("difference between A and B")
//     must compare the same things, in either order;
//   - tense: one question explicitly future (will, going to, gonna, 'll,
//     shall; 会, 将要, 即将, 快要 …了), the other explicitly past (did, was,
//     were, had, already, a perfect has/have; 了 before the final
//     particle, 过吗, 已经, 曾经); present against either passes, except in two
//     when-questions, where a past against no marker asks about another
//     time ("When did the store open?" / "When does the store open?");
//   - persons: the gendered pronouns (he/him/his/他, she/her/hers/她) of
//     both, in order, when both have any ("Does he know her?" / "Does she
//     know him?"), part of roles;
//   - quantity: a unit counted by different numerals in the two ("two
//     codes on one order" / "one code on two orders", 两张券 / 一张券);
//   - possessors: a unit owned by different possessors ("my manager's
//     timesheet" / "my timesheet": manager vs me), part of roles;
//   - voice: the agent of a passive (after by in a clause with be/get, or
//     after 被) is an unmarked participant of the active question and
//     still comes after the participants that came before by/被 ("Did I
//     get paid by X" / "Did I pay X"), part of roles. An active paraphrase
//     moves it before them ("Was Y funded by X" / "Did X fund Y") and
//     passes.
//
// It reads no vocabulary beyond closed classes (function words, role
// markers, question words, auxiliaries and tense markers, numerals,
// classifiers, pronouns, irregular participles), so it holds for names it
// has never seen. What
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
	Check    string `json:"check,omitempty"` // the check that refused: "names", "roles", "order", "intent", "tense", "mood", "replaced", "quantity", "compare", "length", or "score" (a builtin candidate's exact score, decide.go)
	Reason   string `json:"reason"`
	Question string `json:"question"` // the candidate verified
}

// vunit is one unit of a question for the order check.
type vunit struct {
	text   string // the token, lower case, lightly stemmed; the k-th repeat (k >= 2) has "#k" appended
	word   string // the token without the repeat number
	role   string // role class of the nearest marker before it in its clause
	clause int
	named  bool   // a name (see the names check)
	unit   bool   // a content unit (not a marker, function word or clause break)
	rep    bool   // its word occurs more than once in the question
	reps   int    // how often its word occurs in the question
	low    string // the token in lower case, not stemmed
	alt    string // the token stemmed as a name is (stemLight), to match a name against a word
	poss   bool   // an English possessive ("manager's")
	mine   bool   // right after my or our: the asker's own ("my balance")
	seg    int    // a Han character's word in the segmentation of its run (text.HanSegment); 0 for other tokens
}

// vsig is what the verification stage reads of one question.
type vsig struct {
	seq                              []vunit        // every token and clause break, in order
	index                            map[string]int // seq index of each text (repeats numbered)
	qtype                            string         // "price", "frequency", "duration", "distance", "count", "yesno", "whose", "who", "where", "when", "why", "which", "how", "what" (Chinese 是什么) or "" (none)
	latin                            bool           // it has a Latin word
	open                             bool           // it has a question word (what, 什么 …)
	whArg                            string         // "subj" (who replaced X), "obj" (who did X replace) or "" (neither)
	long                             bool           // past maxVerifyBytes or maxVerifyTokens: not read
	recommend, identify, comparative bool
	future, past                     bool                // an explicit future (will, 会) or past (did, 了吗) marker
	gender                           string              // its gendered pronouns in order: "m" for he/him/his/他, "f" for she/her/hers/她
	would                            bool                // a conditional: would, 'd (not opening a request, not before like/love/prefer/mind)
	whd                              bool                // a question word with 'd (what'd, who'd): did or would
	modal                            string              // the class of its opening auxiliary (modalClass), or ""
	counts                           map[string][]string // unit word → the numerals that count it ("two codes")
	owners                           map[string][]string // unit word → its possessors ("my manager's timesheet")
	agents                           []vagent            // the agents of its passive clauses
	subject                          string              // the opening subject (text.OpeningOf): "1" for i and we, "2" for you, else the word
	than                             bool                // it compares: than, or 比 between two things (hanThan)
	mood                             mood                // how a Chinese question asks (hanMood)
	clauseModals                     []mood              // the modal moods (modalMoods) of each clause, and moodDone of a Chinese clause ending in 了 or 过, by clause number
	units                            bool                // a Chinese count of units (hanUnitsAsked)
	negScope                         []string            // a quantifier's class and where a negation of its clause stands: "all:neg-before" (not all, 不都)
	deixis                           uint8               // 上次 1, 下次 2, 这次 4, 每次 8 (scopeWords)
	place                            uint8               // here 1, there 2 (not "there is"), both 3
	experienced                      bool                // V过: the experiential aspect (have you ever)
	beTense                          string              // "present" or "past": its first be-form with no participle after it in its clause, compared in yes/no questions (is / was Pluto a planet)
	conj                             uint8               // and 1, or 2
	particles                        []string            // its strong particles, each with the word before it ("out sign": sign out)
	modals                           uint8               // the classes of its modals (modalBits)
	cond                             string              // "if" (只要, 就) or "only if" (只有, 才)
	few                              uint8               // a few, a little 1; few, little 2
	hanQuant                         uint8               // 都 (all of them) 1; 有…的, 有些, 有的, 有一X (some of them) 2; 没有一X, 没有任何 (none) 4
	only                             uint8               // only, 只, 仅, 才 before a modal 1; also, 也 2; 只, 仅 4
	did                              bool                // it has did or didn't, not in an if-clause
	modalAsksWhom                    bool                // a modal before do or a verb of asking someone (askVerbs)
	howManner                        bool                // how right before an auxiliary (how do, how should): the way to do it
	clock                            bool                // it asks the time of day (几点, what time)
	day                              bool                // it asks the day or the date (哪天, 几号, what day)
	timeCount                        bool                // a Chinese count of time units (多少天, 几个月)
	tenses                           map[string]string   // verb → "past" or "present": its finite English forms (ran, runs), not after an auxiliary, to or a determiner
	maybe                            bool                // a possibility: may, might, could; 可能, 也许, 或许
	text                             string              // the question as given
	both                             uint8               // both 1, either 2
	oneOf                            bool                // 之一, one of the largest: one of them
	usedTo                           bool                // used to: a past habit
	already, notYet                  bool                // 已, already; 未, 尚未, not yet
	perfectQ                         bool                // have/has + a past participle: so far ("How many have we shipped?")
	oneOfNoun                        string              // the noun after "one of the/my/your …" (one of them)
	passives                         map[string]string   // verb in a passive without agent → the units before it in its clause ("Was the driver paid?": " driver ")
	actives                          map[string]string   // verb in an active form (not after be, get or have) → its subject, the unit right before it
	stranded                         string              // a role marker that ends a wh-question ("What can I substitute butter for?")
	relWho                           string              // its relative who-clauses in order: "s" for who + verb, "o" for who(m) + noun phrase
	progressive                      bool                // is/are + -ing, or being + participle: now
	nowAsked                         bool                // a subject, then is/are and -ing or the -ing after an opening is and its subject: "Is it raining?"
	modalPerfect                     bool                // a modal with have and a past participle: should have cancelled
	haveTo                           bool                // have to or has to: an obligation, as must (openingModal)
	auxOpens                         bool                // its first word is its opening auxiliary (a yes/no question, even with a when or where inside)
	lastModal                        string              // the opening class of its last sentence after a statement (lastQuestionModal), or ""
	comparisons                      []hanComparison     // the predicates of its Chinese comparisons with 比 (hanComparisons)
	wouldLike                        bool                // would like, love or prefer: a wish
	plan                             uint8               // going to or supposed to after is/am/are 1, after was/were 2
	clauses                          []clauseIntent      // a Chinese question's clauses, each with only its intent read (clauseIntents)
	whatIs                           bool                // it opens with what is (are, was, were), asking what a thing is, not a way (whatIsAsked)
	hanEval, hanWhat                 bool                // a Chinese clause ends in 怎么样 (how good: hanEvaluated); it has 什么, 哪 or 啥
	hanHowMany                       bool                // a 几 that asks how many, in a question of no other kind (有几栋楼)
	held                             string              // "now" or "then": who is / was the holder of an office (heldAsked)
}

// vagent is the agent of a passive clause ("paid by Acme", 被张三): the
// first participant after by/被, and the participants before it in the
// clause.
type vagent struct {
	key           string
	pos           int
	by            int      // the position of by/被
	before, after []string // participants before by/被, after the agent
	han           bool     // 被: the verb follows the agent
}

// persons maps personal pronouns to a person, so that "I" and "me" are one
// participant.
var persons = map[string]string{
	"i": "1s", "me": "1s", "we": "1p", "us": "1p", "you": "2", "he": "3m", "him": "3m", "she": "3f", "her": "3f",
	"they": "3p", "them": "3p", "我": "1s", "你": "2", "您": "2", "他": "3m", "她": "3f",
}

// partKey names a participant of the voice check: a unit that occurs once,
// or a personal pronoun; "" for anything else.
func (u *vunit) partKey() string {
	if p := persons[u.low]; p != "" {
		return p // "she" and "her" are one participant
	}
	if u.unit && !u.rep {
		return u.word
	}
	return ""
}

// voiceSwap reports an agent of a passive clause of s that is an unmarked
// participant of the active question a, still after the participants that
// come before by/被 in s (who does what to whom exchanged), or with none of
// them in a to tell (refused: precision first). A participant moved before
// them is an active paraphrase and passes, and is returned in voiced
// when a has no passive of its own: the order check then lets the agent's
// phrase and the words before by/被 change places. After 被, the verb must
// also have moved before the agent.
func (s *vsig) voiceSwap(a vsig) (refused string, swapped bool, voiced []vagent) {
	if len(s.agents) == 0 {
		return "", false, nil
	}
	first := make(map[string]int, len(a.seq)) // participant → its first position in a
	for i := range a.seq {
		if k := a.seq[i].partKey(); k != "" {
			if _, ok := first[k]; !ok {
				first[k] = i
			}
		}
	}
	partPos := func(k string) int {
		if p, ok := first[k]; ok {
			return p
		}
		return -1
	}
	for _, g := range s.agents {
		if slices.ContainsFunc(a.agents, func(h vagent) bool { return h.key == g.key }) {
			continue
		}
		x := partPos(g.key)
		if x < 0 || a.seq[x].role != "" {
			continue
		}
		same, moved := 0, 0
		for _, b := range g.before {
			switch p := partPos(b); {
			case b == g.key || p < 0:
			case p < x:
				same++
			default:
				moved++
			}
		}
		// After 被 the verb follows the agent (我被王芳投诉了), and 被 may
		// have no agent at all (外卖被送错了: the "agent" is the verb). An
		// exchange puts the verb before the agent in the active question
		// (我投诉了王芳); a unit after the agent that stays after it says
		// nothing. Without a subject before 被 to tell (被蚊子叮了), 被 is
		// let pass.
		if g.han && !slices.ContainsFunc(g.after, func(k string) bool {
			p := partPos(k)
			return p >= 0 && p < x
		}) {
			continue
		}
		if same > 0 || moved == 0 && !g.han {
			return g.key, true, nil
		}
		if len(a.agents) == 0 {
			voiced = append(voiced, g)
		}
	}
	return "", false, voiced
}

// voicePhrases reports that the units at i and j of s are the agent's
// phrase of a voiced passive (after by/被 and any of/的 in its clause) and a unit before
// by/被 in that clause, in either order: "The school was founded by a group
// of farmers" / "A group of farmers founded the school".
func (s *vsig) voicePhrases(voiced []vagent, i, j int) bool {
	for _, g := range voiced {
		c := s.seq[g.by].clause
		inAgent := func(k int) bool { // after by/被, through of/的: "by a group of local farmers"
			if k <= g.by || s.seq[k].clause != c {
				return false
			}
			for m := g.by + 1; m < k; m++ {
				if r := roleMarkers[s.seq[m].low]; r != "" && r != "of" {
					return false
				}
			}
			return true
		}
		before := func(k int) bool { return k < g.by && s.seq[k].clause == c }
		if inAgent(i) && before(j) || inAgent(j) && before(i) {
			return true
		}
	}
	return false
}

// roleMarkers maps English prepositions and Chinese role particles to a
// role class.
var roleMarkers = map[string]string{
	"to": "to", "into": "to", "onto": "to", "toward": "to", "towards": "to",
	"from": "from", "by": "by", "of": "of", "for": "for", "with": "with", "without": "without",
	"in": "at", "on": "at", "at": "at", "inside": "at", "within": "at",
	"than": "than", "between": "between", "and": "and", "or": "and", "vs": "and", "versus": "and",
	"before": "before", "after": "after", "over": "over", "under": "under", "above": "over", "below": "under",
	"via": "via", "through": "via", "against": "against", "about": "about", "as": "as",
	"把": "obj", "将": "obj", "被": "by", "让": "by", "叫": "by", "由": "by",
	"给": "to", "向": "to", "对": "to", "朝": "to", "往": "to", "到": "to", "至": "to",
	"从": "from", "自": "from", "在": "at", "于": "at", "比": "than",
	"和": "and", "与": "and", "跟": "and", "同": "and", "及": "and", "或": "and", "、": "and",
	"为": "for", "替": "for", "的": "of",
}

// hanThan reports whether the 比 at toks[i] compares two things (A比B贵),
// not part of a word (比较, 比如, 比例, 比赛, 对比, 相比, 占比, 百分比).
func hanThan(toks []string, i int) bool {
	if i+1 < len(toks) && strings.Contains("较如例赛方分特率重值喻拟", toks[i+1]) {
		return false
	}
	return i == 0 || !strings.Contains("对相好无类评排攀可正反占分", toks[i-1])
}

// directional role classes: a unit moving between two of them changes who
// does what to whom, or what is talked about ("complain about my manager
// to HR" / "complain to my manager about HR").
var directional = map[string]bool{"to": true, "from": true, "by": true, "obj": true, "than": true, "about": true}

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

// quantifiers are function words that are units of the order check:
// "Most voted against it, but a few supported it" / "A few voted against
// it, but most supported it" exchange most and few around the frame.
var quantifiers = setOf("most few many all some")

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

// stemWord is stemLight for a word that is no name, with an -e after a
// sibilant taken off too, singular or plural alike: inch and inches are
// "inch", cache and caches "cach", box and boxes "box". (A plural in -es
// may come from a singular with or without the e; reading both as the
// stem without it keeps them one word either way.)
func stemWord(w string) string {
	if len(w) > 4 && strings.HasSuffix(w, "ies") {
		return w[:len(w)-3] + "y" // dictionaries = dictionary
	}
	w = stemLight(w)
	for _, sib := range []string{"che", "she", "xe", "sse", "zze"} {
		if len(w) > len(sib)+1 && strings.HasSuffix(w, sib) {
			return w[:len(w)-1]
		}
	}
	return w
}

// verifyTokens splits a question into words (Latin letters and digits,
// with inner - _ . ' / :, and thousands separators), single Han
// characters, and clause breaks ("|").
func verifyTokens(q string) (toks []string, hasHan bool) {
	if !isASCII(q) {
		q = strings.ReplaceAll(norm.NFKC.String(text.Superscripts(q)), "’", "'") // manager’s = manager's; 10⁵ = 10^5
	}
	q = text.SpellDataUnits(q) // 10MB: 10MByte, 10Mb: 10Mbit
	word := func(r rune) bool { return unicode.IsLetter(r) && !text.IsHan(r) || unicode.IsDigit(r) }
	han := !isASCII(q) && strings.IndexFunc(q, text.IsHan) >= 0 // units stay as written beside Chinese (25kg / 二十五公斤)
	toks = make([]string, 0, 32)
	for i := 0; i < len(q) && len(toks) <= maxVerifyTokens; {
		r, n := utf8.DecodeRuneInString(q[i:])
		switch {
		case word(r):
			j := i + n
			lastComma := -1
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
				if r2 == ',' && text.ThousandsAt(func(k int) bool { return k < len(q) && q[k] >= '0' && q[k] <= '9' }, i, j, lastComma) {
					lastComma, j = j, j+4 // 8,000 is one number, as the facets read it
					continue
				}
				break
			}
			tok := strings.ReplaceAll(q[i:j], ",", "")
			if left, verb, ok := contraction(tok, q[j:]); ok {
				toks = append(toks, left, verb) // I'm: I am, we've: we have, where's: where is
				i = j
				continue
			}
			if num, unit, ok := text.SplitUnit(tok, len(toks) > 0 && isDigits(toks[len(toks)-1])); ok && !han {
				if num != "" {
					toks = append(toks, num) // 10kg: 10 kilogram
				}
				toks = append(toks, strings.Fields(unit)...) // 5 mins: 5 minute; 3yo: 3 year old
			} else {
				toks = append(toks, tok)
			}
			i = j
		case text.IsHan(r):
			t := q[i : i+n]
			if r == '儿' && len(toks) > 0 && toks[len(toks)-1] == "哪" {
				t = "里" // 哪儿 = 哪里: erhua
			}
			toks = append(toks, t)
			hasHan = true
			i += n
		default:
			if strings.ContainsRune(",;.?!:()[]{}\n\"“”，；。？！：（）【】", r) {
				toks = append(toks, "|")
			} else if r == '、' {
				toks = append(toks, "、") // a list: and (roleMarkers)
			}
			i += n
		}
	}
	return toks, hasHan
}

// contraction returns a personal pronoun's contraction as the two words
// it stands for (I'm: I am, they've: they have, you'll: you will, it's: it
// is; 's before been or got: has), so that the tense checks read its
// verb; rest is the question after the word. 'd (had or would), a noun's
// 's (a possessive) and a question word's (what's) stay as written.
func contraction(w, rest string) (string, string, bool) {
	k := strings.IndexByte(w, '\'')
	if k <= 0 {
		return "", "", false
	}
	left, suffix := w[:k], strings.ToLower(w[k+1:])
	low := strings.ToLower(left)
	if persons[low] == "" && low != "it" {
		return "", "", false // what's, where's: a question word's is stays one word with it
	}
	switch suffix {
	case "m":
		if low == "i" {
			return left, "am", true
		}
	case "re":
		return left, "are", true
	case "ve":
		return left, "have", true
	case "ll":
		return left, "will", true
	case "s":
		if low == "i" || low == "you" || low == "we" || low == "they" {
			return "", "", false
		}
		if next, _, _ := strings.Cut(strings.TrimLeft(rest, " "), " "); strings.EqualFold(next, "been") || strings.EqualFold(next, "got") {
			return left, "has", true
		}
		return left, "is", true
	}
	return "", "", false
}

// conditionLast puts an opening condition after the clause it conditions,
// as it is more often written: "If I cancel online, can I get a refund?"
// is read as "can I get a refund if I cancel online?", so that the two
// forms compare word for word (the repeated I and the would otherwise
// look like a frame that stayed while cancel and refund moved). Only a
// condition opened by if, unless or 如果/要是/假如, or a phrase opened by a
// preposition or a subordinator (as, when, while, before, after, for …),
// and closed by a comma moves.
func conditionLast(toks []string) []string {
	if len(toks) < 4 {
		return toks
	}
	switch h := strings.ToLower(toks[0]); {
	case h == "if", h == "unless", h+toks[1] == "如果", h+toks[1] == "要是", h+toks[1] == "假如":
	case frontedOpeners[h] && !(h == "when" && auxiliaries[strings.ToLower(toks[1])]) && (frontedClauses[h] || slices.Index(toks, "|") <= maxFronted):
		// A fronted phrase: "As a US citizen, do I need a visa?", "When I
		// travel abroad, …" (not the question "When is …, and …?", nor a
		// whole clause before an appositive: "In 1741 he was succeeded by
		// his nephew, Thomas Hale").
	default:
		return toks
	}
	brk := slices.Index(toks, "|")
	if brk < 2 || brk == len(toks)-1 {
		return toks
	}
	out := make([]string, 0, len(toks))
	out = append(out, toks[brk+1:]...)
	for len(out) > 0 && out[len(out)-1] == "|" {
		out = out[:len(out)-1] // the question mark
	}
	out = append(out, toks[:brk]...)
	return out
}

// maxFronted bounds the tokens of a fronted prepositional phrase before
// its comma; a clause opened by a subordinator may be longer.
const maxFronted = 8

// frontedClauses open a fronted clause (a fronted phrase otherwise).
var frontedClauses = setOf("when whenever while before after once since")

// frontedOpeners open a phrase or clause that may stand before the
// question or after it.
var frontedOpeners = setOf("when whenever while before after once since as during with without for on in at about near from under despite")

// signature reads a question for verification.
func signature(q string) vsig {
	if len(q) > maxVerifyBytes {
		return vsig{long: true}
	}
	q = hanUnframed(q) // 你好，… and …？谢谢 ask what … asks
	toks, hasHan := verifyTokens(q)
	if len(toks) > maxVerifyTokens {
		return vsig{long: true}
	}
	toks = conditionLast(toks)
	seg := text.HanSegment(toks) // 自由, 现在: role characters inside a word mark no role
	s := vsig{seq: make([]vunit, 0, len(toks)), text: q}
	mixedCase := strings.IndexFunc(q, unicode.IsLower) >= 0
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
		if c := text.Unapostrophed(lt); c != "" {
			lt = c // doesnt: doesn't
		}
		lower = append(lower, lt)
		han := utf8.RuneCountInString(t) == 1 && text.IsHan([]rune(t)[0])
		tok := lt
		if !han {
			tok = stemLight(lt)
		}
		if r, ok := roleMarkers[lt]; ok && (lt != "比" || hanThan(toks, i)) && !(han && text.InWord(seg, i)) {
			if lt == "of" && i > 0 && strings.EqualFold(toks[i-1], "out") {
				r = "from" // out of: "into my savings" / "out of my savings"
			}
			s.than = s.than || r == "than"
			s.seq = append(s.seq, vunit{text: tok, role: role, clause: clause, low: lt, seg: seg[i]})
			role = r
			first = false
			continue
		}
		// A word in capitals that is a pronoun or a function word in lower
		// case is an acronym in a question written in mixed case (IT, US,
		// AM): a name, not "it", "us" or "am"; but OK, which English
		// writes in capitals, is okay.
		acronym := !han && mixedCase && len(t) > 1 && lt != "ok" && strings.IndexFunc(t, func(r rune) bool { return !unicode.IsUpper(r) }) < 0
		p := participantPronoun(lt)
		if acronym {
			p = ""
		}
		if han && p == "" && strings.Contains("我你您他她", t) {
			// Chinese personal pronouns are participants too (他借给我 /
			// 我借给他), 们 making them plural.
			p = "p:" + persons[t]
			if i+1 < len(toks) && toks[i+1] == "们" {
				p = "p:" + persons[t][:1] + "p"
			}
		}
		if p != "" {
			// A personal pronoun is a participant, one per
			// person (I = me): "My sister owes me" / "I owe my sister"
			// exchange the sister and me around "owe".
			s.seq = append(s.seq, vunit{text: p, role: role, clause: clause, low: lt, unit: true, seg: seg[i]})
			first = false
			continue
		}
		// A single Latin letter beside Han text is a name (A仓, B区), not an
		// article.
		letterName := !han && hasHan && len(t) == 1 && (i > 0 && isHanTok(toks[i-1]) || i+1 < len(toks) && isHanTok(toks[i+1]))
		if han && strings.Contains(hanFunction, t) || !han && !letterName && !acronym && (functionWords[lt] && !quantifiers[lt] || lead && imperatives[lt]) {
			s.seq = append(s.seq, vunit{text: tok, role: role, clause: clause, low: lt, seg: seg[i]})
			first = false
			continue
		}
		lead = false
		u := vunit{text: lt, role: role, clause: clause, low: lt, seg: seg[i]}
		if !han {
			s.latin = s.latin || strings.IndexFunc(t, unicode.IsLetter) >= 0
			upper := unicode.IsUpper([]rune(t)[0])
			digits := strings.ContainsAny(t, "0123456789")
			letters := strings.IndexFunc(t, unicode.IsLetter) >= 0
			inHan := hasHan && (i > 0 && isHanTok(toks[i-1]) || i+1 < len(toks) && isHanTok(toks[i+1]) || len(t) > 1)
			// An ordinal written with digits ("2nd", "21st") is a number the
			// facets compare, not a name.
			u.named = (digits && letters && !ordinalDigits(lt) && !text.NumberWithUnit(lt)) || upper && !first || inHan && letters
			u.text, u.alt = stemWord(lt), stemLight(lt)
			if u.named {
				// A name keeps its e: "the Bushes" are not "Bush", nor
				// "switches" in Chinese text "switch"; a name in capitals
				// keeps its S (HTTPS is not HTTP; APIs is API).
				u.text = stemLight(lt)
				if strings.IndexFunc(t, unicode.IsLower) < 0 {
					u.text = lt
				}
			}
			u.poss = strings.HasSuffix(lt, "'s") && !functionWords[lt[:len(lt)-2]] && !imperatives[lt[:len(lt)-2]]
			u.mine = i > 0 && (strings.EqualFold(toks[i-1], "my") || strings.EqualFold(toks[i-1], "our"))
		}
		first = false
		u.unit = true
		s.seq = append(s.seq, u)
		if role == "at" && !han && isTimeWord(lt) {
			role = "" // "In 2011 the bank acquired …": the time phrase ends at its time word
		}
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
	for _, w := range lower {
		s.gender += genders[w]
	}
	if hasHan {
		s.clauses = clauseIntents(q)
		s.comparisons = hanComparisons(q)
	}
	aux, subject := text.OpeningOf(q)
	s.modal = modalClass[aux]
	s.auxOpens = aux != "" && len(lower) > 0 && lower[0] == aux // "Can I keep my number when I switch?": yes/no, whatever its when
	s.lastModal = lastQuestionModal(q)
	switch w := subject; w {
	case "i", "we":
		s.subject = "1"
	case "you":
		s.subject = "2"
	default:
		s.subject = w
	}
	s.grammar()
	s.scopeWords()
	s.finiteVerbs()
	s.clauseReads()
	return s
}

// pastVerb reports a finite past verb form (picked, ran).
func (s *vsig) pastVerb() bool {
	for _, t := range s.tenses {
		if t != "present" {
			return true
		}
	}
	return false
}

// hasVerb reports a unit of s that is the verb or one of its forms.
func (s *vsig) hasVerb(verb string) bool {
	for i := range s.seq {
		if u := &s.seq[i]; u.unit && u.low != "" && u.low[0] < utf8.RuneSelf {
			if v, _ := text.VerbTense(u.low); u.low == verb || v == verb {
				return true
			}
		}
	}
	return false
}

// definite determiners point at one thing ("the forklift", "your driver").
var definite = setOf("the this that my your our their his her its")

// doWords ask with do.
var doWords = setOf("do does did don't doesn't didn't")

// auxBefore reports a word of set before i in its clause.
func (s *vsig) auxBefore(i int, set map[string]bool) bool {
	for k := i - 1; k >= 0 && s.seq[k].clause == s.seq[i].clause && s.seq[k].text[0] != '|'; k-- {
		w := s.seq[k].low
		if set[w] {
			return true
		}
		if base, ok := strings.CutSuffix(w, "'s"); ok && functionWords[base] && set["is"] {
			return true // where's, what's: is
		}
	}
	return false
}

// byAfter reports a by after i in its clause (a passive with its agent).
func (s *vsig) byAfter(i int) bool {
	for k := i + 1; k < len(s.seq) && s.seq[k].clause == s.seq[i].clause; k++ {
		if s.seq[k].low == "by" {
			return true
		}
	}
	return false
}

// addTo sets (*m)[k] = v, making the map.
func addTo(m *map[string]string, k, v string) {
	if *m == nil {
		*m = map[string]string{}
	}
	(*m)[k] = v
}

// unitsBefore returns the words of the units before i in its clause.
func (s *vsig) unitsBefore(i int) []string {
	var out []string
	for k := i - 1; k >= 0 && s.seq[k].clause == s.seq[i].clause && s.seq[k].text[0] != '|'; k-- {
		if s.seq[k].unit {
			out = append(out, s.seq[k].word)
		}
	}
	return out
}

// subjectOf returns the word of the unit right before i in its clause
// (determiners skipped), or "".
func (s *vsig) subjectOf(i int) string {
	for k := i - 1; k >= 0 && s.seq[k].clause == s.seq[i].clause && s.seq[k].text[0] != '|'; k-- {
		if s.seq[k].unit {
			return s.seq[k].word
		}
		if !nominal[s.seq[k].low] && possessivePronouns[s.seq[k].low] == "" {
			return ""
		}
	}
	return ""
}

// ingForm reports the -ing form of a verb: picking, loading.
func ingForm(w string) bool {
	_, t := text.VerbTense(w)
	return t == "ing"
}

// pastForm reports a past form of a verb: ran, sent, picked.
func pastForm(w string) bool {
	_, t := text.VerbTense(w)
	return t == "past"
}

// notFinite are the words after which a verb form is no finite verb of
// its own: auxiliaries and modals (was paid, has sent, did run, will
// run), to, and determiners (the lost card, my picked orders).
var notFinite = setOf(`is are was were be been being am do does did has have had having get gets got gotten getting
will would can could shall should may might must to the a an my your his her its our their this that these those`)

// hasHan reports a Chinese character in s.
func (s *vsig) hasHan() bool {
	return slices.ContainsFunc(s.seq, func(u vunit) bool { return isHanTok(u.low) })
}

// likes reports a like, love or prefer in s.
func (s *vsig) likes() bool {
	return slices.ContainsFunc(s.seq, func(u vunit) bool { return likeVerbs[u.low] })
}

// perfectModals take have and a past participle for what might have
// been.
var perfectModals = setOf("should could would might must may can will")

// likeVerbs are the verbs after which would asks a wish: would you like,
// I'd love, would they prefer.
var likeVerbs = setOf("like love prefer care")

// invertedBe reports a question's opening is, are or am with the subject
// between it and the word at i ("Is it raining?", "Are the kids
// eating?"): a pronoun, or a noun after a determiner, right before i, and
// no verb form or clause break from the be-form on.
func (s *vsig) invertedBe(i int) bool {
	if i < 2 {
		return false
	}
	// The subject ends right before: it, they; the kids, prices, the
	// nightly backup (a determiner and up to two modifiers before its noun).
	opens := func(k int) bool { return determiner(s.seq[k].low) || beForms[s.seq[k].low] }
	k := i - 2
	for k > 0 && k > i-4 && s.seq[k].unit && !opens(k) && !verbLike(s.seq[k].low) && !strings.HasPrefix(s.seq[k].text, "p:") {
		k--
	}
	if prev := s.seq[i-1]; persons[prev.low] == "" && prev.low != "it" && !prev.named && (!prev.unit || !opens(k)) { // or a name: Is Mount Vesuvius erupting?
		return false
	}
	for j := i - 2; j >= 0 && j >= i-4; j-- {
		switch w := s.seq[j].low; {
		case s.seq[j].clause != s.seq[i].clause || s.seq[j].text[0] == '|':
			return false
		case w == "is" || w == "are" || w == "am":
			return j == 0 || s.seq[j-1].text[0] == '|' || whWords[s.seq[j-1].low]
		case auxiliaries[w] || strings.HasSuffix(w, "ing") || participle(w):
			return false
		}
	}
	return false
}

// modalPerfectAt reports a modal at i with have and a past participle
// after it ("should I have cancelled", "could have gotten").
func (s *vsig) modalPerfectAt(i int) bool {
	for j := i + 1; j < len(s.seq) && j <= i+3 && s.seq[j].clause == s.seq[i].clause; j++ {
		if s.seq[j].low == "have" {
			return j+1 < len(s.seq) && (participle(s.seq[j+1].low) || pastForm(s.seq[j+1].low) || participles[s.seq[j+1].low])
		}
	}
	return false
}

// clauseReads reads what the English clause structure tells: a role
// marker that ends a wh-question (stranded), the kind of each relative
// who-clause (who + verb: the head does it; who(m) + noun phrase: it is
// done to the head) and a present progressive (is/are + -ing, being +
// participle).
func (s *vsig) clauseReads() {
	seq := s.seq
	for i := range seq {
		w := seq[i].low
		prev, next := "", ""
		if i > 0 {
			prev = seq[i-1].low
		}
		if i+1 < len(seq) {
			next = seq[i+1].low
		}
		end := i+1 == len(seq) || seq[i+1].text[0] == '|' || roleMarkers[next] != "" && next[0] < utf8.RuneSelf || next == "when" || next == "while" || next == "if"
		// "… substitute butter for?", "… for in cookies?", "… for when baking?"
		if end && s.open && roleMarkers[w] != "" && w[0] < utf8.RuneSelf && w != "and" && w != "or" && s.stranded == "" {
			s.stranded = w
		}
		if (w == "who" || w == "whom" || w == "that" || w == "which") && i > 0 && seq[i-1].unit && seq[i-1].low[0] < utf8.RuneSelf && !seq[i-1].named {
			switch {
			case w == "whom" || objectStart[next] || persons[next] != "":
				s.relWho += "o"
			case next != "":
				s.relWho += "s"
			}
		}
		if (prev == "is" || prev == "are" || prev == "am") && strings.HasSuffix(w, "ing") && !participle(next) && !pastForm(next) && ingForm(w) {
			s.progressive = true // "Who is picking it?": now; not "Why is shipping delayed?"
		}
		if ingForm(w) && !seq[i].named && !(w == "going" && next == "to") && !participle(next) && (s.invertedBe(i) || (prev == "is" || prev == "are" || prev == "am") && i > 1 && (persons[seq[i-2].low] != "" || seq[i-2].unit)) {
			s.nowAsked = true // "Is it raining?", "he is smoking": a subject, then the -ing form; not "Is parking free?", "the meaning of"
		}
		if perfectModals[w] && s.modalPerfectAt(i) {
			s.modalPerfect = true // "Should I have cancelled?": a past that did not happen
		}
		if w == "would" || strings.HasSuffix(w, "'d") {
			for j := i + 1; j < len(seq) && j <= i+3 && seq[j].clause == seq[i].clause; j++ {
				if likeVerbs[seq[j].low] {
					s.wouldLike = true // "Would you like coffee?", "Would the kids like pizza?": a wish now, not "Do you like coffee?"
				}
			}
		}
		if (prev == "being" || prev == "getting") && (participle(w) || pastForm(w) || text.IsVerb(w)) { // being rebuilt, being cut, getting towed: now
			s.progressive = true
		}
		if w == "used" && next == "to" && !beForms[prev] && !presentBe(prev) && prev != "get" && prev != "got" && prev != "getting" && !(i > 1 && beForms[seq[i-2].low]) ||
			w == "use" && next == "to" && slices.ContainsFunc(seq[:i], func(u vunit) bool { return u.low == "did" || u.low == "didn't" }) {
			s.usedTo = true // a past habit ("did it use to be"); not "I'm used to it", "Is she used to it" (accustomed)
		}
		if (w == "going" || w == "supposed") && next == "to" {
			switch {
			case prev == "was" || prev == "were":
				s.plan |= 2 // was going to, was supposed to: a plan that is over
			case presentBe(prev):
				s.plan |= 1
			}
		}
		switch {
		case w == "已" && next != "经" || w == "already" || w == "经" && prev == "已":
			s.already = true
		case w == "未" || w == "yet" && (prev == "not" || strings.HasSuffix(prev, "n't")) || w == "yet" && i > 1 && negWord(seq[i-2].low, "", ""):
			s.notYet = true
		}
		if perfectAux[w] || strings.HasSuffix(w, "'ve") || strings.HasSuffix(w, "'s") && next != "" && i+1 < len(seq) && slices.ContainsFunc(seq[i+1:min(len(seq), i+8)], func(u vunit) bool { return u.low == "been" }) { // how long's he been: has
			for k := i + 1; k < len(seq) && k <= i+7 && seq[k].clause == seq[i].clause; k++ {
				if v := seq[k].low; v == "been" || k <= i+4 && pastForm(v) && v != "got" { // have got: have; been after a longer subject (has the shop on Main Street been)
					s.perfectQ = true
					break
				}
				// A question's has or have before its subject, then a verb
				// whose participle is its base form: "How far has the fire
				// spread?", "Has the Fed cut rates?" (not "Does the store have
				// milk?": have is no opening auxiliary there).
				if v := seq[k].low; k > i+1 && k <= i+5 && seq[k-1].unit && !seq[k].named && text.IsVerb(v) && !ingForm(v) && !strings.HasSuffix(v, "s") &&
					(i == 0 || seq[i-1].text[0] == '|' || whWords[seq[0].low] && !slices.ContainsFunc(seq[:i], func(u vunit) bool { return auxiliaries[u.low] })) {
					s.perfectQ = true
					break
				}
			}
		}
		if w == "one" && next == "of" && i+3 < len(seq) && (nominal[seq[i+2].low] || possessivePronouns[seq[i+2].low] != "") && seq[i+3].unit {
			s.oneOfNoun = seq[i+3].word // "one of the forklifts"
		}
		if seq[i].unit && w[0] < utf8.RuneSelf && !seq[i].named {
			verb, t := text.VerbTense(w)
			opens := i == 0 || seq[i-1].text[0] == '|' || seq[i-1].clause != seq[i].clause
			switch {
			case t == "past" && (s.auxBefore(i, passiveAux) || opens) && !s.byAfter(i):
				addTo(&s.passives, verb, " "+strings.Join(s.unitsBefore(i), " ")+" ") // "Was the driver paid?", "my card got declined", "Born in Cork, …"
			case (t == "past" || t == "present") && !s.auxBefore(i, passiveAux) && !s.auxBefore(i, perfectAux) && !nominal[prev] && possessivePronouns[prev] == "" && !strings.HasSuffix(prev, "'ve"):
				addTo(&s.actives, verb, s.subjectOf(i)) // "Which suppliers paid?" (not a perfect: "I've lost my card" = "my card is lost")
			case t == "" && text.IsVerb(w) && s.auxBefore(i, doWords) && !s.auxBefore(i, passiveAux):
				addTo(&s.actives, w, s.subjectOf(i)) // "Did the driver pay?"
			}
		}
	}
}

// strandedSwap returns a unit that follows the marker p ends on in a, and
// is unmarked in p: "What can I substitute for butter?" / "What can I
// substitute butter for?". The marker before the question word in a ("To
// which dock is it assigned?") is what p says by ending on it.
func strandedSwap(p, a vsig) (string, bool) {
	if p.stranded == "" || a.stranded == p.stranded {
		return "", false
	}
	for i := range a.seq {
		if a.seq[i].low != p.stranded {
			continue
		}
		for j := i + 1; j < len(a.seq) && a.seq[j].clause == a.seq[i].clause; j++ {
			u := &a.seq[j]
			if whWords[u.low] || isTimeWord(u.low) {
				break // "to which dock", "assigned to this afternoon"
			}
			if !u.unit {
				continue
			}
			if k, ok := p.index[u.text]; ok && p.seq[k].role == "" {
				return u.word, true
			}
			break
		}
	}
	return "", false
}

// finiteVerbs records the tense of every finite English verb form (a past
// form or an -s form not right after an auxiliary, to or a determiner):
// "Who runs the depot?" asks who does now, "Who ran the depot?" who did.
func (s *vsig) finiteVerbs() {
	for i := range s.seq {
		u := &s.seq[i]
		if !u.unit || u.named || u.low == "" || u.low[0] >= utf8.RuneSelf {
			continue
		}
		if i > 0 && s.seq[i-1].clause == u.clause && notFinite[s.seq[i-1].low] {
			continue
		}
		verb, tense := text.VerbTense(u.low)
		if tense == "" || tense == "ing" || tense == "past" && i > 1 && perfectAux[s.seq[i-2].low] {
			continue // "have we sorted": a perfect, read apart (perfectQ)
		}
		if s.tenses == nil {
			s.tenses = map[string]string{}
		}
		if t, ok := s.tenses[verb]; ok && t != tense {
			tense = "both"
		}
		s.tenses[verb] = tense
	}
}

// participle reports a past participle: -ed, or an irregular one.
func participle(w string) bool { return len(w) > 4 && strings.HasSuffix(w, "ed") || participles[w] }

func isHanTok(t string) bool {
	r, _ := utf8.DecodeRuneInString(t)
	return text.IsHan(r)
}

// approxJi removes the 几 of vague numbers (十几, 几十, 几百 …), which ask
// nothing.
var approxJi = strings.NewReplacer("十几", "十", "百几", "百", "千几", "千", "万几", "万", "几十", "十", "几百", "百", "几千", "千", "几万", "万")

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
	// 不怎么 (not much) is a degree, not a question word: 不太爱 = 不怎么爱;
	// a question word before 都 or 也 says any, whoever, whenever (谁都可以代办吗,
	// 怎么都打不通): no question word either.
	zh := universalize(strings.ReplaceAll(zhb.String(), "不怎么", "不"))
	// zhJi is the Han text with a "|" wherever anything else stands between
	// two runs (一百，几个 keeps its 几 apart from 百) and the 几 of vague
	// numbers taken out: what is left of 几 asks how many.
	var zc strings.Builder
	gap := false
	for _, r := range q {
		switch {
		case text.IsHan(r):
			if gap && zc.Len() > 0 {
				zc.WriteByte('|')
			}
			zc.WriteRune(r)
			gap = false
		default:
			gap = true
		}
	}
	zhJi := approxJi.Replace(zc.String())
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
	wh := has("what", "which", "who", "whom", "whose", "where", "when", "why", "how", "什么", "哪", "谁", "多少", "怎么", "怎样", "如何", "为什么", "为啥", "何", "啥", "咋", "多会儿") ||
		strings.ContainsRune(zhJi, '几')
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
	// 一箱有多少 counts units; 钱还有多少 an amount of money, as 还有多少钱 does.
	s.units = hanUnitsAsked(zhJi) || strings.Contains(zh, "有多少") && !strings.ContainsAny(zh, "钱元费额价")
	s.clock = has("what time", "几点")
	s.day = has("what day", "which day", "what date", "哪天", "哪一天", "几号", "星期几", "周几", "礼拜几")
	s.timeCount = hanTimeCount(zhJi)
	switch {
	case has("多少钱", "什么价", "几块钱", "多少元", "价格是多少", "价格多少", "价钱多少", "售价多少"):
		s.qtype = "price"
	case hanFrequencyAsked(zh):
		s.qtype = "frequency" // 多久清洗一次: how often, not how long one takes (清洗一次要多久)
	case has("多久", "多长时间"):
		s.qtype = "duration"
	case has("多远"):
		s.qtype = "distance"
	case has("哪几", "哪些") && !has("原因", "为什么", "为啥"):
		s.qtype = "which" // 哪几栋: which ones, not how many (有几栋); 原因有哪些 asks why
	case has("how many", "how much", "number of", "quantity", "amount of", "多少", "数量") || s.units:
		s.qtype = "count"
	case yesno:
		s.qtype = "yesno"
	case has("whose"):
		s.qtype = "whose" // the owner: "Whose card was used?" is not "Who used the card?"
	case has("who", "whom", "谁", "什么人"):
		s.qtype = "who"
	case has("where", "哪里", "哪儿", "哪了", "哪呢", "在哪", "什么地方"):
		s.qtype = "where"
	case has("when", "什么时候", "何时", "几点", "啥时候", "多会儿"):
		s.qtype = "when"
	case has("why", "what causes", "what caused", "the cause", "为什么", "为啥", "为何", "原因", "怎么又", "怎么还没", "怎么还不", "怎么没", "怎么会", "怎么老是", "怎么总是", "怎么回事", "凭什么", "怎么这么", "怎么那么") || strings.Contains(q, "怎么") && hanWhyDone(q):
		s.qtype = "why" // 怎么 before 又, 没, 会, 这么 asks why (怎么又扣款了, 电脑怎么这么卡), as 怎么回事 does, and before what happened (怎么发烧了); 怎么不让 asks how
	case whichAsked(lower) || has("哪") || whatNoun(lower):
		s.qtype = "which" // "What customers …" asks which ones
	case has("how", "怎么", "如何", "怎样", "咋"): // 咋 (colloquial): how, 咋办, 咋补办
		s.qtype = "how"
	case hanDefinition(zh):
		s.qtype = "what" // 什么是分期, 分期是什么: what it is, not how much or how
	}
	s.whArg = whArgument(lower)
	s.whatIs = whatIsAsked(lower)
	s.hanHowMany = s.qtype == "" && strings.Contains(strings.ReplaceAll(zhJi, "哪几", ""), "几")
	s.hanEval = zh != "" && hanEvaluated(q)
	s.hanWhat = strings.Contains(zh, "什么") || strings.Contains(zh, "哪") || strings.Contains(zh, "啥")
	s.held = heldAsked(lower)
	for i, w := range lower {
		if w == "how" {
			s.howManner = i+1 < len(lower) && (auxiliaries[lower[i+1]] || modalBits(lower[i+1], "") != 0) // how do, how can; not how often
			break
		}
	}
	s.recommend = has("recommend", "recommended", "recommendation", "best", "better", "good", "worth", "suggest",
		"推荐", "值得", "比较好", "好用", "建议") || zh != "" && (hanGoodAtEnd(q) || hanBest(zh))
	s.identify = !s.recommend && wh && (has("this", "these", "those") || demonstrativeThat(lower) || hanThis(zh))
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
		if w == "many" && i > 0 && lower[i-1] == "how" || w == "whose" {
			w = "which" // "How many teams beat the Patriots?" / "How many teams did the Patriots beat?"; "Whose car hit the bus?"
		}
		if w == "which" && i+3 < len(lower) && lower[i+1] == "of" && (lower[i+2] == "the" || lower[i+2] == "these" || lower[i+2] == "those" || lower[i+2] == "your") {
			lower = slices.Concat(lower[:i+1], lower[i+3:]) // "which of the teams beat" reads as "which teams beat"
		}
		if w != "who" && w != "whom" && w != "what" && w != "which" {
			continue
		}
		if i+1 >= len(lower) {
			return ""
		}
		switch next := lower[i+1]; {
		case next == "do" || next == "does" || next == "did" || next == "didn't" || next == "doesn't" || next == "don't":
			return "obj"
		case w == "who" && passiveAux[next] && i+2 < len(lower) && participle(lower[i+2]):
			return "obj" // "Who was paid?": the one paid, not the payer ("Who paid?")
		case (w == "which" || w == "what") && i+2 < len(lower) && !functionWords[next] && !auxiliaries[next] && next[0] < utf8.RuneSelf &&
			(w == "which" || !strings.HasSuffix(next, "ed") && !pastForm(next)): // "what broke it": what is the subject
			// "Which company did Google buy?" asks the object, "Which
			// company bought Google?" the subject; so do "What country
			// invaded Poland?" and "What country did Poland invade?". The
			// noun phrase after the question word is one or two words.
			for j := i + 2; j < len(lower) && j <= i+3; j++ {
				v := lower[j]
				after := ""
				if j+1 < len(lower) {
					after = lower[j+1]
				}
				switch {
				case v == "do" || v == "does" || v == "did":
					return "obj"
				case auxiliaries[v] || functionWords[v] || v == "" || v[0] >= utf8.RuneSelf:
					return ""
				case participle(v) || strings.HasSuffix(v, "ed") || pastForm(v),
					text.IsVerb(v) && (objectStart[after] || after != "" && !functionWords[after] && !auxiliaries[after] && after[0] < utf8.RuneSelf):
					return "subj" // bought, invaded; beat before its object
				}
			}
			return ""
		case w == "who" && (modalBits(next, "") != 0 || next == "will" || next == "would" || next == "has" || next == "have") && i+2 < len(lower):
			// "Who will the new CEO replace?" asks the object, "Who will
			// replace the new CEO?" the subject.
			switch v := lower[i+2]; {
			case objectStart[v] || persons[v] != "":
				return "obj"
			case !functionWords[v] && !auxiliaries[v] && v[0] < utf8.RuneSelf && !strings.Contains(v, "'"):
				return "subj"
			}
			return ""
		case auxiliaries[next] || functionWords[next] || next[0] >= utf8.RuneSelf || strings.Contains(next, "'"):
			return ""
		case w == "what" && !strings.HasSuffix(next, "ed") && !pastForm(next):
			return "" // "what time", "what SKU": a determiner, not the subject ("what broke it" has one)
		default:
			return "subj"
		}
	}
	return ""
}

// hanFrequencyAsked reports 多久 or 多长时间 with 一次 or 一回 after it in its
// clause (空调多久清洗一次): how often it is done.
func hanFrequencyAsked(zh string) bool {
	for _, clause := range strings.FieldsFunc(zh, func(r rune) bool { return strings.ContainsRune("，,。.？?！!；;", r) }) {
		for _, ask := range []string{"多久", "多长时间"} {
			if i := strings.Index(clause, ask); i >= 0 && (strings.Contains(clause[i:], "一次") || strings.Contains(clause[i:], "一回")) {
				return true
			}
		}
	}
	return false
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
	return hanClauseEnds(q, "呢吗啊呀吧些", func(c string) bool {
		return strings.HasSuffix(c, "好") && !strings.HasSuffix(c, "你好") && !strings.HasSuffix(c, "您好")
	})
}

// hanEvaluated reports a Chinese clause of q that ends in 怎么样, 咋样 or
// 如何 (这款车的发动机怎么样): how good a thing is, not how to do it (怎么样才能).
func hanEvaluated(q string) bool {
	return hanClauseEnds(q, "呢吗啊呀吧", func(c string) bool {
		return strings.HasSuffix(c, "怎么样") || strings.HasSuffix(c, "咋样") || strings.HasSuffix(c, "如何")
	})
}

// hanClauseEnds reports a clause of q that ends as ends says, the
// particles of trim taken off its end first.
func hanClauseEnds(q, trim string, ends func(clause string) bool) bool {
	for _, clause := range strings.FieldsFunc(norm.NFKC.String(q), func(r rune) bool {
		return strings.ContainsRune(",;.?!，；。？！\n", r)
	}) {
		if ends(strings.TrimRight(strings.TrimSpace(clause), trim)) {
			return true
		}
	}
	return false
}

// verifyPair decides whether the answer to stored may answer query. It
// returns "" and a reason when it may, or the check that refused and why.
// Two questions that open with the same sentences of context are also
// verified without them: the checks that read a question as a whole
// (its opening, its tense, its question word) would read the context.
func verifyPair(query, stored vsig) (check, reason string) {
	check, reason = verifyWhole(query, stored)
	if check != "" {
		return check, reason
	}
	if qt, st, ok := afterSharedContext(query.text, stored.text); ok {
		if c, r := verifyWhole(signature(qt), signature(st)); c != "" {
			return c, r + " (after the shared context)"
		}
	}
	return check, reason
}

// verifyWhole is verifyPair over the two questions as written.
func verifyWhole(query, stored vsig) (check, reason string) {
	if query.long || stored.long {
		return "length", fmt.Sprintf("too long to verify (over %d tokens or %d KiB)", maxVerifyTokens, maxVerifyBytes>>10)
	}
	// The asker's framing: the facets leave out a subject pronoun right
	// after the question's opening auxiliary ("where can I find", "do you
	// have"), so a question without an opening subject ("where is") may
	// match it; but one whose opening subject is another (can I / can you,
	// can I / can anyone, can we / can it, can I / can the seller) asks
	// about someone else.
	if framedPerson(query.subject) || framedPerson(stored.subject) {
		if query.subject != "" && stored.subject != "" && query.subject != stored.subject {
			return "roles", fmt.Sprintf("roles differ: the questions have different subjects (%q, %q)", subjectName(query.subject), subjectName(stored.subject))
		}
	}
	// He and she: the same persons in the same order ("Does he know her?"
	// is not "Does she know him?").
	if query.gender != "" && stored.gender != "" && query.gender != stored.gender {
		return "roles", fmt.Sprintf("roles differ: he/she in another order or number (%s, %s)", genderName(query.gender), genderName(stored.gender))
	}
	// Intent.
	if query.qtype != "" && stored.qtype != "" && query.qtype != stored.qtype && !qtypesFit(query, stored) {
		return "intent", fmt.Sprintf("intent differs: the question asks %s, the cached one %s", qtypeName(query.qtype), qtypeName(stored.qtype))
	}
	// Today's holder or value against a past one ("Who is the head coach
	// of …" / "Who was the head coach of …").
	if query.held != "" && stored.held != "" && query.held != stored.held {
		return "tense", "tense differs: one question asks who holds the office now (is, are), the other who held it (was, were)"
	}
	// Which ones against how many (哪几栋楼有电梯 / 有几栋楼有电梯).
	if query.qtype == "which" && stored.hanHowMany || stored.qtype == "which" && query.hanHowMany {
		return "intent", "intent differs: one question asks which ones (哪几), the other how many (几)"
	}
	// How good a thing is against which one it is (你们用的快递怎么样 /
	// 你们用的是什么快递).
	if query.hanEval != stored.hanEval && (query.hanEval && stored.hanWhat && !query.hanWhat || stored.hanEval && query.hanWhat && !stored.hanWhat) {
		return "intent", "intent differs: one question asks how good it is (怎么样), the other which or what it is"
	}
	// How good it is against how to do it (去日本留学怎么样 / 怎么去日本留学).
	if query.hanEval != stored.hanEval && (query.hanEval && hanHowTo(stored.text) || stored.hanEval && hanHowTo(query.text)) {
		return "intent", "intent differs: one question asks how good it is (怎么样), the other how to do it (怎么, 如何)"
	}
	// What a thing is against how to do something with it ("What is the
	// late fee on my loan?" / "How do I get out of the late fee on my
	// loan?").
	if query.whatIs && stored.qtype == "how" && stored.howManner || stored.whatIs && query.qtype == "how" && query.howManner {
		return "intent", "intent differs: one question asks what it is, the other how to do something"
	}
	if query.qtype == "yesno" && stored.qtype != "yesno" && stored.open || stored.qtype == "yesno" && query.qtype != "yesno" && query.open {
		return "intent", "intent differs: a yes/no question against an open question"
	}
	// A Chinese question with a question word against a statement with
	// none: 孩子怎么不吃蔬菜 (why not) / 孩子不怎么吃蔬菜 (hardly).
	for _, p := range [][2]vsig{{query, stored}, {stored, query}} {
		if p[0].open && p[0].qtype != "" && p[0].qtype != "yesno" && !p[1].open && p[1].qtype == "" && !p[0].latin && !p[1].latin && p[0].hasHan() && p[1].hasHan() {
			return "intent", "one asks with a question word (怎么, 什么), the other says it without one"
		}
	}
	// Clause by clause, when both have as many: 一共有几个颜色，多少钱 / 一共有哪些颜色，多少钱.
	if n := len(query.clauses); n > 1 && n == len(stored.clauses) {
		for c := range n {
			a, b := query.clauses[c], stored.clauses[c]
			if a.qtype != b.qtype && (a.qtype != "" && b.qtype != "" && !qtypesFit(a.sig(), b.sig()) || a.qtype == "" && b.open && b.qtype != "yesno" || b.qtype == "" && a.open && a.qtype != "yesno") {
				return "intent", fmt.Sprintf("intent differs in clause %d: the question asks %s, the cached one %s", c+1, qtypeName(a.qtype), qtypeName(b.qtype))
			}
		}
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
			// unless that one has no Latin word at all (a translation). In
			// two Chinese questions it is no translation (京东Plus会员 /
			// 京东会员), and it is compared as written, unstemmed (beside是什么意思 /
			// besides是什么意思).
			if !u.named {
				continue
			}
			inHan := side.s.hasHan() && side.other.hasHan()
			missing, unstemmed := !side.other.hasWord(u.word), !side.other.hasLow(u.low)
			if (side.other.latin && missing || inHan && (missing || unstemmed)) && (!inHan || latinName(u.low)) {
				return "names", fmt.Sprintf("name %q is only in %s", u.low, side.where)
			}
		}
	}
	// Words in quotation marks are what is asked about: 动态助词“了”怎么用 /
	// 动态助词“过”怎么用.
	if qq, sq := quoted(query.text), quoted(stored.text); len(qq) > 0 && len(sq) > 0 && !slices.Equal(qq, sq) {
		return "names", fmt.Sprintf("the words in quotation marks differ: %q against %q", strings.Join(qq, " "), strings.Join(sq, " "))
	}
	// Chinese comparisons go the same way: 比系统记录的多 / 比系统记录的要少.
	if qc, sc := query.comparisons, stored.comparisons; len(qc) > 0 && len(sc) > 0 {
		if i := comparisonsOpposed(qc, sc); i >= 0 {
			return "compare", fmt.Sprintf("the comparisons go opposite ways: 比…%c in the question, 比…%c in the cached one", qc[i].adjective, sc[i].adjective)
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
	// Tense: one question explicitly future, the other explicitly past
	// (present against either stays allowed).
	if query.future != stored.future && query.past != stored.past && query.future != query.past {
		if query.future {
			return "tense", "tense differs: the question asks about the future (will, going to, 会), the cached one about the past (did, has …ed, 了)"
		}
		return "tense", "tense differs: the question asks about the past (did, has …ed, 了), the cached one about the future (will, going to, 会)"
	}
	// One verb, finite in both, past in one and present in the other ("Who
	// runs the depot?" / "Who ran the depot?"); a finite past against an
	// explicit future ("will lay off" / "laid off").
	for verb, t := range query.tenses {
		if o := stored.tenses[verb]; o != "" && o != t && t != "both" && o != "both" {
			return "tense", fmt.Sprintf("tense differs: %q is %s in the question, %s in the cached one", verb, t, o)
		}
	}
	for _, side := range [][2]vsig{{query, stored}, {stored, query}} {
		for verb, t := range side[0].tenses {
			if t == "past" && side[1].tenses[verb] == "" && side[0].latin && side[1].bareFinite(verb) {
				return "tense", fmt.Sprintf("tense differs: %q is past in one question, present in the other", verb)
			}
		}
	}
	for _, side := range [][2]vsig{{query, stored}, {stored, query}} {
		if !side[0].future || side[0].past || side[1].future {
			continue
		}
		for verb, t := range side[1].tenses {
			if t == "past" && side[0].tenses[verb] == "" && side[0].hasVerb(verb) {
				return "tense", fmt.Sprintf("tense differs: %q is future (will, 会) in one question, past in the other", verb)
			}
		}
	}
	// Two statements, one saying what may happen and the other what
	// happens or will ("The carmaker may cut 500 jobs" / "The carmaker
	// will cut 500 jobs"; 可能裁员 / 将裁员). Questions are let be: "Might
	// it rain tomorrow?" asks what "Will it rain tomorrow?" asks.
	if query.qtype == "" && stored.qtype == "" && !query.open && !stored.open && query.maybe != stored.maybe {
		return "mood", "one statement says it may happen (may, might, could, 可能), the other that it does or will"
	}
	// The first months against months ago: 前三个月 / 三个月前.
	if qf, qa := hanFirstAgo(query.text); qf+qa > 0 {
		if sf, sa := hanFirstAgo(stored.text); qf != sf && qa != sa && qf+qa == sf+sa {
			return "tense", "the time differs: the first of a span (前三个月) in one question, a span ago (三个月前) in the other"
		}
	}
	// The time of day against the day: 快递几点到 / 快递哪天到.
	if query.clock != stored.clock && query.day != stored.day && query.clock != query.day {
		return "intent", "intent differs: one question asks the time of day (几点, what time), the other the day (哪天, what day)"
	}
	// Chinese readings of review rounds 42–44: a negation moved between a
	// modifier and its clause, 谁 after a role marker, 是几 against 有几, 是…的.
	if query.hasHan() && stored.hasHan() {
		if a, b := hanNegationSide(query.text), hanNegationSide(stored.text); a|b == 3 && a != 3 && b != 3 && withoutNegation(query.text) == withoutNegation(stored.text) {
			return "negation", "the negation is in the modifier (没交社保的人) in one question, in the clause (交社保的人不能) in the other"
		}
		if qm, qw := hanWhoMarked(query.text); qw {
			if sm, sw := hanWhoMarked(stored.text); sw && qm != sm {
				return "roles", "who differs: one question asks who does it (谁写), the other to or for whom (写给谁)"
			}
		}
		if hanWhichNumber(query.text, stored.text) || hanWhichNumber(stored.text, query.text) {
			return "intent", "intent differs: one question asks which one it is (是几段), the other how many there are (有几段)"
		}
		if hanShiDe(query.text) != hanShiDe(stored.text) && !strings.Contains(query.text, "了") && !strings.Contains(stored.text, "了") {
			return "tense", "tense differs: one question asks about a past event (是…的), the other about what happens"
		}
	}
	// 了 before the final particle, all else equal: 发货了吗 asks whether it
	// has shipped, 发货吗 whether it ships.
	if leAsked(query.text, stored.text) || leAsked(stored.text, query.text) {
		return "tense", "tense differs: one question asks whether it has happened (了), the other whether it happens"
	}
	// Where the two differ, all else equal, read once for the checks below.
	span := spanReplaced(query.text, stored.text)
	// Now against before, all else equal: 忘了现在的支付密码 / 忘了原来的支付密码.
	if x, y := span.x, span.y; span.ok && (nowWords[x] && thenWords[y] || thenWords[x] && nowWords[y]) {
		return "deixis", fmt.Sprintf("the time differs: %s in the question, %s in the cached one", x, y)
	}
	// 都, 也, 只 and 仅 replaced by one another, all else equal.
	if x, y, ok := scopeReplaced(query.text, span); ok {
		return "scope", fmt.Sprintf("the scope differs: %s in the question, %s in the cached one", x, y)
	}
	if progressiveDone(query.text, stored.text) || progressiveDone(stored.text, query.text) {
		return "tense", "tense differs: one question asks whether it is going on (在), the other whether it is done (了)"
	}
	if conditionAdded(query.text, stored.text) || conditionAdded(stored.text, query.text) {
		return "mood", "one question supposes (if, 要是, 如果), the other states a fact"
	}
	if imminentAdded(query.text, stored.text) || imminentAdded(stored.text, query.text) {
		return "tense", "tense differs: one question says it is about to happen (要…了, 快…了), the other that it has"
	}
	// When-questions: a past against no tense marker asks about another
	// time ("When did the store open?" is its history, "When does the
	// store open?" its hours).
	if query.qtype == "when" && stored.qtype == "when" && query.past != stored.past && !query.future && !stored.future {
		return "tense", "tense differs: one when-question asks about the past (did, was, 了), the other does not"
	}
	// A conditional against a question without one: "what would you do"
	// is neither "what did you do" nor "what do you do" (two yes/no
	// questions may differ so: "would you recommend X" / "do you
	// recommend X"). A question word with 'd is did or would: it conflicts
	// with either, explicitly written.
	if query.would != stored.would && !(query.qtype == "yesno" && stored.qtype == "yesno") && !query.whd && !stored.whd {
		return "tense", "tense differs: a conditional (would) against a question without one"
	}
	// Chinese moods: what happened against what can, must or will happen
	// (批下来了吗 / 能批下来吗, 为什么没有退款 / 为什么不能退款, 可以提前还款吗
	// / 需要提前还款吗); English opening auxiliaries are compared below.
	if qm, sm := query.moodAsked(stored), stored.moodAsked(query); moodsConflict(qm, sm) {
		return "mood", fmt.Sprintf("the questions ask differently: %s against %s", qm, sm)
	}
	// Clause by clause, when both have as many: 银行还愿意给我批贷款吗，利率会不会高 /
	// 银行还能给我批贷款吗，利率会不会高 (the later clause's modals would hide
	// the first's).
	// In how-, where- and when-questions the clause that asks is let be
	// (需要怎么操作 / 可以怎么操作), the others not (社保要不要转回老家，怎么转 / 社保能不能转回老家，怎么转).
	if n := len(query.seq); n > 0 && len(stored.seq) > 0 && query.seq[n-1].clause == stored.seq[len(stored.seq)-1].clause && query.qtype == stored.qtype {
		asksHow := query.qtype == "how" || query.qtype == "where" || query.qtype == "when"
		for c := range min(len(query.clauseModals), len(stored.clauseModals)) {
			if asksHow && (query.clauseAsks(c) || stored.clauseAsks(c)) {
				continue
			}
			// Modals against other modals, or a modal alone against a done
			// alone (这个订单可退吗 / 这个订单退了吗).
			a, b := query.clauseModals[c], stored.clauseModals[c]
			am, bm, ad, bd := a&modalMoods, b&modalMoods, a&moodDone != 0, b&moodDone != 0
			if am != 0 && bm != 0 && am&bm == 0 || am != 0 && !ad && bd && bm == 0 || bm != 0 && !bd && ad && am == 0 {
				return "mood", fmt.Sprintf("the questions ask differently: %s against %s", a, b)
			}
		}
	}
	// A negation before a quantifier against one after it (not all / all
	// not, 不一定能 / 一定不能, 不都 / 都不).
	for _, side := range [][2]vsig{{query, stored}, {stored, query}} {
		a, b := side[0], side[1]
		for _, p := range a.negScope {
			q, place, _ := strings.Cut(p, ":")
			for _, o := range b.negScope {
				if oq, oplace, _ := strings.Cut(o, ":"); oq == q && oplace != place && !slices.Contains(a.negScope, o) {
					return "negation", fmt.Sprintf("the negation takes another scope: %s %s in one question, %s in the other", q, strings.TrimPrefix(place, "neg-"), strings.TrimPrefix(oplace, "neg-"))
				}
			}
		}
	}
	// Phrasal verbs: sign in / sign out, pick up / pick.
	if p, ok := particleDiffers(query, stored); ok {
		return "particle", fmt.Sprintf("the particles differ (%s)", p)
	}
	if query.latin && stored.latin {
		if p, ok := particleDropped(query, stored); ok {
			return "particle", fmt.Sprintf("%q is a verb of its own, and one question has the verb alone", p)
		}
	}
	// What was done (did) against what should or must be done ("How many
	// cartons did we pack?" / "How many cartons do we still need to
	// pack?"), as the Chinese moods do; not a past in an if-clause, nor a
	// can (couldn't, "can you tell me").
	for _, p := range [][2]vsig{{query, stored}, {stored, query}} {
		if a, b := p[0], p[1]; a.did && a.modals == 0 && !a.future && b.modals&2 != 0 && !b.past && b.latin && a.latin {
			return "tense", "one question asks what was done (did), the other what should or must be done"
		}
	}
	// The modals of two questions (not a plain how or when): what is
	// allowed against what is advised or required ("Which stocks can I
	// buy?" / "… should I buy?", "Do I get to keep it?" / "Do I have to
	// keep it?").
	if query.modals != 0 && stored.modals != 0 && query.modals&stored.modals == 0 && modalsCompared(query) && modalsCompared(stored) {
		return "intent", "the questions ask differently: what one can, should or must do"
	}
	if query.only != 0 && stored.only != 0 && query.only&stored.only == 0 {
		return "scope", "only (只, 仅) against also (也)"
	}
	if (query.only == 0) != (stored.only == 0) && query.latin && stored.latin || (query.only&4 == 0) != (stored.only&4 == 0) && !query.latin && !stored.latin {
		return "scope", "only (just) in one question: the others are left out"
	}
	if query.few != 0 && stored.few != 0 && query.few&stored.few == 0 {
		return "negation", "a few (some) against few (hardly any)"
	}
	if query.hanQuant != 0 && stored.hanQuant != 0 && query.hanQuant&stored.hanQuant == 0 {
		return "scope", "all of them (都), some of them (有…的, 有些) or none (没有一个) differ"
	}
	if query.few&4 != stored.few&4 && (query.few|stored.few)&8 != 0 && query.latin && stored.latin {
		return "scope", "some of them against all of them"
	}
	// A negation in another clause, as many clauses in both: 已经签收了，但是没有收到
	// / 还没有签收，但是已经收到了; "It shipped but never arrived" / "It never
	// shipped but arrived".
	if a, b := clauseNegations(query), clauseNegations(stored); len(a) == len(b) && len(a) > 1 && !slices.Equal(a, b) && slices.ContainsFunc(a, func(n int) bool { return n > 0 }) && slices.ContainsFunc(b, func(n int) bool { return n > 0 }) {
		for c := range a {
			if a[c] != b[c] && sameClause(query, stored, c) {
				return "negation", "the negation stands in another clause"
			}
		}
	}
	if a, b := negations(query), negations(stored); a != b && a > 0 && b > 0 {
		return "negation", fmt.Sprintf("the questions negate %d and %d times (\"Which items can I return without a receipt?\" / \"… can't I …\")", a, b)
	}
	if a, b := negatedWord(query), negatedWord(stored); a != "" && b != "" && a != b && query.hasVerb(b) && stored.hasVerb(a) {
		return "negation", fmt.Sprintf("the negation goes with %q in the question, with %q in the cached one", a, b)
	}
	if w, ok := agentMoved(query, stored); ok {
		return "roles", fmt.Sprintf("%q does one thing (after by) in one question, another in the other", w)
	}
	if w, ok := modifierAttached(query, stored); ok {
		return "order", fmt.Sprintf("%q modifies another word in each question", w)
	}
	// 不是A而是B (B, not A) against 是A而不是B (A, not B): the negation goes
	// with the other one (给我交的不是社保而是商业保险 / 是社保而不是商业保险).
	if a, b := notButForm(query.text), notButForm(stored.text); a != 0 && b != 0 && a != b {
		return "negation", "不是A而是B against 是A而不是B: the negation goes with the other one"
	}
	// The same words, one named again in one question and another in the
	// other: 林丹和李宗伟交手，林丹赢了几次 / …，李宗伟赢了几次.
	if a, b, ok := repeatSwapped(query, stored); ok {
		return "roles", fmt.Sprintf("%q is named again in one question, %q in the other", a, b)
	}
	// A negation moved into or out of a relative clause ("employees who
	// are not on probation are allowed" / "employees who are on probation
	// are not allowed").
	if negationMoved(query, stored) {
		return "negation", "the negation stands on another side of a relative clause's words"
	}
	if query.perfectQ != stored.perfectQ && query.qtype != "yesno" && stored.qtype != "yesno" && query.qtype != "" && stored.qtype != "" &&
		!(query.past && !query.perfectQ) && !(stored.past && !stored.perfectQ) && (query.perfectQ || !query.pastVerb()) && (stored.perfectQ || !stored.pastVerb()) && !query.future && !stored.future {
		return "tense", "tense differs: one question asks what has been done so far (have …ed), the other what is done"
	}
	// What has been done so far against what will be: "Which countries
	// have adopted the euro?" / "Which countries are going to adopt the
	// euro?" (a future perfect, "will have adopted", is both).
	for _, p := range [][2]vsig{{query, stored}, {stored, query}} {
		if p[0].perfectQ && !p[0].future && p[1].future && !p[1].perfectQ && p[0].latin && p[1].latin {
			return "tense", "tense differs: one question asks what has been done so far (have …ed), the other what will be (will, going to)"
		}
	}
	for _, p := range [][2]vsig{{query, stored}, {stored, query}} {
		if n := p[0].oneOfNoun; n != "" && p[1].oneOfNoun == "" {
			if k, ok := p[1].index[n]; ok && k > 0 && definite[p[1].seq[k-1].low] {
				return "scope", fmt.Sprintf("one of the %ss in one question, the %s in the other", n, n)
			}
		}
	}
	// Done already against whether it can be done: 报销单已经审批通过了吗 / 报销单能审批通过吗.
	for _, p := range [][2]vsig{{query, stored}, {stored, query}} {
		if p[0].already && p[0].mood&moodAbility == 0 && !p[1].already && p[1].mood&moodAbility != 0 && p[0].hasHan() && p[1].hasHan() {
			return "mood", "one question asks whether it is done already (已经), the other whether it can be done (能, 可以)"
		}
	}
	if query.already && stored.notYet || query.notYet && stored.already {
		return "mood", "one question says it is already done (已, already), the other not yet (未, 尚未, not yet)"
	}
	if query.plan != 0 && stored.plan != 0 && query.plan != stored.plan {
		return "tense", "tense differs: a plan that is over (was going to) against one that is still on (is going to)"
	}
	if query.usedTo != stored.usedTo {
		return "tense", "tense differs: used to (a past habit) in one question only"
	}
	for _, p := range [][2]vsig{{query, stored}, {stored, query}} {
		for v, before := range p[0].passives {
			if subj, ok := p[1].actives[v]; ok && subj != "" && strings.Contains(before, " "+subj+" ") && p[1].passives[v] == "" && p[0].actives[v] == "" &&
				(text.IsAnimate(subj) || strings.HasPrefix(subj, "p:")) { // a thing's verb reads either way: "Was my order shipped?" = "Did my order ship?"
				return "roles", fmt.Sprintf("roles differ: %q is done to %q (a passive) in one question, done by it in the other", v, subj)
			}
		}
		if p[0].stranded != "" && p[1].stranded == "" && p[1].open && !p[1].hasWord(p[0].stranded) {
			return "intent", fmt.Sprintf("one question ends on %q (what it is %s), the other asks what it is", p[0].stranded, p[0].stranded)
		}
		if p[0].qtype == "yesno" && p[1].qtype == "" && !p[1].open && p[1].latin && !strings.HasSuffix(strings.TrimSpace(p[1].text), "?") {
			return "intent", "a yes/no question against a statement"
		}
	}
	if query.oneOf != stored.oneOf {
		return "scope", "one of them (之一) against the one"
	}
	if query.both != 0 && stored.both != 0 && query.both&stored.both == 0 {
		return "scope", "both against either"
	}
	for _, p := range [][2]vsig{{query, stored}, {stored, query}} {
		if u, ok := strandedSwap(p[0], p[1]); ok {
			return "roles", fmt.Sprintf("roles differ: %q follows %q in one question, and the other ends on %q (its question word takes the role)", u, p[0].stranded, p[0].stranded)
		}
	}
	if query.relWho != "" && stored.relWho != "" && query.relWho != stored.relWho {
		return "roles", "a relative who-clause asks who did it in one question and to whom it was done in the other"
	}
	if query.progressive != stored.progressive && (query.past || stored.past || query.pastVerb() || stored.pastVerb()) && !query.future && !stored.future {
		return "tense", "tense differs: one question asks what is happening now (is …-ing), the other what happened"
	}
	// Now against a plan, a habit or what is done: "Is it raining?" / "Is
	// it going to rain?", "Is he smoking?" / "Does he smoke?", "Are the
	// kids eating?" / "Have the kids eaten?".
	if p, o := query, stored; query.nowAsked != stored.nowAsked && query.latin && stored.latin {
		if !p.nowAsked {
			p, o = o, p
		}
		if o.future || o.modal == "present" || o.perfectQ || o.past && o.latin {
			return "tense", "tense differs: one question asks what is happening now (is …-ing), the other what will happen, what happens as a rule, what has been done or what happened"
		}
	}
	// Unless is if not ("… charge my card unless I cancel" / "… if I
	// cancel"); too against enough ("Is 35 too old to start?" / "Is 35
	// old enough to start?"); a unit and a half against the unit ("an
	// hour and a half" / "an hour").
	if query.latin && stored.latin {
		switch {
		case query.hasLow("unless") != stored.hasLow("unless") && (query.hasLow("if") || stored.hasLow("if")):
			return "condition", "unless (if not) in one question, if in the other"
		case query.hasLow("too") != stored.hasLow("too") && query.hasLow("enough") != stored.hasLow("enough"):
			return "degree", "too (more than is right) in one question, enough in the other"
		case query.andAHalf() != stored.andAHalf():
			return "quantity", "and a half in one question only"
		}
	}
	// Now against what is to come, in Chinese: 正在裁员 / 将要裁员.
	for _, p := range [][2]vsig{{query, stored}, {stored, query}} {
		if p[0].progressive && !p[0].future && p[1].future && !p[1].progressive && p[0].hasHan() && p[1].hasHan() {
			return "tense", "tense differs: one question asks what is happening now (正在), the other what will happen (将, 要)"
		}
	}
	if query.modalPerfect != stored.modalPerfect && query.latin && stored.latin {
		return "tense", "one question asks what should or could have been (should have …-ed), the other what should or can be"
	}
	if query.wouldLike != stored.wouldLike && query.likes() && stored.likes() {
		return "intent", "one question asks a wish (would like), the other what one likes"
	}
	if query.cond != "" && stored.cond != "" && query.cond != stored.cond && !query.timeAsked() && !stored.timeAsked() {
		return "condition", "只要, 就 (if) against 只有, 才 (only if)"
	}
	// Is against was in yes/no questions (Is Pluto a planet? / Was Pluto a
	// planet?); ever done (去过) against not; here against there.
	if query.beTense != "" && stored.beTense != "" && query.beTense != stored.beTense && query.qtype == "yesno" && stored.qtype == "yesno" && query.latin && stored.latin {
		return "tense", fmt.Sprintf("tense differs: is against was (%s in the question, %s in the cached one)", query.beTense, stored.beTense)
	}
	if query.experienced != stored.experienced && query.hasHan() && stored.hasHan() {
		return "tense", "one question asks whether it was ever done (过), the other does not"
	}
	if query.place != 0 && stored.place != 0 && query.place != stored.place {
		return "scope", "here against there"
	}
	// The previous, the next or this one (上次 / 这次, 上一期 / 这一期).
	if query.deixis != 0 && stored.deixis != 0 && query.deixis&stored.deixis == 0 {
		return "deixis", "the questions point at another one: 上 (the previous), 下 (the next), 这 (this one) or 每 (every one)"
	}
	// Both against either (身份证和户口本 / 身份证或户口本, 去北京和天津 / 去北京
	// 或天津); a choice (which, a comparison, a recommendation) and a list
	// of options (能用信用卡和花呗付款吗, 身份证或护照都可以吗) may ask with
	// either.
	if query.conj != 0 && stored.conj != 0 && query.conj&stored.conj == 0 && query.qtype != "which" && stored.qtype != "which" &&
		!query.comparative && !stored.comparative && !query.recommend && !stored.recommend && (!query.options() && !stored.options() || query.combines() || stored.combines()) {
		return "conjunction", "one question asks for both (and, 和), the other for either (or, 或)"
	}
	if query.whd != stored.whd {
		return "tense", "tense differs: what'd/who'd (did or would) against a question without it"
	}
	// did against do or does opening an open question: "How much did a
	// Model 3 cost?" asks a past price, "How much does it cost?" today's.
	if query.qtype != "yesno" && stored.qtype != "yesno" && query.open && stored.open && query.latin && stored.latin &&
		(query.didOnly() && stored.doOnly() || query.doOnly() && stored.didOnly()) && !query.tenseless() && !stored.tenseless() {
		return "tense", "tense differs: did against do or does"
	}
	// How long so far against how long it lasted or lasts: "How long has
	// he been prime minister?" / "How long was he prime minister?", "How
	// long has the shop been open?" / "How long is the shop open?".
	if howLong(query) && howLong(stored) && query.perfectQ != stored.perfectQ {
		return "tense", "tense differs: how long so far (has been) against how long it lasted or lasts"
	}
	// The opening auxiliaries of two yes/no questions: ability against
	// advice, obligation or possibility ("Can I cancel?" / "Should I
	// cancel?"), a past against a present ("Did you ship it?" / "Do you
	// ship it?"). An open question asks the same with either ("How do I
	// reset it?" = "How can I reset it?").
	if qm, sm := query.openingModal(), stored.openingModal(); (query.qtype == "yesno" || query.auxOpens) && (stored.qtype == "yesno" || stored.auxOpens) && qm != "" && sm != "" && !modalsAlike(qm, sm) && !(modalTense[qm] && modalTense[sm] && (qm == "perfect" || sm == "perfect") && (qm == "past" || sm == "past")) &&
		!(qm == "future" && modalTense[sm] || sm == "future" && modalTense[qm]) { // will against did or does: the tense checks
		return "intent", fmt.Sprintf("the questions open differently: %s against %s", qm, sm)
	}
	// Whether it must be done against whether it was ("Does my employer
	// have to accept my resignation?" / "Has my employer accepted my
	// resignation?"), and whether it is so against whether it can be ("Is
	// my phone unlocked?" / "Can my phone be unlocked?").
	for _, side := range [][2]vsig{{query, stored}, {stored, query}} {
		p, o := side[0], side[1]
		if p.qtype != "yesno" || o.qtype != "yesno" {
			continue
		}
		if m, om := p.openingModal(), o.openingModal(); (m == "obligation" || m == "need" || m == "advice") && (om == "" || modalTense[om]) && (o.perfectQ || o.didOnly()) && !o.future {
			return "mood", "one question asks whether it must be done, the other whether it was"
		}
		if w, ok := stateAgainstModal(p, o); ok {
			return "mood", fmt.Sprintf("one question asks whether it is %s, the other whether it can or must be", w)
		}
	}
	// The same for the questions after a statement of context: "I start
	// in 10 days. Do I have to give two weeks' notice?" / "… Should I give
	// two weeks' notice?".
	if qm, sm := query.lastModal, stored.lastModal; qm != "" && sm != "" && !modalsAlike(qm, sm) && !modalTense[qm] && !modalTense[sm] && qm != "future" && sm != "future" {
		return "intent", fmt.Sprintf("the questions open differently: %s against %s", qm, sm)
	}
	// Quantities: a unit counted by different numerals ("two codes on one
	// order" / "one code on two orders").
	for _, u := range query.seq {
		if a, b := query.counts[u.word], stored.counts[u.word]; u.unit && u.text == u.word && disjoint(a, b) {
			return "quantity", fmt.Sprintf("quantities differ: %q is counted %s in the question, %s in the cached one", u.word, strings.Join(a, ","), strings.Join(b, ","))
		}
	}
	// Possessors: a unit owned by different possessors ("my manager's
	// timesheet" / "my timesheet").
	for _, u := range query.seq {
		if a, b := query.owners[u.word], stored.owners[u.word]; u.unit && u.text == u.word && len(a) > 0 && len(b) > 0 && !slices.ContainsFunc(a, func(x string) bool {
			return slices.ContainsFunc(b, func(y string) bool { return sameOwner(x, y) })
		}) {
			return "roles", fmt.Sprintf("roles differ: %q belongs to %s in the question, to %s in the cached one", u.word, strings.Join(a, ","), strings.Join(b, ","))
		}
	}
	// The object of a verb made its doer, another participant its object.
	for _, side := range [][2]vsig{{query, stored}, {stored, query}} {
		if n, v, ok := objectMadeDoer(side[0], side[1]); ok {
			return "roles", fmt.Sprintf("roles differ: %q follows %q in one question, stands before it in the other, where a person follows it", n, v)
		}
	}
	// Order and roles of the shared units.
	qi, si := query.index, stored.index
	// The agent of a passive against the same participant unmarked in an
	// active question: "Was Y funded by X" / "Did X fund Y" is a paraphrase
	// (X moved before Y), "Did I get paid by X" / "Did I pay X" exchanges
	// who pays whom (I stays before X).
	var qVoiced, sVoiced []vagent // the passives of each that the other says actively
	for _, side := range []struct {
		p, a   vsig
		where  string
		voiced *[]vagent
	}{{query, stored, "the question", &qVoiced}, {stored, query, "the cached question", &sVoiced}} {
		g, ok, voiced := side.p.voiceSwap(side.a)
		if ok {
			return "roles", fmt.Sprintf("roles differ: %q does it (after by/被, a passive) in %s, and is an unmarked participant after the same ones in the other", g, side.where)
		}
		*side.voiced = voiced
	}
	// A number reached (涨到百分之五, to 5%) against a change by it (涨了百分之五);
	// a repeated number by its place among its repeats (原价五百…减了一百 / 减到一百).
	reached := func(u vunit, a, b int) bool {
		qr, sr := query.seq[a].role, stored.seq[b].role
		return (isDigits(strings.Replace(u.low, ".", "", 1)) || oneOf(hanNumerals, u.low)) && (qr == "to") != (sr == "to") &&
			(qr == "to" && !directional[sr] || sr == "to" && !directional[qr]) && query.seq[a].reps == stored.seq[b].reps
	}
	for _, u := range query.seq {
		a, okA := qi[u.text]
		b, okB := si[u.text]
		if okA && okB && u.unit && reached(u, a, b) {
			return "roles", fmt.Sprintf("roles differ: the number %q is reached (to, 到) in one question, a change by it in the other", u.word)
		}
		if !u.unit || u.rep {
			continue
		}
		if okA && okB && query.seq[a].role != stored.seq[b].role && directional[query.seq[a].role] && directional[stored.seq[b].role] {
			return "roles", fmt.Sprintf("roles differ: %q is %s in the question, %s in the cached one", u.text, roleName(query.seq[a].role), roleName(stored.seq[b].role))
		}
		// With against no marker ("Can I pay with my card?" / "Can I
		// pay my card?"): an instrument against the object.
		if okA && okB && (query.seq[a].role == "with") != (stored.seq[b].role == "with") && (query.seq[a].role == "" || stored.seq[b].role == "") && query.latin &&
			(!query.hasWord("with") || !stored.hasWord("with")) {
			return "roles", fmt.Sprintf("roles differ: %q comes with with in one question only", u.text)
		}
		if okA && okB && isHanTok(u.low) && !query.seq[a].rep && !stored.seq[b].rep && (query.seq[a].role == "to" && stored.seq[b].role == "at" || query.seq[a].role == "at" && stored.seq[b].role == "to") {
			return "roles", fmt.Sprintf("roles differ: %q is where it goes (给, 到, 往) in one question and where it happens (在) in the other", u.text)
		}
		if okA && okB && isHanTok(u.low) && (query.seq[a].role == "to" && stored.seq[b].role == "and" || query.seq[a].role == "and" && stored.seq[b].role == "to") {
			return "roles", fmt.Sprintf("roles differ: %q ends a range (to, 到) in one question and a list (and, 和) in the other", u.text)
		}
		if okA && okB && query.seq[a].role != stored.seq[b].role && strings.HasPrefix(query.seq[a].role, "with") && strings.HasPrefix(stored.seq[b].role, "with") {
			return "roles", fmt.Sprintf("roles differ: %q is with in one question, without in the other", u.text)
		}
		// A length of time after for against the same after in, on or
		// at: how long against when ("blocked for 24 hours" / "in 24
		// hours"; "sales for 2023" = "in 2023"); a time after by against
		// the same after in, on or at: a deadline against a point ("by
		// Monday" / "on Monday").
		if okA && okB {
			ra, rb := query.seq[a].role, stored.seq[b].role
			if ra != rb && (ra == "at" || rb == "at") && ((ra == "by" || rb == "by") && query.timeAt(a) || (ra == "for" || rb == "for") && query.durationAt(a)) {
				return "roles", fmt.Sprintf("roles differ: the time %q is %s in the question, %s in the cached one", u.text, roleName(ra), roleName(rb))
			}
		}
		// Both compare, and a unit is what one compares against and not
		// the other (金卡的年费比白金卡高吗 / 白金卡的年费比金卡高吗: 白
		// crossed 比 alone, its partner repeated on both sides).
		if okA && okB && query.than && stored.than && (query.seq[a].role == "than") != (stored.seq[b].role == "than") {
			return "roles", fmt.Sprintf("roles differ: %q is compared against (after than/比) in one question only", u.text)
		}
	}
	// Two neighbours exchanged, all else equal ("Are all Muslims Arabs?"
	// / "Are all Arabs Muslims?", "milk chocolate" / "chocolate milk", 女儿 /
	// 儿女): no frame stays between them, yet one names the other.
	if a, b, ok := swappedPair(query, stored); ok {
		return "order", fmt.Sprintf("%q and %q exchange places", a, b)
	}
	// A modifier moved from the possessor to the thing possessed ("the
	// former prime minister's adviser" / "the prime minister's former
	// adviser").
	if w, ok := modifierMoved(query, stored); ok {
		return "order", fmt.Sprintf("%q modifies the possessor in one question, what it owns in the other", w)
	}
	// Possessor and possessed exchanged ("the patient's doctor" / "the
	// doctor's patient").
	if a, b, ok := possessionReversed(query, stored); ok {
		return "roles", fmt.Sprintf("%q owns %q in one question, and the other way round in the other", a, b)
	}
	// A modifier before another noun ("毕业于北京大学的哥哥" / "…的他", "the
	// singer who died" / "the painter who died").
	if a, b, ok := headMoved(query, stored); ok {
		return "roles", fmt.Sprintf("a modifier goes with %q in the question, with %q in the cached one", a, b)
	}
	// A 的-clause whose verb and participant exchanged (我邀请的好友 /
	// 邀请我的好友, 被张伟击败的选手 / 击败张伟的选手).
	if a, b, ok := deClauseSwapped(query, stored); ok {
		return "roles", fmt.Sprintf("the clause before 的 ends on %q in one question, on %q in the other: who did it to whom", a, b)
	}
	// Only before the modal against only after it ("Only the manager can
	// approve refunds." / "The manager can only approve refunds.").
	if q, s := query.onlyPlace(), stored.onlyPlace(); q != 0 && s != 0 && q != s {
		return "scope", "only limits another part of the sentence (before or after its modal or verb)"
	}
	// One or two Chinese characters in a row replaced, all else equal,
	// after every check that reads what they are: however long the
	// question, they are what it asks about (投诉电话 / 投保电话).
	if x, y, ok := hanSpanReplaced(query, stored, span); ok {
		return "replaced", fmt.Sprintf("one word replaced: %q in the question, %q in the cached one", x, y)
	}
	// One word replaced, all else equal: however long the question, the
	// word is what it asks about (花呗/借呗, rose/fell 8 percent), unless
	// the two words read as one (a stem, a concept of the lexicon).
	// The questions are compared without their fillers, copied once, and
	// only when their lengths allow one word added or replaced; then again
	// with the light edits undone too (still, so, how can / how do, have to
	// / need to), which a second difference must not hide.
	var fq, fs vsig // query and stored without their fillers, once needed
	filled := false
	fillerless := func() (vsig, vsig) {
		if !filled {
			fq, fs, filled = withoutFillers(query), withoutFillers(stored), true
		}
		return fq, fs
	}
	d := fillerFree(query) - fillerFree(stored) // words apart, without fillers
	if d >= -2 && d <= 2 || (d == 3 || d == -3) && query.latin && stored.latin {
		fq, fs := fillerless()
		if check, reason := oneEdit(query, stored, fq, fs); check != "" {
			return check, reason
		}
	}
	// A relative clause in the perfective before a noun, in one Chinese
	// question only (得了病的番茄秧 / 番茄秧).
	if (d >= 3 || d <= -3) && query.hasHan() && stored.hasHan() {
		fq, fs := fillerless()
		if w, ok := hanRelativeInserted(fq, fs, max(len(fq.seq)-len(fs.seq), len(fs.seq)-len(fq.seq))); ok {
			return "inserted", fmt.Sprintf("%q (a relative clause) is in one question only, all else equal", w)
		}
	}
	if query.latin && stored.latin && !sameLightWords(query, stored, false) {
		fq, fs := fillerless()
		if check, reason := oneEdit(query, stored, lightUndone(fq, false), lightUndone(fs, false)); check != "" {
			return check, reason + " (a light edit aside)"
		}
	}
	if query.latin && stored.latin && (query.hasLow("if") || query.hasLow("unless") || stored.hasLow("if") || stored.hasLow("unless")) {
		fq, fs := fillerless()
		lq, ls := withoutLightAdverbs(fq), withoutLightAdverbs(fs)
		if conditionAppended(lq, ls) || conditionAppended(ls, lq) {
			return "mood", "one question adds a condition (if, unless) at its end, all else equal"
		}
	}
	if replacedBy(query, stored) {
		return "roles", "one question takes a thing in another's place (instead of, rather than), the other does not"
	}
	// Chinese light edits: 现在, 一下, 是…的, an A-not-A form.
	if query.hasHan() && stored.hasHan() {
		lq, cq := withoutHanLightEdits(query.text)
		ls, cs := withoutHanLightEdits(stored.text)
		sp := spanReplaced(lq, ls)
		if check, reason := hanFunctionEdit(lq, ls, sp); check != "" {
			return check, reason
		}
		if check, reason := hanWordEdit(lq, ls, strings.Contains(query.text, "会") || strings.Contains(stored.text, "会")); check != "" {
			return check, reason
		}
		if d := utf8.RuneCountInString(lq) - utf8.RuneCountInString(ls); (cq || cs) && lq != ls && d >= -3 && d <= 3 { // one word or two characters apart at most
			if x, y, ok := hanSpanReplaced(vsig{text: lq}, vsig{text: ls}, sp); ok {
				return "replaced", fmt.Sprintf("one word replaced: %q in the question, %q in the cached one (a light edit aside)", x, y)
			}
			// A character inserted, or one replaced that the one-word
			// checks read by its class (有 / 是, a numeral): the two are
			// read as questions.
			if d != 0 || sp.ok && utf8.RuneCountInString(sp.x) == 1 {
				q, s := signature(lq), signature(ls)
				if check, reason := oneEdit(q, s, withoutFillers(q), withoutFillers(s)); check != "" {
					return check, reason + " (a light edit aside)"
				}
			}
		}
	}
	// With the auxiliaries written as one too, a word replaced or inserted
	// counts, but for the words an auxiliary changed brings with it (was
	// declined / did get declined, is open / does stay open, is arriving /
	// will arrive), which the tense checks read.
	if query.latin && stored.latin && !sameLightWords(query, stored, true) {
		fq, fs := fillerless()
		lq, ls := lightUndone(fq, true), lightUndone(fs, true)
		switch len(lq.seq) - len(ls.seq) {
		case 0:
			if a, b, ok := replacedWord(lq, ls); ok && !sameVerb(a, b) {
				return "replaced", fmt.Sprintf("one word replaced: %q in the question, %q in the cached one (an auxiliary or light edit aside)", a, b)
			}
		case 1, -1:
			if w, ok := insertedWord(lq, ls); ok && !auxVerbs[w] {
				return "inserted", fmt.Sprintf("%q is in one question only, all else equal (an auxiliary or light edit aside)", w)
			}
		}
	}
	// One time adverbial on each side moves freely ("Who picked it
	// yesterday?" / "Yesterday, who picked it?"); two are ordered by the
	// facets (seq:), so they stay in the check, and so does a time word
	// that is not an adverbial in both ("Did April email Tomasz?", "Is the
	// weekend rate higher than the weekday rate?").
	qt, st := query.adverbialTime(), stored.adverbialTime()
	movable := qt >= 0 && st >= 0
	// One verb passive in one question, active in the other, with no agent
	// ("Is my son being bullied?" / "Is my son bullying?", "to get paid in
	// cash" / "to pay in cash").
	if v, ok := passiveAgainstActive(query, stored); ok && query.latin && stored.latin {
		return "roles", fmt.Sprintf("%q is done to the subject in one question (being, get + participle), done by it in the other", v)
	}
	// -ing against to after remember, forget, stop, try: done against to
	// be done ("Did I remember taking my pills?" / "… to take my pills?").
	if v, ok := gerundOrInfinitive(query, stored); ok && query.latin && stored.latin {
		return "tense", fmt.Sprintf("after %q, -ing (it was done) in one question, to (it is to be done) in the other", v)
	}
	// English readings of review round 42: a noun phrase determined
	// apart (any / the, this / a, the / a founder of, is there a / is the);
	// could against can, a modal, be or get used to, a causative, get
	// against be, can I not against can't I, had against have, how much do
	// against how many.
	if query.latin && stored.latin {
		if n, a, b, ok := determinerClash(query, stored); ok {
			return "scope", fmt.Sprintf("%q is determined apart: %q in the question, %q in the cached one", n, a, b)
		}
		if butNegationMoved(query, stored) {
			return "negation", "the questions negate different parts of what they say (… but not …)"
		}
		if a, b := causeKind(query), causeKind(stored); a != "" && b != "" && a != b {
			return "roles", "one question lets someone do it, the other makes or gets them to"
		}
		if n, ok := beOrOther(query, stored); ok {
			return "roles", fmt.Sprintf("one question asks about being %q, the other about getting, seeing or having one", n)
		}
		if doAsked(query, stored) {
			return "intent", "intent differs: one question asks what was done (do), the other what was found, seen or shown"
		}
		if v, ok := doerAdded(query, stored); ok {
			return "roles", fmt.Sprintf("one question says who did %q (the thing I broke), the other only that it was done (the broken thing)", v)
		}
		if couldOfOthers(query, stored) {
			return "tense", "could (the past, or a possibility) in one question, can in the other, of someone else"
		}
		if modalAdded(query, stored) {
			return "mood", "the questions ask differently: what someone must, may or wants to do in one, what they do in the other"
		}
		if accustomed(query, stored) {
			return "tense", "one question asks about getting used to something (be or get used to), the other not"
		}
		if v, ok := causedDoing(query, stored); ok {
			return "roles", fmt.Sprintf("who does %q differs: one question has someone let or made to do it", v)
		}
		if a, ok := becomingBeing(query, stored); ok {
			return "tense", fmt.Sprintf("%q after get (becoming) in one question, after be (being) in the other", a)
		}
		if notAfterSubject(query) && negativeOpening(stored) || notAfterSubject(stored) && negativeOpening(query) {
			return "negation", "one question negates what is to be done (can I not), the other asks a negative question (can't I)"
		}
		if qt, qb := haveTense(query); qt != "" {
			if st, sb := haveTense(stored); st != "" && st != qt && sb == qb {
				return "tense", "tense differs: had in one question, have in the other (a state over, or going on)"
			}
		}
		if howMuchDone(query) && howManyAsked(stored) || howMuchDone(stored) && howManyAsked(query) {
			return "intent", "intent differs: how much of it is done against how many do it"
		}
	}
	// A possessor made a thing's owner: "add my girlfriend" / "add my
	// girlfriend's car".
	if w, ok := possessorAdded(query, stored); ok {
		return "roles", fmt.Sprintf("%q is the thing in one question, the owner of another in the other", w)
	}
	// The negation of an infinitive against the negation of the clause
	// ("Is it normal not to cry?" / "Is it not normal to cry?", "Do I have
	// to not eat?" / "Do I not have to eat?").
	if query.latin && stored.latin && query.hasLow("not") && stored.hasLow("not") && negatesInfinitive(query) != negatesInfinitive(stored) {
		return "negation", "one question negates what is to be done (not to, to not), the other the question itself"
	}
	// A word moved between the main clause and a subordinate one that both
	// questions have ("Will I be charged tomorrow if I cancel?" / "Will I
	// be charged if I cancel tomorrow?", "Can I still breastfeed if I have
	// a fever?" / "… if I still have a fever?").
	if w, ok := movedAcrossClause(query, stored); ok {
		return "order", fmt.Sprintf("%q is in the subordinate clause (if, when, while …) of one question, in the main clause of the other", w)
	}
	// A time phrase right after a relative clause's verb dates that verb:
	// "Can I cancel the order I placed on Friday?" is not "On Friday, can I
	// cancel the order I placed?".
	for k, u := range query.seq {
		if j, ok := stored.index[u.text]; ok && isTimeWord(u.word) && query.relativeTime(k) != stored.relativeTime(j) {
			return "order", fmt.Sprintf("%q dates a relative clause in one question, the main verb in the other", u.word)
		}
	}
	// Chinese words exchanged around a frame, the words alike.
	if query.hasHan() && stored.hasHan() {
		if x, y, z, ok := hanWordsExchanged(query, stored); ok {
			return "order", fmt.Sprintf("%q and %q exchange places around %q", x, y, z)
		}
	}
	// The units of both (repeats numbered), in the question's order, with
	// their places in each; one verb in two forms is one unit for the
	// roles (eating / eat: "How long after eating should I wait to swim?"
	// / "How long after swimming should I wait to eat?").
	var shared []sharedUnit
	qVerbs, sVerbs := query.verbForms(si), stored.verbForms(qi)
	for k, u := range query.seq {
		if movable && (k == qt || k == qt-1 && timeModifier(u.word)) {
			continue
		}
		if len(shared) == maxVerifyUnits || !u.unit {
			continue
		}
		if j, ok := si[u.text]; ok && stored.seq[j].unit {
			shared = append(shared, sharedUnit{u.text, qi[u.text], j, false})
		} else if v := qVerbs[k]; v != "" {
			if j := slices.Index(sVerbs, v); j >= 0 {
				shared = append(shared, sharedUnit{u.text, k, j, !query.gerundAt(k) && !stored.gerundAt(j) || pastForm(u.low) || pastForm(stored.seq[j].low)})
			}
		}
	}
	symmetric := query.comparative && stored.comparative
	for i, xu := range shared {
		for _, yu := range shared[i+1:] {
			x, y := xu.text, yu.text
			ax, ay, bx, by := xu.q, yu.q, xu.s, yu.s
			if (ax < ay) == (bx < by) {
				continue // same order: a phrase may have moved as a whole
			}
			if symmetric && compareRole(query.seq[ax].role) && compareRole(query.seq[ay].role) &&
				compareRole(stored.seq[bx].role) && compareRole(stored.seq[by].role) {
				continue // "between A and B" = "between B and A"
			}
			if query.voicePhrases(qVoiced, ax, ay) || stored.voicePhrases(sVoiced, bx, by) {
				continue // the passive's agent and the rest of its clause, said actively
			}
			if conjunctsSwapped(query, stored, ax, ay, bx, by) {
				continue // "Visa and Mastercard" = "Mastercard and Visa"
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
			if xu.form != yu.form {
				continue // a verb's other form has another place (the meaning of / mean, get it changed / change it); two verbs that both change form and place exchange them (was seeded, can I mow / was mowed, can I seed)
			}
			lo, hi := min(ax, ay), max(ax, ay)
			blo, bhi := min(bx, by), max(bx, by)
			for k := lo + 1; k < hi; k++ {
				z := query.seq[k].text
				if j, ok := si[z]; ok && query.seq[k].reps == stored.seq[j].reps && j > blo && j < bhi {
					frame := strconv.Quote(query.seq[k].word)
					if !query.seq[k].unit && strings.HasPrefix(frame, `"|`) {
						frame = "a clause break"
					}
					return "order", fmt.Sprintf("%q and %q exchange places around %s", x, y, frame)
				}
			}
		}
	}
	return "", "verification passed: same names, roles, order and intent"
}

// oneEdit compares q and s, the question and the cached one (fq and fs:
// without their fillers, or their light edits too) for one word inserted
// or replaced, all else equal; "" when they differ otherwise.
func oneEdit(query, stored, fq, fs vsig) (check, reason string) {
	d := len(fq.seq) - len(fs.seq)
	if (d == 3 || d == -3) && (!query.latin || !stored.latin) {
		return "", ""
	}
	switch d {
	case 1, -1:
		if w, ok := insertedWord(fq, fs); ok {
			return "inserted", fmt.Sprintf("%q is in one question only, all else equal", w)
		}
	case 2, -2:
		if w, ok := hanWordInserted(fq, fs); ok {
			return "inserted", fmt.Sprintf("%q is in one question only, all else equal", w)
		}
		if w, ok := insertedPhrase(fq, fs, 2); ok {
			return "inserted", fmt.Sprintf("%q is in one question only, all else equal", w)
		}
	case 3, -3:
		if w, ok := insertedPhrase(fq, fs, 3); ok {
			return "inserted", fmt.Sprintf("%q is in one question only, all else equal", w)
		}
	case 0:
		if a, b, ok := formReplaced(query, stored, fq, fs); ok {
			return "replaced", fmt.Sprintf("one word replaced: %q in the question, %q in the cached one (another thing, or who does it against who feels it)", a, b)
		}
		if a, b, ok := replacedWord(fq, fs); ok {
			return "replaced", fmt.Sprintf("one word replaced: %q in the question, %q in the cached one", a, b)
		}
		if a, b, ok := hanWordReplaced(fq, fs); ok {
			return "replaced", fmt.Sprintf("one word replaced: %q in the question, %q in the cached one", a, b)
		}
	}
	return "", ""
}

// sharedUnit is a unit of both questions, at q in the question and at s in
// the cached one.
type sharedUnit struct {
	text string
	q, s int
	form bool // a verb in two forms, neither a gerund after a preposition: its place tells only with its role
}

// gerundAt reports an -ing form right after a preposition at seq[k]
// ("after eating"), a verb as a noun, not a noun of its own (the meaning).
func (s *vsig) gerundAt(k int) bool {
	_, t := text.VerbTense(s.seq[k].low)
	return t == "ing" && k > 0 && roleMarkers[s.seq[k-1].low] != ""
}

// verbForms returns, at each place of s.seq, the verb a unit is a form of
// (eat for eating, ate or eats) when the other question (its index) has
// no unit of that text and s no other form of that verb; "" elsewhere.
func (s *vsig) verbForms(other map[string]int) []string {
	forms := make([]string, len(s.seq))
	seen := map[string]int{}
	for k, u := range s.seq {
		if _, ok := other[u.text]; ok || !u.unit || u.named || u.text != u.low {
			continue
		}
		if v := verbOf(u.low); v != "" {
			forms[k] = v
			seen[v]++
		}
	}
	for k, v := range forms {
		if seen[v] > 1 {
			forms[k] = ""
		}
	}
	return forms
}

// howLong reports a question that opens with how long.
func howLong(s vsig) bool {
	return len(s.seq) > 1 && s.seq[0].low == "how" && (s.seq[1].low == "long" || strings.HasPrefix(s.seq[1].low, "long'")) // how long's, how long've
}

// universalWh is a Chinese question word, with at most four characters
// of its noun or measure word, before 都 or 也: any (谁都, 什么时候都, 哪家银行都,
// 多少钱都, 几个人都, 怎么也), not a question.
var universalWh = regexp.MustCompile(`(谁|什么|啥|哪|怎么|怎样|多少|多久|几)([^都也]{0,4}?)(都|也)`)

// universalize takes the question words that say any (universalWh) out
// of a Chinese text, keeping their nouns: 哪家银行都能办 reads 家银行都能办. The
// 什么 of 为什么 stays (为什么都不回复 asks why).
func universalize(zh string) string {
	ms := universalWh.FindAllStringSubmatchIndex(zh, -1)
	if ms == nil {
		return zh
	}
	var b strings.Builder
	last := 0
	for _, m := range ms {
		if zh[m[2]:m[3]] == "什么" && strings.HasSuffix(zh[:m[2]], "为") {
			continue
		}
		b.WriteString(zh[last:m[2]])
		b.WriteString(zh[m[4]:m[7]]) // the noun and 都 or 也
		last = m[1]
	}
	b.WriteString(zh[last:])
	return b.String()
}

// notButForm reports 不是…而是 (1) or 是…而不是 (2) in a Chinese text, or 0.
func notButForm(q string) int {
	if strings.Contains(q, "而不是") || strings.Contains(q, "而非") {
		return 2 // 是A而不是B, 是A而非B
	}
	if i := strings.Index(q, "而是"); i > 0 && (strings.Contains(q[:i], "不是") || strings.Contains(q[:i], "并非")) {
		return 1 // 不是A而是B, 并非A而是B
	}
	// Without 而, inside one clause: 不是A是B against 是A不是B (not 是不是).
	for _, clause := range strings.FieldsFunc(q, func(r rune) bool { return strings.ContainsRune("，。？！；,.?!;", r) }) {
		clause = strings.ReplaceAll(clause, "是不是", "")
		if i := strings.Index(clause, "不是"); i >= 0 {
			if strings.Contains(clause[i+len("不是"):], "是") {
				return 1
			}
			if strings.Contains(clause[:i], "是") {
				return 2
			}
		}
	}
	return 0
}

// clauseIntents reads the intent of each clause of a Chinese question,
// split at its punctuation, so that the question word of one clause does
// not hide what another asks (一共有几个颜色，多少钱 / 一共有哪些颜色，多少钱:
// the whole asks a price in both). Nil for one clause or more than eight.
func clauseIntents(q string) []clauseIntent {
	parts := strings.FieldsFunc(q, func(r rune) bool { return strings.ContainsRune(",;.?!:，；。？！：", r) })
	if len(parts) < 2 || len(parts) > 8 {
		return nil
	}
	out := make([]clauseIntent, 0, len(parts))
	for _, p := range parts {
		toks, _ := verifyTokens(p)
		lower := make([]string, 0, len(toks))
		for _, t := range toks {
			if t != "|" && t != "、" {
				lower = append(lower, strings.ToLower(t))
			}
		}
		var c vsig
		if len(lower) > 0 {
			c.intent(p, lower)
		}
		out = append(out, clauseIntent{qtype: c.qtype, open: c.open, clock: c.clock, timeCount: c.timeCount, units: c.units})
	}
	return out
}

// clauseIntent is what clauseIntents keeps of a clause's intent: what
// the comparison of two clauses reads (qtypesFit among it).
type clauseIntent struct {
	qtype                         string
	open, clock, timeCount, units bool
}

// sig returns the clause's intent as a vsig for qtypesFit.
func (c clauseIntent) sig() vsig {
	return vsig{qtype: c.qtype, open: c.open, clock: c.clock, timeCount: c.timeCount, units: c.units}
}

// tenseless reports an opinion (think of, think about) or an origin (come
// from), which did and do ask alike: "What did you think of the film?" =
// "What do you think of the film?", "Where did the word come from?" =
// "Where does the word come from?".
func (s *vsig) tenseless() bool {
	for i := 0; i+1 < len(s.seq); i++ {
		w, next := s.seq[i].low, s.seq[i+1].low
		if w == "think" && (next == "of" || next == "about") || w == "come" && next == "from" {
			return true
		}
	}
	return false
}

// presentBe reports is, are, am, or a word with 'm, 're or 's (I'm, we're,
// it's).
func presentBe(w string) bool {
	return w == "is" || w == "are" || w == "am" || strings.HasSuffix(w, "'m") || strings.HasSuffix(w, "'re") || strings.HasSuffix(w, "'s")
}

// didOnly reports did or didn't (not in an if-clause) and no do or does.
func (s *vsig) didOnly() bool { return s.did && !s.doForm() }

// doOnly reports do, does, don't or doesn't and no did.
func (s *vsig) doOnly() bool { return !s.did && s.doForm() }

// doForm reports a present form of do.
func (s *vsig) doForm() bool {
	return slices.ContainsFunc(s.seq, func(u vunit) bool {
		return u.low == "do" || u.low == "does" || u.low == "don't" || u.low == "doesn't"
	})
}

// isTimeWord reports an English word that names a time by itself: a
// relative day, a weekday, a month, a part of the day or a year.
func isTimeWord(w string) bool {
	switch strings.TrimSuffix(w, "s") {
	case "yesterday", "today", "tomorrow", "tonight", "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
		"january", "february", "march", "april", "june", "july", "august", "september", "october", "november", "december",
		"morning", "afternoon", "evening", "weekend":
		return true
	}
	return len(w) == 4 && isDigits(w) && (w[0] == '1' || w[:2] == "20") // a year: 1741, 2024
}

// timeAt reports a time at seq index i: a time word (Monday, tomorrow), a
// clock (5pm, 17:00) or a length of time (durationAt).
func (s *vsig) timeAt(i int) bool {
	w := s.seq[i].low
	if isTimeWord(w) || w == "end" || strings.ContainsAny(w, "0123456789") && (strings.HasSuffix(w, "am") || strings.HasSuffix(w, "pm") || strings.Contains(w, ":")) {
		return true
	}
	return s.durationAt(i)
}

// durationAt reports a length of time at seq index i: a number (digits or
// a numeral: two, a) before a unit of time, or the unit itself after one
// (24 hours, two months, a week).
func (s *vsig) durationAt(i int) bool {
	unit := func(j int) bool {
		if j < 0 || j >= len(s.seq) {
			return false
		}
		switch strings.TrimSuffix(s.seq[j].low, "s") {
		case "minute", "hour", "day", "week", "month", "year", "fortnight":
			return true
		}
		return false
	}
	number := func(j int) bool {
		return j >= 0 && j < len(s.seq) && (isDigits(s.seq[j].low) || numerals[s.seq[j].low] != "")
	}
	window := func(j int) bool { // "the next 7 days" names a window, with for or in alike
		return j >= 0 && windowWords[s.seq[j].low] // "for the 12 months to March"
	}
	modifier := func(j int) bool { // "a 5 year CD": the length names a kind of thing
		return j+1 < len(s.seq) && s.seq[j+1].unit && s.seq[j+1].clause == s.seq[j].clause && !isTimeWord(s.seq[j+1].low)
	}
	return number(i) && unit(i+1) && !window(i-1) && !modifier(i+1) || unit(i) && number(i-1) && !window(i-2) && !modifier(i)
}

// windowWords before a length of time make it a window, named alike with
// for or in ("for the next 7 days" = "in the next 7 days").
var windowWords = setOf("the next last first past coming previous following")

func timeModifier(w string) bool { return w == "next" || w == "last" || w == "this" }

// adverbialTime returns the seq index of the question's one time word
// (isTimeWord) when it is an adverbial at an edge of the question, else
// -1: at its end after on, in, at or during ("… in 2019?"), or a day
// adverb (yesterday, today, tomorrow, tonight) or a next/last/this phrase
// there ("picked yesterday?", "to Dublin next Friday"); or its opening
// time before a clause break ("Yesterday, …", "In 2019, …"). Not a
// possessive ("today's"), not a name or a noun's modifier ("Did April
// email Tomasz?", "the weekend rate"), and not in a comparison or a choice
// ("busier at night than on Sunday").
func (s *vsig) adverbialTime() int {
	at := -1
	for i, u := range s.seq {
		if isTimeWord(u.word) {
			if at >= 0 {
				return -1 // two time words: the facets order them
			}
			at = i
		}
	}
	if at < 0 || s.seq[at].poss || s.contrast() {
		return -1
	}
	start := at
	if at > 0 && timeModifier(s.seq[at-1].word) {
		start = at - 1
	}
	prev, next := "", "|"
	if start > 0 && s.seq[start-1].text[0] != '|' {
		prev = s.seq[start-1].low
	}
	if at+1 < len(s.seq) {
		next = s.seq[at+1].text
	}
	// At an edge of the question: its last words, or its first before a
	// clause break ("Yesterday, who …").
	timePrep := prev == "on" || prev == "in" || prev == "at" || prev == "during"
	last := at+1 == len(s.seq) || at+2 == len(s.seq) && next[0] == '|'
	opening := start == 0 || start == 1 && timePrep
	first := opening && next[0] == '|' && at+1 < len(s.seq)
	switch {
	case last && (timePrep || dayAdverb(s.seq[at].word) || start < at):
		return at
	case first:
		return at
	}
	return -1
}

// relativeTime reports a time word at k right after the verb of a
// relative clause ("the order I placed on Friday", "the charge that
// posted in June", "employees who were hired in January"): it dates that
// clause's verb, not the question's.
func (s *vsig) relativeTime(k int) bool {
	i := k - 1
	for i >= 0 && (roleMarkers[s.seq[i].low] != "" || timeModifier(s.seq[i].word)) {
		i-- // on, in, last, next
	}
	if i < 2 {
		return false
	}
	if v, t := text.VerbTense(s.seq[i].low); v == "" || t == "ing" {
		return false // a verb form: placed, sent, posted
	}
	j := i - 1
	if beForms[s.seq[j].low] || s.seq[j].low == "got" {
		j-- // who were hired
	}
	if j < 1 {
		return false
	}
	subj, head := s.seq[j], s.seq[j-1]
	switch {
	case subj.low == "that" || subj.low == "which" || subj.low == "who":
		return head.unit
	case strings.HasPrefix(subj.text, "p:"):
		return head.unit && !strings.HasPrefix(head.text, "p:") && !head.named
	}
	return false
}

// contrast reports a comparison, a choice or a list (than, or, but, and,
// versus, instead, rather): a time word there is one of the things
// compared ("busier at night than on Sunday"), never free to move. (The
// time words are English: so are these.)
func (s *vsig) contrast() bool {
	for _, u := range s.seq {
		switch u.low {
		case "than", "or", "but", "versus", "vs", "instead", "rather", "and":
			return true
		}
	}
	return false
}

func dayAdverb(w string) bool {
	return w == "yesterday" || w == "today" || w == "tomorrow" || w == "tonight"
}

// participantPronoun returns the person ("p:1s") of an English subject or
// object pronoun, or "". Her (object or possessive) and the possessives
// are left out: they belong to a noun.
func participantPronoun(w string) string {
	switch w {
	case "i", "me", "we", "us", "you", "he", "him", "she", "they", "them":
		return "p:" + persons[w]
	}
	return ""
}

// genders maps the gendered pronouns to "m" and "f" (vsig.gender).
var genders = map[string]string{
	"he": "m", "him": "m", "his": "m", "himself": "m", "他": "m",
	"she": "f", "her": "f", "hers": "f", "herself": "f", "她": "f",
}

// genderName spells a vsig.gender for a reason: "mf" is "he, she".
func genderName(g string) string {
	out := make([]string, 0, len(g))
	for _, r := range g {
		if r == 'm' {
			out = append(out, "he")
		} else {
			out = append(out, "she")
		}
	}
	return strings.Join(out, ", ")
}

func qtypeName(t string) string {
	switch t {
	case "count":
		return "how many or how much"
	case "yesno":
		return "yes or no"
	case "price":
		return "a price"
	case "duration":
		return "how long"
	case "frequency":
		return "how often"
	case "distance":
		return "how far"
	case "what":
		return "what it is"
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
// hasLow reports a token w (lower case) in s.
func (s *vsig) hasLow(w string) bool {
	return slices.ContainsFunc(s.seq, func(u vunit) bool { return u.low == w })
}

// andAHalf reports "and a half" after a unit: an hour and a half.
func (s *vsig) andAHalf() bool {
	for i := 0; i+2 < len(s.seq); i++ {
		if s.seq[i].low == "and" && (s.seq[i+1].low == "a" || s.seq[i+1].low == "one") && s.seq[i+2].low == "half" {
			return true
		}
	}
	return false
}

func (s *vsig) hasWord(w string) bool {
	for i := range s.seq {
		if s.seq[i].word == w || s.seq[i].alt == w { // "porsche" the word, "Porsche" the name
			return true
		}
	}
	return false
}

// Closed classes the grammar reading uses: tense markers, passive
// auxiliaries, numerals and possessive pronouns.
var (
	futureWords = setOf("will won't shall gonna")
	pastWords   = setOf("did didn't was wasn't were weren't had hadn't already")
	perfectAux  = setOf("has have hasn't haven't")
	passiveAux  = setOf("is isn't are aren't am was wasn't were weren't be been being get gets got gotten getting")
	whWords     = setOf("what which who whom whose where when why how")
	// modalClass groups a question's opening auxiliaries by what they ask:
	// can, could and may ask whether it is possible or allowed; should,
	// must and might ask other things; did and do/does a past and a
	// present; have/has a perfect (which, like did, asks about the past).
	modalClass = map[string]string{
		"can": "ability", "could": "ability", "may": "ability", "should": "advice", "must": "obligation", "might": "possibility",
		"did": "past", "do": "present", "does": "present", "have": "perfect", "will": "future",
	}
	modalTense = setOf("past present perfect")
	// politeAfterWould follow a "would" that asks politely ("I'd like",
	// "would you mind") rather than supposes.
	politeAfterWould = setOf("like love prefer mind appreciate rather")
	nominal          = setOf("the a an this that these those it some any every each no all both")
	// participles are irregular past participles of common verbs that are
	// not also a present form (not "read", "set", "come"); a regular one
	// ends in -ed.
	participles = setOf(`been gone done seen made paid sent sold bought built taken given written known shown got gotten
left lost found held kept told brought thought caught taught spent won begun become broken chosen driven
eaten fallen forgotten frozen hidden ridden risen spoken stolen worn grown thrown flown drawn heard met sat stood
understood withdrawn forgiven`)
	numerals = map[string]string{
		"a": "1", "an": "1", "one": "1", "single": "1", "two": "2", "three": "3", "four": "4", "five": "5",
		"six": "6", "seven": "7", "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12",
		"twenty": "20", "thirty": "30", "forty": "40", "fifty": "50", "hundred": "100", "dozen": "12",
	}
	possessivePronouns = map[string]string{
		"my": "me", "our": "me", "your": "you", "his": "him", "her": "her", "their": "them", "its": "it",
		"我": "me", "你": "you", "您": "you", "他": "him", "她": "her", "它": "it", "己": "self",
	}
)

// Chinese closed classes: numerals, the particles that close a question,
// and the characters before 的 that make a plural pronoun (我们).
const (
	hanNumerals  = "零〇一二两三四五六七八九十百千万"
	hanParticles = "吗呢吧啊呀嘛没么"
)

// grammar reads what the order and role checks cannot see in a question:
// its tense (an explicit future or past marker), the passive agent (the
// units after by/被 in a passive clause), the numeral that counts a unit
// ("two codes", 两张券) and the possessor of a unit ("my manager's
// timesheet": timesheet's possessor is the manager; "my timesheet": me).
func (s *vsig) grammar() {
	seq := s.seq
	in := func(i, j int) bool { // j is a token of i's clause
		return j >= 0 && j < len(seq) && seq[j].clause == seq[i].clause && seq[j].text[0] != '|'
	}
	low := func(i, j int) string {
		if in(i, j) {
			return seq[j].low
		}
		return ""
	}
	addTo := func(m *map[string][]string, k, v string) {
		if *m == nil {
			*m = map[string][]string{}
		}
		if !slices.Contains((*m)[k], v) {
			(*m)[k] = append((*m)[k], v)
		}
	}
	unitAt := func(i, j int) bool { return in(i, j) && seq[j].unit }
	for i := range seq {
		u := &seq[i]
		w := u.low
		if w == "" {
			continue // a clause break
		}
		han := w[0] >= utf8.RuneSelf
		// Tense.
		switch {
		case !han && (futureWords[w] || strings.HasSuffix(w, "'ll")):
			s.future = true
		case w == "going" && low(i, i+1) == "to" && in(i, i+2) && !nominal[low(i, i+2)] && persons[low(i, i+2)] == "" &&
			possessivePronouns[low(i, i+2)] == "" && roleMarkers[low(i, i+2)] == "" && !seq[i+2].named:
			s.future = true // "is it going to drop", not "going to the bank"
		case (w == "about" || w == "planning" || w == "intend" || w == "intending") && low(i, i+1) == "to" && in(i, i+2) && text.IsVerb(low(i, i+2)) && i > 0 && (presentBe(low(i, i-1)) || w != "about"):
			s.future = true // "I'm about to book", "we're planning to move": what is to come
		case !han && pastWords[w]:
			s.past = true
			s.did = s.did || (w == "did" || w == "didn't") && !slices.ContainsFunc(seq[:i], func(u vunit) bool { return subordinators[u.low] })
		case !han && (len(w) > 4 && strings.HasSuffix(w, "ed") || participles[w]) && (low(i, i-1) == "who" || low(i, i-1) == "what"):
			s.past = true // "who liked", "who brought", "what caused": a past right after the subject's question word
		case !han && strings.HasSuffix(w, "'d") && whWords[strings.TrimSuffix(w, "'d")]:
			s.whd = true // what'd, who'd: did or would, unknown
		case !han && (w == "would" || strings.HasSuffix(w, "'d")) && i > 0 && !politeAfterWould[low(i, i+1)]:
			s.would = true // not "Would you …" opening a request, not "I'd like"
		case perfectAux[w] && low(i, i+1) != "to" && s.perfect(i):
			s.past = true // "has it shipped", "why has the price dropped"
		case perfectAux[w] && low(i, i+1) == "been" && participle(low(i, i+2)):
			s.past = true // "The bridge has been reopened"
		case w == "会" && hanMood(w, low(i, i-2), low(i, i-1), low(i, i+1), low(i, i+2)) != 0:
			s.future = true // not 会员, 开会, 机会 (hanMood's words)
		case w == "将" && (oneOf("要会于在", low(i, i+1)) || low(i, i-1) == "即"):
			s.future = true // 将要, 将会, 将于, 即将
		case w == "要" && (low(i, i-1) == "快" || low(i, i-1) == "就"):
			s.future = true // 快要, 就要
		case w == "没" && low(i, i+1) == "" && low(i, i-1) != "" && !oneOf(text.TagNegators, low(i, i-1)):
			s.past = true // 发货没: did it ship (发货了吗)
		case w == "马" && low(i, i+1) == "上", w == "立" && oneOf("刻即", low(i, i+1)):
			s.future = true // 马上就发货, 立刻: about to happen (against 已经发货了)
		case w == "打" && low(i, i+1) == "算", w == "有" && low(i, i-1) == "还" && (oneOf(hanNumerals+"半几", low(i, i+1)) || isDigits(low(i, i+1))):
			s.future = true // 打算开除我 (a plan), 还有三天到期 (still to come): against 已经…了
		case w == "正" && low(i, i+1) == "在":
			s.progressive = true // 正在办理: now (against 已经办好了)
		case w == "在" && low(i, i-1) == "还" && !oneOf(hanNumerals, low(i, i+1)):
			s.notYet = true // 还在试用期: still, not yet past it (against 已过了)
		case w == "点" && low(i, i-1) == "差" || w == "些" && low(i, i-1) == "险":
			s.notYet = true // 差点, 险些: nearly, so it did not happen (against 已经)
		case w == "已" && !oneOf("而得不", low(i, i-1)):
			s.past = true // 已经, 已发货; not 而已, 不得已
			s.mood |= moodDone
		case w == "曾" && low(i, i+1) == "经":
			s.past = true
		case w == "了" && low(i, i-1) != "不" && low(i, i-1) != "得" || w == "过" && low(i, i-1) != "不": // 用不了 cannot, 到得了 can: no past
			next := low(i, i+1)
			if next != "" && !oneOf(hanParticles+"了", next) {
				// 了 inside the clause (发了几个): aspect, not the question's
				// tense; but it did happen (裁掉了多少人 / 会裁掉多少人), unless
				// 了 is part of a word (为了, 除了, 了解, 受不了).
				if w == "了" && !oneOf("为除算极", low(i, i-1)) && !oneOf("解结不", next) && !s.imminent(i) {
					s.mood |= moodDone
				}
				break
			}
			if w == "了" && s.imminent(i) {
				s.future = true // 快下雨了, 要发货了: about to happen
			} else {
				s.past = true // 降价了吗, 去过吗
				s.mood |= moodDone
				s.clauseMood(seq[i].clause, moodDone)
			}
		}
		if han {
			m := hanMood(w, low(i, i-2), low(i, i-1), low(i, i+1), low(i, i+2))
			s.mood |= m
			if m&modalMoods != 0 {
				s.clauseMood(seq[i].clause, m&modalMoods)
			}
		}
		// Passive agent: the units after by in a clause with a passive
		// auxiliary before it ("was it paid by X", "did I get paid by X"),
		// or after 被.
		if w == "by" && s.passive(i) || w == "被" {
			g := vagent{pos: -1, by: i}
			for j := i + 1; in(i, j) && roleMarkers[seq[j].low] == ""; j++ {
				if k := seq[j].partKey(); k != "" {
					g.key, g.pos = k, j
					break
				}
			}
			for j := i - 1; in(i, j); j-- {
				if k := seq[j].partKey(); k != "" {
					g.before = append(g.before, k)
				}
			}
			for j := g.pos + 1; g.pos >= 0 && in(i, j); j++ {
				if k := seq[j].partKey(); k != "" {
					g.after = append(g.after, k)
				}
			}
			g.han = w == "被"
			if g.pos >= 0 {
				s.agents = append(s.agents, g)
			}
		}
		// Numerals before the unit they count: "two codes", "2 orders",
		// 两张优惠券 (numeral, classifier, unit), 12个 / 十二个.
		v, isNumeral := numerals[w]
		switch {
		case isNumeral && unitAt(i, i+1) && !numberish(low(i, i-1)) && low(i, i-1) != "a" && !numberish(seq[i+1].low):
			addTo(&s.counts, seq[i+1].word, v) // not "twenty five", "half a dozen"
		case isDigits(w) && unitAt(i, i+1) && !isHanTok(seq[i+1].low) && !numberish(seq[i+1].low):
			addTo(&s.counts, seq[i+1].word, hanValue(w))
		case (isDigits(w) || oneOf(hanNumerals, w)) && !oneOf(hanNumerals, low(i, i-1)):
			j, run := i+1, w
			for !isDigits(w) && in(i, j) && oneOf(hanNumerals, seq[j].low) {
				run += seq[j].low
				j++
			}
			if v := hanValue(run); v != "" && in(i, j) && oneOf(hanClassifiers, seq[j].low) && unitAt(i, j+1) {
				addTo(&s.counts, seq[j+1].word, v)
			}
		}
		// Possessors: "X's Y", "my Y", "Y of X", "X的Y".
		switch {
		case u.poss && unitAt(i, i+1):
			addTo(&s.owners, seq[i+1].word, u.word)
		case possessivePronouns[w] != "" && !han && unitAt(i, i+1):
			addTo(&s.owners, seq[i+1].word, possessivePronouns[w])
		case w == "of" && unitAt(i, i-1):
			for j := i + 1; in(i, j) && roleMarkers[seq[j].low] == ""; j++ {
				if seq[j].unit {
					addTo(&s.owners, seq[i-1].word, seq[j].word)
					break
				}
			}
		case w == "的" && unitAt(i, i+1) && in(i, i-1):
			owner := seq[i-1]
			if owner.low == "们" && in(i, i-2) {
				owner = seq[i-2] // 我们的 = 我的 (ours)
			}
			if p := possessivePronouns[owner.low]; p != "" {
				addTo(&s.owners, seq[i+1].word, p)
			} else if owner.unit && !oneOf(hanNumerals, owner.low) && strings.IndexFunc(owner.low, unicode.IsDigit) < 0 {
				addTo(&s.owners, seq[i+1].word, owner.word)
			}
		}
	}
}

// perfect reports has/have at i as the auxiliary of a perfect: the first
// token of its clause ("Has my order shipped?"), or after a question word
// with a participle (-ed, been, gone …) within three tokens ("Why has the price
// dropped?"; not "Who has the key?").
func (s *vsig) perfect(i int) bool {
	j := i - 1
	for j >= 0 && s.seq[j].clause == s.seq[i].clause && s.seq[j].text[0] != '|' && whWords[s.seq[j].low] {
		j--
	}
	start := j < 0 || s.seq[j].clause != s.seq[i].clause || s.seq[j].text[0] == '|'
	if !start {
		return false
	}
	if j == i-1 {
		return true
	}
	for k := i + 1; k <= i+3 && k < len(s.seq) && s.seq[k].clause == s.seq[i].clause && s.seq[k].text[0] != '|'; k++ {
		if w := s.seq[k].low; participles[w] || len(w) > 4 && strings.HasSuffix(w, "ed") {
			return true
		}
	}
	return false
}

// passive reports a passive auxiliary (be, get) before the by at i in its
// clause.
func (s *vsig) passive(i int) bool {
	for j := i - 1; j >= 0 && s.seq[j].clause == s.seq[i].clause && s.seq[j].text[0] != '|'; j-- {
		if passiveAux[s.seq[j].low] {
			return true
		}
	}
	return false
}

// imminent reports 要 or 快 before the 了 at i that say it is about to
// happen: 快要/就要/要 up to three characters before (要下雨了, 快要到了),
// or 快 right before the verb (快到了); not 快递到了 or 我要的货到了.
func (s *vsig) imminent(i int) bool {
	for j := i - 1; j >= i-3 && j >= 0 && s.seq[j].clause == s.seq[i].clause && s.seq[j].text[0] != '|'; j-- {
		if w := s.seq[j].low; w == "要" || w == "快" && (j == i-2 || !inHanWord(*s, j)) || w == "上" && j > 0 && s.seq[j-1].low == "马" {
			return true // 要到期了, 快到了, 快到期了 (not 快递到了), 马上到期了
		}
	}
	return s.stillToCome(i)
}

// stillToCome reports 还有 and a count of time before i in its clause (还有三天
// 就过期了, 还有五天到还款日): what is still to come.
func (s *vsig) stillToCome(i int) bool {
	for j := i - 1; j >= 1 && s.seq[j].clause == s.seq[i].clause; j-- {
		if s.seq[j].low == "有" && s.seq[j-1].low == "还" && j+1 < len(s.seq) && (oneOf(hanNumerals+"半几", s.seq[j+1].low) || isDigits(s.seq[j+1].low)) {
			return true
		}
	}
	return false
}

// hanValue reads a run of Chinese numerals (or ASCII digits) as a number
// in digits: 两 = 2, 十二 = 12, 三千五 = 3500 (a digit right after 千, 百
// or 万 counts in the next lower place), 一千零八 = 1008. It returns ""
// for a run it cannot read (一二, 1.5万), which then counts nothing.
func hanValue(run string) string {
	if isDigits(run) {
		if t := strings.TrimLeft(run, "0"); t != "" {
			return t
		}
		return "0"
	}
	var total, section, place int64
	digit := int64(-1)
	for _, r := range run {
		switch {
		case r == '零' || r == '〇':
			if digit >= 0 {
				return ""
			}
			place = 1 // 一千零八: the next digit is a unit digit
		case r == '两' || strings.ContainsRune("一二三四五六七八九", r):
			if digit >= 0 {
				return ""
			}
			digit = int64(strings.IndexRune("零一二三四五六七八九", r) / 3)
			if r == '两' {
				digit = 2
			}
		case r == '十' || r == '百' || r == '千':
			m := map[rune]int64{'十': 10, '百': 100, '千': 1000}[r]
			if digit < 0 {
				if r != '十' || section != 0 {
					return ""
				}
				digit = 1 // 十二
			}
			section += digit * m
			digit, place = -1, m
		case r == '万':
			if digit >= 0 {
				section += digit
				digit = -1
			}
			if section == 0 || total != 0 {
				return ""
			}
			total, section, place = section*10000, 0, 10000
		default:
			return ""
		}
	}
	if digit >= 0 {
		if place >= 100 {
			digit *= place / 10 // 三千五 = 3500, 两万八 = 28000
		}
		section += digit
	}
	if total+section == 0 {
		return ""
	}
	return strconv.FormatInt(total+section, 10)
}

// disjoint reports two non-empty lists with no value in common.
func disjoint(a, b []string) bool {
	return len(a) > 0 && len(b) > 0 && !slices.ContainsFunc(a, func(x string) bool { return slices.Contains(b, x) })
}

// pronounOwners are the possessors a possessive pronoun names; the
// third-person ones may be any noun ("Did Owen lend his car" = "Owen's
// car"), and so may "self" (自己).
var (
	// subordinators open a clause that is not the question's own ("if my
	// parcel didn't arrive").
	subordinators = setOf("if unless because when whether although though since")
	pronounOwners = setOf("me you him her them it self")
	// independentPossessives own what "of" gives them as my, your … do.
	independentPossessives = map[string]string{"mine": "me", "ours": "me", "yours": "you", "hers": "her", "theirs": "them"}
	anyNoun                = setOf("him her them it self")
)

// sameOwner reports two possessors that may be the same: equal, "self",
// a third-person pronoun against a noun, or two nouns of which one is a
// Han character before 的 (a character is not a word, X的Y is as often a
// relative clause or an attribute, 闲置的 / 空闲的, as a possessor, and
// Sultan的 may translate 苏尔丹的). "my" against "manager's" differ, and so
// do two English nouns.
func sameOwner(x, y string) bool {
	if p, ok := independentPossessives[x]; ok {
		x = p // "a friend of mine" is "my friend"
	}
	if p, ok := independentPossessives[y]; ok {
		y = p
	}
	switch {
	case x == y || x == "self" || y == "self":
		return true
	case pronounOwners[x] && pronounOwners[y]:
		return false
	case anyNoun[x] || anyNoun[y]:
		return !pronounOwners[x] || !pronounOwners[y]
	}
	return !pronounOwners[x] && !pronounOwners[y] && (isHanTok(x) || isHanTok(y))
}

// oneOf reports w, a single character, among chars.
func oneOf(chars, w string) bool {
	return w != "" && utf8.RuneCountInString(w) == 1 && strings.Contains(chars, w)
}

// isDigits reports a non-empty string of ASCII digits.
func isDigits(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < '0' || w[i] > '9' {
			return false
		}
	}
	return w != ""
}

// numberish reports a numeral word, "half" or digits: a part of a longer
// number ("twenty five", "half a dozen", "2 hundred").
func numberish(w string) bool {
	_, ok := numerals[w]
	return ok && w != "a" && w != "an" || w == "half" || isDigits(w)
}

// ordinalDigits reports whether w is an ordinal written with digits: 1st,
// 2nd, 3rd, 4th, 21st.
func ordinalDigits(w string) bool {
	i := strings.IndexFunc(w, func(r rune) bool { return r < '0' || r > '9' })
	if i <= 0 {
		return false
	}
	switch w[i:] {
	case "st", "nd", "rd", "th":
		return true
	}
	return false
}

// framedPerson reports whether an opening subject is the asker's (I, we)
// or the service's (you).
func framedPerson(subject string) bool { return subject == "1" || subject == "2" }

func subjectName(subject string) string {
	switch subject {
	case "1":
		return "I/we"
	case "2":
		return "you"
	}
	return subject
}
