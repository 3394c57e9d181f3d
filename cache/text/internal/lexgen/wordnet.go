package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
)

// The generated lexicon comes from WordNet 3.0 (Princeton University;
// Debian's wordnet-base, /usr/share/wordnet), under the WordNet licence:
// use, copy, modify and distribute, with the copyright notice kept
// (docs/cache.md and the generated file's header carry it).
//
// What is taken from it is antonymy, as facets: a word whose most frequent
// sense has an antonym names the pair and itself, so two questions that
// differ by such a word never match. Facets can only refuse a hit, and
// each word is its own value, so no two different words are ever made
// one. Synonyms are not taken: folding words by their most frequent sense
// made different questions equal in a review (contribute = lend, shelve =
// postpone, packet = package) and found no more paraphrases on pairs
// nobody tuned for (docs/cache.md, "Recall: not reached").
//
//   - A word's sense is its most frequent one: the first synset listed for
//     it under its dominant part of speech (the one whose senses were tagged
//     most often in the SemCor counts, cntlist.rev). A word never tagged is
//     left alone.
//   - The antonym is the sense's own (a lexical antonym of the word, or of
//     the synset), or for a satellite adjective that of its head: huge is
//     a satellite of large, whose antonym is small. The facet is
//     "ant.large-small:huge": the pair, then the word itself, so every
//     word is its own value (big and large differ, sixth and eighth differ,
//     afloat and aimless, one synset, differ): a facet never makes two
//     different words one.
//   - An adjective that is also a verb's -ed or -ing form, or an irregular
//     verb form ("approved", "left"), is read as the verb and left out.
//   - Inflected forms of one-word lemmas are written out: -s, -es, -ed,
//     -ing for verbs, -s and -es for nouns, and WordNet's irregular forms
//     (verb.exc, noun.exc), except a form that is a noun or verb of its
//     own ("goods", "weed"); a phrase is matched as written.
//   - Proper nouns (capitalised lemmas), phrases of more than three words
//     and words with anything but letters, hyphens and apostrophes are
//     left out.

// wnSynset is one synset of a data.POS file.
type wnSynset struct {
	pos     byte // n, v, a, r (satellites are a)
	lexFile int
	words   []string // lower-case, spaces for underscores
	proper  []bool   // the lemma is capitalised in the file
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

// tagged returns how often SemCor tagged the lemma in a part of speech.
func (wn *wordnet) tagged(lemma string, pos byte) int {
	n := 0
	for k := range wn.senses[lemma][pos] {
		n += wn.counts[lemma+"\x00"+string(pos)+"\x00"+strconv.Itoa(k+1)]
	}
	return n
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

// lemmas returns the usable lemmas with their most frequent sense.
func (wn *wordnet) lemmas() map[string]string {
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
// to its facet (see the comment at the top of this file).
func (wn *wordnet) antonymFacets(lemmas map[string]string) map[string]string {
	out := map[string]string{}
	for lemma, key := range lemmas {
		s := wn.synsets[key]
		head, other := key, ""
		w := indexOf(s.words, lemma) + 1
		for _, a := range s.ants {
			if a.src == w || a.src == 0 {
				other = a.key
				break
			}
		}
		if other == "" && len(s.similar) > 0 {
			if h := wn.synsets[s.similar[0]]; h != nil && len(h.ants) > 0 {
				head, other = s.similar[0], h.ants[0].key
			}
		}
		if other == "" || wn.synsets[other] == nil {
			continue
		}
		a, b := wn.synsets[head].words[0], wn.synsets[other].words[0]
		if a == b {
			continue
		}
		if b < a {
			a, b = b, a
		}
		pair := strings.ReplaceAll(a+"-"+b, " ", "_")
		out[lemma] = "ant." + pair + ":" + strings.ReplaceAll(lemma, " ", "_")
	}
	return out
}

// forms returns a lemma's inflected forms (its first word inflected when
// it is a phrase): regular ones by the part of speech of its most frequent
// sense, and WordNet's irregular ones, leaving out a form that is a noun or
// a verb of its own that SemCor tagged more than once ("rose", "building";
// "lost" and "rising", tagged as nouns once and never, are forms of lose
// and rise).
func (wn *wordnet) forms(lemma, key string) []string {
	if strings.Contains(lemma, " ") {
		return nil // a phrase is matched as written
	}
	first, rest := lemma, ""
	var fs []string
	switch key[0] {
	case 'v':
		fs = append(fs, plural(first), pastForm(first), ingForm(first))
	case 'n':
		fs = append(fs, plural(first))
	}
	fs = append(fs, wn.exc[first]...)
	var out []string
	for _, f := range fs {
		f += rest
		if f == lemma || !wnLemma.MatchString(f) {
			continue
		}
		if m := wn.senses[f]; (len(m['n']) > 0 || len(m['v']) > 0) && wn.tagged(f, 'n')+wn.tagged(f, 'v') > 1 {
			continue // "rose" the flower, "building", "left": not only forms of rise, build, leave
		}
		out = append(out, f)
	}
	return out
}

func plural(w string) string {
	switch {
	case strings.HasSuffix(w, "s") || strings.HasSuffix(w, "x") || strings.HasSuffix(w, "z") || strings.HasSuffix(w, "ch") || strings.HasSuffix(w, "sh"):
		return w + "es"
	case strings.HasSuffix(w, "y") && len(w) > 1 && !strings.ContainsRune("aeiou", rune(w[len(w)-2])):
		return w[:len(w)-1] + "ies"
	}
	return w + "s"
}

func pastForm(w string) string {
	switch {
	case strings.HasSuffix(w, "e"):
		return w + "d"
	case strings.HasSuffix(w, "y") && len(w) > 1 && !strings.ContainsRune("aeiou", rune(w[len(w)-2])):
		return w[:len(w)-1] + "ied"
	}
	return w + "ed"
}

func ingForm(w string) string {
	if strings.HasSuffix(w, "e") && !strings.HasSuffix(w, "ee") && len(w) > 2 {
		return w[:len(w)-1] + "ing"
	}
	return w + "ing"
}

var wnWord = regexp.MustCompile(`^[a-z]+$`)

// verbs returns every one-word verb lemma, sorted: the stemmer takes an
// ending off only when what is left (or it with an e, or undoubled) is a
// verb, so "caring" is "care" and never "car", and "morning" stays.
func (wn *wordnet) verbs() []string {
	var out []string
	for lemma, m := range wn.senses {
		if len(m['v']) > 0 && wnWord.MatchString(lemma) {
			out = append(out, lemma)
		}
	}
	sort.Strings(out)
	return out
}

// The numbers of the WordNet lexicographer files the generator reads.
const (
	lexAnimal  = 5  // noun.animal
	lexPerson  = 18 // noun.person
	lexStative = 42 // verb.stative
)

// firstSenseIn returns the one-word lemmas of part of speech pos whose
// first sense (WordNet lists a lemma's senses most frequent first) is in
// lexicographer file lexFile, sorted.
func (wn *wordnet) firstSenseIn(pos byte, lexFile int) []string {
	var out []string
	for lemma, m := range wn.senses {
		if offs := m[pos]; len(offs) > 0 && wnWord.MatchString(lemma) {
			if s := wn.synsets[offs[0]]; s != nil && s.lexFile == lexFile {
				out = append(out, lemma)
			}
		}
	}
	sort.Strings(out)
	return out
}

// statives returns the one-word verbs whose most frequent sense is a
// state (verb.stative: require, include, contain, need), sorted: "Was the
// SAT required?" asks about a state then, "Is the SAT required?" now,
// where "Was my order shipped?" and "Is my order shipped?" ask one thing.
func (wn *wordnet) statives() []string { return wn.firstSenseIn('v', lexStative) }

// irregulars returns WordNet's irregular forms of one-word verbs as
// "form>base" (sent>send, bought>buy), sorted, for the stemmer: only a
// form of one base, and no verb of its own nor a noun SemCor tagged more
// than once (found is a verb, rose and left are nouns: they stay).
func (wn *wordnet) irregulars() []string {
	bases := map[string][]string{}
	for base, forms := range wn.exc {
		for _, f := range forms {
			if f != base && wn.verbForm[f] && wnWord.MatchString(f) && wnWord.MatchString(base) && len(wn.senses[base]['v']) > 0 {
				bases[f] = append(bases[f], base)
			}
		}
	}
	var out []string
	for f, bs := range bases {
		sort.Strings(bs)
		if bs = dedup(bs); len(bs) != 1 || len(wn.senses[f]['v']) > 0 || wn.tagged(f, 'n') > 1 {
			continue
		}
		out = append(out, f+">"+bs[0])
	}
	sort.Strings(out)
	return out
}

// persons returns the one-word nouns whose first sense (WordNet lists a
// lemma's senses most frequent first) is a person (lexicographer file
// noun.person): driver, supplier, landlord; not order, parcel, card. The
// verification reads a passive against an active of the same verb as a
// change of roles only for such a subject ("Was the driver paid?" / "Did
// the driver pay?"), since a thing's verb often reads either way ("Was my
// order shipped?" = "Did my order ship?").
func (wn *wordnet) persons() []string { return wn.firstSenseIn('n', lexPerson) }

// phrasals returns WordNet's two-word verbs of a verb and a particle
// (work out, break in, eat out, sleep in) whose most frequent sense the
// verb alone does not have, sorted: the particle makes another verb ("Can
// I work out while pregnant?" is not "Can I work while pregnant?"), where
// a particle WordNet lists no verb for may be left out (print out).
func (wn *wordnet) phrasals() []string {
	var out []string
	for lemma, m := range wn.senses {
		v, p, ok := strings.Cut(lemma, " ")
		if !ok || !phrasalParticles[p] || len(m['v']) == 0 || !wnWord.MatchString(v) || len(wn.senses[v]['v']) == 0 {
			continue
		}
		if s := wn.synsets[m['v'][0]]; s != nil && !slices.Contains(s.words, v) {
			out = append(out, lemma) // its most frequent sense is not the verb's
		}
	}
	sort.Strings(out)
	return out
}

// phrasalParticles are the particles of the phrasal verbs (phrasals).
var phrasalParticles = map[string]bool{"out": true, "in": true, "on": true, "up": true, "off": true, "down": true, "away": true, "back": true, "over": true}

// animals returns the one-word nouns whose first sense is an animal
// (noun.animal): dog, horse, cat. An animal does things as a person does:
// "Did my dog get bitten?" is not "Did my dog bite?".
func (wn *wordnet) animals() []string { return wn.firstSenseIn('n', lexAnimal) }

// keepWhole returns the one-word lemmas the stemmer leaves whole, sorted:
// those ending in s that cannot be plurals of the word without it,
// because that word is no noun ("news" beside the adjective "new",
// "series" beside "sery"; a plural of a noun, "cards", is still a plural),
// and the nouns in -ing that SemCor tagged more often than the verb their
// stem would leave ("evening" is not "even", "training" not "train").
func (wn *wordnet) keepWhole() []string {
	var out []string
	for lemma := range wn.senses {
		// A noun in -ing that SemCor tagged more often than the verb its
		// stem would leave (evening, not even; morning has no verb) stays
		// whole; building and meeting meet build and meet.
		if base := strings.TrimSuffix(lemma, "ing"); wnWord.MatchString(lemma) && base != lemma && len(base) > 2 && len(wn.senses[base]['v']) > 0 &&
			wn.tagged(lemma, 'n') > wn.tagged(base, 'v') {
			out = append(out, lemma)
			continue
		}
		if !wnWord.MatchString(lemma) || len(lemma) < 4 || !strings.HasSuffix(lemma, "s") || strings.HasSuffix(lemma, "ss") {
			continue
		}
		for _, b := range []string{lemma[:len(lemma)-1], strings.TrimSuffix(lemma, "es"), strings.TrimSuffix(lemma, "ies") + "y"} {
			if m := wn.senses[b]; b != lemma && len(m) > 0 && len(m['n']) == 0 {
				out = append(out, lemma)
				break
			}
		}
	}
	sort.Strings(out)
	return out
}
