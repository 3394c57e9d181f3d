package upstream_test

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/stream/upstream"
)

// fastSim has no delays, for tests about the text.
func fastSim(cfg upstream.SimConfig) *upstream.Sim {
	cfg.TTFTMedian, cfg.GapMedian = -1, -1
	return upstream.NewSim(cfg)
}

func TestSimName(t *testing.T) {
	t.Parallel()
	if n := upstream.NewSim(upstream.SimConfig{}).Name(); n != "sim" {
		t.Errorf("got Name %q; expected sim", n)
	}
}

func TestSimDefaults(t *testing.T) {
	t.Parallel()
	cfg := upstream.NewSim(upstream.SimConfig{}).Config()
	want := upstream.SimConfig{TTFTMedian: 300 * time.Millisecond, TTFTSigma: 0.6, GapMedian: 30 * time.Millisecond, GapSigma: 0.5, TTFTSlope: 4}
	if cfg != want {
		t.Errorf("got %+v; expected %+v", cfg, want)
	}
}

func TestSimAnswerIsDeterministic(t *testing.T) {
	t.Parallel()
	req := ask("how many SKU-10234 are left in zone A?")
	a1 := upstream.NewSim(upstream.SimConfig{}).Answer(req)
	a2 := upstream.NewSim(upstream.SimConfig{}).Answer(req)
	if !reflect.DeepEqual(a1, a2) {
		t.Fatalf("two sims answered the same request differently:\n%q\n%q", a1, a2)
	}
	if n := len(a1); n < 20 || n > 80 {
		t.Errorf("got %d chunks; expected 20 to 80", n)
	}
	text := strings.Join(a1, "")
	if !strings.HasPrefix(text, "Here is what I found about SKU-10234 zone:") {
		t.Errorf("answer %q does not open on the question's words", text)
	}
	if !strings.HasSuffix(text, ".") {
		t.Errorf("answer %q does not end a sentence", text)
	}
	for i, c := range a1 {
		if c == "" || (i > 0 && !strings.HasPrefix(c, " ")) || strings.TrimSpace(c) != c[min(1, i):] {
			t.Errorf("chunk %d = %q; expected one word, with a leading space after the first", i, c)
		}
	}
	t.Logf("answer: %s", text)

	// Stream sends exactly Answer's chunks.
	got, err := collect(t, testCtx(t), fastSim(upstream.SimConfig{}), req)
	if err != nil || !reflect.DeepEqual(got, a1) {
		t.Errorf("Stream sent %q, %v; expected Answer's %q", got, err, a1)
	}
}

func TestSimAnswerDependsOnRequest(t *testing.T) {
	t.Parallel()
	sim := upstream.NewSim(upstream.SimConfig{})
	base := ask("what is the tuition?")
	other := ask("which city is it in?")
	otherModel := base
	otherModel.Model = "m-2"
	history := upstream.Request{Model: base.Model, Messages: append([]upstream.Message{{Role: "system", Content: "x"}}, base.Messages...)}
	a := strings.Join(sim.Answer(base), "")
	for name, req := range map[string]upstream.Request{"prompt": other, "model": otherModel, "history": history} {
		if b := strings.Join(sim.Answer(req), ""); a == b {
			t.Errorf("a different %s gave the same answer %q", name, a)
		}
	}
	seeded := strings.Join(upstream.NewSim(upstream.SimConfig{Seed: 42}).Answer(base), "")
	if seeded == a {
		t.Errorf("a different Seed gave the same answer %q", a)
	}
}

func TestSimNoUserMessage(t *testing.T) {
	t.Parallel()
	for _, req := range []upstream.Request{{}, ask("the of and?")} {
		got := strings.Join(upstream.NewSim(upstream.SimConfig{}).Answer(req), "")
		if !strings.HasPrefix(got, "Here is what I found about your question:") {
			t.Errorf("got %q; expected the generic opening", got)
		}
	}
}

func TestSimChunksAndMaxTokens(t *testing.T) {
	t.Parallel()
	sim := fastSim(upstream.SimConfig{Chunks: 50})
	req := ask("pallet count")
	full := sim.Answer(req)
	if len(full) != 50 {
		t.Fatalf("got %d chunks; expected Chunks = 50", len(full))
	}
	for _, max := range []int{1, 7, 49} {
		req.MaxTokens = max
		got, err := collect(t, testCtx(t), sim, req)
		if !errors.Is(err, upstream.ErrLength) {
			t.Fatalf("Stream cut by MaxTokens %d: got %v; expected ErrLength", max, err)
		}
		if !reflect.DeepEqual(got, full[:max]) {
			t.Errorf("MaxTokens %d: got %q; expected the first %d chunks of %q", max, got, max, full)
		}
	}
	req.MaxTokens = 500
	if got := sim.Answer(req); !reflect.DeepEqual(got, full) {
		t.Errorf("MaxTokens above the length changed the answer: %q", got)
	}
}

func TestSimCancelStopsPromptly(t *testing.T) {
	t.Parallel()
	t.Run("before the first chunk", func(t *testing.T) {
		t.Parallel()
		sim := upstream.NewSim(upstream.SimConfig{TTFTMedian: time.Hour, TTFTSigma: -1})
		ctx, cancel := context.WithCancel(testCtx(t))
		r := start(ctx, sim, ask("hi"))
		cancel()
		if err := r.returnsWithin(t, promptly); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v; expected context.Canceled", err)
		}
	})
	t.Run("between chunks", func(t *testing.T) {
		t.Parallel()
		sim := upstream.NewSim(upstream.SimConfig{TTFTMedian: -1, GapMedian: time.Hour, GapSigma: -1})
		ctx, cancel := context.WithCancel(testCtx(t))
		r := start(ctx, sim, ask("hi"))
		r.next(t)
		cancel()
		if err := r.returnsWithin(t, promptly); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v; expected context.Canceled", err)
		}
	})
	t.Run("blocked on out", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(testCtx(t))
		r := start(ctx, fastSim(upstream.SimConfig{}), ask("hi")) // nobody reads r.out.
		cancel()
		if err := r.returnsWithin(t, promptly); !errors.Is(err, context.Canceled) {
			t.Errorf("got %v; expected context.Canceled", err)
		}
	})
	t.Run("already cancelled", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(testCtx(t))
		cancel()
		got, err := collect(t, ctx, fastSim(upstream.SimConfig{}), ask("hi"))
		if len(got) != 0 || !errors.Is(err, context.Canceled) {
			t.Errorf("got %q, %v; expected nothing, context.Canceled", got, err)
		}
	})
}

// TestSimDelaysFollowMedians checks the pace loosely: timers never fire
// early, so the lower bounds are safe; the upper bounds are generous for
// loaded machines.
func TestSimDelaysFollowMedians(t *testing.T) {
	t.Parallel()
	const (
		ttft   = 40 * time.Millisecond
		gap    = 2 * time.Millisecond
		chunks = 40
	)
	sim := upstream.NewSim(upstream.SimConfig{TTFTMedian: ttft, TTFTSigma: 0.1, GapMedian: gap, GapSigma: 0.1, Chunks: chunks})
	began := time.Now()
	r := start(testCtx(t), sim, ask("pace"))
	r.next(t)
	first := time.Since(began)
	got, err := r.rest(t)
	total := time.Since(began)
	if err != nil || len(got) != chunks-1 {
		t.Fatalf("got %d more chunks, %v; expected %d, nil", len(got), err, chunks-1)
	}
	// With sigma 0.1 and Z clamped to ±4, every delay is within e^±0.4 of
	// its median (0.67× to 1.5×).
	if first < ttft*6/10 || first > 2*time.Second {
		t.Errorf("first chunk after %v; expected about %v", first, ttft)
	}
	gaps := total - first
	if min := time.Duration(chunks-1) * gap * 6 / 10; gaps < min || gaps > 5*time.Second {
		t.Errorf("%d gaps took %v; expected about %v", chunks-1, gaps, time.Duration(chunks-1)*gap)
	}
	t.Logf("first chunk %v, %d gaps %v", first, chunks-1, gaps)
}

// TestSimTTFTHasATail draws many first-chunk delays with a tiny median and
// checks their median and spread loosely.
func TestSimTTFTHasATail(t *testing.T) {
	t.Parallel()
	const median = 5 * time.Millisecond
	sim := upstream.NewSim(upstream.SimConfig{TTFTMedian: median, TTFTSigma: 0.6, GapMedian: -1, Chunks: 1})
	const n = 60
	ds := make([]time.Duration, n)
	for i := range ds {
		began := time.Now()
		if _, err := collect(t, testCtx(t), sim, ask("tail")); err != nil {
			t.Fatal(err)
		}
		ds[i] = time.Since(began)
	}
	below := 0
	longest := time.Duration(0)
	for _, d := range ds {
		if d < median {
			below++
		}
		longest = max(longest, d)
	}
	// About half are below the median; timer overhead only lengthens
	// delays, so expect at least a few, and a tail above 2× the median.
	if below < 3 || longest < 2*median {
		t.Errorf("%d of %d delays below %v, longest %v; expected a log-normal spread", below, n, median, longest)
	}
}

func TestSimAnswerLengthIsExact(t *testing.T) {
	t.Parallel()
	prompts := []string{"", "hi", "how many SKU-10234 are left in zone A of the north warehouse today?"}
	for n := 1; n <= 100; n++ {
		sim := upstream.NewSim(upstream.SimConfig{Chunks: n})
		for _, p := range prompts {
			got := sim.Answer(ask(p))
			text := strings.Join(got, "")
			if len(got) != n || !strings.HasSuffix(text, ".") {
				t.Fatalf("Chunks %d, prompt %q: got %d chunks %q; expected %d ending in a full stop", n, p, len(got), text, n)
			}
		}
	}
}

func TestSimUnicodePrompt(t *testing.T) {
	t.Parallel()
	for _, p := range []string{"été à Paris?", "仓库里还有多少货", "ünïcödé ÉLAN", strings.Repeat("x", 10_000) + " pallets"} {
		for seed := range uint64(20) {
			text := strings.Join(upstream.NewSim(upstream.SimConfig{Seed: seed}).Answer(ask(p)), "")
			if !utf8.ValidString(text) {
				t.Fatalf("prompt %.20q seed %d: invalid UTF-8 in %q", p, seed, text)
			}
			if len(text) > 2000 {
				t.Fatalf("prompt %.20q: answer of %d bytes echoes too much of the prompt", p, len(text))
			}
		}
	}
}

// A Sim with a hidden capacity C: beyond C streams in flight the first
// token is later (1 + 4·(n−C)/C), beyond C + C/2 a stream is refused
// with a 429 at once, and SetCapacity moves C at run time.
func TestSimCapacity(t *testing.T) {
	t.Parallel()
	s := upstream.NewSim(upstream.SimConfig{Capacity: 2, TTFTMedian: 20 * time.Millisecond, TTFTSigma: -1, GapMedian: -1, Chunks: 3})
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	// hold opens a stream nobody reads: it stays in flight until cancel.
	hold := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_ = s.Stream(ctx, ask("hold"), make(chan upstream.Chunk))
		}()
	}
	waitInFlight := func(n int64) {
		t.Helper()
		for deadline := time.Now().Add(5 * time.Second); s.Stats().InFlight != n; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("in flight %d, want %d", s.Stats().InFlight, n)
			}
		}
	}
	hold()
	hold()
	waitInFlight(2)
	// The third is within the overflow (1): served, its first token
	// stretched 1 + 4·(3−2)/2 = 3 times, 60ms.
	out := make(chan upstream.Chunk, 8)
	start := time.Now()
	wg.Add(1)
	errc := make(chan error, 1)
	go func() { defer wg.Done(); errc <- s.Stream(ctx, ask("third"), out) }()
	<-out
	if d := time.Since(start); d < 60*time.Millisecond {
		t.Errorf("first token of the 3rd stream after %s, want at least 60ms (3 × 20ms)", d)
	}
	if err := <-errc; err != nil {
		t.Fatalf("third stream: %v", err)
	}
	hold()
	waitInFlight(3)
	// 3 in flight = C + C/2: the next is refused.
	err := s.Stream(ctx, ask("fifth"), make(chan upstream.Chunk, 8))
	var se *upstream.StatusError
	if !errors.As(err, &se) || se.Code != 429 || se.RetryAfter != time.Second {
		t.Fatalf("over capacity: %v, want a 429 with Retry-After 1s", err)
	}
	if st := s.Stats(); st.Rejected != 1 || st.Peak != 3 || st.Capacity != 2 || st.InFlight != 3 || st.Accepted != 4 {
		t.Fatalf("stats %+v", st)
	}
	s.SetCapacity(10)
	out = make(chan upstream.Chunk, 8)
	if err := s.Stream(ctx, ask("after"), out); err != nil {
		t.Fatalf("after raising the capacity: %v", err)
	}
}
