package orchestrator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"runtime/debug"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// stopGrace bounds how long a task waits for a cancelled upstream call to
// return before it gives its slot back anyway (and logs the straggler).
const stopGrace = 5 * time.Second

// relayBuffer is how many chunks the upstream client may read ahead of
// the task goroutine.
const relayBuffer = 16

// slot is the budget a task holds: a permit, or a claim still waiting for
// one. release gives back whichever it holds; calling it again is a no-op.
type slot struct {
	permit *pipeline.Permit
	claim  *pipeline.Claim
	// settle, when set, holds the permit that long after release (or
	// until Shutdown): the last upstream call was cut, and the upstream
	// has yet to see it.
	settle time.Duration
	o      *Orchestrator
	// r is the route whose budget the slot is, and hop its index among
	// the task's hops (routes.go); rest are the indices of the hops not
	// yet tried for the task, in the order it falls back through them.
	r    *route
	hop  int
	rest []int
	// probe is the breaker's permission taken at admission (interactive
	// requests), used by the first attempt; nil otherwise.
	probe func(pipeline.Outcome)
	// who is the class and tenant the slot was claimed for; a retry
	// claims again as the same.
	who pipeline.Who
	// sent is the current attempt's start, for the adaptive limit's TTFT.
	sent time.Time
}

func (s *slot) release() {
	if s.probe != nil {
		s.probe(pipeline.Ignore) // never used: say nothing of the upstream
		s.probe = nil
	}
	if s.claim != nil {
		s.claim.Abandon()
		s.claim = nil
	}
	if s.permit != nil {
		if p := s.permit; s.settle > 0 && s.o != nil {
			s.o.settle(p, s.settle)
		} else {
			p.Release()
		}
		s.permit = nil
	}
	s.settle = 0
}

// settle releases p after d, or at once when Shutdown begins: one
// goroutine, counted in o.running, so that Shutdown returns with every
// slot back.
func (o *Orchestrator) settle(p *pipeline.Permit, d time.Duration) {
	o.running.Add(1)
	go func() {
		defer o.running.Done()
		defer p.Release()
		t := time.NewTimer(d)
		defer t.Stop()
		select {
		case <-t.C:
		case <-o.sweeperC:
		}
	}()
}

// run is the task goroutine: it owns the slot and the upstream call, and
// ends the task exactly once.
func (o *Orchestrator) run(ctx context.Context, t *Task, req *Request, ns cache.Namespace, hops []hop, s *slot, mode Mode) {
	log := o.log.With("task_id", t.ID)
	defer s.release()
	defer func() {
		if p := recover(); p != nil {
			log.Error("task panicked", "panic", p, "stack", string(debug.Stack()))
			o.end(ctx, t, req, ns, fmt.Errorf("orchestrator: panic: %v", p), log)
		}
	}()

	queued := s.claim != nil
	if queued {
		qctx, stopQueue := context.WithDeadlineCause(ctx, t.CreatedAt.Add(o.cfg.MaxQueueWait), ErrQueueWait)
		p, err := s.claim.Wait(qctx)
		s.claim = nil
		if err != nil {
			o.end(qctx, t, req, ns, err, log)
			stopQueue()
			return
		}
		stopQueue()
		s.permit = p
	}
	// The total cap counts from here: the task has its slot.
	deadline := time.Now().Add(req.Deadline)
	ctx, stopCap := context.WithDeadlineCause(ctx, deadline, ErrDeadline)
	defer stopCap()
	if queued {
		// Its deadline is the cap's now, no longer the queue wait's.
		t.mu.Lock()
		t.status, t.deadline = StatusRunning, deadline
		t.mu.Unlock()
		if t.slotted != nil {
			close(t.slotted) // the mirror writes the record again with it
		}
	}

	var (
		last time.Time
		size int  // bytes of the answer so far
		cut  bool // the answer reached its limit: nothing more is kept
	)
	emit := func(c upstream.Chunk) {
		if cut {
			// Chunks the upstream client read ahead of the cut.
			return
		}
		if limit := o.cfg.MaxAnswerBytes; limit > 0 && size+len(c.Text) > limit {
			// The answer outgrows its limit: keep what fits (whole
			// characters), then stop the upstream call; the task ends
			// partial and its slot is freed.
			c.Text = cutUTF8(c.Text, max(limit-size, 0))
			cut = true
			defer t.cancel(ErrAnswerTooLarge)
		}
		size += len(c.Text)
		now := time.Now()
		if c.Text != "" && t.tr.Len() == 0 { // this goroutine is the only writer
			// Recorded before the delta is visible, so that whoever sees
			// delta 1 (a reader, the shared-state mirror) sees the TTFT.
			ttft := now.Sub(t.CreatedAt)
			t.mu.Lock()
			t.firstToken = ttft
			t.mu.Unlock()
			o.obs.FirstToken(s.r.name, ttft)
			if a := s.r.adaptive; a != nil {
				a.Observe(pipeline.Observation{Signal: pipeline.SignalTTFT, Start: s.sent, At: now, TTFT: now.Sub(s.sent)})
			}
		}
		seq := t.tr.Append(c.Text)
		if seq == 0 {
			return // empty text: not a chunk (upstreams should not send it)
		}
		if seq > 1 {
			o.obs.ChunkGap(s.r.name, now.Sub(last))
		}
		last = now
	}

	var err error
	for {
		// The task's route is s.r; on a refusal or a retryable failure
		// before any output it moves to the next route of its model not
		// yet tried (s.rest).
		err = o.call(ctx, t, req, hops[s.hop], s, mode, emit, log)
		if len(s.rest) == 0 || !mayFallBack(ctx, err, hasOutput(t.tr)) {
			break
		}
		if !o.fallBack(ctx, t, hops, s, mode, err, log.Info) {
			break // no other route admits it: the task ends with this route's error
		}
	}
	s.release() // the upstream stream has ended: the slot is free before the terminal event
	o.end(ctx, t, req, ns, err, log)
}

// call runs a task's upstream calls on the route of its slot (h.r): the
// first attempt and at most Config.MaxRetries retries before any output,
// each with the breaker's permission; a retry gives the slot back while
// it waits and takes it again. It returns the last attempt's error.
func (o *Orchestrator) call(ctx context.Context, t *Task, req *Request, h hop, s *slot, mode Mode, emit func(upstream.Chunk), log *slog.Logger) error {
	r := h.r
	upReq := upstream.Request{Model: cmp.Or(h.model, req.Model), Messages: req.Messages, MaxTokens: req.MaxTokens, Sampling: req.Sampling}
	var err error
	for attempt := 0; ; attempt++ {
		done, after, berr := s.probe, time.Duration(0), error(nil)
		s.probe = nil
		if done == nil {
			done, after, berr = r.breaker.Allow()
		}
		if berr != nil {
			err = &Refusal{Code: CodeUpstreamUnavailable, Reason: RefusedBreakerOpen, Upstream: r.name, RetryAfter: after, Err: berr}
			break
		}
		// Only the first outcome counts: this one matters if a panic
		// skips the real one, so that a half-open probe is never stuck.
		defer done(pipeline.Ignore)
		var cut bool
		s.sent = time.Now()
		if em, ok := r.up.(upstream.Emitter); ok {
			// Not through attempt: the call runs on this goroutine, and
			// a waiting task's stack stays within 4 KiB without the frame.
			cut, err = attemptOn(ctx, r, em, &upReq, emit, log)
		} else {
			cut, err = o.attempt(ctx, r, upReq, emit, log)
		}
		if cut {
			s.settle = r.settle
		}
		done(o.attempted(ctx, t, r, s, err))
		if err == nil || errors.Is(err, upstream.ErrLength) || attempt >= o.cfg.MaxRetries || !retryable(err) || hasOutput(t.tr) {
			break
		}
		var again bool
		if again, err = o.retry(ctx, t, r, s, mode, err, log); !again {
			break
		}
	}
	return err
}

// attempted records an attempt's outcome (metrics, the adaptive limit,
// the task's upstream status) and returns what the breaker is told. It
// and retry are apart from call so that call's frame, on the stack of
// every task that waits for its upstream, stays small.
//
//go:noinline
func (o *Orchestrator) attempted(ctx context.Context, t *Task, r *route, s *slot, err error) pipeline.Outcome {
	outcome, status := classify(ctx, err)
	bo := breakerOutcome(outcome, status, t.tr)
	if r.adaptive != nil && overloadSignal(outcome, status, t.tr) {
		r.adaptive.Observe(pipeline.Observation{Signal: pipeline.SignalOverload, Start: s.sent, At: time.Now()})
		if outcome == OutcomeHTTPError {
			// A 429 or 503 says "busy", which the adaptive limit
			// answers: the breaker is for an upstream that fails.
			bo = pipeline.Ignore
		}
	}
	o.obs.UpstreamAttempt(r.name, string(outcome), status)
	if status != 0 {
		t.mu.Lock()
		t.upstreamCode = status
		t.mu.Unlock()
	}
	return bo
}

// retry waits before the next attempt after err, with the slot given
// back meanwhile, and takes a slot again: again is false when there is no
// next attempt, and err is then the task's error.
//
//go:noinline
func (o *Orchestrator) retry(ctx context.Context, t *Task, r *route, s *slot, mode Mode, err error, log *slog.Logger) (again bool, _ error) {
	delay, ok := o.retryDelay(ctx, err)
	if !ok {
		return false, err
	}
	log.Info("retrying upstream", "after_ms", delay.Milliseconds(), "cause", err.Error())
	// The retry gives its slot back while it waits and takes its
	// place in line again, like any other request.
	s.release()
	if !sleep(ctx, delay) {
		return false, ctx.Err()
	}
	if perr := o.reacquire(ctx, s, mode); perr != nil {
		return false, fmt.Errorf("orchestrator: retry found no budget: %w (after %w)", perr, err)
	}
	t.mu.Lock()
	t.retries++
	t.mu.Unlock()
	o.obs.Retry(r.name)
	return true, err
}

// attempt makes one upstream call under the watchdogs, relaying chunks to
// emit, and returns once the upstream call has stopped (or stopGrace). cut
// reports that the call had not ended on its own when it was stopped (a
// watchdog, a cancel): its slot waits CutSettle before it is free.
func (o *Orchestrator) attempt(ctx context.Context, r *route, req upstream.Request, emit func(upstream.Chunk), log *slog.Logger) (cut bool, err error) {
	actx, cancel := context.WithCancel(ctx)
	defer cancel()
	// The upstream client reads ahead by up to relayBuffer chunks (Watch
	// relays what is left once it reports), so that a burst of chunks is
	// relayed without a goroutine switch per chunk.
	in := make(chan upstream.Chunk, relayBuffer)
	done := make(chan error, 1)
	exited := make(chan struct{})
	var ended atomic.Bool // the upstream call returned on its own
	go func() {
		defer close(exited)
		defer func() {
			if p := recover(); p != nil {
				log.Error("upstream client panicked", "panic", p, "stack", string(debug.Stack()))
				done <- fmt.Errorf("orchestrator: upstream panic: %v", p)
			}
		}()
		uerr := r.up.Stream(actx, req, in)
		ended.Store(true)
		done <- uerr
	}()
	err = pipeline.Watch(ctx, pipeline.WatchConfig{TTFT: r.ttft, Idle: r.idle}, in, done, emit)
	cut = !ended.Load()
	cancel()
	select {
	case <-exited: // the usual case: no grace timer to make
	default:
		grace := time.NewTimer(stopGrace)
		defer grace.Stop()
		select {
		case <-exited:
		case <-grace.C:
			log.Error("upstream call did not stop after cancel; releasing its slot anyway", "grace", stopGrace)
		}
	}
	return cut, err
}

// attemptOn is attempt for an upstream that is an Emitter: the call runs
// on the task's goroutine (pipeline.WatchCall), with no goroutine, channel
// or read-ahead of its own, and its chunks go to emit as they are read.
// The outcomes are attempt's: a panicking upstream client is an error
// (and a cut call), and a panic in emit is the task's, as on the channel
// path. There is no stop grace: the Emitters (the OpenAI client, the
// simulated model) return as soon as their context is done.
func attemptOn(ctx context.Context, r *route, em upstream.Emitter, req *upstream.Request, emit func(upstream.Chunk), log *slog.Logger) (cut bool, err error) {
	var emitting, panicked bool
	stopped, err := pipeline.WatchCall(ctx, pipeline.WatchConfig{TTFT: r.ttft, Idle: r.idle},
		func(actx context.Context, relay func(upstream.Chunk) error) (err error) {
			defer func() {
				if p := recover(); p != nil {
					if emitting {
						panic(p) // emit's own: the task's recover reports it
					}
					log.Error("upstream client panicked", "panic", p, "stack", string(debug.Stack()))
					panicked = true
					err = fmt.Errorf("orchestrator: upstream panic: %v", p)
				}
			}()
			err = em.StreamTo(actx, *req, relay)
			if errors.Is(err, upstream.ErrLength) {
				// The answer was whole up to its token limit: a
				// watchdog that fires while the client reads the
				// stream's close does not cut it.
				err = pipeline.Ended(err)
			}
			return err
		},
		func(c upstream.Chunk) {
			emitting = true
			emit(c)
			emitting = false
		})
	return stopped || panicked, err
}

// classify names an attempt's outcome for metrics and breakers.
func classify(ctx context.Context, err error) (outcome Outcome, status int) {
	if err == nil {
		return OutcomeOK, 200 // before the targets of errors.As escape
	}
	var se *upstream.StatusError
	var ce *upstream.ConnectError
	switch {
	case err == nil, errors.Is(err, upstream.ErrLength):
		return OutcomeOK, 200
	case errors.As(err, &se):
		return OutcomeHTTPError, se.Code
	case errors.Is(err, pipeline.ErrTTFTTimeout):
		return OutcomeTTFTTimeout, 0
	case errors.Is(err, pipeline.ErrIdleTimeout):
		return OutcomeIdleTimeout, 0
	case ctx.Err() != nil && errors.Is(context.Cause(ctx), ErrDeadline):
		return OutcomeDeadline, 0
	case ctx.Err() != nil:
		return OutcomeCancelled, 0
	case errors.As(err, &ce):
		return OutcomeConnectError, 0
	case errors.Is(err, upstream.ErrTruncated):
		return OutcomeTruncated, 0
	}
	return OutcomeError, 0
}

// breakerOutcome is what an attempt tells the upstream's breaker. A
// client's cancellation and a 4xx other than 429 (the request's fault,
// not the upstream's) never count.
func breakerOutcome(outcome Outcome, status int, tr *stream.Transcript) pipeline.Outcome {
	switch outcome {
	case OutcomeOK:
		return pipeline.Success
	case OutcomeCancelled:
		return pipeline.Ignore
	case OutcomeHTTPError:
		if status >= 400 && status < 500 && status != 429 {
			return pipeline.Ignore
		}
	case OutcomeDeadline:
		if hasOutput(tr) {
			return pipeline.Success
		}
		return pipeline.Ignore
	}
	return pipeline.Failure
}

// overloadSignal reports whether an attempt tells the adaptive limit that
// the upstream is overloaded: a 429 or 503 answer, or no first token
// within the TTFT timeout.
func overloadSignal(outcome Outcome, status int, tr *stream.Transcript) bool {
	switch outcome {
	case OutcomeHTTPError:
		return status == 429 || status == 503
	case OutcomeTTFTTimeout:
		return !hasOutput(tr)
	}
	return false
}

// retryable: connection failures, 429 and 502/503/504 only; never our own
// overload, never another 4xx, never a timeout.
func retryable(err error) bool {
	var se *upstream.StatusError
	if errors.As(err, &se) {
		switch se.Code {
		case 429, 502, 503, 504:
			return true
		}
		return false
	}
	var ce *upstream.ConnectError
	// A stream dropped before any output is a connection failure too.
	return errors.As(err, &ce) || errors.Is(err, upstream.ErrTruncated)
}

// retryDelay is the backoff with jitter, or the upstream's Retry-After when
// it fits in the deadline; ok is false when the retry cannot fit.
func (o *Orchestrator) retryDelay(ctx context.Context, err error) (time.Duration, bool) {
	base := o.cfg.RetryBackoff
	delay := base/2 + time.Duration(rand.Int64N(int64(base)))
	var se *upstream.StatusError
	if errors.As(err, &se) && se.RetryAfter > 0 {
		delay = se.RetryAfter
	}
	if dl, ok := ctx.Deadline(); ok && time.Until(dl) <= delay {
		return 0, false
	}
	return delay, true
}

// reacquire takes a slot on s's route again for a retry: an interactive
// one waits the route's acquire timeout (RouteSpec.AcquireTimeout), an
// async one queues.
func (o *Orchestrator) reacquire(ctx context.Context, s *slot, mode Mode) error {
	g, who := s.r.gate, s.who
	if mode == Interactive {
		p, err := g.AcquireAs(ctx, who, s.r.acquireTimeout)
		s.permit = p
		return err
	}
	c, err := g.EnqueueAs(who)
	if err != nil {
		return err
	}
	s.claim = c
	p, err := c.Wait(ctx)
	s.claim = nil
	s.permit = p
	return err
}

func sleep(ctx context.Context, d time.Duration) bool {
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return true
	case <-ctx.Done():
		return false
	}
}

func hasOutput(tr *stream.Transcript) bool { return tr.Len() > 0 }

// cutUTF8 returns the longest prefix of s of at most n bytes that does not
// split a character.
func cutUTF8(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// cacheAnswer writes a complete answer to the cache. A failure there (even a
// panic) must not keep the task from its terminal event: it is logged and
// the answer is simply not cached.
func (o *Orchestrator) cacheAnswer(ctx context.Context, t *Task, ns cache.Namespace, question string, log *slog.Logger) {
	defer func() {
		if p := recover(); p != nil {
			log.Error("cache store panicked; the answer is not cached", "panic", p, "stack", string(debug.Stack()))
		}
	}()
	o.cache.Store(context.WithoutCancel(ctx), ns, question, t.cacheGen, cache.Answer{Chunks: t.tr.Chunks()})
}

// noticeFmt is the notice of a cut answer: what cut it, what the text
// is, and what gets the rest. Asking the same question again starts over
// and is cut again under the same limits; continuing from the text does
// not (the page's Continue, or a request with the text as the assistant's
// turn).
const noticeFmt = "The answer was cut short (%s): the text above is everything generated before the cut. To get the rest, ask the model to continue from this text (send it back as the assistant's turn); asking the same question again starts over.%s"

// noticeHint says which setting allows longer answers, for the cuts a
// setting decides.
func noticeHint(reason FinishReason) string {
	switch reason {
	case FinishDeadline:
		return " For longer answers, raise the server's total cap, SLUICE_TOTAL_TIMEOUT (a request's deadline_ms can only lower it)."
	case FinishIdleTimeout:
		return " A model that pauses longer needs a larger SLUICE_IDLE_TIMEOUT on the server."
	}
	return ""
}

// end records the task's final state: the cache first (so that a client
// who sees the end and asks again gets a hit), then the status, then the
// transcript's terminal event.
func (o *Orchestrator) end(ctx context.Context, t *Task, req *Request, ns cache.Namespace, err error, log *slog.Logger) {
	if !t.ended.CompareAndSwap(false, true) {
		// A panic after the end (in an observer, say) must not end the
		// task a second time.
		return
	}
	total := time.Since(t.CreatedAt)
	output := hasOutput(t.tr)
	var (
		status  Status
		reason  FinishReason
		code    string
		message string
		event   = EventError
		notice  string
	)
	var ref *Refusal
	cause := context.Cause(ctx)
	switch {
	case errors.Is(cause, ErrAnswerTooLarge):
		// First: the upstream may have finished as it was cut, but the
		// text is not the whole answer (and must not be cached).
		reason, code = FinishLength, CodeAnswerTooLarge
		message = fmt.Sprintf("the answer reached the size limit of %d bytes", o.cfg.MaxAnswerBytes)
	case err == nil:
		status, reason, event = StatusDone, FinishStop, EventDone
	case errors.Is(err, upstream.ErrLength):
		// Complete as far as it goes, but cut at the token limit: done,
		// with finish_reason length, and never cached.
		status, reason, event = StatusDone, FinishLength, EventDone
	case errors.As(err, &ref):
		status, reason, code, message = StatusFailed, FinishUpstreamError, ref.Code, "the upstream's circuit is open: it failed repeatedly; retry later"
	case errors.Is(err, pipeline.ErrTTFTTimeout):
		status, reason, code = StatusFailed, FinishTTFTTimeout, CodeTTFTTimeout
		message = fmt.Sprintf("no first token within %s", o.routeNamed(t.Upstream).ttft)
	case errors.Is(err, pipeline.ErrIdleTimeout):
		reason, code, message = FinishIdleTimeout, CodeIdleTimeout, fmt.Sprintf("no chunk for %s", o.routeNamed(t.Upstream).idle)
	case ctx.Err() != nil && errors.Is(cause, ErrQueueWait):
		status, reason, code = StatusFailed, FinishOverloaded, CodeQueueTimeout
		message = fmt.Sprintf("no budget slot within the queue wait limit (%s); the task was never sent upstream; retry later", o.cfg.MaxQueueWait)
	case ctx.Err() != nil && errors.Is(cause, ErrDeadline):
		// With output it is a cut (code "deadline"); with none, no first
		// token came in the time there was (code ttft_timeout, 504 on the
		// OpenAI door).
		reason, code = FinishDeadline, CodeDeadline
		if !output {
			code = CodeTTFTTimeout
		}
		message = fmt.Sprintf("the total time cap (%s) was reached", req.Deadline)
	case ctx.Err() != nil && errors.Is(cause, ErrShutdown):
		reason, code, message = FinishCancelled, CodeShuttingDown, "the server is shutting down"
	case ctx.Err() != nil:
		status, reason, code, message = StatusCancelled, FinishCancelled, CodeCancelled, "the task was cancelled"
	default:
		reason, code, message = FinishUpstreamError, CodeUpstreamError, "the upstream failed: "+err.Error()
		var ce *upstream.ConnectError
		if errors.As(err, &ce) {
			// A connection error names the upstream's address: for the
			// operator's log ("task end" err), not for every tenant.
			message = "the upstream could not be reached"
		}
	}
	if status == "" {
		// A cut: partial with the text so far, or failed with none.
		if output {
			status, event = StatusPartial, EventPartial
			notice = fmt.Sprintf(noticeFmt, message, noticeHint(reason))
		} else {
			status = StatusFailed
		}
	}
	if status == StatusDone && reason == FinishStop && !req.NoCache && o.cache != nil {
		o.cacheAnswer(ctx, t, ns, req.Question, log)
	}
	o.gens.ended(t) // no request joins it any more: the next asks the cache
	// The status is final before the terminal event is published, so a
	// client that sees the event and then polls sees the same end. (No
	// delta comes after this point: the text is already whole.)
	t.mu.Lock()
	ttft := t.firstToken
	t.status, t.finishReason, t.total, t.endedAt = status, reason, total, time.Now()
	if status == StatusFailed || status == StatusCancelled {
		t.err = &ErrorInfo{Code: code, Message: message}
	}
	retries, upstreamCode := t.retries, t.upstreamCode
	t.mu.Unlock()
	first := int64(-1)
	if ttft > 0 {
		first = ttft.Milliseconds()
	}
	t.tr.Finish(stream.End{
		Event: event, FinishReason: string(reason), Notice: notice, Code: code, Message: message,
		FirstTokenMs: first, TotalMs: total.Milliseconds(),
	})
	// The store learns of the end before anyone can see it: a task that
	// ends after this one (even one started by a caller who saw this one
	// end) is ended after it, and retention drops them in that order.
	o.store.Ended(t)
	close(t.done)
	o.obs.TaskEnded(t.View())
	text, chunks, _ := t.tr.Snapshot()
	attrs := []any{"status", status, "finish_reason", reason, "ttft_ms", first,
		"total_ms", total.Milliseconds(), "chunks", chunks,
		"cache", t.Cache.Status, "upstream", t.Upstream, "upstream_status", upstreamCode, "retries", retries}
	if err != nil && status != StatusDone {
		attrs = append(attrs, "err", err.Error())
	}
	if o.cfg.LogPrompts {
		attrs = append(attrs, "prompt", req.Question, "answer", text)
	}
	log.Info("task end", attrs...)
}
