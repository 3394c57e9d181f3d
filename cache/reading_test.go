package cache

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sync"
	"testing"
)

// TestVerifyPairOnlyReads checks what sharing a stored question's reading
// between lookups (Config.Readings) rests on: verifyPair leaves both of its
// signatures as signature made them, over every pair of cache/testdata.
func TestVerifyPairOnlyReads(t *testing.T) {
	files, err := filepath.Glob(filepath.Join("testdata", "*.jsonl"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no pair files: %v", err)
	}
	n := 0
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		for sc.Scan() {
			var p struct{ A, B string }
			if json.Unmarshal(sc.Bytes(), &p) != nil || p.A == "" {
				continue
			}
			sa, sb := signature(p.A), signature(p.B)
			verifyPair(sa, sb)
			verifyPair(sb, sa)
			if !reflect.DeepEqual(sa, signature(p.A)) || !reflect.DeepEqual(sb, signature(p.B)) {
				t.Fatalf("%s: verifyPair changed a reading of %q / %q", path, p.A, p.B)
			}
			n++
		}
		f.Close()
	}
	if n < 1000 {
		t.Fatalf("only %d pairs read", n)
	}
}

// TestReadingsShared runs lookups that verify the same stored questions
// from several goroutines at once (run with -race): each decides as the
// cache without kept readings does, and the readings kept stay within
// Config.Readings.
func TestReadingsShared(t *testing.T) {
	ns := Namespace{Namespace: "readings", Model: "m"}
	stored := []string{
		"How many pallets were moved from dock 3 to dock 7 today?",
		"Who approved the refund for order 5521?",
		"这些包裹都签收了吗",
	}
	asked := []string{
		"How many pallets were moved from dock 7 to dock 3 today?", // refused: direction
		"who approved the refund for order 5521",                   // exact after normalization
		"Who approved the refund for order 5521, please?",          // a semantic hit
		"这些包裹有签收的吗",                                                // refused: scope
	}
	kept := New(Config{Readings: 2})
	none := New(Config{Readings: -1})
	for _, c := range []*Cache{kept, none} {
		for _, q := range stored {
			c.Store(context.Background(), ns, q, c.Generation(ns), Answer{Chunks: []string{"a"}})
		}
	}
	want := map[string]string{}
	for _, q := range asked {
		r := none.Lookup(context.Background(), ns, q)
		want[q] = fmt.Sprint(r.Hit, r.Kind)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				q := asked[(g+i)%len(asked)]
				if r := kept.Lookup(context.Background(), ns, q); fmt.Sprint(r.Hit, r.Kind) != want[q] {
					t.Errorf("%q: hit, kind %v %v with kept readings, want %s", q, r.Hit, r.Kind, want[q])
					return
				}
			}
		}()
	}
	wg.Wait()
	if n := kept.readings.Len(); n > 2 {
		t.Errorf("%d readings kept, want at most Config.Readings (2)", n)
	}
	if none.readings != nil {
		t.Error("Config.Readings < 0 keeps readings")
	}
}
