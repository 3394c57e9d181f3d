package web

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
)

// decodeTask reads and validates a task request body and its
// Idempotency-Key.
func (s *Server) decodeTask(w http.ResponseWriter, r *http.Request, tenant string) (orchestrator.Request, *taskRequest, error) {
	var tr taskRequest
	if err := decodeJSON(w, r, s.cfg.MaxBody, &tr); err != nil {
		return orchestrator.Request{}, nil, err
	}
	req, err := tr.toOrchestrator(tenant)
	if err == nil {
		err = priority(r, &req)
	}
	if err == nil {
		req.IdempotencyKey, err = idempotencyKey(r)
	}
	return req, &tr, err
}

// setReplayed marks the answer to a repeated POST (same Idempotency-Key)
// that was attached to the first one's task.
func setReplayed(w http.ResponseWriter, attached bool) {
	if attached {
		w.Header().Set("Idempotent-Replayed", "true")
	}
}

// createTask is POST /v1/tasks: start a task in the background.
func (s *Server) createTask(w http.ResponseWriter, r *http.Request, tenant string) {
	req, _, err := s.decodeTask(w, r, tenant)
	if err != nil {
		writeError(w, err)
		return
	}
	t, adm := s.submit(w, r, req, orchestrator.Async, writeError)
	if t == nil {
		return
	}
	url := "/v1/tasks/" + t.ID
	events := url + "/events"
	if tenant != "" {
		events += "?token=" + s.eventsToken(tenant, t.ID)
	}
	w.Header().Set("Location", url)
	body := map[string]any{
		"id": t.ID, "status": t.Status(), "url": url, "events_url": events,
		"cache": t.Cache,
	}
	if adm.Coalesced {
		body["coalesced"] = true
	}
	writeJSON(w, http.StatusAccepted, body)
}

// streamTask is POST /v1/stream: start a task and stream it on this
// response. Refusals are answered before the stream starts. The task goes
// on when the client leaves, unless the request said "detach": false.
func (s *Server) streamTask(w http.ResponseWriter, r *http.Request, tenant string) {
	resume, err := lastEventID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	req, tr, err := s.decodeTask(w, r, tenant)
	if err != nil {
		writeError(w, err)
		return
	}
	t, adm := s.submit(w, r, req, orchestrator.Interactive, writeError)
	if t == nil {
		return
	}
	after := 0
	if adm.Attached {
		// A repeated POST (a client reconnecting by sending it again)
		// resumes like GET .../events: after its Last-Event-ID.
		after = resume
	}
	st := s.serveEvents(r.Context(), w, t, s.taskFraming(r.Context(), t, adm.Coalesced), after)
	// detach:false cancels the task its own request started, or with
	// coalescing, releases its share of it: the task is cancelled when
	// no request that shared it needs it. A repeat that attached to
	// another request's task leaves it to its owner.
	if st.Reason != stream.CloseEnd && tr.Detach != nil && !*tr.Detach && !adm.Attached {
		s.orch.Release(tenant, t.ID)
	}
}

// taskEvents is GET /v1/tasks/{id}/events: replay and follow a task,
// resuming after Last-Event-ID.
func (s *Server) taskEvents(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	var t *orchestrator.Task
	if tok := r.URL.Query().Get("token"); tok != "" && len(s.cfg.APIKeys) > 0 {
		if u, err := uuid.Parse(id); err == nil {
			if tenant, ok := s.tokenTenant(u.String(), tok); ok {
				t = s.orch.Follow(tenant, u.String())
			}
		}
		if t == nil {
			writeError(w, notFound("no task "+quoteID(id)+" for this token"))
			return
		}
	} else {
		tenant, ok := s.tenant(w, r)
		if !ok {
			return
		}
		if t = s.lookup(w, id, tenant, s.orch.Follow); t == nil {
			return
		}
	}
	after, err := lastEventID(r)
	if err != nil {
		writeError(w, err)
		return
	}
	setCacheHeaders(w, t)
	w.Header().Set("X-Task-Id", t.ID)
	s.serveEvents(r.Context(), w, t, s.taskFraming(r.Context(), t, false), after)
}

// lastEventID is stream.LastEventID with the contract's 400 for a value
// that is no event id.
func lastEventID(r *http.Request) (int, error) {
	n, err := stream.LastEventID(r)
	var bad *stream.BadLastEventIDError
	if errors.As(err, &bad) {
		return 0, badRequest(fmt.Sprintf("Last-Event-ID must be the id of an event this stream sent (a whole number >= 0), not %q", clip(bad.Value, maxEcho)))
	}
	return n, err
}

// serveEvents runs the write loop of every streaming door: t's transcript
// after the cursor after, framed by f (the task API's events, or the
// OpenAI door's chunks), under the server's connection policy, counted by
// the ConnObserver.
func (s *Server) serveEvents(ctx context.Context, w http.ResponseWriter, t *orchestrator.Task, f stream.Framing, after int) stream.ConnStats {
	c := stream.Conn{Config: s.cfg.Conn, Framing: f}
	obs := s.cfg.ConnObserver
	if obs != nil {
		obs.ConnOpened()
		c.OnWrite = obs.ConnWrote
	}
	st := c.Serve(ctx, w, t.Transcript(), after)
	if obs != nil {
		obs.ConnClosed(st)
	}
	if st.Reason == stream.CloseSlowConsumer {
		s.logSlowReader(t, f, st)
	}
	return st
}

// taskEventsOf is the framing of t's task API event stream, for a
// request that may have joined t's generation (coalesced): its meta event
// says so.
//
// NOTE: taskEventsOf and logSlowReader keep their temporaries out of
// serveEvents' frame, which stays on the stack of every open stream: a
// parked stream's stack shrinks from 16 to 8 KiB only while it uses less
// than a quarter of it (see stream.Conn.Serve and TestIdleStreamMemory).
//
//go:noinline
func taskEventsOf(t *orchestrator.Task, coalesced bool) stream.Framing {
	m := t.Meta()
	m.Coalesced = coalesced
	meta, _ := json.Marshal(m) // strings and numbers: cannot fail
	return stream.TaskEvents{Meta: meta}
}

// taskFraming is taskEventsOf, written once t's upstream is settled or
// Config.FallbackHold has passed: while t may still move to another
// upstream (its model has several and it has no delta yet), the stream
// waits up to FallbackHold for its first delta or its end before its
// status line and meta, so that a fallback before the first token (a
// refused connection, a 503) is named by meta. Heartbeats start after it.
func (s *Server) taskFraming(ctx context.Context, t *orchestrator.Task, coalesced bool) stream.Framing {
	if s.cfg.FallbackHold > 0 && s.orch.UpstreamCount(t.Model) > 1 {
		holdForFallback(ctx, t, s.cfg.FallbackHold)
	}
	return taskEventsOf(t, coalesced)
}

// holdForFallback waits at most d, or until ctx ends, for t's first delta
// or its end.
func holdForFallback(ctx context.Context, t *orchestrator.Task, d time.Duration) {
	var timer *time.Timer
	for {
		p := t.Transcript().Read(0, 1)
		if len(p.Deltas) > 0 || p.End != nil {
			return
		}
		if timer == nil {
			timer = time.NewTimer(d)
			defer timer.Stop()
		}
		select {
		case <-p.Changed:
		case <-timer.C:
			return
		case <-ctx.Done():
			return
		}
	}
}

//go:noinline
func (s *Server) logSlowReader(t *orchestrator.Task, f stream.Framing, st stream.ConnStats) {
	switch f.(type) {
	case *responseEvents, *heldResponseEvents:
		s.log.Warn("slow reader disconnected (responses stream); it can resume with starting_after",
			"task_id", t.ID, "cursor", st.Cursor, "bytes", st.Bytes)
		return
	}
	if _, ok := f.(stream.TaskEvents); !ok {
		// The OpenAI door's chunks carry no ids to resume after.
		s.log.Warn("slow reader disconnected (chat completions stream)",
			"task_id", t.ID, "cursor", st.Cursor, "bytes", st.Bytes)
		return
	}
	s.log.Warn("slow reader disconnected; it can resume with Last-Event-ID",
		"task_id", t.ID, "cursor", st.Cursor, "bytes", st.Bytes)
}

// lookup finds the tenant's task with get (Get, Follow, ...) or writes a
// 404.
func (s *Server) lookup(w http.ResponseWriter, id, tenant string, get func(tenant, id string) *orchestrator.Task) *orchestrator.Task {
	u, err := uuid.Parse(id)
	var t *orchestrator.Task
	if err == nil {
		t = get(tenant, u.String())
	}
	if t == nil {
		writeError(w, notFound("no task "+quoteID(id)))
	}
	return t
}

// quoteID quotes a client's id for an error message, cut to a sane length.
func quoteID(id string) string {
	if len(id) > 64 {
		id = id[:64] + "…"
	}
	return strconv.Quote(id)
}

// getTask is GET /v1/tasks/{id}: poll a task.
func (s *Server) getTask(w http.ResponseWriter, r *http.Request, tenant string) {
	if t := s.lookup(w, r.PathValue("id"), tenant, s.orch.Get); t != nil {
		setCacheHeaders(w, t)
		w.Header().Set("X-Task-Id", t.ID)
		s.writeAnswer(w, http.StatusOK, t.View())
	}
}

// cancelTask is DELETE /v1/tasks/{id}: cancel a queued or running task.
func (s *Server) cancelTask(w http.ResponseWriter, r *http.Request, tenant string) {
	cancel := func(tenant, id string) *orchestrator.Task { return s.orch.CancelAndWait(r.Context(), tenant, id) }
	if t := s.lookup(w, r.PathValue("id"), tenant, cancel); t != nil {
		s.writeAnswer(w, http.StatusOK, t.View())
	}
}

// submit hands a door's request to the orchestrator and writes the task's
// headers (X-Task-Id, X-Cache…, Idempotent-Replayed, X-Sluice-Coalesced).
// On a refusal it writes the door's error with writeErr, or nothing when
// the client left while waiting for budget, and returns nil. adm says
// whether the request attached to an earlier one with the same
// Idempotency-Key, or joined an identical request's running generation
// (whose task it then shares: the same X-Task-Id).
func (s *Server) submit(w http.ResponseWriter, r *http.Request, req orchestrator.Request, mode orchestrator.Mode,
	writeErr func(http.ResponseWriter, error)) (*orchestrator.Task, orchestrator.Admission) {
	t, adm, err := s.orch.Admit(r.Context(), req, mode)
	if err != nil {
		if r.Context().Err() == nil {
			writeErr(w, err)
		} // else the client left while waiting for budget: nobody to answer
		return nil, adm
	}
	setCacheHeaders(w, t)
	setReplayed(w, adm.Attached)
	if adm.Coalesced {
		w.Header().Set("X-Sluice-Coalesced", "true")
	}
	w.Header().Set("X-Task-Id", t.ID)
	return t, adm
}

// setCacheHeaders writes the X-Cache headers of a task's cache decision.
func setCacheHeaders(w http.ResponseWriter, t *orchestrator.Task) {
	h := w.Header()
	switch t.Cache.Status {
	case orchestrator.CacheHit:
		h.Set("X-Cache", "HIT")
		h.Set("X-Cache-Kind", string(t.Cache.Kind))
		if t.Cache.Kind == cache.KindSemantic {
			h.Set("X-Cache-Score", strconv.FormatFloat(t.Cache.Score, 'f', 3, 64))
		}
	case orchestrator.CacheBypass:
		h.Set("X-Cache", "BYPASS")
	default:
		h.Set("X-Cache", "MISS")
	}
}
