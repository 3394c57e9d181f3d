package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/orchestrator/redisstate"
	"github.com/sluice-dev/sluice/orchestrator/redisstate/redistest"
	"github.com/sluice-dev/sluice/stream/upstream"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// fleet is n sluice instances (real HTTP servers) with one cluster
// budget in Redis, in front of one fake upstream whose concurrent
// streams are counted across all of them.
type fleet struct {
	envs    []*env
	leases  []*redisstate.Leases
	up      *upstreamtest.Server
	counter *countingUpstream
}

// newFleet starts len(urls) instances, instance i on the Redis of
// urls[i] (a proxy, or the same Redis), all under prefix.
func newFleet(t *testing.T, prefix string, cfg orchestrator.Config, urls ...string) *fleet {
	t.Helper()
	f := &fleet{up: upstreamtest.NewServer(t)}
	client, err := upstream.NewOpenAI(upstream.OpenAIConfig{BaseURL: f.up.URL(), Name: "fake"})
	if err != nil {
		t.Fatal(err)
	}
	f.counter = &countingUpstream{Upstream: client}
	for _, u := range urls {
		l := redisstate.NewLeases(redistest.Universal(t, u), prefix, "fake", cfg.BudgetLeaseTime, nil)
		t.Cleanup(func() { _ = l.Close() }) // after the instance's shutdown (cleanups run last first)
		f.leases = append(f.leases, l)
		f.envs = append(f.envs, newEnv(t, envOpts{Upstream: f.counter, Orch: cfg, Leases: l, NoCache: true}))
	}
	return f
}

// live is the fleet's live leases in Redis, asked through instance i's
// client.
func (f *fleet) live(t *testing.T, i int) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	n, err := f.leases[i].Live(ctx)
	if err != nil {
		t.Fatalf("live leases: %v", err)
	}
	return n
}

// budgetView is what GET /v1/budget says of the fleet budget.
type budgetView struct {
	Mode      string `json:"mode"`
	Limit     int    `json:"limit"`
	InFlight  int    `json:"in_flight"`
	Upstreams []struct {
		Mode          string `json:"mode"`
		InFlight      int    `json:"in_flight"`
		LeasesHeld    int    `json:"leases_held"`
		FleetInFlight int    `json:"fleet_in_flight"`
		FailMode      string `json:"fail_mode"`
		Degraded      string `json:"degraded"`
		LeaseAttempts int64  `json:"lease_attempts_total"`
		LeasesGranted int64  `json:"leases_granted_total"`
	} `json:"upstreams"`
}

func (e *env) budgetView() budgetView {
	e.t.Helper()
	var b budgetView
	if st, _ := e.doJSON(http.MethodGet, "/v1/budget", nil, &b); st != http.StatusOK || len(b.Upstreams) != 1 {
		e.t.Fatalf("GET /v1/budget: %d %+v", st, b)
	}
	return b
}

func (e *env) readyBudget() string {
	e.t.Helper()
	var body map[string]string
	e.doJSON(http.MethodGet, "/readyz", nil, &body)
	return body["budget"]
}

// TestFleetBudgetStorm: a storm of mixed requests spread over three
// instances (interactive ones that wait, async tasks, clients that leave
// mid-stream, first-token and idle timeouts, upstream errors) never has
// more streams at the upstream than the one fleet limit; afterwards no
// lease is left in Redis and every instance's budget is idle.
func TestFleetBudgetStorm(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			const limit = 4
			f := newFleet(t, prefix, orchestrator.Config{
				Budget: limit, AcquireTimeout: 2 * time.Second, QueueLimit: 64,
				TTFTTimeout: 150 * time.Millisecond, IdleTimeout: 150 * time.Millisecond, TotalTimeout: 3 * time.Second,
				RetryBackoff: 5 * time.Millisecond, BreakerMinCalls: -1, BudgetLeaseTime: 3 * time.Second,
			}, target.URL, target.URL, target.URL)
			f.up.SetHandler(func(_ upstreamtest.ChatRequest, n int) upstreamtest.Script {
				switch n % 7 {
				case 0:
					return upstreamtest.Script{StallBeforeHeaders: true} // ttft timeout
				case 1:
					return upstreamtest.Script{Chunks: []string{"a", "b", "c"}, StallAfterChunks: 1} // idle timeout
				case 2:
					return upstreamtest.Script{Status: 500} // upstream error (retried once)
				case 3:
					return upstreamtest.Script{Status: 400}
				default:
					return upstreamtest.Script{Chunks: chunks(6, "k"), Gap: 5 * time.Millisecond}
				}
			})
			const n = 150
			var (
				wg       sync.WaitGroup
				mu       sync.Mutex
				statuses = map[string]int{}
				sem      = make(chan struct{}, 24)
			)
			for i := range n {
				sem <- struct{}{}
				wg.Add(1)
				go func() {
					defer wg.Done()
					defer func() { <-sem }()
					e := f.envs[i%3]
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					body := map[string]any{"prompt": fmt.Sprint("fleet storm ", i), "nocache": true}
					path := "/v1/stream"
					switch i % 4 {
					case 0:
						path = "/v1/tasks"
					case 1: // the client leaves mid-stream and asked to cancel
						body["detach"] = false
						var c2 context.CancelFunc
						ctx, c2 = context.WithTimeout(ctx, time.Duration(5+i%40)*time.Millisecond)
						defer c2()
					}
					req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+path, jsonBody(body))
					req.Header.Set("Content-Type", "application/json")
					resp, err := e.HTTP.Do(req)
					if err != nil {
						return // left before the answer
					}
					raw, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					key := fmt.Sprint(resp.StatusCode)
					if resp.StatusCode >= 400 {
						var eb struct {
							Error struct{ Code string }
						}
						_ = json.Unmarshal(raw, &eb)
						key += " " + eb.Error.Code
					}
					mu.Lock()
					statuses[key]++
					mu.Unlock()
				}()
			}
			wg.Wait()
			for k, c := range statuses {
				if k != "200" && k != "202" && k != "503 overloaded" {
					t.Errorf("unexpected answer %q (%d times)", k, c)
				}
			}
			for _, e := range f.envs {
				e.waitIdle()
			}
			if err := f.up.WaitIdle(ctxT(t, 15*time.Second)); err != nil {
				t.Fatalf("upstream calls still open: %d", f.up.InFlight())
			}
			if m := f.counter.Max(); m > limit || m < 2 {
				t.Errorf("%d concurrent upstream streams at most across 3 instances (fleet limit %d)", m, limit)
			}
			if m := f.up.MaxInFlight(); m > limit {
				t.Errorf("the fake upstream saw %d concurrent streams (fleet limit %d)", m, limit)
			}
			waitFor(t, 5*time.Second, "no lease left in Redis", func() bool { return f.live(t, 0) == 0 })
			var attempts, granted int64
			for i, e := range f.envs {
				b := e.budgetView()
				u := b.Upstreams[0]
				if b.Mode != "cluster" || b.Limit != limit || b.InFlight != 0 || u.LeasesHeld != 0 || u.Degraded != "" || u.FailMode != "closed" {
					t.Errorf("instance %d after the storm: %+v", i, b)
				}
				attempts, granted = attempts+u.LeaseAttempts, granted+u.LeasesGranted
			}
			t.Logf("answers %v; upstream requests %d, max concurrent %d; Redis acquire calls per granted slot %.2f (%d/%d)",
				statuses, f.up.Requests(), f.counter.Max(), float64(attempts)/float64(max(granted, 1)), attempts, granted)
		})
	}
}

// TestFleetBudgetClientCancelReleasesLease: a client that leaves an
// interactive stream mid-answer (detach:false) frees its lease in Redis,
// not only its local slot.
func TestFleetBudgetClientCancelReleasesLease(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			f := newFleet(t, prefix, orchestrator.Config{Budget: 2, BudgetLeaseTime: 30 * time.Second}, target.URL, target.URL)
			f.up.SetScript(upstreamtest.Script{Chunks: chunks(500, "slow"), Gap: 20 * time.Millisecond})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			a := f.envs[0]
			resp := a.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": "long", "nocache": true, "detach": false})
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("POST /v1/stream: %d", resp.StatusCode)
			}
			br := bufio.NewReader(resp.Body)
			for {
				line, err := br.ReadString('\n')
				if err != nil {
					t.Fatalf("stream ended before its first delta: %v", err)
				}
				if strings.HasPrefix(line, "event: delta") {
					break
				}
			}
			if n := f.live(t, 1); n != 1 {
				t.Fatalf("live leases while streaming: %d, want 1", n)
			}
			cancel()
			resp.Body.Close()
			// The lease time is 30s: only a release frees it this soon.
			waitFor(t, 5*time.Second, "the lease of the cancelled stream released", func() bool { return f.live(t, 1) == 0 })
			a.waitIdle()
		})
	}
}

// TestFleetBudgetCrashedInstance: an instance that dies holding every
// slot of the fleet (its Redis link cut, then its process stopped: no
// release reaches Redis) gives them back within the lease time; another
// instance then serves without any restart.
func TestFleetBudgetCrashedInstance(t *testing.T) {
	for _, target := range redistest.Targets(t) {
		t.Run(target.Name, func(t *testing.T) {
			_, prefix := redistest.Redis(t)
			const limit, lease = 3, time.Second
			proxy, viaProxy := redistest.NewProxy(t, target.URL)
			f := newFleet(t, prefix, orchestrator.Config{
				Budget: limit, BudgetLeaseTime: lease, BudgetCallTimeout: 200 * time.Millisecond, TTFTTimeout: time.Minute,
			}, target.URL, target.URL, viaProxy)
			a, c := f.envs[0], f.envs[2]
			f.up.SetScript(upstreamtest.Script{StallAfterHeaders: true})
			for i := range limit {
				if st, _ := c.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": fmt.Sprint("held ", i), "nocache": true}, nil); st != http.StatusAccepted {
					t.Fatalf("POST /v1/tasks on the instance to crash: %d", st)
				}
			}
			waitFor(t, 5*time.Second, "the crashing instance holds every slot", func() bool { return f.live(t, 0) == limit })
			if st, _ := a.doJSON(http.MethodPost, "/v1/stream", map[string]any{"prompt": "refused", "nocache": true}, nil); st != http.StatusServiceUnavailable {
				t.Fatalf("the fleet is full, yet another instance answered %d", st)
			}
			proxy.Cut()
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if err := c.Orch.Shutdown(ctx); err != nil {
				t.Fatalf("stopping the crashed instance: %v", err)
			}
			start := time.Now()
			waitFor(t, 3*lease+time.Second, "the crashed instance's leases expired", func() bool { return f.live(t, 0) == 0 })
			t.Logf("slots back %s after the crash (lease %s)", time.Since(start), lease)
			f.up.SetScript(upstreamtest.Script{Chunks: []string{"back"}})
			if _, r := a.stream(map[string]any{"prompt": "served again", "nocache": true}); r.Text != "back" {
				t.Fatalf("after the crash: %+v", r)
			}
			proxy.Restore()
		})
	}
}

// TestFleetBudgetRedisRestart: Redis is killed and started again (empty)
// under steady traffic on three instances, in both fail modes. Closed:
// requests are refused with 503 budget_unavailable meanwhile; open: they
// are served from each instance's share. Nothing else fails, /readyz
// shows the degraded budget, every instance returns to the cluster
// budget by itself, no lease is left behind and no goroutine leaks.
func TestFleetBudgetRedisRestart(t *testing.T) {
	for _, mode := range []string{"closed", "open"} {
		t.Run(mode, func(t *testing.T) {
			leaks := goleak.IgnoreCurrent()
			t.Cleanup(func() { goleak.VerifyNone(t, leaks) }) // runs last: after every instance stopped
			srv, url := redistest.NewServer(t)
			const limit = 6
			f := newFleet(t, "fleet-restart:", orchestrator.Config{
				Budget: limit, AcquireTimeout: 500 * time.Millisecond, BudgetLeaseTime: 2 * time.Second,
				BudgetCallTimeout: 200 * time.Millisecond, BudgetFailOpen: mode == "open", BudgetInstances: 3,
			}, url, url, url)
			f.up.SetScript(upstreamtest.Script{Chunks: chunks(3, "r"), Gap: 5 * time.Millisecond})
			var (
				mu      sync.Mutex
				phase   = "before"
				answers = map[string]int{} // "phase status code"
				stop    = make(chan struct{})
				wg      sync.WaitGroup
			)
			for i, e := range f.envs {
				wg.Add(1)
				go func() {
					defer wg.Done()
					for k := 0; ; k++ {
						select {
						case <-stop:
							return
						default:
						}
						ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
						resp := e.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": fmt.Sprint("load ", i, " ", k), "nocache": true})
						raw, _ := io.ReadAll(resp.Body)
						resp.Body.Close()
						cancel()
						key := fmt.Sprint(resp.StatusCode)
						if resp.StatusCode != http.StatusOK {
							var eb struct {
								Error struct{ Code string }
							}
							_ = json.Unmarshal(raw, &eb)
							key += " " + eb.Error.Code
						}
						mu.Lock()
						answers[phase+" "+key]++
						mu.Unlock()
					}
				}()
			}
			setPhase := func(p string) {
				mu.Lock()
				phase = p
				mu.Unlock()
			}
			count := func(key string) int {
				mu.Lock()
				defer mu.Unlock()
				return answers[key]
			}
			waitFor(t, 10*time.Second, "traffic served before the outage", func() bool { return count("before 200") >= 6 })
			srv.Kill()
			setPhase("outage")
			for i, e := range f.envs {
				waitFor(t, 10*time.Second, fmt.Sprintf("instance %d's /readyz shows the degraded budget", i), func() bool {
					return strings.HasPrefix(e.readyBudget(), "degraded: ")
				})
			}
			want := "outage 503 budget_unavailable"
			if mode == "open" {
				want = "outage 200"
			} else {
				// Every door refuses the same way, the OpenAI one in its
				// own error shape; async tasks too.
				for path, body := range map[string]any{
					"/v1/chat/completions": map[string]any{"model": "sim-1", "stream": true, "messages": []map[string]string{{"role": "user", "content": "door"}}},
					"/v1/tasks":            map[string]any{"prompt": "queued while down", "nocache": true},
				} {
					resp := f.envs[1].do(ctxT(t, 10*time.Second), http.MethodPost, path, body)
					raw, _ := io.ReadAll(resp.Body)
					resp.Body.Close()
					if resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(raw), "budget_unavailable") || resp.Header.Get("Retry-After") == "" {
						t.Errorf("POST %s while the budget's Redis is down: %d %s", path, resp.StatusCode, raw)
					}
				}
			}
			waitFor(t, 10*time.Second, "during the outage: "+want, func() bool { return count(want) >= 3 })
			if mode == "open" {
				// A burst far above the shares: each instance stays within
				// its own, ceil(6/3) = 2 (running streams included), so the
				// fleet stays within 3 shares, here the limit.
				f.up.SetScript(upstreamtest.Script{Chunks: chunks(3, "b"), Gap: 30 * time.Millisecond})
				var burst sync.WaitGroup
				for i, e := range f.envs {
					for k := range 6 {
						burst.Add(1)
						go func() {
							defer burst.Done()
							ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
							defer cancel()
							resp := e.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": fmt.Sprint("burst ", i, " ", k), "nocache": true})
							raw, _ := io.ReadAll(resp.Body)
							resp.Body.Close()
							key := fmt.Sprint(resp.StatusCode)
							if resp.StatusCode != http.StatusOK {
								var eb struct {
									Error struct{ Code string }
								}
								_ = json.Unmarshal(raw, &eb)
								key += " " + eb.Error.Code // checked below with the others
							}
							mu.Lock()
							answers["outage "+key]++
							mu.Unlock()
						}()
					}
				}
				burstDone := make(chan struct{})
				go func() { burst.Wait(); close(burstDone) }()
				peak := make([]int, len(f.envs))
			sample:
				for {
					select {
					case <-burstDone:
						break sample
					case <-time.After(5 * time.Millisecond): // sampling each instance's in-flight slots during the burst
					}
					for i, e := range f.envs {
						peak[i] = max(peak[i], e.budgetView().Upstreams[0].InFlight)
					}
				}
				t.Logf("failing open, peak slots per instance during a burst of 6 each: %v (share 2); upstream peak %d", peak, f.counter.Max())
				for i, p := range peak {
					if p > 2 {
						t.Errorf("instance %d held %d slots failing open, its share is 2", i, p)
					}
				}
				if slices.Max(peak) < 2 {
					t.Errorf("the burst never filled a share (peaks %v): the check above proved nothing", peak)
				}
				if m := f.counter.Max(); m > limit {
					t.Errorf("%d streams at once at the upstream, limit %d with the right SLUICE_BUDGET_INSTANCES", m, limit)
				}
				f.up.SetScript(upstreamtest.Script{Chunks: chunks(3, "r"), Gap: 5 * time.Millisecond})
			}
			srv.Start()
			setPhase("after")
			for i, e := range f.envs {
				waitFor(t, 15*time.Second, fmt.Sprintf("instance %d back on the cluster budget", i), func() bool { return e.readyBudget() == "ok" })
			}
			waitFor(t, 10*time.Second, "traffic served after the outage", func() bool { return count("after 200") >= 6 })
			close(stop)
			wg.Wait()
			mu.Lock()
			t.Logf("answers by phase: %v", answers)
			for k, c := range answers {
				status := strings.SplitN(k, " ", 2)[1]
				ok := status == "200" || status == "503 overloaded" || (mode == "closed" && status == "503 budget_unavailable")
				if !ok {
					t.Errorf("answer %q (%d times): not one of the documented ones", k, c)
				}
			}
			mu.Unlock()
			for _, e := range f.envs {
				e.waitIdle()
			}
			waitFor(t, 10*time.Second, "no lease left in Redis after recovery", func() bool { return f.live(t, 0) == 0 })
		})
	}
}
