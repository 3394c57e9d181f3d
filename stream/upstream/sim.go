package upstream

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// Defaults of SimConfig.
const (
	DefaultSimTTFT      = 300 * time.Millisecond
	DefaultSimTTFTSigma = 0.6
	DefaultSimGap       = 30 * time.Millisecond
	DefaultSimGapSigma  = 0.5
)

// SimConfig configures the simulated model. The zero value gives a model
// with a 300ms median time to first token and a tail to a few seconds, and
// 20 to 80 words per answer. In cmd/sluice the delay knobs are the settings
// SLUICE_SIM_TTFT, SLUICE_SIM_TTFT_SIGMA, SLUICE_SIM_GAP and
// SLUICE_SIM_GAP_SIGMA.
//
// Delays are log-normal: median × e^(sigma·Z) with Z standard normal
// (clamped to ±4), so half of them are below the median and a few are many
// times above it, like a real model's.
type SimConfig struct {
	// TTFTMedian is the median delay before the first chunk.
	// Negative: no delay.
	// default: DefaultSimTTFT (300ms)
	TTFTMedian time.Duration
	// TTFTSigma is the log-normal shape of the first-chunk delay: 0.6
	// puts the 99th percentile near 4× the median. Negative: every delay
	// is exactly the median.
	// default: DefaultSimTTFTSigma (0.6)
	TTFTSigma float64
	// GapMedian is the median delay between two chunks.
	// Negative: no delay.
	// default: DefaultSimGap (30ms)
	GapMedian time.Duration
	// GapSigma is the log-normal shape of the gaps between chunks.
	// Negative: every gap is exactly the median.
	// default: DefaultSimGapSigma (0.5)
	GapSigma float64
	// Chunks is the length of every answer in chunks (one word each),
	// before a request's MaxTokens cuts it.
	// default: 0, derived from the request, between 20 and 80
	Chunks int
	// Seed varies the answers: the same Seed and request always give the
	// same text and the same chunks, on every instance. It does not affect
	// the delays, which are random on every call.
	// default: 0
	Seed uint64
	// Capacity is the hidden capacity C of the model: with n > C streams
	// in flight (this one included) a stream's first-token delay is
	// stretched by 1 + TTFTSlope·(n−C)/C (the excess waits in the model's
	// queue), and with n > C + Overflow it is refused at once with a
	// *StatusError 429 (Retry-After 1s). Sim.SetCapacity changes it at
	// run time. default: 0, unlimited
	Capacity int
	// Overflow is how many streams beyond Capacity are served slowly
	// before the 429s. default: 0, Capacity/2 (429 beyond 1.5·C);
	// negative: none
	Overflow int
	// TTFTSlope is how fast the first-token delay grows with the excess
	// beyond Capacity: 4 doubles it at 1.25·C. default: 4
	TTFTSlope float64
}

// SimStats are a Sim's counters.
type SimStats struct {
	Capacity  int   `json:"capacity"`
	InFlight  int64 `json:"in_flight"`
	Peak      int64 `json:"peak_in_flight"`
	Accepted  int64 `json:"accepted"`
	Rejected  int64 `json:"rejected_429"`
	Completed int64 `json:"completed"`
}

// Sim is the built-in simulated model (SLUICE_UPSTREAM=sim). It writes
// readable pseudo-English about the question, determined by the model and
// messages, one word per chunk, at a log-normal pace. It is safe for
// concurrent use.
type Sim struct {
	cfg SimConfig

	capacity  atomic.Int64
	inflight  atomic.Int64
	peak      atomic.Int64
	accepted  atomic.Int64
	rejected  atomic.Int64
	completed atomic.Int64
}

var (
	_ Upstream = (*Sim)(nil)
	_ Emitter  = (*Sim)(nil)
)

// NewSim returns a simulated model; cfg's zero fields take their defaults.
func NewSim(cfg SimConfig) *Sim {
	if cfg.TTFTMedian == 0 {
		cfg.TTFTMedian = DefaultSimTTFT
	}
	if cfg.TTFTSigma == 0 {
		cfg.TTFTSigma = DefaultSimTTFTSigma
	}
	if cfg.GapMedian == 0 {
		cfg.GapMedian = DefaultSimGap
	}
	if cfg.GapSigma == 0 {
		cfg.GapSigma = DefaultSimGapSigma
	}
	if cfg.TTFTSlope <= 0 {
		cfg.TTFTSlope = 4
	}
	s := &Sim{cfg: cfg}
	s.capacity.Store(int64(max(cfg.Capacity, 0)))
	return s
}

// SetCapacity changes the hidden capacity (SimConfig.Capacity) at run
// time; 0 is unlimited. The overflow stays Capacity/2 unless set.
func (s *Sim) SetCapacity(c int) { s.capacity.Store(int64(max(c, 0))) }

// Stats returns the counters now.
func (s *Sim) Stats() SimStats {
	return SimStats{
		Capacity: int(s.capacity.Load()), InFlight: s.inflight.Load(), Peak: s.peak.Load(),
		Accepted: s.accepted.Load(), Rejected: s.rejected.Load(), Completed: s.completed.Load(),
	}
}

// admit counts a stream in and returns the stretch of its first-token
// delay, or false when it is refused (over capacity plus overflow).
func (s *Sim) admit() (stretch float64, ok bool) {
	n := s.inflight.Add(1)
	c := s.capacity.Load()
	if c > 0 {
		over := int64(s.cfg.Overflow)
		if over == 0 {
			over = c / 2
		}
		if n > c+max(over, 0) {
			s.inflight.Add(-1)
			s.rejected.Add(1)
			return 0, false
		}
	}
	s.accepted.Add(1)
	for p := s.peak.Load(); n > p && !s.peak.CompareAndSwap(p, n); p = s.peak.Load() {
	}
	if c > 0 && n > c {
		return 1 + s.cfg.TTFTSlope*float64(n-c)/float64(c), true
	}
	return 1, true
}

// Name returns "sim".
func (s *Sim) Name() string { return "sim" }

// Stream sends Answer(req) on out, one chunk at a time: the first after a
// log-normal TTFT delay, the others after log-normal gaps. It returns nil
// when every chunk was sent, ErrLength when MaxTokens cut the answer, or
// ctx.Err() as soon as ctx is done.
func (s *Sim) Stream(ctx context.Context, req Request, out chan<- Chunk) error {
	return s.StreamTo(ctx, req, sendTo(ctx, out))
}

// StreamTo is Stream with each chunk passed to emit (Emitter).
func (s *Sim) StreamTo(ctx context.Context, req Request, emit func(Chunk) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	stretch, ok := s.admit()
	if !ok {
		return &StatusError{Code: 429, RetryAfter: time.Second, Body: "simulated upstream over capacity"}
	}
	defer s.inflight.Add(-1)
	// The answer is written once the first token is due, not before: a
	// stream that waits for its first token holds no text (every answer
	// has at least one chunk).
	var t *time.Timer // made at the first wait: a model without delays needs none
	defer func() {
		if t != nil {
			t.Stop()
		}
	}()
	wait := func(d time.Duration) error {
		if d <= 0 {
			return nil
		}
		if t == nil {
			t = time.NewTimer(d)
		} else {
			t.Reset(d)
		}
		select {
		case <-t.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	if err := wait(time.Duration(float64(lognormal(s.cfg.TTFTMedian, s.cfg.TTFTSigma)) * stretch)); err != nil {
		return err
	}
	whole := s.Answer(Request{Model: req.Model, Messages: req.Messages}) // the seed ignores MaxTokens
	chunks := whole
	if req.MaxTokens > 0 && req.MaxTokens < len(whole) {
		chunks = whole[:req.MaxTokens]
	}
	for i, text := range chunks {
		if i > 0 {
			if err := wait(lognormal(s.cfg.GapMedian, s.cfg.GapSigma)); err != nil {
				return err
			}
		}
		if err := emit(Chunk{Text: text}); err != nil {
			return err
		}
	}
	cut := len(chunks) < len(whole)
	s.completed.Add(1)
	if cut {
		return ErrLength
	}
	return nil
}

// lognormal draws median × e^(sigma·Z), Z standard normal clamped to ±4.
func lognormal(median time.Duration, sigma float64) time.Duration {
	if median <= 0 {
		return 0
	}
	if sigma <= 0 {
		return median
	}
	z := max(-4, min(4, rand.NormFloat64()))
	return time.Duration(float64(median) * math.Exp(sigma*z))
}

// Answer returns the chunks that Stream sends for req: words, each but the
// first with a leading space, so that their concatenation is the answer's
// text. The same Seed, model and messages always give the same chunks.
// MaxTokens, when positive, keeps at most that many chunks.
func (s *Sim) Answer(req Request) []string {
	rng := rand.New(simSource(s.cfg.Seed, req))
	n := s.cfg.Chunks
	if n <= 0 {
		n = 20 + rng.IntN(61)
	}
	words := simWords(rng, simTopic(req.Messages), n)
	if req.MaxTokens > 0 && req.MaxTokens < len(words) {
		words = words[:req.MaxTokens]
	}
	chunks := make([]string, len(words))
	for i, w := range words {
		if i > 0 {
			w = " " + w
		}
		chunks[i] = w
	}
	return chunks
}

// simSource seeds a PRNG from a hash of the seed, model and messages. Each
// string is length-prefixed, so that no two requests share an encoding.
func simSource(seed uint64, req Request) rand.Source {
	h := sha256.New()
	var buf [binary.MaxVarintLen64]byte
	put := func(s string) {
		h.Write(buf[:binary.PutUvarint(buf[:], uint64(len(s)))])
		h.Write([]byte(s))
	}
	h.Write(buf[:binary.PutUvarint(buf[:], seed)])
	put(req.Model)
	for _, m := range req.Messages {
		put(m.Role)
		put(m.Content)
	}
	sum := h.Sum(nil)
	return rand.NewPCG(binary.LittleEndian.Uint64(sum[0:8]), binary.LittleEndian.Uint64(sum[8:16]))
}

// simTopic picks the words the answer talks about: the significant words
// of the last user message (or of the last message), at most six, leaving
// out stop words and anything longer than 40 bytes.
func simTopic(msgs []Message) []string {
	prompt := ""
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" || prompt == "" {
			prompt = msgs[i].Content
			if msgs[i].Role == "user" {
				break
			}
		}
	}
	fields := strings.FieldsFunc(prompt, func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '-' && r != '_' && r != '\''
	})
	var topic []string
	seen := map[string]bool{}
	for _, f := range fields {
		f = strings.Trim(f, "-_'")
		low := strings.ToLower(f)
		if f == "" || len(f) > 40 || simStopwords[low] || seen[low] {
			continue
		}
		seen[low] = true
		topic = append(topic, f)
		if len(topic) == 6 {
			break
		}
	}
	return topic
}

// simWords writes n words of pseudo-English about topic.
func simWords(rng *rand.Rand, topic []string, n int) []string {
	subject := "your question"
	if len(topic) > 0 {
		subject = strings.Join(topic, " ")
	}
	words := strings.Fields("Here is what I found about " + subject + ":")
	pick := func(list []string) string { return list[rng.IntN(len(list))] }
	topicWord := func() string {
		if len(topic) == 0 {
			return pick(simNouns)
		}
		return topic[rng.IntN(len(topic))]
	}
	sentence := func() []string {
		tmpl := pick(simTemplates)
		var b strings.Builder
		for i := 0; i < len(tmpl); i++ {
			if tmpl[i] != '{' || i+2 >= len(tmpl) || tmpl[i+2] != '}' {
				b.WriteByte(tmpl[i])
				continue
			}
			switch tmpl[i+1] {
			case 'T':
				b.WriteString(subject)
			case 'W':
				b.WriteString(topicWord())
			case 'N':
				b.WriteString(pick(simNouns))
			case 'A':
				b.WriteString(pick(simAdjectives))
			case 'V':
				b.WriteString(pick(simVerbs))
			case 'Q':
				b.WriteString(strconv.Itoa(2 + rng.IntN(998)))
			case 'U':
				b.WriteString(pick(simUnits))
			}
			i += 2
		}
		s := b.String()
		r, size := utf8.DecodeRuneInString(s)
		return strings.Fields(string(unicode.ToUpper(r)) + s[size:])
	}
	// Fill n words with whole sentences, ending on a closer of exactly the
	// words left, so that every answer ends on a full stop.
	for tries := 0; len(words) < n; {
		left := n - len(words)
		if left < len(simClosers) {
			words = append(words, strings.Fields(simClosers[left])...)
			break
		}
		sw := sentence()
		if len(sw) > left && tries < 20 {
			tries++
			continue
		}
		words = append(words, sw...)
	}
	words = words[:n]
	last := strings.TrimRight(words[n-1], ",:;")
	if !strings.HasSuffix(last, ".") {
		last += "."
	}
	words[n-1] = last
	return words
}

var simTemplates = []string{
	"{W} is usually {A} when the {N} is {A}.",
	"The {N} for {W} was last checked {Q} {U} ago.",
	"Most teams {V} {W} within {Q} {U}.",
	"According to the {N} records, {W} covers about {Q} items.",
	"In short, {T} depends on the {N} and the {N}.",
	"A {A} {N} can {V} {W} without a {A} {N}.",
	"It is worth checking the {N} before you {V} {W}.",
	"Teams that {V} {W} often report a {A} {N}.",
	"The {A} estimate is {Q}, give or take a {N}.",
	"{W} and the {N} are closely related.",
	"If the {N} changes, {W} may need a {A} review.",
	"There is no {A} rule, but {Q} {U} is typical.",
}

// simClosers[i] is a closing sentence of i words.
var simClosers = []string{
	"",
	"Done.",
	"That's all.",
	"Hope this helps.",
	"That covers the basics.",
	"That is all for now.",
	"I hope this answers your question.",
}

var simNouns = []string{
	"inventory", "schedule", "supplier", "warehouse", "report", "budget",
	"forecast", "zone", "shipment", "policy", "dashboard", "ledger",
	"customer", "order", "process", "threshold", "catalog", "audit",
	"pipeline", "team", "region", "contract", "batch", "metric",
}

var simAdjectives = []string{
	"stable", "recent", "careful", "typical", "reliable", "seasonal",
	"accurate", "small", "large", "steady", "current", "detailed",
	"simple", "regular", "weekly", "formal", "clear", "useful",
}

var simVerbs = []string{
	"update", "review", "track", "count", "verify", "adjust", "measure",
	"compare", "reconcile", "plan", "monitor", "restock", "confirm",
}

var simUnits = []string{"minutes", "hours", "days", "weeks", "months"}

var simStopwords = func() map[string]bool {
	m := map[string]bool{}
	for _, w := range strings.Fields(`a an the and or but if of to in on at by for from with
		about into over under as is are was were be been being am do does did done have has had
		i me my we our you your he she it its they them their this that these those there here
		what which who whom whose when where why how much many more most some any all each
		can could would should will shall may might must not no yes so than then too very
		just please tell give show explain let let's know want need left right now also`) {
		m[w] = true
	}
	return m
}()
