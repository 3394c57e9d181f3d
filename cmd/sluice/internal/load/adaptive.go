package load

// The adaptive-budget experiment (sluice load -adaptive-experiment): a
// load above the upstream's capacity while the budget's limit and the
// sim-upstream's capacity and 429s are sampled, then, per stretch of
// constant capacity, how soon the limit settled within a band around the
// capacity and the share of 429s once it had.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream/simserver"
)

// CapacityStep sets the sim-upstream's capacity At after the start.
type CapacityStep struct {
	At       time.Duration
	Capacity int
}

// AdaptiveConfig is the experiment around a load.
type AdaptiveConfig struct {
	// Sim is the sim-upstream's base URL (its /sim/stats and
	// /sim/capacity), without /v1.
	Sim string
	// Steps are the capacity changes the experiment makes, in order.
	Steps []CapacityStep
	// Every is the sampling period. default: 250ms
	Every time.Duration
	// Band is the settled band around the capacity: ±Band·capacity.
	// default: 0.2
	Band float64
}

// AdaptiveSample is one sample of the experiment, T seconds after the
// start.
type AdaptiveSample struct {
	T float64 `json:"t_s"`
	// Limit is the gate's limit; Target the controller's (they differ
	// while it probes at half the limit).
	Limit    int  `json:"limit"`
	Target   int  `json:"target"`
	Probing  bool `json:"probing,omitempty"`
	InFlight int  `json:"in_flight"`
	Capacity int  `json:"capacity"`
	// Requests and Rejected are the sim-upstream's counters: requests
	// received and answered 429.
	Requests int64 `json:"upstream_requests"`
	Rejected int64 `json:"upstream_429"`
}

// AdaptiveSegment is a stretch of constant capacity.
type AdaptiveSegment struct {
	Capacity int     `json:"capacity"`
	From     float64 `json:"from_s"`
	To       float64 `json:"to_s"`
	// SettledAfter is the time from the segment's start after which the
	// controller's limit (Target) stayed within the band to the end; -1
	// if it never did.
	SettledAfter float64 `json:"settled_after_s"`
	Band         [2]int  `json:"band"`
	// After settling: the limit's range and mean, and the upstream's
	// requests, 429s and their share.
	LimitMin   int     `json:"limit_min"`
	LimitMax   int     `json:"limit_max"`
	LimitMean  float64 `json:"limit_mean"`
	Requests   int64   `json:"upstream_requests"`
	Rejected   int64   `json:"upstream_429"`
	RejectRate float64 `json:"upstream_429_rate"`
}

// AdaptiveReport is the experiment's result.
type AdaptiveReport struct {
	Load     *Report           `json:"load"`
	Band     float64           `json:"band"`
	Segments []AdaptiveSegment `json:"segments"`
	Samples  []AdaptiveSample  `json:"samples"`
}

// budgetView is the part of GET /v1/budget the experiment reads.
type budgetView struct {
	Limit     int `json:"limit"`
	InFlight  int `json:"in_flight"`
	Upstreams []struct {
		Adaptive *struct {
			Target  int  `json:"target"`
			Probing bool `json:"probing"`
		} `json:"adaptive"`
	} `json:"upstreams"`
}

// RunAdaptive runs the load of cfg (one rate) while it samples the
// budget and the sim-upstream and makes the capacity steps; it prints the
// load's report, then the experiment's segments, and writes cfg.Out (the
// AdaptiveReport) and cfg.Plot (limit and capacity over time).
func RunAdaptive(ctx context.Context, stop func(), cfg Config, ac AdaptiveConfig, stdout, stderr io.Writer) int {
	if ac.Every <= 0 {
		ac.Every = 250 * time.Millisecond
	}
	if ac.Band <= 0 {
		ac.Band = 0.2
	}
	hc := &http.Client{Timeout: 5 * time.Second}
	defer hc.CloseIdleConnections()
	// The sim must answer first; its counters then are the base.
	if _, err := simStats(ctx, hc, ac.Sim); err != nil {
		return fail(stderr, "load: sim-upstream %s: %v", ac.Sim, err)
	}
	start := time.Now()
	sctx, cancel := context.WithCancel(ctx)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		samples []AdaptiveSample
		stepErr error
	)
	wg.Go(func() { // the capacity steps
		t := time.NewTimer(0)
		defer t.Stop()
		<-t.C
		for _, st := range ac.Steps {
			t.Reset(time.Until(start.Add(st.At)))
			select {
			case <-t.C:
			case <-sctx.Done():
				return
			}
			if err := setSimCapacity(sctx, hc, ac.Sim, st.Capacity); err != nil {
				mu.Lock()
				stepErr = err
				mu.Unlock()
				return
			}
			fmt.Fprintf(stderr, "sluice: load: capacity set to %d at %s\n", st.Capacity, time.Since(start).Round(time.Millisecond))
		}
	})
	wg.Go(func() { // the sampler
		tk := time.NewTicker(ac.Every)
		defer tk.Stop()
		for {
			if s, ok := sampleAdaptive(sctx, hc, cfg, ac.Sim, start); ok {
				mu.Lock()
				samples = append(samples, s)
				mu.Unlock()
			}
			select {
			case <-tk.C:
			case <-sctx.Done():
				return
			}
		}
	})
	rep, code := runOne(ctx, stop, cfg, stdout, stderr)
	cancel()
	wg.Wait()
	if rep == nil {
		return code // nothing was sent: the server is unreachable
	}
	if stepErr != nil {
		return fail(stderr, "load: setting the sim-upstream's capacity: %v", stepErr)
	}
	ar := &AdaptiveReport{Load: rep, Band: ac.Band, Samples: samples, Segments: segments(samples, ac.Band)}
	writeAdaptiveReport(stdout, cfg, ar)
	if cfg.Out != "" {
		b, _ := json.MarshalIndent(ar, "", "  ") // cannot fail
		if err := os.WriteFile(cfg.Out, append(b, '\n'), 0o644); err != nil {
			code = fail(stderr, "load: %v", err)
		}
	}
	if cfg.Plot != "" {
		if err := os.WriteFile(cfg.Plot, PlotAdaptive(ar), 0o644); err != nil {
			code = fail(stderr, "load: %v", err)
		}
	}
	return code
}

func simStats(ctx context.Context, hc *http.Client, sim string) (simserver.Stats, error) {
	var st simserver.Stats
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, sim+"/sim/stats", nil)
	if err != nil {
		return st, err
	}
	resp, err := hc.Do(req)
	if err != nil {
		return st, err
	}
	defer drainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return st, fmt.Errorf("GET /sim/stats: %s", resp.Status)
	}
	return st, json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&st)
}

func setSimCapacity(ctx context.Context, hc *http.Client, sim string, c int) error {
	body, _ := json.Marshal(map[string]int{"capacity": c}) // cannot fail
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, sim+"/sim/capacity", bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer drainClose(resp.Body)
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("POST /sim/capacity: %s", resp.Status)
	}
	return nil
}

// sampleAdaptive reads the budget and the sim once; ok is false when
// either does not answer (the sample is skipped).
func sampleAdaptive(ctx context.Context, hc *http.Client, cfg Config, sim string, start time.Time) (AdaptiveSample, bool) {
	var s AdaptiveSample
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, cfg.Server+"/v1/budget", nil)
	if err != nil {
		return s, false
	}
	if cfg.APIKey != "" {
		req.Header.Set("Authorization", "Bearer "+cfg.APIKey)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return s, false
	}
	var b budgetView
	err = json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&b)
	drainClose(resp.Body)
	if err != nil || resp.StatusCode != http.StatusOK {
		return s, false
	}
	st, err := simStats(ctx, hc, sim)
	if err != nil {
		return s, false
	}
	s = AdaptiveSample{T: math.Round(time.Since(start).Seconds()*100) / 100, Limit: b.Limit, Target: b.Limit, InFlight: b.InFlight,
		Capacity: st.Capacity, Requests: st.Requests, Rejected: st.Rejected}
	if len(b.Upstreams) > 0 && b.Upstreams[0].Adaptive != nil {
		s.Target, s.Probing = b.Upstreams[0].Adaptive.Target, b.Upstreams[0].Adaptive.Probing
	}
	return s, true
}

// segments cuts the samples where the capacity changes and measures each
// stretch.
func segments(samples []AdaptiveSample, band float64) []AdaptiveSegment {
	var segs []AdaptiveSegment
	for i := 0; i < len(samples); {
		j := i
		for j < len(samples) && samples[j].Capacity == samples[i].Capacity {
			j++
		}
		segs = append(segs, segment(samples[i:j], samples[i:], band))
		i = j
	}
	return segs
}

// segment measures one stretch of samples of one capacity; rest starts
// with it and goes on to the end (for the time the stretch ends).
func segment(seg, rest []AdaptiveSample, band float64) AdaptiveSegment {
	c := seg[0].Capacity
	lo, hi := int(math.Ceil(float64(c)*(1-band))), int(math.Floor(float64(c)*(1+band)))
	out := AdaptiveSegment{Capacity: c, From: seg[0].T, To: seg[len(seg)-1].T, Band: [2]int{lo, hi}, SettledAfter: -1}
	if len(rest) > len(seg) {
		out.To = rest[len(seg)].T
	}
	// The last sample out of the band; settled from the next one.
	k := 0
	for i, s := range seg {
		if s.Target < lo || s.Target > hi {
			k = i + 1
		}
	}
	if c == 0 || k >= len(seg) {
		return out
	}
	out.SettledAfter = round1(seg[k].T - seg[0].T)
	tail := seg[k:]
	out.LimitMin, out.LimitMax = tail[0].Target, tail[0].Target
	sum := 0
	for _, s := range tail {
		out.LimitMin, out.LimitMax = min(out.LimitMin, s.Target), max(out.LimitMax, s.Target)
		sum += s.Target
	}
	out.LimitMean = round1(float64(sum) / float64(len(tail)))
	// The counters up to the last sample taken at this capacity: the
	// next sample's would count the 429s the capacity's change caused,
	// which are the next stretch's transient, not this one's.
	end := tail[len(tail)-1]
	out.Requests, out.Rejected = end.Requests-tail[0].Requests, end.Rejected-tail[0].Rejected
	if out.Requests > 0 {
		out.RejectRate = math.Round(float64(out.Rejected)/float64(out.Requests)*1e5) / 1e5
	}
	return out
}

func writeAdaptiveReport(w io.Writer, cfg Config, ar *AdaptiveReport) {
	if cfg.JSON {
		b, _ := json.Marshal(map[string]any{"band": ar.Band, "segments": ar.Segments}) // cannot fail
		fmt.Fprintf(w, "%s\n", b)
		return
	}
	fmt.Fprintf(w, "adaptive budget: settled = the limit stays within ±%.0f%% of the capacity to the end of the stretch\n", ar.Band*100)
	fmt.Fprintf(w, "  %-9s %-15s %-10s %-14s %-12s %s\n", "capacity", "stretch", "settled", "limit after", "mean", "upstream 429s after")
	for _, s := range ar.Segments {
		settled := "never"
		if s.SettledAfter >= 0 {
			settled = fmt.Sprintf("%.1fs", s.SettledAfter)
		}
		fmt.Fprintf(w, "  %-9d %-15s %-10s %-14s %-12.1f %d of %d (%.2f%%)\n", s.Capacity,
			fmt.Sprintf("%.0f-%.0fs", s.From, s.To), settled, fmt.Sprintf("%d-%d", s.LimitMin, s.LimitMax), s.LimitMean,
			s.Rejected, s.Requests, s.RejectRate*100)
	}
}

// PlotAdaptive draws the limit (the controller's and the gate's), the
// capacity and the upstream's 429s per second over time.
func PlotAdaptive(ar *AdaptiveReport) []byte {
	limit := series{name: "limit", color: "#1f77b4"}
	gate := series{name: "gate (probes)", color: "#aec7e8"}
	capacity := series{name: "capacity", color: "#2ca02c"}
	rejects := series{name: "429s/s", color: "#d62728"}
	for i, s := range ar.Samples {
		limit.pts = append(limit.pts, [2]float64{s.T, float64(s.Target)})
		gate.pts = append(gate.pts, [2]float64{s.T, float64(s.Limit)})
		capacity.pts = append(capacity.pts, [2]float64{s.T, float64(s.Capacity)})
		if i > 0 {
			if dt := s.T - ar.Samples[i-1].T; dt > 0 {
				rejects.pts = append(rejects.pts, [2]float64{s.T, float64(s.Rejected-ar.Samples[i-1].Rejected) / dt})
			}
		}
	}
	title := "sluice adaptive budget: limit against the upstream's capacity"
	if r := ar.Load; r != nil {
		title = fmt.Sprintf("sluice adaptive budget · %s · %g req/s: limit and capacity", r.Endpoint, r.Rate)
	}
	return chart(title, "seconds since the start", "streams", false, []series{gate, limit, capacity, rejects})
}
