package text_test

import (
	"slices"
	"testing"

	"github.com/sluice-dev/sluice/cache/text"
)

// The generated lexicon holds WordNet's antonyms as facets: a word whose
// most frequent sense has an antonym is a facet naming the pair and the
// word. Facets only refuse; each word is its own value, so two different
// words are never made one. The sentences are made up for the
// test, not taken from any evaluation file.
func TestGeneratedAntonymFacets(t *testing.T) {
	t.Parallel()
	facets := func(q string) []string { return text.Facets(text.Normalize(q)) }
	for _, p := range [][2]string{
		{"is the box large", "is the box small"},
		{"is the crate huge", "is the crate tiny"},  // satellites of large and small
		{"is the crate huge", "is the crate large"}, // its own sense, not its head's
		{"a careful check", "a careless check"},
		{"prices increased", "prices decreased"}, // inflected forms are listed
		{"what is on the sixth floor", "what is on the eighth floor"},
		{"is the product good", "is the product bad"},
		{"is the box large", "is the box big"},        // each word is its own value, synonyms too:
		{"is the boat afloat", "is the boat aimless"}, // a facet never makes two words one
	} {
		if a, b := facets(p[0]), facets(p[1]); slices.Equal(a, b) {
			t.Errorf("facets of %q and %q = %q; want different", p[0], p[1], a)
		}
	}
	for _, p := range [][2]string{
		{"prices increase", "prices increasing"}, // inflected forms are one word
		{"is the box large", "is the box large?"},
	} {
		if a, b := facets(p[0]), facets(p[1]); !slices.Equal(a, b) {
			t.Errorf("facets of %q = %q and of %q = %q; want equal", p[0], a, p[1], b)
		}
	}
	// Words read otherwise keep their reading: numbers, the hand-written
	// lexicon ("left" is remaining), and a plural that is a noun of its own
	// is not its singular's form ("goods" is not "good").
	if got := facets("half a dozen pallets"); !slices.Equal(got, []string{"qty:6pallet"}) {
		t.Errorf("half a dozen pallets: facets %q", got)
	}
	if a, b := facets("how many units are left"), facets("how many units remain"); !slices.Equal(a, b) {
		t.Errorf("left %q and remain %q: want equal facets", a, b)
	}
	if a, b := facets("are the goods here"), facets("are the good ones here"); slices.Equal(a, b) {
		t.Errorf("goods and good: facets %q; want different", a)
	}
}

// The stemmer takes an ending off only when a verb WordNet knows is left,
// so inflections meet and different words stay apart.
func TestStemmerMeetsInflectionsAndKeepsWordsApart(t *testing.T) {
	t.Parallel()
	content := func(q string) []string { return text.Content(text.Normalize(q)) }
	for _, p := range [][2]string{
		{"released builds", "release builds"},
		{"shipped crates", "ship crates"},
		{"picking lists", "pick list"},
		{"boxes of screws", "box of screw"},
		{"flushed caches", "flush cache"},
		{"scheduled reports", "schedule report"},
	} {
		if a, b := content(p[0]), content(p[1]); !slices.Equal(a, b) {
			t.Errorf("content of %q = %q, of %q = %q; want equal", p[0], a, p[1], b)
		}
	}
	for _, p := range [][2]string{
		{"how many pallets left the dock", "how many pallets are left on the dock"}, // left before its object: leave
		{"the mean wait time", "what does wait time mean"},
		{"my checked bag", "my bag"},
		{"caring costs", "car costs"},
		{"is the plane ready", "is the plan ready"},
		{"hated tasks", "hat tasks"},
		{"rated items", "rat items"},
		{"morning shift", "morn shift"},
		{"news feed", "new feed"},
		{"evening classes", "even classes"}, // a noun in -ing tagged more often than its stem's verb stays whole
		{"safety training", "safety train"},
	} {
		if a, b := content(p[0]), content(p[1]); slices.Equal(a, b) {
			t.Errorf("content of %q and %q = %q; want different", p[0], p[1], a)
		}
	}
}

// TestVerbTense checks the irregular forms WordNet gives the stemmer and
// the tense reading of a verb form, and that words of their own stay.
func TestVerbTense(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ w, verb, tense string }{
		{"ran", "run", "past"}, {"sent", "send", "past"}, {"bought", "buy", "past"}, {"lost", "lose", "past"},
		{"picked", "pick", "past"}, {"runs", "run", "present"}, {"ships", "ship", "present"},
		{"run", "", ""}, {"picking", "pick", "ing"}, {"news", "", ""}, {"morning", "", ""},
		{"found", "", ""}, {"rose", "", ""}, {"left", "", ""}, // verbs or nouns of their own
	} {
		if verb, tense := text.VerbTense(tc.w); verb != tc.verb || tense != tc.tense {
			t.Errorf("VerbTense(%q) = %q, %q; want %q, %q", tc.w, verb, tense, tc.verb, tc.tense)
		}
	}
	for w, want := range map[string]bool{"driver": true, "suppliers": true, "landlord": true, "order": false, "parcel": false, "card": false} {
		if text.IsPerson(w) != want {
			t.Errorf("IsPerson(%q) = %v, want %v", w, !want, want)
		}
	}
	content := func(q string) []string { return text.Content(text.Normalize(q)) }
	if a, b := content("sent invoices"), content("send invoices"); !slices.Equal(a, b) {
		t.Errorf("content of sent and send: %q, %q; want equal", a, b)
	}
	if a, b := content("found companies"), content("find companies"); slices.Equal(a, b) {
		t.Errorf("content of found and find: %q; want different", a)
	}
}
