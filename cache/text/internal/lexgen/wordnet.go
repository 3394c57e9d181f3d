package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
)

// The English half of the generated lexicon comes from WordNet 3.0
// (Princeton University; Debian's wordnet-base, /usr/share/wordnet), under
// the WordNet licence: use, copy, modify and distribute, with the copyright
// notice kept (docs/cache.md and the generated file's header carry it).
//
// What is taken from it, and the rule that makes it safe enough for a cache
// that must not serve a wrong answer:
//
//   - A word's sense is its most frequent one: the first synset listed for
//     it under its dominant part of speech (the one whose senses were tagged
//     most often in the SemCor counts, cntlist.rev). A word never tagged is
//     left alone: its first sense is a guess.
//   - Two words fold into one concept only when their most frequent senses
//     are the same synset. "teach" and "instruct" fold (both mean "impart
//     skills"); "learn" does not fold with them, although "learn" is a
//     member of teach's synset, because learning is not its first sense.
//   - A noun of action or event (lexicographer files noun.act, noun.event)
//     whose first sense is derived from a verb's first sense takes the
//     verb's concept: "replacement" = "replace", "deployment" = "deploy".
//   - Irregular verb and noun forms (verb.exc, noun.exc) join their base
//     form: "went" = "go", "children" = "child". Irregular adjective forms
//     (adj.exc: better, best) do not: a comparative is another question.
//   - Proper nouns (capitalised lemmas), phrases of more than three words
//     and words with anything but letters, hyphens and apostrophes are
//     left out.

// wnSynset is one synset of a data.POS file.
type wnSynset struct {
	pos     byte // n, v, a, r (satellites are a)
	lexFile int
	words   []string // lower-case, spaces for underscores
	proper  []bool   // the lemma is capitalised in the file
	derivs  []wnPtr  // derivationally related forms (+)
	ants    []wnPtr  // antonyms (!)
	similar []string // heads of a satellite adjective (&)
}

// wnPtr is a lexical pointer from word src (1-based) of a synset to word
// dst of the synset key.
type wnPtr struct {
	key      string
	src, dst int
}

// wordnet is what the generator reads of WordNet.
type wordnet struct {
	synsets  map[string]*wnSynset         // "n00001740"
	senses   map[string]map[byte][]string // lemma -> pos -> synset keys, most frequent first
	counts   map[string]int               // "lemma\x00pos\x00sense" -> tag count
	exc      map[string][]string          // base -> irregular forms (verbs, nouns)
	verbForm map[string]bool              // irregular verb forms (verb.exc)
}

var wnLemma = regexp.MustCompile(`^[a-z][a-z'-]*( [a-z][a-z'-]*){0,2}$`)

func readWordNet(dir string) (*wordnet, error) {
	wn := &wordnet{
		synsets:  map[string]*wnSynset{},
		senses:   map[string]map[byte][]string{},
		counts:   map[string]int{},
		exc:      map[string][]string{},
		verbForm: map[string]bool{},
	}
	for _, p := range []struct {
		name string
		pos  byte
	}{{"noun", 'n'}, {"verb", 'v'}, {"adj", 'a'}, {"adv", 'r'}} {
		if err := eachLine(filepath.Join(dir, "data."+p.name), func(l string) error { return wn.dataLine(l, p.pos) }); err != nil {
			return nil, err
		}
		if err := eachLine(filepath.Join(dir, "index."+p.name), func(l string) error { return wn.indexLine(l, p.pos) }); err != nil {
			return nil, err
		}
	}
	if err := eachLine(filepath.Join(dir, "cntlist.rev"), wn.countLine); err != nil {
		return nil, err
	}
	for _, name := range []string{"verb.exc", "noun.exc"} {
		if err := eachLine(filepath.Join(dir, name), func(l string) error {
			f := strings.Fields(l)
			if len(f) >= 2 {
				form, base := strings.ReplaceAll(f[0], "_", " "), strings.ReplaceAll(f[1], "_", " ")
				wn.exc[base] = append(wn.exc[base], form)
				if name == "verb.exc" && form != base {
					wn.verbForm[form] = true
				}
			}
			return nil
		}); err != nil {
			return nil, err
		}
	}
	return wn, nil
}

func eachLine(path string, fn func(string) error) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		l := sc.Text()
		if l == "" || l[0] == ' ' {
			continue // the licence header
		}
		if err := fn(l); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	return sc.Err()
}

// dataLine parses "offset lex_filenum ss_type w_cnt word lex_id ... p_cnt
// ptr... | gloss".
func (wn *wordnet) dataLine(l string, pos byte) error {
	if i := strings.Index(l, " | "); i >= 0 {
		l = l[:i]
	}
	f := strings.Fields(l)
	if len(f) < 4 {
		return fmt.Errorf("short data line %q", l)
	}
	lexFile, _ := strconv.Atoi(f[1])
	n, err := strconv.ParseInt(f[3], 16, 32)
	if err != nil {
		return err
	}
	s := &wnSynset{pos: pos, lexFile: lexFile}
	i := 4
	for k := 0; k < int(n); k++ {
		w := f[i]
		if j := strings.IndexByte(w, '('); j > 0 {
			w = w[:j] // adjective markers: (a), (p), (ip)
		}
		s.proper = append(s.proper, strings.ToLower(w) != w)
		s.words = append(s.words, strings.ReplaceAll(strings.ToLower(w), "_", " "))
		i += 2
	}
	pc, _ := strconv.Atoi(f[i])
	i++
	for k := 0; k < pc; k++ {
		sym, off, tpos, st := f[i], f[i+1], f[i+2], f[i+3]
		i += 4
		src, _ := strconv.ParseInt(st[:2], 16, 32)
		dst, _ := strconv.ParseInt(st[2:], 16, 32)
		tp := tpos[0]
		if tp == 's' {
			tp = 'a'
		}
		ptr := wnPtr{key: string(tp) + off, src: int(src), dst: int(dst)}
		switch sym {
		case "+":
			s.derivs = append(s.derivs, ptr)
		case "!":
			s.ants = append(s.ants, ptr)
		case "&":
			if f[2] == "s" {
				s.similar = append(s.similar, ptr.key)
			}
		}
	}
	wn.synsets[string(pos)+f[0]] = s
	return nil
}

// indexLine parses "lemma pos synset_cnt p_cnt ptr... sense_cnt
// tagsense_cnt offset...".
func (wn *wordnet) indexLine(l string, pos byte) error {
	f := strings.Fields(l)
	cnt, _ := strconv.Atoi(f[2])
	lemma := strings.ReplaceAll(f[0], "_", " ")
	offs := f[len(f)-cnt:]
	m := wn.senses[lemma]
	if m == nil {
		m = map[byte][]string{}
		wn.senses[lemma] = m
	}
	for _, o := range offs {
		m[pos] = append(m[pos], string(pos)+o)
	}
	return nil
}

// countLine parses "lemma%ss_type:lexfile:lexid:head:headid sense_number
// tag_cnt".
func (wn *wordnet) countLine(l string) error {
	f := strings.Fields(l)
	if len(f) != 3 {
		return nil
	}
	lemma, rest, ok := strings.Cut(f[0], "%")
	if !ok || rest == "" {
		return nil
	}
	pos := "_nvars"[rest[0]-'0']
	if pos == 's' {
		pos = 'a'
	}
	c, _ := strconv.Atoi(f[2])
	wn.counts[strings.ReplaceAll(lemma, "_", " ")+"\x00"+string(pos)+"\x00"+f[1]] += c
	return nil
}

// dominant returns the lemma's most frequent sense: the first synset of the
// part of speech whose senses were tagged most often, or "" when none was.
func (wn *wordnet) dominant(lemma string) string {
	best, bestN := "", 0
	for _, pos := range []byte("vnar") {
		offs := wn.senses[lemma][pos]
		n := 0
		for k := range offs {
			n += wn.counts[lemma+"\x00"+string(pos)+"\x00"+strconv.Itoa(k+1)]
		}
		if n > bestN {
			best, bestN = offs[0], n
		}
	}
	return best
}

// concepts maps each usable lemma to its concept key.
func (wn *wordnet) concepts() map[string]string {
	out := map[string]string{}
	for lemma := range wn.senses {
		if !wnLemma.MatchString(lemma) {
			continue
		}
		key := wn.dominant(lemma)
		if key == "" {
			continue
		}
		s := wn.synsets[key]
		if s == nil || wn.isProper(s, lemma) || (s.pos != 'v' && wn.participle(lemma)) {
			continue
		}
		out[lemma] = key
	}
	// Nominalizations take their verb's concept.
	for lemma, key := range out {
		s := wn.synsets[key]
		if s.pos != 'n' || (s.lexFile != 4 && s.lexFile != 11) { // noun.act, noun.event
			continue
		}
		w := indexOf(s.words, lemma) + 1
		for _, d := range s.derivs {
			if d.src != w || d.key[0] != 'v' {
				continue
			}
			t := wn.synsets[d.key]
			if t == nil || d.dst < 1 || d.dst > len(t.words) {
				continue
			}
			verb := t.words[d.dst-1]
			if out[verb] == d.key {
				out[lemma] = d.key
				break
			}
		}
	}
	return out
}

// participle reports whether an adjective lemma is also a regular -ed or
// -ing form of a verb ("approved", "required", "dated", "falling"): in a
// question it is read as the verb's form, which the lexicon's lookup finds
// by taking the ending off, so the adjective sense is left out.
func (wn *wordnet) participle(lemma string) bool {
	if wn.verbForm[lemma] {
		return true // an irregular form: "left" is "leave", "found" is "find"
	}
	for _, suf := range []string{"ed", "ing"} {
		b, ok := strings.CutSuffix(lemma, suf)
		if !ok || len(b) < 2 {
			continue
		}
		for _, base := range []string{b, b + "e", b[:len(b)-1]} {
			if len(wn.senses[base]['v']) > 0 {
				return true
			}
		}
	}
	return false
}

func (wn *wordnet) isProper(s *wnSynset, lemma string) bool {
	i := indexOf(s.words, lemma)
	return i < 0 || s.proper[i]
}

func indexOf(ws []string, w string) int {
	for i, x := range ws {
		if x == w {
			return i
		}
	}
	return -1
}

// englishGroups returns the members of each concept (irregular forms
// included), keyed by concept; prune drops the groups of one member.
func (wn *wordnet) englishGroups(concept map[string]string) map[string][]string {
	groups := map[string][]string{}
	for lemma, key := range concept {
		groups[key] = append(groups[key], lemma)
	}
	for key, ws := range groups {
		var forms []string
		for _, w := range ws {
			for _, f := range wn.exc[w] {
				if _, own := concept[f]; !own && wnLemma.MatchString(f) {
					forms = append(forms, f)
				}
			}
		}
		groups[key] = append(ws, forms...)
	}
	return groups
}

// prune sorts each group's members, drops repeats, and drops the groups
// left with one member: a concept of one word folds nothing.
func prune(groups map[string][]string) {
	for key, ws := range groups {
		sort.Strings(ws)
		ws = dedup(ws)
		if len(ws) < 2 {
			delete(groups, key)
			continue
		}
		groups[key] = ws
	}
}

func dedup(ws []string) []string {
	out := ws[:0]
	for i, w := range ws {
		if i == 0 || w != ws[i-1] {
			out = append(out, w)
		}
	}
	return out
}

// antonymFacets maps each lemma whose most frequent sense has an antonym
// to a facet naming the pair and its side: "ant.large-small:large" for
// big, large and huge (a satellite of large), "ant.large-small:small" for
// small and tiny. Two questions whose facets differ are never a semantic
// hit, so "is the box large" never answers "is the box small"; a lemma
// whose sense has no antonym gets none.
func (wn *wordnet) antonymFacets(concept map[string]string) map[string]string {
	out := map[string]string{}
	for lemma := range concept {
		key := wn.dominant(lemma) // the sense itself, not a nominalization's verb
		s := wn.synsets[key]
		side, other := key, ""
		w := indexOf(s.words, lemma) + 1
		for _, a := range s.ants {
			if a.src == w || a.src == 0 {
				other = a.key
				break
			}
		}
		if other == "" && len(s.similar) > 0 {
			h := wn.synsets[s.similar[0]]
			if h != nil && len(h.ants) > 0 {
				side, other = s.similar[0], h.ants[0].key
			}
		}
		if other == "" || wn.synsets[other] == nil {
			continue
		}
		a, b := wn.synsets[side].words[0], wn.synsets[other].words[0]
		if a == b {
			continue
		}
		x, y := a, b
		if y < x {
			x, y = y, x
		}
		out[lemma] = "ant." + strings.ReplaceAll(x+"-"+y, " ", "_") + ":" + strings.ReplaceAll(a, " ", "_")
	}
	return out
}

// senseCount is how many senses a lemma has, over every part of speech.
func (wn *wordnet) senseCount(lemma string) int {
	n := 0
	for _, offs := range wn.senses[lemma] {
		n += len(offs)
	}
	return n
}
