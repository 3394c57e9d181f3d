package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"reflect"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/pipeline"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// maxModelLen bounds the model name of a request, in bytes.
const maxModelLen = 256

// checkModel refuses a model name longer than maxModelLen, not UTF-8, or
// holding a control character (a NUL, a line break): no upstream serves
// such a name, and it would be stored, logged and forwarded as it is.
func checkModel(model string) error {
	if len(model) > maxModelLen {
		return badParam("model", fmt.Sprintf("model is longer than %d characters", maxModelLen))
	}
	if !utf8.ValidString(model) || strings.ContainsFunc(model, unicode.IsControl) {
		return badParam("model", "model must be printable UTF-8, without control characters")
	}
	return nil
}

// taskRequest is the body of POST /v1/tasks and POST /v1/stream.
type taskRequest struct {
	Prompt     *string        `json:"prompt"`
	Messages   []messageIn    `json:"messages"`
	Model      string         `json:"model"`
	Namespace  string         `json:"namespace"`
	NoCache    bool           `json:"nocache"`
	MaxTokens  *int           `json:"max_tokens"`
	DeadlineMs *int64         `json:"deadline_ms"`
	Detach     *bool          `json:"detach"`
	Priority   string         `json:"priority"` // "interactive" or "batch"; "" = the default
	Sluice     *sluiceOptions `json:"sluice"`   // sluice's options on the OpenAI-compatible door

	samplingIn // temperature, top_p, stop, seed, penalties (sampling.go)
}

// sluiceOptions are sluice's own options on the OpenAI-compatible door.
type sluiceOptions struct {
	Namespace string `json:"namespace"`
	NoCache   bool   `json:"nocache"`
	Priority  string `json:"priority"`
}

// errPriority is the answer to a priority that is no class.
const errPriority = `must be "interactive" or "batch"`

// priority completes req's priority class from the X-Sluice-Priority
// header when the body chose none; a header that is no class is refused
// whatever the body says. The body's choice wins over the header's.
func priority(r *http.Request, req *orchestrator.Request) error {
	h := r.Header.Get("X-Sluice-Priority")
	if h == "" {
		return nil
	}
	c, err := pipeline.ParseClass(strings.ToLower(strings.TrimSpace(h)))
	if err != nil {
		return badRequest("X-Sluice-Priority " + errPriority)
	}
	if req.Class == "" {
		req.Class = c.String()
	}
	return nil
}

// messageIn is one chat message. Content is a string or an array of
// OpenAI content parts, text parts only: an image, audio or file part is
// refused rather than dropped (the answer would be to the text alone, and
// cached by it). ToolCalls and FunctionCall are read only to be refused
// by the chat completions door (refuseToolMessages).
type messageIn struct {
	Role         string          `json:"role"`
	Content      json.RawMessage `json:"content"`
	ToolCalls    json.RawMessage `json:"tool_calls"`
	FunctionCall json.RawMessage `json:"function_call"`
}

// errPartType refuses a content part that is not text.
func errPartType(typ string) error {
	return fmt.Errorf("content parts of type %q are not supported by sluice: only text", typ)
}

func (m messageIn) text() (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(m.Content, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", errors.New("content must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if p.Type != "text" {
			return "", errPartType(p.Type)
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// decodeJSON reads one JSON value from the body into v, enforcing the
// content type and the size limit.
//
// A body refused before it is read (its type, its encoding, a declared
// length over the limit) closes the connection after the answer: the
// server would otherwise wait for the unread body to reuse it, and the
// answer would come only once the body arrived or its timeout passed.
// What the client still sends of it (or of a body cut at the limit) is
// read and dropped after the answer has gone out (Server.lingerBody).
func decodeJSON(w http.ResponseWriter, r *http.Request, limit int64, v any) error {
	refuse := func(status int, code, msg string) error {
		w.Header().Set("Connection", "close")
		refusedUnread(r)
		return &apiError{Status: status, Code: code, Message: msg}
	}
	if ct := r.Header.Get("Content-Type"); ct != "" {
		mt, _, err := mime.ParseMediaType(ct)
		if err != nil || !(mt == "application/json" || strings.HasSuffix(mt, "+json")) {
			return refuse(http.StatusUnsupportedMediaType, codeUnsupportedMedia,
				fmt.Sprintf("the body must be JSON (Content-Type: application/json), not %q", clip(ct, maxEcho)))
		}
	}
	if ce := r.Header.Get("Content-Encoding"); ce != "" && !strings.EqualFold(ce, "identity") {
		return refuse(http.StatusUnsupportedMediaType, codeUnsupportedMedia,
			fmt.Sprintf("Content-Encoding %q is not supported: send the body uncompressed", clip(ce, maxEcho)))
	}
	if r.ContentLength > limit {
		return refuse(http.StatusRequestEntityTooLarge, codeTooLarge,
			fmt.Sprintf("the body is larger than the limit of %d bytes", limit))
	}
	body := http.MaxBytesReader(w, r.Body, limit)
	dec := json.NewDecoder(body)
	err := dec.Decode(v)
	if err == nil {
		if _, err = dec.Token(); errors.Is(err, io.EOF) {
			return nil
		}
		if !overLimit(err) {
			return badRequest("the body must hold exactly one JSON object")
		}
	}
	if overLimit(err) {
		refusedUnread(r) // cut at the limit: the rest is dropped after the answer
	}
	return jsonError(err, limit, reflect.TypeOf(v))
}

// overLimit reports a body cut at its limit by http.MaxBytesReader.
func overLimit(err error) bool {
	var mbe *http.MaxBytesError
	return errors.As(err, &mbe)
}

// jsonError maps a decoding error of a value of type t (nil: none) to
// the contract's error; a field of the wrong type is named as the client
// wrote it, in "param" too.
func jsonError(err error, limit int64, t reflect.Type) error {
	var mbe *http.MaxBytesError
	var se *json.SyntaxError
	var te *json.UnmarshalTypeError
	var ae *apiError
	switch {
	case errors.As(err, &ae): // the body's own error, such as errBodyTimeout
		return ae
	case errors.As(err, &mbe):
		return &apiError{Status: http.StatusRequestEntityTooLarge, Code: codeTooLarge,
			Message: fmt.Sprintf("the body is larger than the limit of %d bytes", limit)}
	case errors.Is(err, io.EOF):
		return badRequest("the body is empty; send a JSON object")
	case errors.As(err, &se):
		return badRequest(fmt.Sprintf("malformed JSON at byte %d: %v", se.Offset, se))
	case errors.As(err, &te):
		if te.Field == "" {
			return badRequest(fmt.Sprintf("the body must be a JSON object, not %s", jsonKind(te.Value)))
		}
		field := jsonFieldPath(te.Field, t)
		if num, ok := strings.CutPrefix(te.Value, "number "); ok && numberOutOfRange(te.Type, num) {
			return badParam(field, fmt.Sprintf("field %q is out of range (%s)", field, clip(num, maxEcho)))
		}
		return badParam(field, fmt.Sprintf("field %q must be %s, not %s", field, jsonType(te.Type), jsonKind(te.Value)))
	case errors.Is(err, io.ErrUnexpectedEOF):
		return badRequest("malformed JSON: the body ends early")
	}
	return badRequest("malformed JSON: " + err.Error())
}

// jsonFieldPath is encoding/json's path of a field (Field of an
// UnmarshalTypeError) as the client wrote it: without the Go names of the
// embedded structs of t ("samplingIn.temperature" is "temperature").
func jsonFieldPath(field string, t reflect.Type) string {
	embedded := map[string]bool{}
	seen := map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t != nil && (t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Array || t.Kind() == reflect.Map) {
			t = t.Elem()
		}
		if t == nil || t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous && f.Tag.Get("json") == "" {
				embedded[f.Name] = true
			}
			walk(f.Type)
		}
	}
	walk(t)
	parts := strings.Split(field, ".")
	kept := parts[:0]
	for _, p := range parts {
		if !embedded[p] {
			kept = append(kept, p)
		}
	}
	return strings.Join(kept, ".")
}

// numberOutOfRange tells whether the JSON number num failed to decode
// into t for its size (1e400 into a float64, 1e20 into an int) rather
// than for its kind (1.5 into an int).
func numberOutOfRange(t reflect.Type, num string) bool {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.Float32, reflect.Float64:
		return true
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return !strings.ContainsAny(num, ".eE") // a whole number too large (or negative for a uint)
	}
	return false
}

// jsonType names a Go type as the JSON a client should send.
func jsonType(t reflect.Type) string {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Slice, reflect.Array:
		return "an array"
	}
	return "an object"
}

// maxEcho bounds what an error message repeats of a client's input (a
// number's literal, a header's value): an error stays short whatever was
// sent.
const maxEcho = 64

// clip cuts s to at most n bytes (at a rune boundary), marking the cut
// with "…".
func clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

// jsonKind names the JSON value decoding found ("number 1.5", "array").
func jsonKind(v string) string {
	switch {
	case strings.HasPrefix(v, "number"):
		// encoding/json gives the literal only for some targets ("number
		// 1.5" into an int; "number" into a string).
		if lit := strings.TrimSpace(strings.TrimPrefix(v, "number")); lit != "" {
			return "a number (" + clip(lit, maxEcho) + ")"
		}
		return "a number"
	case v == "":
		return "something else"
	case strings.ContainsRune("aeiou", rune(v[0])):
		return "an " + v
	}
	return "a " + v
}

// maxIdempotencyKey is the longest Idempotency-Key accepted.
const maxIdempotencyKey = 255

// idempotencyKey reads the optional Idempotency-Key header: 1 to 255
// visible ASCII characters.
func idempotencyKey(r *http.Request) (string, error) {
	k := r.Header.Get("Idempotency-Key")
	if k == "" {
		return "", nil
	}
	if len(k) > maxIdempotencyKey {
		return "", badRequest(fmt.Sprintf("Idempotency-Key is longer than %d characters", maxIdempotencyKey))
	}
	for i := range len(k) {
		if k[i] < 0x21 || k[i] > 0x7e {
			return "", badRequest("Idempotency-Key must be visible ASCII characters (a UUID, say)")
		}
	}
	return k, nil
}

// toOrchestrator validates a decoded task request and turns it into an
// orchestrator.Request.
func (tr *taskRequest) toOrchestrator(tenant string) (orchestrator.Request, error) {
	var req orchestrator.Request
	req.Tenant = tenant
	switch {
	case tr.Prompt != nil && tr.Messages != nil:
		return req, badRequest("send exactly one of prompt or messages, not both")
	case tr.Prompt != nil:
		if strings.TrimSpace(*tr.Prompt) == "" {
			return req, badRequest("prompt is empty")
		}
		req.Question = *tr.Prompt
		req.Messages = []upstream.Message{{Role: "user", Content: *tr.Prompt}}
	case tr.Messages != nil:
		msgs, question, err := convertMessages(tr.Messages)
		if err != nil {
			return req, err
		}
		req.Messages, req.Question = msgs, question
	default:
		return req, badRequest("prompt or messages is required")
	}
	ns := tr.Namespace
	nocache := tr.NoCache
	if tr.Sluice != nil {
		if tr.Sluice.Namespace != "" {
			ns = tr.Sluice.Namespace
		}
		nocache = nocache || tr.Sluice.NoCache
	}
	if ns == "" {
		ns = "default"
	}
	if !cache.ValidNamespace(ns) {
		return req, badRequest("namespace must match " + cache.NamespacePattern)
	}
	if err := checkModel(tr.Model); err != nil {
		return req, err
	}
	// "" is no choice, like an absent or null priority (JSON clients
	// that always send the field send "" for none).
	prio, prioField := tr.Priority, "priority"
	if tr.Sluice != nil && tr.Sluice.Priority != "" {
		prio, prioField = tr.Sluice.Priority, "sluice.priority"
	}
	if prio != "" {
		if _, err := pipeline.ParseClass(prio); err != nil {
			return req, badParam(prioField, prioField+" "+errPriority)
		}
	}
	req.Class = prio
	req.Model, req.Namespace, req.NoCache = tr.Model, ns, nocache
	if tr.MaxTokens != nil {
		if *tr.MaxTokens < 0 {
			return req, badRequest("max_tokens must be >= 0")
		}
		req.MaxTokens = *tr.MaxTokens
	}
	var err error
	if req.Sampling, err = tr.toUpstream(); err != nil {
		return req, err
	}
	if tr.DeadlineMs != nil {
		if *tr.DeadlineMs <= 0 {
			return req, badRequest("deadline_ms must be > 0")
		}
		req.Deadline = time.Duration(min(*tr.DeadlineMs, int64(time.Hour/time.Millisecond))) * time.Millisecond
	}
	return req, nil
}

func convertMessages(in []messageIn) ([]upstream.Message, string, error) {
	if len(in) == 0 {
		return nil, "", badParam("messages", "messages is empty")
	}
	out := make([]upstream.Message, 0, len(in))
	question := ""
	for i, m := range in {
		switch m.Role {
		case "system", "user", "assistant", "developer", "tool":
		default:
			return nil, "", badParam("messages", fmt.Sprintf("messages[%d].role must be system, user, assistant, developer or tool", i))
		}
		text, err := m.text()
		if err != nil {
			return nil, "", badParam("messages", fmt.Sprintf("messages[%d]: %v", i, err))
		}
		if m.Role == "user" {
			question = text
		}
		out = append(out, upstream.Message{Role: m.Role, Content: text})
	}
	if strings.TrimSpace(question) == "" {
		return nil, "", badParam("messages", "messages needs a non-empty user message")
	}
	return out, question, nil
}
