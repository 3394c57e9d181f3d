package text

// Facets returns the facets of a normalized question (see Normalize): the
// things it is about, which must be equal for a semantic hit. The result is
// sorted and deduplicated; it is empty, not nil, when there are none.
//
// Facet strings are canonical, so that the same entity written another way
// or in the other language gives the same string:
//
//   - identifiers: any token mixing letters and digits, hyphens kept, as
//     written: "sku-10234", "w-20240611-07", "a-03-02", "ob-88213";
//   - plain numbers "num:7731", four-digit years 1900–2099 "year:2023"
//     (2023年 too), two-digit years "year2:23" (never equal to a full year),
//     percentages "pct:5" (never equal to a bare 5), ordinals "ord:2"
//     (第二, 2nd; never equal to a plain 2);
//   - numbers with units: "dur:20s" (20 秒, 二十秒, 20 seconds, 20s),
//     "dur:30ms", "dur:5min", "wt:5kg", "qty:40pcs" (40 件, 40 units),
//     "qty:3case" (3 箱, 3 cases), "qty:2pallet" (2 托, 2 pallets),
//     "cny:100", "usd:5", "times:3" (3 次, 3 times); units without a
//     number: "unit:pcs", "unit:case", "unit:pallet";
//   - places in the warehouse: "zone:a" (zone A, A 区, A区), "wh:3" (3 号仓,
//     三号仓, warehouse 3), "dock:3", "aisle:12";
//   - places: Chinese provinces and large cities in both scripts
//     ("place:henan" for Henan and 河南), and "univ:zhejiang" for a
//     university named after one (Zhejiang University, 浙江大学);
//   - dates and times: "day:today" (today, 今天), "day:yesterday",
//     "day:tomorrow", weeks, months and years relative to now, "month:5"
//     (May, 5月, 五月), "day:3" after a month, "date:2024-6-11",
//     "ampm:am" (morning, 上午), "ampm:pm", "time:16:00" (16:00, 4 pm,
//     下午4点), "clock:4" for an hour that could be a.m. or p.m., and
//     "hao:8" / "hao:八" for N号 that is not a warehouse or dock (a day of
//     the month or a number: the two spellings stay apart on purpose);
//   - negation "neg" (not, no, never, without, n't, 不, 没有, 未, 无, 非;
//     but not the question forms 是不是, 要不要, 了没有);
//   - polarities and dimensions that flip the meaning: "flow:in"/"flow:out"
//     (inbound/入库, outbound/出库), "op:add"/"op:remove", "shelf:up"/
//     "shelf:down" (上架/下架), "ext:min"/"ext:max", "toggle:on"/
//     "toggle:off", "rel:before"/"rel:after", "cmp:gt"/"cmp:ge"/
//     "cmp:lt"/"cmp:le" (more than, at least, less than, at most),
//     "run:start"/"run:stop", "io:read"/"io:write"/"io:connect", warehouse
//     operations and roles ("op:pick", "op:pack", "op:replenish",
//     "role:picker", "role:packer"), and the dimension asked about
//     ("dim:tuition", "dim:city", "dim:college", "dim:major",
//     "lvl:ug"/"lvl:grad", "track:sci"/"track:arts");
//   - operators: "sym:<" (<, >=, !=, <<, ^, ≥ as >= …) and, with an operand
//     on each side, "expr:2^x" in order ("expr:i++" for ++ and -- on the
//     operand they touch); a minus sign is part of its number ("num:-5");
//   - quantifiers: "quant:all" (all, every), "quant:each" (each);
//   - "seq:TYPE:v1>v2" when a type occurs with several values, in their
//     order, so that swapping two values changes the facets.
//
// What is not a facet: names of people, products and most universities,
// and any other word outside the built-in vocabulary. Those are left to
// the embedding, where the builtin embedder weighs unknown words and
// unknown Chinese characters heavily, so that 张伟 and 张玮 score far apart.
// A Chinese numeral is converted only before a unit or classifier that
// gives it exactly one reading.
func Facets(normalized string) []string {
	return facetsOf(analyze(normalized))
}

// Read returns Facets and Content of a normalized question from one
// analysis; calling the two analyses the question twice.
func Read(normalized string) (facets, content []string) {
	a := analyze(normalized)
	return facetsOf(a), a.content
}

// Content returns the rest of a normalized question, what the builtin
// embedder hashes: its meaning-bearing words in order, without the facet
// values, stop words and polite fillers. Each element is a concept "c:NAME"
// (a vocabulary word of either language), a question form "q:NAME", an
// English stem "w:STEM" or a run of unrecognised Han characters "z:RUN".
// It is empty when nothing but facets and stop words is left.
func Content(normalized string) []string {
	return analyze(normalized).content
}

// framingAux are the auxiliaries and modals that open an English question
// with a subject who acts ("can I", "do you"); not the copula ("are you a
// bot", "am I eligible": the pronoun is what is asked about).
var framingAux = map[string]bool{
	"can": true, "could": true, "do": true, "does": true, "did": true, "should": true, "may": true, "might": true,
	"will": true, "would": true, "must": true, "shall": true, "have": true,
}

// frontedEnd returns the index of the auxiliary that opens the question
// after a fronted phrase ("As a student, can I …", "When I travel abroad,
// do I …", "At a wedding, how much …"): the first question word, or
// auxiliary followed by I, we or you; or 0.
func frontedEnd(toks []token) int {
	if len(toks) > 2 && toks[0].kind == tWord && toks[1].kind == tWord && (toks[1].text == "whom" || toks[1].text == "which" || toks[1].text == "what") &&
		(toks[0].text == "to" || toks[0].text == "for" || toks[0].text == "from" || toks[0].text == "with") {
		return 1 // "To whom should I address it?" as "Who should I address it to?"
	}
	if len(toks) < 3 || toks[0].kind != tWord || !frontedOpeners[toks[0].text] || toks[0].text == "when" && framingAux[toks[1].text] {
		return 0
	}
	for k := 1; k+1 < len(toks) && k < 16; k++ {
		if next := toks[k+1].text; framingAux[toks[k].text] && (next == "i" || next == "we" || next == "you") || whWords[toks[k].text] {
			return k
		}
	}
	return 0
}

// frontedOpeners open a phrase or clause that may stand before the
// question or after it.
var frontedOpeners = map[string]bool{
	"when": true, "whenever": true, "while": true, "before": true, "after": true, "once": true, "since": true,
	"as": true, "during": true, "with": true, "without": true, "for": true, "on": true, "in": true, "at": true,
}

// framingLead are the words that may come before that auxiliary: question
// words and greetings.
var framingLead = map[string]bool{
	"how": true, "where": true, "what": true, "when": true, "why": true, "which": true, "who": true,
	"hi": true, "hello": true, "hey": true, "please": true, "so": true, "and": true, "then": true, "also": true,
}

// opening returns an English question's opening auxiliary and the index
// in toks of the word right after it, with only question words or
// greetings before them (symbols skipped): "can" and "i" in "where can I
// find", "do" and "you" in "do you have", "can" and "anyone" in "can
// anyone see", "can" and "the" in "can the seller change"; "" and -1 when
// the question does not open so. The asker's I, we or you there is its
// framing, not a facet (framedIndex); the verification compares the
// opening subjects of two questions (OpeningOf).
func opening(toks []token) (aux string, subject int) {
	start := frontedEnd(toks)
	for i, t := range toks[start:] {
		i += start
		switch {
		case t.kind == tSym:
			continue
		case t.kind != tWord:
			return "", -1
		case aux != "" && t.text == "not":
			continue // "Why did not I …" as "Why didn't I …" is spelled out
		case aux != "":
			return aux, i
		case framingAux[t.text]:
			aux = t.text
		case !framingLead[t.text]:
			return "", -1
		}
	}
	return "", -1
}
