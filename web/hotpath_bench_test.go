package web_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// The hot-path benchmarks of issue 16: one op is one whole request over
// real HTTP (client → web handler → orchestrator → upstream client →
// transcript → write loop → client), so ns/op, B/op and allocs/op include
// the Go HTTP client that reads the answer and the zero-latency upstream
// that writes it. Compare them before and after a change with benchstat;
// `valgrind --tool=callgrind` on one of them counts instructions per
// request (docs/performance.md).

// benchChunks is the answer length of scenario 1: 20 chunks.
const benchChunks = 20

// zeroLatencyUpstream is an OpenAI-compatible upstream answering every
// chat completion with the same 20-chunk stream, rendered once, with no
// delay, so that it costs as little as possible next to sluice's own
// work. perChunk flushes every chunk on its own (as a model server, and
// `sluice sim-upstream -gap 0`, do: sluice then reads and relays them
// one by one); otherwise the answer is one write.
func zeroLatencyUpstream(b *testing.B, perChunk bool) upstream.Upstream {
	b.Helper()
	var body strings.Builder
	body.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"bench","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
	for i := range benchChunks {
		fmt.Fprintf(&body, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"bench","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`+"\n\n", fmt.Sprintf(" word%d", i))
	}
	body.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"bench","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
	raw := body.String()
	events := strings.SplitAfter(raw, "\n\n")
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		if !perChunk {
			_, _ = io.WriteString(w, raw)
			return
		}
		rc := http.NewResponseController(w)
		for _, ev := range events {
			if _, err := io.WriteString(w, ev); err != nil || rc.Flush() != nil {
				return
			}
		}
	}))
	b.Cleanup(ts.Close)
	up, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: ts.URL + "/v1", Name: "zero"})
	if err != nil {
		b.Fatal(err)
	}
	return up
}

// post sends body to path and reads the whole answer, returning its
// status and the X-Cache header.
func (e *env) post(b *testing.B, path, body string) (int, string, int) {
	b.Helper()
	req, err := http.NewRequest(http.MethodPost, e.URL+path, strings.NewReader(body))
	if err != nil {
		b.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := e.HTTP.Do(req)
	if err != nil {
		b.Fatal(err)
	}
	n, _ := io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return resp.StatusCode, resp.Header.Get("X-Cache"), int(n)
}

// writeCounter counts the write loop's writes (each one write and one
// flush to the client).
type writeCounter struct{ writes atomic.Int64 }

func (*writeCounter) ConnOpened()                 {}
func (*writeCounter) ConnClosed(stream.ConnStats) {}
func (w *writeCounter) ConnWrote(_, _, _ int)     { w.writes.Add(1) }

// latencies records each op's duration and reports p50 and p99.
type latencies []time.Duration

func (l latencies) report(b *testing.B) {
	b.Helper()
	if len(l) == 0 {
		return
	}
	slices.Sort(l)
	b.ReportMetric(float64(l[len(l)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(l[len(l)*99/100].Nanoseconds()), "p99-ns")
}

// BenchmarkStreamedRequest is scenario 1's request: a cache-bypassing
// streamed answer of 20 chunks from a zero-latency upstream, on the task
// door (POST /v1/stream) and on the OpenAI door (POST
// /v1/chat/completions, "stream": true); "-flushed": the upstream
// flushes each chunk. writes/op counts the write loop's writes (each a
// write and a flush to the client).
func BenchmarkStreamedRequest(b *testing.B) {
	doors := []struct {
		name, path, body, last string
		perChunk               bool
	}{
		{"task", "/v1/stream", `{"prompt":"bench","nocache":true}`, "event: done", false},
		{"openai", "/v1/chat/completions", `{"messages":[{"role":"user","content":"bench"}],"stream":true,"sluice":{"nocache":true}}`, "data: [DONE]", false},
		{"task-flushed", "/v1/stream", `{"prompt":"bench","nocache":true}`, "event: done", true},
		{"openai-flushed", "/v1/chat/completions", `{"messages":[{"role":"user","content":"bench"}],"stream":true,"sluice":{"nocache":true}}`, "data: [DONE]", true},
	}
	for _, d := range doors {
		b.Run(d.name, func(b *testing.B) {
			var w writeCounter
			e := newEnv(b, envOpts{Upstream: zeroLatencyUpstream(b, d.perChunk), Orch: orchestrator.Config{Budget: 10000}, Web: web.Config{ConnObserver: &w}})
			// Check the answer once, whole.
			resp := e.do(context.Background(), http.MethodPost, d.path, d.body)
			raw, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK || !strings.Contains(string(raw), "word19") || !strings.Contains(string(raw), d.last) {
				b.Fatalf("%s: %d %s", d.path, resp.StatusCode, raw)
			}
			b.ReportAllocs()
			w.writes.Store(0)
			n := 0
			for b.Loop() {
				if st, _, _ := e.post(b, d.path, d.body); st != http.StatusOK {
					b.Fatalf("%s: %d", d.path, st)
				}
				n++
			}
			b.ReportMetric(float64(w.writes.Load())/float64(n), "writes/op")
		})
	}
}

// BenchmarkRefusal is a request refused at once because the budget is
// full (503 overloaded, before any byte of a stream), on both doors.
func BenchmarkRefusal(b *testing.B) {
	e := newEnv(b, envOpts{Orch: orchestrator.Config{Budget: 1}})
	e.Up.SetScript(upstreamtest.Script{StallAfterHeaders: true})
	ctx, cancel := context.WithCancel(context.Background())
	hold := e.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": "hold the slot", "nocache": true, "detach": false})
	b.Cleanup(func() {
		cancel()
		_, _ = io.Copy(io.Discard, hold.Body)
		hold.Body.Close()
		e.waitIdle()
	})
	if hold.StatusCode != http.StatusOK {
		b.Fatalf("holder: %d", hold.StatusCode)
	}
	doors := []struct{ name, path, body string }{
		{"task", "/v1/stream", `{"prompt":"a miss","nocache":true}`},
		{"openai", "/v1/chat/completions", `{"messages":[{"role":"user","content":"a miss"}],"stream":true,"sluice":{"nocache":true}}`},
	}
	for _, d := range doors {
		b.Run(d.name, func(b *testing.B) {
			b.ReportAllocs()
			lat := make(latencies, 0, 1024)
			for b.Loop() {
				t0 := time.Now()
				if st, _, _ := e.post(b, d.path, d.body); st != http.StatusServiceUnavailable {
					b.Fatalf("%s with the budget full: %d", d.path, st)
				}
				lat = append(lat, time.Since(t0))
			}
			lat.report(b)
		})
	}
}

// BenchmarkCacheHitEndToEnd is a cache hit of a 20-chunk answer served
// end to end over HTTP, on both doors, with p50 and p99 per request.
func BenchmarkCacheHitEndToEnd(b *testing.B) {
	e := newEnv(b, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks(benchChunks, "word")})
	doors := []struct{ name, path, body string }{
		{"task", "/v1/stream", `{"prompt":"benchmark question about SKU-1"}`},
		{"openai", "/v1/chat/completions", `{"messages":[{"role":"user","content":"benchmark question about SKU-2"}],"stream":true}`},
	}
	for _, d := range doors {
		b.Run(d.name, func(b *testing.B) {
			e.post(b, d.path, d.body) // fills the cache
			e.waitIdle()
			b.ReportAllocs()
			lat := make(latencies, 0, 1024)
			for b.Loop() {
				t0 := time.Now()
				if st, xc, _ := e.post(b, d.path, d.body); st != http.StatusOK || xc != "HIT" {
					b.Fatalf("%s: %d %s", d.path, st, xc)
				}
				lat = append(lat, time.Since(t0))
			}
			lat.report(b)
		})
	}
}
