package upstream_test

import (
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// BenchmarkOpenAIRelay measures chunks relayed through the OpenAI client
// from a fast local fake. One op is one answer of 1000 chunks; ns/chunk and
// chunks/s are the figures to watch.
//
//   - upstreamtest: the fault-injecting fake, which encodes and flushes each
//     chunk on its own, so the figure includes its work and a loopback
//     write per chunk (the realistic shape of a live upstream).
//   - prebuilt: a body rendered once and written in one go, so the figure
//     is mostly the client's own cost (SSE parsing, JSON decoding, sends).
func BenchmarkOpenAIRelay(b *testing.B) {
	const chunks = 1000
	text := make([]string, chunks)
	for i := range text {
		text[i] = " token"
	}

	b.Run("upstreamtest", func(b *testing.B) {
		srv := upstreamtest.NewServer(b)
		srv.SetScript(upstreamtest.Script{Chunks: text})
		benchRelay(b, srv.URL(), chunks)
	})

	b.Run("prebuilt", func(b *testing.B) {
		var body strings.Builder
		body.WriteString(`data: {"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n")
		for _, t := range text {
			fmt.Fprintf(&body, `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"bench","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`+"\n\n", t)
		}
		body.WriteString(`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n")
		raw := body.String()
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			_, _ = io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			_, _ = io.WriteString(w, raw)
		}))
		b.Cleanup(ts.Close)
		benchRelay(b, ts.URL+"/v1", chunks)
	})
}

func benchRelay(b *testing.B, baseURL string, chunks int) {
	b.Helper()
	o, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: baseURL})
	if err != nil {
		b.Fatal(err)
	}
	req := upstream.Request{Model: "bench", Messages: []upstream.Message{{Role: "user", Content: "go"}}}
	ctx := b.Context()
	out := make(chan upstream.Chunk, 64)

	b.ReportAllocs()
	began := time.Now()
	n := 0
	for b.Loop() {
		errc := make(chan error, 1)
		go func() { errc <- o.Stream(ctx, req, out) }()
		got := 0
	recv:
		for {
			select {
			case <-out:
				got++
			case err := <-errc:
				if err != nil {
					b.Fatal(err)
				}
				break recv
			}
		}
		// Take what Stream buffered just before returning.
		for len(out) > 0 {
			<-out
			got++
		}
		if got != chunks {
			b.Fatalf("got %d chunks; expected %d", got, chunks)
		}
		n += got
	}
	elapsed := time.Since(began)
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(n), "ns/chunk")
	b.ReportMetric(float64(n)/elapsed.Seconds(), "chunks/s")
}
