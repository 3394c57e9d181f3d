package stream_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/sluice-dev/sluice/stream"
)

func TestTranscriptAppendReadFinish(t *testing.T) {
	tr := stream.NewTranscript()
	if seq := tr.Append(""); seq != 0 {
		t.Fatalf("empty append got seq %d", seq)
	}
	for i := 1; i <= 5; i++ {
		if seq := tr.Append(fmt.Sprint(i)); seq != i {
			t.Fatalf("seq %d, want %d", seq, i)
		}
	}
	p := tr.Read(2, 0)
	if p.First != 3 || strings.Join(p.Deltas, "") != "345" || p.End != nil || p.Pending != 3 {
		t.Fatalf("page %+v", p)
	}
	p = tr.Read(0, 2) // at most 2 bytes: "12"
	if strings.Join(p.Deltas, "") != "12" || p.Last() != 2 || p.Pending != 5 {
		t.Fatalf("bounded page %+v", p)
	}
	if !tr.Finish(stream.End{Event: "done", FinishReason: "stop"}) || tr.Finish(stream.End{Event: "error"}) {
		t.Fatal("Finish must succeed exactly once")
	}
	if tr.Append("late") != 0 {
		t.Fatal("append after the end")
	}
	p = tr.Read(3, 0)
	if p.End == nil || p.End.Chunks != 5 || p.End.Event != "done" {
		t.Fatalf("end page %+v", p)
	}
	if p := tr.Read(0, 1); p.End != nil {
		t.Fatal("End must come only with the last delta")
	}
	text, n, end := tr.Snapshot()
	if text != "12345" || n != 5 || end == nil {
		t.Fatalf("snapshot %q %d %v", text, n, end)
	}
}

// TestTranscriptReadBeyondTheEnd: a cursor past the last delta (a
// client's Last-Event-ID ahead of the task) reads an empty page, also
// while there is no delta at all.
func TestTranscriptReadBeyondTheEnd(t *testing.T) {
	tr := stream.NewTranscript()
	if p := tr.Read(5, 0); len(p.Deltas) != 0 || p.Pending != 0 || p.End != nil {
		t.Fatalf("empty transcript, cursor 5: %+v", p)
	}
	tr.Append("a")
	if p := tr.Read(7, 0); len(p.Deltas) != 0 || p.Pending != 0 {
		t.Fatalf("one delta, cursor 7: %+v", p)
	}
	tr.Finish(stream.End{Event: "done"})
	if p := tr.Read(7, 0); p.End == nil {
		t.Fatalf("a cursor past the end must still see the end: %+v", p)
	}
}

// TestTranscriptReadersNeverBlockTheWriter: many readers follow one
// transcript concurrently; each sees every delta exactly once and the end.
func TestTranscriptReadersNeverBlockTheWriter(t *testing.T) {
	tr := stream.NewTranscript()
	const n, readers = 2000, 16
	var wg sync.WaitGroup
	got := make([]string, readers)
	for r := range readers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var b strings.Builder
			cursor := 0
			for {
				p := tr.Read(cursor, 64)
				for _, d := range p.Deltas {
					b.WriteString(d)
				}
				cursor = p.Last()
				if p.End != nil {
					got[r] = b.String()
					return
				}
				if len(p.Deltas) == 0 {
					<-p.Changed
				}
			}
		}()
	}
	var want strings.Builder
	for i := range n {
		s := fmt.Sprintf("%d,", i)
		want.WriteString(s)
		tr.Append(s)
	}
	tr.Finish(stream.End{Event: "done"})
	wg.Wait()
	for r, g := range got {
		if g != want.String() {
			t.Fatalf("reader %d saw %d bytes, want %d", r, len(g), want.Len())
		}
	}
}

// discardWriter is a ResponseWriter that writes nowhere.
type discardWriter struct{ h http.Header }

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Flush()                      {}

// BenchmarkTranscriptAppend is the producer's cost per chunk.
func BenchmarkTranscriptAppend(b *testing.B) {
	tr := stream.NewTranscript()
	for b.Loop() {
		tr.Append("token ")
	}
}

// BenchmarkFanout is the cost per chunk and per connection of delivering
// a stream to N connections that keep up (each chunk its own event,
// encoded with go-sse and flushed).
func BenchmarkFanout(b *testing.B) {
	for _, conns := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("conns=%d", conns), func(b *testing.B) {
			const chunksPerTask = 200
			b.ReportAllocs()
			for b.Loop() {
				tr := stream.NewTranscript()
				var wg sync.WaitGroup
				for range conns {
					wg.Add(1)
					go func() {
						defer wg.Done()
						c := stream.Conn{Config: stream.ConnConfig{Heartbeat: -1}, Framing: stream.TaskEvents{Meta: []byte(`{}`)}}
						c.Serve(context.Background(), &discardWriter{h: http.Header{}}, tr, 0)
					}()
				}
				for range chunksPerTask {
					tr.Append("token ")
				}
				tr.Finish(stream.End{Event: "done"})
				wg.Wait()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*chunksPerTask*conns), "ns/chunk/conn")
		})
	}
}
