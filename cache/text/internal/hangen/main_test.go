package main

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
)

// TestGeneratedFileIsCurrent regenerates cache/text/hanwords_gen.txt from
// jieba's dictionary when it is on the machine (Debian's python3-jieba)
// and checks that the committed file is what the generator makes of it.
func TestGeneratedFileIsCurrent(t *testing.T) {
	const dict = "/usr/lib/python3/dist-packages/jieba/dict.txt"
	if _, err := os.Stat(dict); err != nil {
		t.Skip("jieba not installed (apt-get install python3-jieba): generated word list not checked")
	}
	tabs, err := readDict(dict)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "gen.txt")
	if err := write(tabs, out); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile(filepath.Join("..", "..", "hanwords_gen.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatal("cache/text/hanwords_gen.txt is not what hangen makes of jieba's dictionary: run go run ./cache/text/internal/hangen")
	}
}
