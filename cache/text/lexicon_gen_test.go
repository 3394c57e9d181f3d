package text_test

import (
	"slices"
	"testing"

	"github.com/sluice-dev/sluice/cache/text"
)

// The generated lexicon (WordNet, CC-CEDICT) folds words whose most
// frequent senses agree, and nothing else. The sentences are made up for
// the test, not taken from any evaluation file.
func TestGeneratedLexiconFolds(t *testing.T) {
	t.Parallel()
	content := func(q string) []string { return text.Content(text.Normalize(q)) }
	facets := func(q string) []string { return text.Facets(text.Normalize(q)) }
	same := [][2]string{
		{"alter the layout", "change the layout"},               // one synset, both first senses
		{"the replacement of the filter", "replace the filter"}, // a nominalization takes its verb
		{"they went there", "they go there"},                    // an irregular form of go
		{"who approved the invoice", "who approves the invoice"},
		{"变更密码", "改变密码"}, // two CEDICT glosses agree on change/alter
		{"改变 layout", "alter layout"},
	}
	for _, p := range same {
		if a, b := content(p[0]), content(p[1]); !slices.Equal(a, b) {
			t.Errorf("content of %q = %q, of %q = %q; want equal", p[0], a, p[1], b)
		}
	}
	differ := [][2]string{
		{"learn chess", "teach chess"}, // learn is in teach's synset, but not its first sense
		{"休息", "剩余"},                   // share only the polysemous gloss "rest"
	}
	for _, p := range differ {
		if a, b := content(p[0]), content(p[1]); slices.Equal(a, b) {
			t.Errorf("content of %q and %q = %q; want different", p[0], p[1], a)
		}
	}
	// Antonyms of a most frequent sense are facets: never a semantic hit.
	for _, p := range [][2]string{
		{"is the box large", "is the box small"},
		{"is the crate huge", "is the crate tiny"}, // satellites of large and small
		{"a careful check", "a careless check"},
	} {
		if a, b := facets(p[0]), facets(p[1]); slices.Equal(a, b) {
			t.Errorf("facets of %q and %q = %q; want different", p[0], p[1], a)
		}
	}
	if a, b := facets("is the box large"), facets("is the box big"); !slices.Equal(a, b) {
		t.Errorf("facets of large %q and big %q differ; want one side of one pair", a, b)
	}
	// Numbers and hand-written entries keep their reading.
	if got := facets("half a dozen pallets"); !slices.Equal(got, []string{"qty:6pallet"}) {
		t.Errorf("half a dozen pallets: facets %q", got)
	}
}
