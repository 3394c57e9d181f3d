package simserver_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go"
	"github.com/openai/openai-go/option"
	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/simserver"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func start(t *testing.T, cfg simserver.Config) (*simserver.Server, *httptest.Server) {
	t.Helper()
	s := simserver.New(cfg)
	hs := httptest.NewServer(s)
	t.Cleanup(hs.Close)
	return s, hs
}

func oai(hs *httptest.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(hs.URL+"/v1/"), option.WithAPIKey("x"),
		option.WithMaxRetries(0), option.WithHTTPClient(hs.Client()), option.WithRequestTimeout(30*time.Second))
}

func params(q string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    "sim-1",
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(q)},
	}
}

// TestOpenAIClient: the official client streams and non-streams from the
// server, and gets the simulated model's words, the same both ways.
func TestOpenAIClient(t *testing.T) {
	_, hs := start(t, simserver.Config{Gap: time.Millisecond, GapP99: 3 * time.Millisecond})
	c := oai(hs)
	ctx := t.Context()
	q := "how many SKU-10234 are left in zone A?"
	want := strings.Join(upstream.NewSim(upstream.SimConfig{}).Answer(upstream.Request{
		Model: "sim-1", Messages: []upstream.Message{{Role: "user", Content: q}}}), "")

	resp, err := c.Chat.Completions.New(ctx, params(q))
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Choices) != 1 || resp.Choices[0].Message.Content != want || resp.Choices[0].FinishReason != "stop" ||
		resp.Usage.CompletionTokens == 0 {
		t.Fatalf("completion %+v, want text %q", resp, want)
	}

	p := params(q)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	st := c.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	chunks := 0
	for st.Next() {
		acc.AddChunk(st.Current())
		chunks++
	}
	if err := st.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != want || acc.Choices[0].FinishReason != "stop" || acc.Usage.CompletionTokens == 0 {
		t.Fatalf("streamed %q (finish %q, usage %+v), want %q", got, acc.Choices[0].FinishReason, acc.Usage, want)
	}
	if chunks < 3 {
		t.Errorf("%d chunks: the answer was not streamed word by word", chunks)
	}

	p = params(q)
	p.MaxTokens = openai.Int(3)
	resp, err = c.Chat.Completions.New(ctx, p)
	if err != nil || resp.Choices[0].FinishReason != "length" || len(strings.Fields(resp.Choices[0].Message.Content)) != 3 {
		t.Fatalf("max_tokens 3: %v %+v", err, resp)
	}

	models, err := c.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "sim-1" {
		t.Fatalf("models: %v %+v", err, models)
	}
	emb, err := c.Embeddings.New(ctx, openai.EmbeddingNewParams{
		Model: "x", Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{q, q}}})
	if err != nil || len(emb.Data) != 2 || len(emb.Data[0].Embedding) == 0 {
		t.Fatalf("embeddings: %v %+v", err, emb)
	}
	for i, v := range emb.Data[0].Embedding {
		if v != emb.Data[1].Embedding[i] {
			t.Fatal("the same input gave two different vectors")
		}
	}
}

// TestCapacity: past capacity + overflow requests in flight, a request is
// answered 429 with Retry-After; the counters say so.
func TestCapacity(t *testing.T) {
	// Each request waits a minute for its first chunk unless cancelled: two
	// fill the capacity and the overflow, the third is refused.
	s, hs := start(t, simserver.Config{TTFT: time.Minute, Capacity: 1, Overflow: 1})
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	body := `{"model":"sim-1","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for range 2 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/chat/completions", strings.NewReader(body))
		wg.Go(func() {
			if resp, err := hs.Client().Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body) // until the cancel
				resp.Body.Close()
			}
		})
	}
	defer func() { cancel(); wg.Wait() }()
	for deadline := time.Now().Add(10 * time.Second); s.Stats().InFlight < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the two requests never got in flight: %+v", s.Stats())
		}
	}
	c := oai(hs)
	_, err := c.Chat.Completions.New(t.Context(), params("hi"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third request: %v, want a 429", err)
	}
	if st := s.Stats(); st.Rejected != 1 || st.PeakInFlight != 2 {
		t.Fatalf("stats %+v", st)
	}
	resp, err := hs.Client().Get(hs.URL + "/sim/stats")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var st simserver.Stats
	if err := json.NewDecoder(resp.Body).Decode(&st); err != nil || st.Rejected != 1 {
		t.Fatalf("GET /sim/stats: %v %+v", err, st)
	}
}

// TestFaults: an error rate of 1 answers 500; a drop rate of 1 cuts every
// stream before [DONE], which the client sees as an error.
func TestFaults(t *testing.T) {
	_, hs := start(t, simserver.Config{ErrorRate: 1})
	c := oai(hs)
	_, err := c.Chat.Completions.New(t.Context(), params("hi"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusInternalServerError {
		t.Fatalf("error rate 1: %v, want a 500", err)
	}

	s, hs := start(t, simserver.Config{DropRate: 1, Chunks: 10})
	c = oai(hs)
	st := c.Chat.Completions.NewStreaming(t.Context(), params("hi"))
	n := 0
	for st.Next() {
		n++
	}
	if st.Err() == nil || n >= 10 {
		t.Fatalf("drop rate 1: %d chunks, err %v; want a cut stream", n, st.Err())
	}
	if s.Stats().Dropped != 1 {
		t.Fatalf("stats %+v", s.Stats())
	}
}

// TestCapacityAtRunTime: POST /sim/capacity changes the capacity (the
// overflow follows in proportion) and refuses a bad body with a 400.
func TestCapacityAtRunTime(t *testing.T) {
	s, hs := start(t, simserver.Config{TTFT: time.Minute, Capacity: 2, Overflow: 2, TTFTSlope: 4})
	post := func(body string) (int, simserver.Stats) {
		t.Helper()
		resp, err := hs.Client().Post(hs.URL+"/sim/capacity", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var st simserver.Stats
		_ = json.NewDecoder(resp.Body).Decode(&st)
		return resp.StatusCode, st
	}
	for _, bad := range []string{``, `{}`, `{"capacity":-1}`, `{"capacity":"many"}`} {
		if code, _ := post(bad); code != http.StatusBadRequest {
			t.Errorf("POST /sim/capacity %q: %d, want 400", bad, code)
		}
	}
	if code, st := post(`{"capacity":1}`); code != http.StatusOK || st.Capacity != 1 || s.Stats().Capacity != 1 {
		t.Fatalf("POST /sim/capacity 1: %d %+v", code, st)
	}
	// Capacity 1, overflow 2·1/2 = 1: two in flight, the third refused.
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	body := `{"model":"sim-1","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	for range 2 {
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, hs.URL+"/v1/chat/completions", strings.NewReader(body))
		wg.Go(func() {
			if resp, err := hs.Client().Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	for deadline := time.Now().Add(10 * time.Second); s.Stats().InFlight < 2; time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the two requests never got in flight: %+v", s.Stats())
		}
	}
	c := oai(hs)
	_, err := c.Chat.Completions.New(t.Context(), params("hi"))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("third request at capacity 1: %v, want a 429", err)
	}
	s.SetCapacity(0) // unlimited
	if st := s.Stats(); st.Capacity != 0 || st.Rejected != 1 {
		t.Fatalf("stats %+v", st)
	}
}
