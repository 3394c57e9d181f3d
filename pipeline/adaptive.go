package pipeline

import (
	"math"
	"slices"
	"sync"
	"time"
)

// AdaptiveConfig configures an Adaptive limit. The zero value is off.
type AdaptiveConfig struct {
	// Enabled turns the adaptive limit on. default: false
	Enabled bool
	// Min is the lowest limit the controller sets. default: 1
	Min int
	// Max is the highest limit the controller sets. default: the gate's
	// limit when the controller starts
	Max int
	// Interval is the shortest window of observations the controller
	// decides on; a window also waits for MinSamples. default: 1s
	Interval time.Duration
	// MinSamples is the fewest observations (times to first token and
	// overload answers) a window decides on: enough that the window's
	// TTFT is not mostly noise. Below MinSamples, a limit smaller than it
	// decides on one observation per slot, but only to grow back up
	// towards the last knee or on an overload answer. default: 40
	MinSamples int
	// Tolerance is how far the window's time to first token may rise
	// above the baseline (the upstream's unloaded time to first token)
	// before the limit comes down: 1.25 allows 25%. Below it the limit
	// grows while it is in use. default: 1.25
	Tolerance float64
	// Backoff is the factor the limit is multiplied by after a window
	// with an overload answer (429, 503) of the upstream. default: 0.75
	Backoff float64
	// ProbeEvery is how many windows pass between two probes: one window
	// at half the limit that measures the upstream's unloaded TTFT (the
	// baseline). A probe also follows the end of a run of overload
	// answers, and a first baseline learnt while the TTFT rose.
	// default: 30; negative: never
	ProbeEvery int
}

func (c *AdaptiveConfig) setDefaults(limit int) {
	c.Min = max(c.Min, 1)
	if c.Max <= 0 {
		c.Max = limit
	}
	c.Max = max(c.Max, c.Min)
	if c.Interval <= 0 {
		c.Interval = time.Second
	}
	if c.MinSamples <= 0 {
		c.MinSamples = 40
	}
	if c.Tolerance <= 1 {
		c.Tolerance = 1.25
	}
	if c.ProbeEvery == 0 {
		c.ProbeEvery = 30
	}
	if c.Backoff <= 0 || c.Backoff >= 1 {
		c.Backoff = 0.75
	}
}

// Signal is what an upstream call told the adaptive limit.
type Signal int

// The kinds of observation.
const (
	// SignalTTFT: the call's first token came after Observation.TTFT.
	SignalTTFT Signal = iota
	// SignalOverload: the upstream refused the call for its load (429, 503).
	SignalOverload
)

// Observation is one upstream call's outcome as the adaptive limit sees
// it. Calls that tell nothing of the upstream's load (a cancel, a 400, a
// timeout of ours) are not observed at all.
type Observation struct {
	Signal Signal
	// Start is when the call was sent: an observation of a call sent
	// before the limit's last change is stale and ignored (it tells of
	// the load under the old limit).
	Start time.Time
	// At is when the outcome was known.
	At time.Time
	// TTFT is the call's time to first token, from Start (SignalTTFT).
	TTFT time.Duration
}

// Reasons of the limit's changes (LimitChange.Reason).
const (
	ReasonGrowth   = "growth"   // TTFT near the baseline while the limit was in use
	ReasonLatency  = "ttft"     // TTFT above Tolerance × baseline
	ReasonOverload = "overload" // the upstream answered 429 or 503
	ReasonProbe    = "probe"    // one window at half the limit to measure the unloaded TTFT, and back
)

// LimitChange is one change of the limit.
type LimitChange struct {
	At     time.Time `json:"at"`
	From   int       `json:"from"`
	To     int       `json:"to"`
	Reason string    `json:"reason"`
}

// maxWindow bounds a window's observations (and its memory) whatever
// the Interval.
const maxWindow = 1 << 14

// kneeReturn is how close to the last knee the limit climbs back
// quickly: a knee is a limit found too slow, up to 1/0.8 of the one
// before it when the limit came down in steps, so the capacity may be
// well below it.
const kneeReturn = 0.85

// changeRing is how many changes AdaptiveStats keeps.
const changeRing = 16

// AdaptiveStats is a snapshot of an Adaptive limit.
type AdaptiveStats struct {
	// Limit is the gate's limit now; Target the limit the controller
	// holds, which differs from Limit during a probe.
	Limit   int  `json:"limit"`
	Target  int  `json:"target"`
	Probing bool `json:"probing"`
	Min     int  `json:"min"`
	Max     int  `json:"max"`
	// BaselineTTFTMs is the estimate of the upstream's unloaded time to
	// first token; RecentTTFTMs the last window's (in ms).
	BaselineTTFTMs float64 `json:"baseline_ttft_ms"`
	RecentTTFTMs   float64 `json:"recent_ttft_ms"`
	// Changes counts the limit's changes by reason, ever.
	Changes map[string]int64 `json:"changes_total"`
	// Recent are the last changes, oldest first.
	Recent []LimitChange `json:"recent_changes"`
}

// Adaptive moves a Gate's limit between AdaptiveConfig.Min and Max from
// what the upstream calls it observes: the time to first token of each
// call and the overload answers (429, 503). It has no goroutine: it
// decides in Observe, once a window holds MinSamples observations and
// Interval has passed. It is safe for concurrent use.
//
// The rule, per window (docs/architecture.md, "Adaptive budget"):
//   - an overload answer multiplies the limit by Backoff;
//   - a TTFT above Tolerance × baseline (twice in a row, or once far
//     above) multiplies it by Tolerance·baseline/TTFT within [0.8, 0.9];
//   - otherwise, if the limit was reached (every slot held, or waiters),
//     it grows: by √limit far from the last knee (the limit before the
//     last decrease), quickly back to kneeReturn × knee, one slot at a time
//     from there;
//   - every ProbeEvery windows, after a run of overload answers, and
//     after a first baseline learnt while the TTFT rose, one window runs
//     at half the limit to measure the unloaded TTFT (the baseline);
//     windows at the limit never raise the baseline, and lower it only
//     on a fall beyond the tolerance; the limit stays in [Min, Max].
type Adaptive struct {
	cfg  AdaptiveConfig
	gate *Gate

	mu         sync.Mutex // protects everything below
	limit      float64
	applied    int
	lastChange time.Time
	winStart   time.Time
	ttfts      []time.Duration
	overloads  int
	busy       bool    // the limit was reached during the window
	knee       float64 // the limit before the last decrease
	slow       bool    // the last window's TTFT was above the tolerated
	probing    bool    // this window runs at half the limit
	before     float64 // the TTFT of the window before the probe
	wantProbe  bool    // probe once the overload answers stop
	sinceProbe int     // windows since the last probe
	baseline   float64
	baseN      int     // calls behind the baseline, up to MinSamples
	firstTTFT  float64 // the first window's TTFT
	baseLoaded bool    // the TTFT rose above the first window's before MinSamples calls
	recent     float64
	changes    map[string]int64
	ring       []LimitChange
	onChange   func(LimitChange)
}

// NewAdaptive returns a controller of g's limit, starting at g's current
// limit clamped to [Min, Max]. onChange, when set, observes every change;
// it runs with the controller's lock held and must not call it.
func NewAdaptive(g *Gate, cfg AdaptiveConfig, onChange func(LimitChange)) *Adaptive {
	start := g.Limit()
	cfg.setDefaults(start)
	start = min(max(start, cfg.Min), cfg.Max)
	a := &Adaptive{cfg: cfg, gate: g, limit: float64(start), applied: start, changes: map[string]int64{}, onChange: onChange}
	g.SetLimit(start)
	return a
}

// Config returns the configuration in force (defaults filled in).
func (a *Adaptive) Config() AdaptiveConfig { return a.cfg }

// Observe feeds one upstream call's outcome to the controller, which may
// change the gate's limit.
func (a *Adaptive) Observe(o Observation) {
	inFlight, limit, waiting := a.gate.Occupancy()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.winStart.IsZero() {
		a.winStart = o.Start // the first window counts from the first call sent
	}
	if inFlight >= limit || waiting > 0 {
		a.busy = true
	}
	if o.Start.Before(a.lastChange) {
		return // sent under the old limit
	}
	switch o.Signal {
	case SignalTTFT:
		a.ttfts = append(a.ttfts, o.TTFT)
	case SignalOverload:
		a.overloads++
	}
	n := len(a.ttfts) + a.overloads
	need := min(a.cfg.MinSamples, max(3, a.applied))
	if a.probing {
		need = a.cfg.MinSamples // the baseline is measured on a whole window
	}
	if (o.At.Sub(a.winStart) < a.cfg.Interval || n < need) && n < maxWindow {
		return
	}
	if n < a.cfg.MinSamples && a.overloads == 0 && a.baseN >= a.cfg.MinSamples &&
		((a.knee > 0 && a.limit >= kneeReturn*a.knee) || typical(a.ttfts) > a.cfg.Tolerance*a.baseline) {
		// A small window (a small limit sees few calls) may grow the
		// limit on the way back up to the last knee, or back off on an
		// overload answer, but it is too noisy for the rest: backing
		// off on its TTFT, and growing near or past the knee, where one
		// lucky window would take the limit past the capacity, wait for
		// MinSamples. (Before MinSamples calls are behind the baseline,
		// it is too noisy to hold the growth back.)
		return
	}
	a.decideLocked(o.At)
}

// decideLocked closes the window at now. a.mu must be held.
func (a *Adaptive) decideLocked(now time.Time) {
	if len(a.ttfts) > 0 {
		a.recent = typical(a.ttfts)
	}
	overloaded := a.overloads > 0
	next, reason := a.limit, ""
	wasProbing := a.probing
	if a.probing {
		// The probe window ran at half the limit: below the knee, its
		// TTFT is the upstream's unloaded one. Back to the limit.
		a.probing, a.sinceProbe = false, 0
		reason = ReasonProbe
		switch {
		case overloaded:
			// Still overloaded at half the limit: no measure of the
			// unloaded TTFT. Back off, and probe again once the
			// overload answers stop.
			next, reason = a.limit*a.cfg.Backoff, ReasonOverload
			a.wantProbe = true
		case len(a.ttfts) > 0:
			if a.recent*a.cfg.Tolerance < a.baseline || a.baseN < a.cfg.MinSamples {
				// Far below: the baseline was learnt under load.
				a.baseline = a.recent
			} else {
				// Near it: one more measure, halfway (a probe's window
				// is as noisy as any).
				a.baseline = math.Sqrt(a.baseline * a.recent)
			}
			a.baseN = max(a.baseN, len(a.ttfts))
			if a.before > a.cfg.Tolerance*a.baseline {
				// The window before the probe was slower than the
				// tolerated, judged by the new baseline: back to the
				// limit less that gradient.
				next, reason = a.limit*max(0.5, a.cfg.Tolerance*a.baseline/a.before), ReasonLatency
			}
		}
	} else {
		a.sinceProbe++
		if n := len(a.ttfts); n > 0 {
			switch {
			case a.baseN < a.cfg.MinSamples:
				// Until MinSamples calls are behind it, the baseline
				// is the typical TTFT of every call so far: small first
				// windows are too noisy to stand alone.
				a.baseline = math.Exp((math.Log(max(a.baseline, 1))*float64(a.baseN) + math.Log(a.recent)*float64(n)) / float64(a.baseN+n))
				a.baseN += n
				// A TTFT that rose while the limit grew says the calls
				// behind the baseline ran under our own load (a limit
				// that starts at or above the capacity): once enough
				// calls are behind it, a probe measures the unloaded
				// TTFT.
				if a.firstTTFT == 0 {
					a.firstTTFT = a.recent
				}
				a.baseLoaded = a.baseLoaded || a.recent > a.cfg.Tolerance*a.firstTTFT
				a.wantProbe = a.wantProbe || (a.baseLoaded && a.baseN >= a.cfg.MinSamples && a.cfg.ProbeEvery > 0)
			case n >= a.cfg.MinSamples && a.recent*a.cfg.Tolerance < a.baseline:
				// A fall beyond the tolerance, on a whole window: the
				// upstream got faster. Halfway to it per window (one
				// window is noisy).
				a.baseline = math.Sqrt(a.baseline * a.recent)
			}
			// Otherwise the baseline is the probes' to move: a window at
			// the limit is slower than the unloaded upstream by our own
			// load (a baseline that followed its rises would let the
			// limit creep past the capacity), and one that followed the
			// noise of every window down would cut the limit below it.
		}
		slow := a.slow
		a.slow = false
		switch {
		case overloaded:
			next, reason = a.limit*a.cfg.Backoff, ReasonOverload
			a.wantProbe = a.cfg.ProbeEvery > 0
		case len(a.ttfts) == 0:
		case a.recent > a.cfg.Tolerance*a.baseline && !slow && a.recent < 1.5*a.cfg.Tolerance*a.baseline:
			// Slow once: noise, maybe. The next window tells.
			a.slow = true
		case a.recent > a.cfg.Tolerance*a.baseline:
			// The gradient, between 0.8 and 0.9: 10% off, up to 20% the
			// further the TTFT is above the tolerated. (Far above the
			// capacity the 429s and the probes bring it down faster.)
			next, reason = a.limit*min(0.9, max(0.8, a.cfg.Tolerance*a.baseline/a.recent)), ReasonLatency
		case !a.busy:
		case a.limit < kneeReturn*a.knee:
			// Back up quickly to just below the last knee (where the
			// TTFT rose: above the capacity), never past it.
			next, reason = min(a.limit+math.Sqrt(a.limit), max(a.limit+1, kneeReturn*a.knee)), ReasonGrowth
		case a.limit < 1.15*a.knee:
			// Just past the knee: one slot at a time.
			next, reason = a.limit+1, ReasonGrowth
		default:
			// Far from any knee (the start, or the capacity grew).
			next, reason = a.limit+math.Sqrt(a.limit), ReasonGrowth
		}
	}
	if next < a.limit {
		a.knee = a.limit
	}
	next = min(max(next, float64(a.cfg.Min)), float64(a.cfg.Max))
	a.ttfts, a.overloads, a.busy, a.winStart = a.ttfts[:0], 0, false, now
	if !wasProbing && a.cfg.ProbeEvery > 0 && (reason == "" || reason == ReasonGrowth) &&
		(a.sinceProbe >= a.cfg.ProbeEvery || (a.wantProbe && !overloaded)) {
		// Measure the unloaded TTFT for one window at half the limit:
		// a baseline learnt under overload (a start far above the
		// capacity) is too high, and only a load below the capacity
		// shows the real one.
		if reason == ReasonGrowth {
			next = a.limit // no growth on the way into a probe
		}
		a.probing, a.wantProbe, a.before = true, false, a.recent
		reason = ReasonProbe
	}
	a.limit = next
	n := int(math.Floor(next))
	if a.probing {
		n = max(a.cfg.Min, n/2)
	}
	if n == a.applied {
		return
	}
	ch := LimitChange{At: now, From: a.applied, To: n, Reason: reason}
	a.applied, a.lastChange = n, now
	a.changes[reason]++
	if len(a.ring) == changeRing {
		a.ring = slices.Delete(a.ring, 0, 1)
	}
	a.ring = append(a.ring, ch)
	a.gate.SetLimit(n)
	if a.onChange != nil {
		a.onChange(ch)
	}
}

// Limit returns the limit set now.
func (a *Adaptive) Limit() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.applied
}

// Stats returns a snapshot of the controller.
func (a *Adaptive) Stats() AdaptiveStats {
	a.mu.Lock()
	defer a.mu.Unlock()
	ch := make(map[string]int64, 3)
	for _, r := range []string{ReasonGrowth, ReasonLatency, ReasonOverload, ReasonProbe} {
		ch[r] = a.changes[r]
	}
	return AdaptiveStats{
		Limit: a.applied, Target: int(math.Floor(a.limit)), Probing: a.probing, Min: a.cfg.Min, Max: a.cfg.Max,
		BaselineTTFTMs: ms(a.baseline), RecentTTFTMs: ms(a.recent),
		Changes: ch, Recent: append([]LimitChange{}, a.ring...),
	}
}

// typical is a window's TTFT: the geometric mean of its TTFTs without the
// lowest and highest tenth, less noisy than the median for the same
// samples and unmoved by a few outliers. It sorts d.
func typical(d []time.Duration) float64 {
	slices.Sort(d)
	cut := len(d) / 10
	d = d[cut : len(d)-cut]
	var sum float64
	for _, v := range d {
		sum += math.Log(float64(max(v, time.Microsecond)))
	}
	return math.Exp(sum / float64(len(d)))
}

func ms(ns float64) float64 { return math.Round(ns/1e4) / 100 }
