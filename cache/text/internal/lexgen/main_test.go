package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFileIsCurrent regenerates cache/text/lexicon_gen.txt from
// WordNet when it is on the machine (/usr/share/wordnet, Debian's
// wordnet-base) and checks that the committed file is what the generator
// makes of it.
func TestGeneratedFileIsCurrent(t *testing.T) {
	const wnDir = "/usr/share/wordnet"
	if _, err := os.Stat(filepath.Join(wnDir, "data.noun")); err != nil {
		t.Skip("WordNet not installed (apt-get install wordnet-base): generated lexicon not checked")
	}
	wn, err := readWordNet(wnDir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "gen.txt")
	if err := generate(wn, out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "lexicon_gen.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("cache/text/lexicon_gen.txt is not what lexgen makes of WordNet: run go run ./cache/text/internal/lexgen")
	}
}
