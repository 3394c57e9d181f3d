package text_test

import (
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/cache/text"
)

// TestHanSegment checks which characters the segmentation puts in a
// two-character word (want: those characters, in order): role characters inside a word (自由, 现在, 目的) are,
// role characters that mark a role (跟 between two nouns, 给 after 送, 对于)
// are not.
func TestHanSegment(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ run, want string }{
		{"自由党候选人", "自由"}, // 自 and 由 in a word (候选 is rarer than minFreq)
		{"线程跟进程", "进程"},  // 跟 alone: 进程 beats 跟进
		{"现在的目的", "现在目的"},
		{"送给他", ""}, // no word: 给 marks the recipient
		{"对于这个问题", "这个问题"},
	} {
		toks := strings.Split(tc.run, "")
		seg := text.HanSegment(toks)
		var got strings.Builder
		for i := range toks {
			if text.InWord(seg, i) {
				got.WriteString(toks[i])
			}
		}
		if got.String() != tc.want {
			t.Errorf("HanSegment(%s): %q, want %q", tc.run, got.String(), tc.want)
		}
	}
}
