package text

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// trailingPunct is the set of characters Normalize strips from the end of a
// question (together with spaces), repeatedly.
const trailingPunct = ".,;:!?\u3002\u3001~ "

// Normalize returns the reference normalization of a question, the form
// whose equality defines an exact cache hit. It applies, in this order:
//
//  1. Unicode NFKC: full-width letters, digits and punctuation become ASCII,
//     U+3000 and no-break spaces become spaces, "①" becomes "1", "㎏"
//     becomes "kg", ligatures are split, combining marks are composed.
//  2. The ideographic full stop "。" (which NFKC keeps) becomes ".".
//  3. Lower-casing (strings.ToLower, Unicode simple case mapping).
//  4. Every run of white space becomes one space, and both ends are trimmed.
//     White space is what unicode.IsSpace reports, plus U+001C–U+001F, as in
//     Python's str.isspace used by the reference script.
//  5. A space is removed when its neighbour on either side is a CJK
//     character: a Han ideograph (including radicals, extensions A–G and
//     compatibility ideographs) or CJK symbols and punctuation U+3000–U+303F.
//     So "A 区" equals "A区" and "查一下 SKU-10234" equals "查一下SKU-10234".
//  6. Trailing characters from the set . , ; : ! ? 。 、 ~ and spaces are
//     stripped, repeatedly, at the end only.
//
// Nothing else changes: hyphens, "%", "#", quotes and inner punctuation stay,
// stop words stay, and numbers are not converted ("三号仓" is not "3号仓";
// "③号仓" is, through NFKC). Lower-casing merges distinctions carried only
// by case (megabit "Mb" versus megabyte "MB"). The one known divergence
// from Python's str.lower is the dotted capital I (U+0130), which Go maps to
// a plain "i" and Python to "i" plus a combining dot.
func Normalize(q string) string {
	ascii := isASCII(q)
	s := q
	if !ascii {
		// NFKC leaves ASCII as it is, and ASCII has no 。 and no CJK: the
		// common English question skips both passes.
		s = norm.NFKC.String(Superscripts(q))
		s = strings.ReplaceAll(s, "\u3002", ".")
	}
	s = strings.ToLower(SpellDataUnits(s))
	s = strings.Join(strings.FieldsFunc(s, isSpace), " ")
	if !ascii && strings.IndexByte(s, ' ') >= 0 {
		rs := []rune(s)
		var b strings.Builder
		b.Grow(len(s))
		for i, r := range rs {
			if r == ' ' && ((i > 0 && isCJK(rs[i-1])) || (i+1 < len(rs) && isCJK(rs[i+1]))) {
				continue
			}
			b.WriteRune(r)
		}
		s = b.String()
	}
	return strings.TrimRight(s, trailingPunct)
}

// Superscripts writes a run of superscript digits as ^ and the digits
// before NFKC would fold them into plain ones: 10⁵ is 10^5, not 105, and
// 3²+4² is 3^2+4^2, not 32+42.
func Superscripts(s string) string {
	if !strings.ContainsAny(s, "⁰¹²³⁴⁵⁶⁷⁸⁹") {
		return s
	}
	var b strings.Builder
	in := false
	for _, r := range s {
		d := strings.IndexRune("⁰¹²³⁴⁵⁶⁷⁸⁹", r)
		if d < 0 {
			in = false
			b.WriteRune(r)
			continue
		}
		if !in {
			b.WriteByte('^')
			in = true
		}
		b.WriteByte(byte('0' + utf8.RuneCountInString("⁰¹²³⁴⁵⁶⁷⁸⁹"[:d])))
	}
	return b.String()
}

// SpellDataUnits spells out a data unit after a number, for the case to
// be folded after it, since its case is its meaning: 10MB is ten
// megabytes, 10Mb ten megabits (10MByte, 10Mbit). A B is a byte; a b is
// a bit after a prefix in capitals (Mb, Gb) or before ps (kbps, mbps, as
// kbit/s); 10mb, said casually, is bytes.
func SpellDataUnits(s string) string {
	var b strings.Builder
	last := 0
	for i := 1; i+1 < len(s); i++ {
		if !strings.ContainsRune("kKmMgGtTpP", rune(s[i])) || s[i+1] != 'b' && s[i+1] != 'B' {
			continue
		}
		j := i - 1
		if s[j] == ' ' && j > 0 {
			j--
		}
		if s[j] < '0' || s[j] > '9' {
			continue
		}
		rest := s[i+2:]
		perSecond := strings.HasPrefix(rest, "ps")
		if perSecond {
			rest = rest[2:]
		}
		if rest != "" && (rest[0] >= 'a' && rest[0] <= 'z' || rest[0] >= 'A' && rest[0] <= 'Z') {
			continue // a word: 5 mbit, 3 gbytes, 2 kbd
		}
		unit := "byte"
		if s[i+1] == 'b' && (s[i] >= 'A' && s[i] <= 'Z' || perSecond) {
			unit = "bit"
		}
		b.WriteString(s[last : i+1])
		b.WriteString(unit)
		last = i + 2
		if perSecond {
			b.WriteString("/s") // 100 Mbps is 100 Mbit/s
			last += 2
		}
	}
	if last == 0 {
		return s
	}
	b.WriteString(s[last:])
	return b.String()
}

// isASCII reports whether s is all ASCII.
func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// isSpace reports white space the way Python's str.isspace does.
func isSpace(r rune) bool {
	return unicode.IsSpace(r) || (r >= 0x1c && r <= 0x1f)
}

// isCJK reports whether r counts as CJK for step 5 of Normalize. The ranges
// are those of the reference script (check_cache_pairs.py).
func isCJK(r rune) bool {
	switch {
	case r >= 0x3000 && r <= 0x303f, // CJK symbols and punctuation
		r >= 0x2e80 && r <= 0x2fdf,   // radicals
		r >= 0x3400 && r <= 0x4dbf,   // Han extension A
		r >= 0x4e00 && r <= 0x9fff,   // Han
		r >= 0xf900 && r <= 0xfaff,   // Han compatibility
		r >= 0x20000 && r <= 0x3134f: // Han extensions B..G
		return true
	}
	return false
}

// isHan reports a Han ideograph (the CJK ranges of isCJK without the
// symbols and punctuation block, plus "〇"), the characters that the facet
// and embedding analysis treats as Chinese text.
func IsHan(r rune) bool {
	return r == 0x3007 || (isCJK(r) && !(r >= 0x3000 && r <= 0x303f))
}
