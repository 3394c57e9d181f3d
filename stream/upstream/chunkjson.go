package upstream

import (
	"encoding/json"
	"strings"
	"unicode/utf16"
	"unicode/utf8"
)

// The decoding of upstream chunks. Every chunk of every answer is JSON,
// and encoding/json's reflection-driven Unmarshal was a tenth of the
// gateway's CPU on the hot path (issue 16's profile). decodeChunk reads
// the usual chunk shape with a small scanner that validates the whole
// input the way encoding/json does, and gives up on anything unusual (an
// "error" member, several choices, a key that differs from a field's
// name only by case, a duplicate, a wrong type, any invalid JSON):
// encoding/json then decodes that chunk as before, so the result, and the
// error, are always encoding/json's. FuzzDecodeChunk checks it.

// decodeChunk decodes data, one chat.completion.chunk, into c.
func decodeChunk(data string, c *chatChunk) error {
	if fastChunk(data, c) {
		return nil
	}
	*c = chatChunk{}
	return json.Unmarshal([]byte(data), c)
}

// fastChunk decodes data into c when data is valid JSON of the usual
// shape, and reports whether it did; when it did not, c holds garbage.
func fastChunk(data string, c *chatChunk) bool {
	choices := c.Choices[:0] // reuse the backing array of the last chunk
	*c = chatChunk{}
	s := scanner{s: data, reuse: choices}
	s.ws()
	if !s.object(func(key string) bool {
		switch {
		case key == "choices":
			return s.choices(c)
		case key == "error":
			// "error": null is no error; an error object, the rare
			// error chunk, is left to encoding/json.
			if s.null() {
				c.Error = rawNull
				return true
			}
			return false
		case strings.EqualFold(key, "choices"), strings.EqualFold(key, "error"):
			return false // encoding/json matches keys case-insensitively
		}
		return s.skip(0)
	}) {
		return false
	}
	s.ws()
	return s.i == len(s.s)
}

// rawNull is the RawMessage encoding/json keeps for "error": null.
var rawNull = json.RawMessage("null")

// scanner reads JSON from s at i. Each method consumes one production,
// or reports false for input it does not accept (which may be valid
// JSON that the fast path leaves to encoding/json).
type scanner struct {
	s string
	i int
	// reuse is the (empty) slice that a choices array fills.
	reuse []chatChoice
	// seenChoices: a choices member was read (a second one goes to
	// encoding/json).
	seenChoices bool
}

// maxDepth bounds the nesting that skip follows, well under
// encoding/json's own limit (10000), so a deeply nested chunk goes to
// encoding/json, which reports it.
const maxDepth = 64

func (s *scanner) ws() {
	for s.i < len(s.s) {
		switch s.s[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) consume(b byte) bool {
	s.ws()
	if s.i < len(s.s) && s.s[s.i] == b {
		s.i++
		return true
	}
	return false
}

func (s *scanner) literal(lit string) bool {
	if strings.HasPrefix(s.s[s.i:], lit) {
		s.i += len(lit)
		return true
	}
	return false
}

// null consumes a null, if the next value is one.
func (s *scanner) null() bool {
	s.ws()
	return s.literal("null")
}

// object reads an object, calling member for each key with the scanner
// before the member's value (the colon consumed); member consumes the
// value.
func (s *scanner) object(member func(key string) bool) bool {
	if !s.consume('{') {
		return false
	}
	if s.consume('}') {
		return true
	}
	for {
		s.ws()
		key, ok := s.rawString()
		if !ok || !plainKey(key) || !s.consume(':') {
			// A key with escapes, or beyond ASCII, may spell a
			// field's name under encoding/json's rules (escapes
			// decoded, case folded): encoding/json decodes it.
			return false
		}
		if !member(key) {
			return false
		}
		if s.consume(',') {
			continue
		}
		return s.consume('}')
	}
}

// plainKey reports whether key is printable ASCII without escapes: the
// keys the fast path compares itself (strings.EqualFold then catches the
// ones encoding/json would match by case).
func plainKey(key string) bool {
	for i := 0; i < len(key); i++ {
		if b := key[i]; b == '\\' || b >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// choices reads the choices array: null, empty, or exactly one choice.
func (s *scanner) choices(c *chatChunk) bool {
	if !once(&s.seenChoices) {
		return false // a duplicate key
	}
	if s.null() {
		return true
	}
	if !s.consume('[') {
		return false
	}
	c.Choices = s.reuse
	if c.Choices == nil {
		c.Choices = make([]chatChoice, 0, 1)
	}
	if s.consume(']') {
		return true
	}
	var ch chatChoice
	var seen [3]bool
	s.ws()
	if !s.null() && !s.object(func(key string) bool {
		switch key {
		case "delta":
			return once(&seen[0]) && s.content(&ch.Delta.Content)
		case "message":
			return once(&seen[1]) && s.content(&ch.Message.Content)
		case "finish_reason":
			return once(&seen[2]) && s.stringOrNull(&ch.FinishReason)
		}
		if strings.EqualFold(key, "delta") || strings.EqualFold(key, "message") || strings.EqualFold(key, "finish_reason") {
			return false
		}
		return s.skip(0)
	}) {
		return false
	}
	c.Choices = append(c.Choices, ch)
	return s.consume(']') // more than one choice: encoding/json
}

// once reports whether a key is seen for the first time.
func once(seen *bool) bool {
	if *seen {
		return false
	}
	*seen = true
	return true
}

// content reads a delta or message object, null, or an object with a
// content member.
func (s *scanner) content(dst *string) bool {
	if s.null() {
		return true
	}
	seen := false
	return s.object(func(key string) bool {
		switch {
		case key == "content":
			return once(&seen) && s.stringOrNull(dst)
		case strings.EqualFold(key, "content"):
			return false
		}
		return s.skip(0)
	})
}

// stringOrNull reads a string into dst, or a null (which leaves dst).
func (s *scanner) stringOrNull(dst *string) bool {
	if s.null() {
		return true
	}
	s.ws()
	raw, ok := s.rawString()
	if !ok {
		return false
	}
	v, ok := unquote(raw)
	if !ok {
		return false
	}
	*dst = v
	return true
}

// rawString consumes a string and returns what is between its quotes,
// escapes and all. It rejects what encoding/json rejects: control
// characters and malformed escapes.
func (s *scanner) rawString() (string, bool) {
	if s.i >= len(s.s) || s.s[s.i] != '"' {
		return "", false
	}
	start := s.i + 1
	for i := start; i < len(s.s); i++ {
		switch b := s.s[i]; {
		case b == '"':
			s.i = i + 1
			return s.s[start:i], true
		case b < 0x20:
			return "", false
		case b == '\\':
			i++
			if i >= len(s.s) {
				return "", false
			}
			switch s.s[i] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
			case 'u':
				if i+4 >= len(s.s) {
					return "", false
				}
				for _, h := range []byte(s.s[i+1 : i+5]) {
					if hexVal(h) < 0 {
						return "", false
					}
				}
				i += 4
			default:
				return "", false
			}
		}
	}
	return "", false
}

func hexVal(b byte) rune {
	switch {
	case '0' <= b && b <= '9':
		return rune(b - '0')
	case 'a' <= b && b <= 'f':
		return rune(b - 'a' + 10)
	case 'A' <= b && b <= 'F':
		return rune(b - 'A' + 10)
	}
	return -1
}

// skip consumes any one value, validating it.
func (s *scanner) skip(depth int) bool {
	if depth > maxDepth {
		return false
	}
	s.ws()
	if s.i >= len(s.s) {
		return false
	}
	switch b := s.s[s.i]; {
	case b == '{':
		return s.object(func(string) bool { return s.skip(depth + 1) })
	case b == '[':
		s.i++
		if s.consume(']') {
			return true
		}
		for {
			if !s.skip(depth + 1) {
				return false
			}
			if s.consume(',') {
				continue
			}
			return s.consume(']')
		}
	case b == '"':
		_, ok := s.rawString()
		return ok
	case b == 't':
		return s.literal("true")
	case b == 'f':
		return s.literal("false")
	case b == 'n':
		return s.literal("null")
	case b == '-' || ('0' <= b && b <= '9'):
		return s.number()
	}
	return false
}

// number consumes a JSON number (RFC 8259's grammar).
func (s *scanner) number() bool {
	i := s.i
	if i < len(s.s) && s.s[i] == '-' {
		i++
	}
	switch {
	case i < len(s.s) && s.s[i] == '0':
		i++
	case i < len(s.s) && '1' <= s.s[i] && s.s[i] <= '9':
		for i < len(s.s) && '0' <= s.s[i] && s.s[i] <= '9' {
			i++
		}
	default:
		return false
	}
	if i < len(s.s) && s.s[i] == '.' {
		i++
		d := i
		for i < len(s.s) && '0' <= s.s[i] && s.s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	if i < len(s.s) && (s.s[i] == 'e' || s.s[i] == 'E') {
		i++
		if i < len(s.s) && (s.s[i] == '+' || s.s[i] == '-') {
			i++
		}
		d := i
		for i < len(s.s) && '0' <= s.s[i] && s.s[i] <= '9' {
			i++
		}
		if i == d {
			return false
		}
	}
	s.i = i
	return true
}

// unquote decodes the inside of a JSON string (validated by rawString)
// as encoding/json does: escapes decoded, a lone or malformed surrogate
// and every byte of invalid UTF-8 replaced by U+FFFD.
func unquote(raw string) (string, bool) {
	if !strings.Contains(raw, `\`) && utf8.ValidString(raw) {
		return strings.Clone(raw), true
	}
	b := make([]byte, 0, len(raw)+2*utf8.UTFMax)
	for i := 0; i < len(raw); {
		c := raw[i]
		switch {
		case c == '\\':
			i++
			switch raw[i] {
			case '"', '\\', '/':
				b = append(b, raw[i])
			case 'b':
				b = append(b, '\b')
			case 'f':
				b = append(b, '\f')
			case 'n':
				b = append(b, '\n')
			case 'r':
				b = append(b, '\r')
			case 't':
				b = append(b, '\t')
			case 'u':
				r := hex4(raw[i+1:])
				i += 4
				if utf16.IsSurrogate(r) {
					// A pair is this escape and the next, \uXXXX.
					if i+6 < len(raw) && raw[i+1] == '\\' && raw[i+2] == 'u' {
						if r2 := hex4(raw[i+3:]); utf16.DecodeRune(r, r2) != utf8.RuneError {
							b = utf8.AppendRune(b, utf16.DecodeRune(r, r2))
							i += 7
							continue
						}
					}
					r = utf8.RuneError
				}
				b = utf8.AppendRune(b, r)
			default:
				return "", false
			}
			i++
		case c < utf8.RuneSelf:
			b = append(b, c)
			i++
		default:
			r, size := utf8.DecodeRuneInString(raw[i:])
			i += size
			b = utf8.AppendRune(b, r)
		}
	}
	return string(b), true
}

// hex4 is the value of the 4 hex digits at the start of s (validated by
// rawString).
func hex4(s string) rune {
	var r rune
	for _, h := range []byte(s[:4]) {
		r = r<<4 | hexVal(h)
	}
	return r
}
