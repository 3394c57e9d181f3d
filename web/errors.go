package web

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
)

// Error codes of the contract that belong to the HTTP layer.
const (
	codeInvalid          = "invalid_request"
	codeUnauthorized     = "unauthorized"
	codeNotFound         = "not_found"
	codeMethod           = "method_not_allowed"
	codeTooLarge         = "payload_too_large"
	codeUnsupportedMedia = "unsupported_media_type"
	codeInternal         = "internal_error"
	// codeIdempotencyConflict: an Idempotency-Key reused for a different
	// request (409).
	codeIdempotencyConflict = "idempotency_conflict"
)

// apiError is an error with its HTTP status and contract code.
type apiError struct {
	Status     int
	Code       string
	Message    string
	RetryAfter time.Duration
	// Param names the request field at fault, when one is (the OpenAI
	// doors' error "param").
	Param string
}

func (e *apiError) Error() string { return e.Code + ": " + e.Message }

func badRequest(msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Message: msg}
}

// badParam is badRequest naming the field at fault.
func badParam(field, msg string) *apiError {
	return &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Message: msg, Param: field}
}

// unsupported refuses a feature sluice does not have, naming the field
// at fault (param) and saying why, instead of silently answering
// something else.
func unsupported(field, why string) *apiError {
	return badParam(field, field+" is not supported by sluice: "+why)
}

func notFound(msg string) *apiError {
	return &apiError{Status: http.StatusNotFound, Code: codeNotFound, Message: msg}
}

// statusError maps any error to the contract's status and body. It is
// the only place where errors become HTTP statuses.
func statusError(err error) *apiError {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae
	}
	var ref *orchestrator.Refusal
	if errors.As(err, &ref) {
		msg := "the in-flight budget for upstream " + ref.Upstream + " is full; retry later"
		switch ref.Reason {
		case orchestrator.RefusedQueueFull:
			msg = "the task queue for upstream " + ref.Upstream + " is full; retry later"
		case orchestrator.RefusedBreakerOpen:
			msg = "upstream " + ref.Upstream + " is failing and its circuit is open; retry later"
		case orchestrator.RefusedBudgetUnavailable:
			msg = "the fleet-wide budget for upstream " + ref.Upstream + " cannot be reached (its Redis does not answer); retry later"
		}
		return &apiError{Status: http.StatusServiceUnavailable, Code: ref.Code, Message: msg, RetryAfter: ref.RetryAfter}
	}
	var um *orchestrator.UnknownModelError
	if errors.As(err, &um) {
		// 400 like any other bad field (the OpenAI doors name it in
		// "param"); the message lists the models to choose from.
		return &apiError{Status: http.StatusBadRequest, Code: codeInvalid, Param: "model",
			Message: fmt.Sprintf("unknown model %q; this server serves: %s", um.Model, strings.Join(um.Known, ", "))}
	}
	if errors.Is(err, orchestrator.ErrIdempotencyConflict) {
		return &apiError{Status: http.StatusConflict, Code: codeIdempotencyConflict,
			Message: "this Idempotency-Key was already used for a different request; use a new key for a new request"}
	}
	if errors.Is(err, orchestrator.ErrClosed) {
		return &apiError{Status: http.StatusServiceUnavailable, Code: orchestrator.CodeShuttingDown, Message: "the server is shutting down", RetryAfter: time.Second}
	}
	return &apiError{Status: http.StatusInternalServerError, Code: codeInternal, Message: "internal error"}
}

// errorBody is the contract's error JSON.
type errorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// writeError writes err as the contract's JSON error.
func writeError(w http.ResponseWriter, err error) {
	ae := statusError(err)
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ae.RetryAfter.Seconds()))))
	}
	var b errorBody
	b.Error.Code, b.Error.Message = ae.Code, ae.Message
	writeJSON(w, ae.Status, b)
}

// answerChunk is the piece of a large JSON body written under one write
// deadline.
const answerChunk = 64 << 10

// writeAnswer is writeJSON for a body that may be large (a task's text, a
// response, a completion, cache stats): it is written in pieces, each
// under the slow-reader limit (Config.Conn.WriteTimeout, as for event
// streams), so a client that does not read cannot hold the handler and the
// body for ever: its connection is closed.
func (s *Server) writeAnswer(w http.ResponseWriter, status int, v any) {
	limit := s.cfg.Conn.WriteTimeout
	if limit < 0 {
		writeJSON(w, status, v)
		return
	}
	body, err := encodeAnswer(w, v)
	if err != nil {
		writeError(w, err)
		return
	}
	rc := http.NewResponseController(w)
	defer func() { _ = rc.SetWriteDeadline(time.Time{}) }() // a kept-alive connection's next request has none
	w.WriteHeader(status)
	for b := body; len(b) > 0; {
		n := min(len(b), answerChunk)
		_ = rc.SetWriteDeadline(time.Now().Add(limit))
		if _, err := w.Write(b[:n]); err != nil {
			return // the reader is too slow or gone: net/http closes the connection
		}
		b = b[n:]
	}
	_ = rc.SetWriteDeadline(time.Now().Add(limit))
	_ = rc.Flush() // the last piece too, under the deadline
}

// writeJSON writes v as a small JSON answer in one write.
func writeJSON(w http.ResponseWriter, status int, v any) {
	body, _ := encodeAnswer(w, v) // the answers written here are maps and structs of plain values
	w.WriteHeader(status)
	_, _ = w.Write(body) // the client may be gone; nothing to do about it
}

// encodeAnswer encodes v as a JSON answer (HTML left unescaped) and sets
// its headers. The declared length keeps the answer whole on the wire
// before the handler ends (a refused body is read after it:
// Server.lingerBody).
func encodeAnswer(w http.ResponseWriter, v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("Content-Length", strconv.Itoa(b.Len()))
	return b.Bytes(), nil
}
