package web

// The OpenAI Responses door: POST /v1/responses, GET /v1/responses/{id}
// (also as a resumable stream), POST /v1/responses/{id}/cancel and
// DELETE /v1/responses/{id}, on the same pipeline as the other doors. A
// response is a task: its id is the task's id, on both doors.

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
)

// responsesRequest is the body of POST /v1/responses. Fields:
//
//   - model: as on the chat completions door.
//   - input: required; a string (one user message) or an array of message
//     items ({"role", "content"}, "type": "message" or absent), whose
//     content is a string or input_text/output_text parts.
//   - instructions: a system message put before the input.
//   - max_output_tokens: passed upstream as max_tokens.
//   - stream: true answers the Responses event stream.
//   - background: true queues the task (like POST /v1/tasks) and answers
//     at once; with stream, the stream follows the queued task.
//   - store: accepted; sluice keeps every task for its retention time
//     either way (false is not honoured).
//   - metadata: accepted (at most 16 string pairs) and echoed in the
//     answer to this POST; not kept with the task.
//   - sluice: {"namespace", "nocache", "priority"}, as on the chat
//     completions door (and the headers X-Sluice-Namespace,
//     X-Sluice-NoCache, X-Sluice-Priority). Without one the priority
//     class is interactive, or batch with background: true (queued like
//     POST /v1/tasks), unless the tenant has a default.
//
// Features sluice does not have are refused with a 400 naming them (see
// refuseUnsupported); sampling options (temperature, top_p, ...) are
// accepted and ignored, as on the chat completions door.
type responsesRequest struct {
	Model           *string           `json:"model"`
	Input           json.RawMessage   `json:"input"`
	Instructions    *string           `json:"instructions"`
	MaxOutputTokens *int              `json:"max_output_tokens"`
	Stream          *bool             `json:"stream"`
	Background      *bool             `json:"background"`
	Store           *bool             `json:"store"`
	Metadata        map[string]string `json:"metadata"`
	Sluice          *sluiceOptions    `json:"sluice"`
	Temperature     *float64          `json:"temperature"` // forwarded upstream
	TopP            *float64          `json:"top_p"`       // forwarded upstream

	// Refused when set (see refuseUnsupported).
	Tools              json.RawMessage `json:"tools"`
	ToolChoice         json.RawMessage `json:"tool_choice"`
	PreviousResponseID json.RawMessage `json:"previous_response_id"`
	Conversation       json.RawMessage `json:"conversation"`
	Prompt             json.RawMessage `json:"prompt"`
	Reasoning          json.RawMessage `json:"reasoning"`
	Include            json.RawMessage `json:"include"`
	Text               *struct {
		Format *struct {
			Type string `json:"type"`
		} `json:"format"`
	} `json:"text"`
	N *int `json:"n"`
}

// jsonSet reports whether a raw field was sent with a value that asks for
// something: not absent, null, false, an empty array or object.
func jsonSet(raw json.RawMessage) bool {
	switch strings.TrimSpace(string(raw)) {
	case "", "null", "[]", "{}", "false", `""`:
		return false
	}
	return true
}

// refuseUnsupported refuses the features sluice does not have, each with
// its own message, instead of silently answering something else.
func (rr *responsesRequest) refuseUnsupported() error {
	switch {
	case jsonSet(rr.Tools):
		return unsupported("tools", "the upstream is asked for text only (no function calls, built-in tools or MCP)")
	case !noToolChoice(rr.ToolChoice):
		return unsupported("tool_choice", "there are no tools to choose")
	case jsonSet(rr.PreviousResponseID):
		return unsupported("previous_response_id", "send the conversation in input instead")
	case jsonSet(rr.Conversation):
		return unsupported("conversation", "send the conversation in input instead")
	case jsonSet(rr.Prompt):
		return unsupported("prompt", "prompt templates are not stored; send input")
	case jsonSet(rr.Reasoning):
		return unsupported("reasoning", "reasoning options and items are not forwarded")
	case jsonSet(rr.Include):
		return unsupported("include", "there is no extra output to include")
	case rr.Text != nil && rr.Text.Format != nil && rr.Text.Format.Type != "" && rr.Text.Format.Type != "text":
		return unsupported("text.format "+strconv.Quote(rr.Text.Format.Type), "only plain text output")
	case rr.N != nil && *rr.N != 1:
		return badParam("n", "n must be 1: sluice returns one output")
	case len(rr.Metadata) > 16:
		return badRequest("metadata holds at most 16 pairs")
	}
	return nil
}

// responseInputItem is one item of an input array.
type responseInputItem struct {
	Type    string          `json:"type"`
	Role    string          `json:"role"`
	Content json.RawMessage `json:"content"`
}

// inputMessages turns input (a string or message items) into messages,
// after the instructions' system message.
func (rr *responsesRequest) inputMessages() ([]messageIn, error) {
	var msgs []messageIn
	str := func(s string) json.RawMessage { b, _ := json.Marshal(s); return b }
	if rr.Instructions != nil && *rr.Instructions != "" {
		msgs = append(msgs, messageIn{Role: "system", Content: str(*rr.Instructions)})
	}
	if !jsonSet(rr.Input) {
		return nil, badRequest("input is required: a string or an array of message items")
	}
	var s string
	if err := json.Unmarshal(rr.Input, &s); err == nil {
		return append(msgs, messageIn{Role: "user", Content: str(s)}), nil
	}
	var items []responseInputItem
	if err := json.Unmarshal(rr.Input, &items); err != nil {
		return nil, badRequest("input must be a string or an array of message items")
	}
	for i, it := range items {
		if it.Type != "" && it.Type != "message" {
			return nil, badRequest(fmt.Sprintf("input[%d]: items of type %q are not supported by sluice: only message items (text)", i, it.Type))
		}
		switch it.Role {
		case "user", "assistant", "system", "developer":
		default:
			return nil, badRequest(fmt.Sprintf("input[%d].role must be user, assistant, system or developer", i))
		}
		text, err := inputText(it.Content)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("input[%d].content: %v", i, err))
		}
		msgs = append(msgs, messageIn{Role: it.Role, Content: str(text)})
	}
	return msgs, nil
}

// inputText reads a message item's content: a string, or text parts
// (input_text, output_text); other parts (images, files, audio) are
// refused.
func inputText(raw json.RawMessage) (string, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(raw, &parts); err != nil {
		return "", errors.New("must be a string or an array of content parts")
	}
	var b strings.Builder
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			b.WriteString(p.Text)
		default:
			return "", errPartType(p.Type)
		}
	}
	return b.String(), nil
}

// decodeResponses reads and validates a Responses request.
func (s *Server) decodeResponses(w http.ResponseWriter, r *http.Request, tenant string) (*responsesRequest, orchestrator.Request, error) {
	var rr responsesRequest
	if err := decodeJSON(w, r, s.cfg.MaxBody, &rr); err != nil {
		return nil, orchestrator.Request{}, err
	}
	if err := rr.refuseUnsupported(); err != nil {
		return nil, orchestrator.Request{}, err
	}
	msgs, err := rr.inputMessages()
	if err != nil {
		return nil, orchestrator.Request{}, err
	}
	tr := taskRequest{Messages: msgs, MaxTokens: rr.MaxOutputTokens, Sluice: rr.Sluice,
		samplingIn: samplingIn{Temperature: rr.Temperature, TopP: rr.TopP}}
	if rr.Model != nil {
		tr.Model = *rr.Model
	}
	if rr.MaxOutputTokens != nil && *rr.MaxOutputTokens < 0 {
		return nil, orchestrator.Request{}, badRequest("max_output_tokens must be >= 0")
	}
	req, err := tr.fromOpenAIDoor(r, tenant)
	return &rr, req, err
}

// createResponse is POST /v1/responses (see responsesRequest). Without
// background the task is interactive: the budget refuses it with 503
// overloaded and Retry-After before any byte, streamed or not. With
// background it is queued like POST /v1/tasks and the answer is the
// response object at once (status queued or in_progress). With stream
// the Responses event stream follows (see responseEvents); a streamed
// answer without background holds its status line until the first event,
// so that a failure before any output is an HTTP error, as on the chat
// completions door. A non-streamed answer without background waits for
// the end; a failure is an HTTP error with the contract's status and
// code (502, 503, 504, 409 cancelled).
func (s *Server) createResponse(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.openAITenant(w, r)
	if !ok {
		return
	}
	rr, req, err := s.decodeResponses(w, r, tenant)
	if err != nil {
		writeOpenAIError(w, err)
		return
	}
	background := rr.Background != nil && *rr.Background
	mode := orchestrator.Interactive
	if background {
		mode = orchestrator.Async
	}
	t, _ := s.submit(w, r, req, mode, writeOpenAIError)
	if t == nil {
		return
	}
	prompt := estimateTokens(req.Messages)
	if rr.Stream != nil && *rr.Stream {
		f := &responseEvents{t: t, after: -1, last: -1}
		var fr stream.Framing = f
		if !background {
			fr = &heldResponseEvents{responseEvents: f, s: s}
		}
		s.serveEvents(r.Context(), w, t, fr, 0) // the task goes on if the client leaves
		return
	}
	echo := &responseEcho{Background: background, Instructions: rr.Instructions, MaxOutputTokens: rr.MaxOutputTokens, Metadata: rr.Metadata, Store: rr.Store}
	if !background {
		select {
		case <-t.Done():
		case <-r.Context().Done():
			return // the client left; the task goes on
		}
		if _, _, end := t.Transcript().Snapshot(); end != nil && end.Event == stream.EventError && end.Code != orchestrator.CodeCancelled {
			writeOpenAIError(w, s.endError(end))
			return
		}
	}
	s.writeAnswer(w, http.StatusOK, responseOf(t, prompt, echo))
}

// responseTask finds the tenant's task named by the path's id with get, or
// answers an OpenAI-shaped 404.
func (s *Server) responseTask(w http.ResponseWriter, r *http.Request, get func(tenant, id string) *orchestrator.Task) *orchestrator.Task {
	tenant, ok := s.openAITenant(w, r)
	if !ok {
		return nil
	}
	id := r.PathValue("id")
	var t *orchestrator.Task
	if u, err := uuid.Parse(id); err == nil {
		t = get(tenant, u.String())
	}
	if t == nil {
		writeOpenAIError(w, notFound("no response "+quoteID(id)))
		return nil
	}
	setCacheHeaders(w, t)
	w.Header().Set("X-Task-Id", t.ID)
	return t
}

// getResponse is GET /v1/responses/{id}: the response object, or with
// stream=true its event stream from the start, or after the event
// starting_after (resume). openai-go sends stream as a JSON body
// {"stream": true} of the GET instead of a query parameter; both work.
func (s *Server) getResponse(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.openAITenant(w, r); !ok {
		return // the key first: a 401 reads no body
	}
	q := r.URL.Query()
	streamed := false
	if v := q.Get("stream"); v != "" {
		b, err := strconv.ParseBool(v)
		if err != nil {
			writeOpenAIError(w, badRequest("stream must be true or false"))
			return
		}
		streamed = b
	} else if r.ContentLength > 0 {
		var body struct {
			Stream bool `json:"stream"`
		}
		if err := decodeJSON(w, r, s.cfg.MaxBody, &body); err != nil {
			writeOpenAIError(w, err)
			return
		}
		streamed = body.Stream
	}
	after := -1
	if v := q.Get("starting_after"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			writeOpenAIError(w, badRequest("starting_after must be a sequence number (a whole number >= 0)"))
			return
		}
		if !streamed {
			writeOpenAIError(w, badRequest("starting_after needs stream=true"))
			return
		}
		after = n
	}
	if !streamed {
		if t := s.responseTask(w, r, s.orch.Get); t != nil {
			s.writeAnswer(w, http.StatusOK, responseOf(t, 0, nil))
		}
		return
	}
	t := s.responseTask(w, r, s.orch.Follow)
	if t == nil {
		return
	}
	f := &responseEvents{t: t, after: after, last: after}
	s.serveEvents(r.Context(), w, t, f, max(after-openingEvents+1, 0))
}

// cancelResponse is POST /v1/responses/{id}/cancel: cancel the task and
// answer the response object once it is final (status cancelled; a
// response that had already ended keeps its status). A second call
// answers the same.
func (s *Server) cancelResponse(w http.ResponseWriter, r *http.Request) {
	cancel := func(tenant, id string) *orchestrator.Task { return s.orch.CancelAndWait(r.Context(), tenant, id) }
	if t := s.responseTask(w, r, cancel); t != nil {
		s.writeAnswer(w, http.StatusOK, responseOf(t, 0, nil))
	}
}

// deleteResponse is DELETE /v1/responses/{id}: sluice cannot forget a
// task before its retention ends (it may also live in the shared state of
// other instances), so it cancels it if it runs and answers "deleted":
// false; the response stays readable until its retention ends.
func (s *Server) deleteResponse(w http.ResponseWriter, r *http.Request) {
	cancel := func(tenant, id string) *orchestrator.Task { return s.orch.CancelAndWait(r.Context(), tenant, id) }
	if t := s.responseTask(w, r, cancel); t != nil {
		writeJSON(w, http.StatusOK, map[string]any{"id": t.ID, "object": "response.deleted", "deleted": false})
	}
}

// Objects of the Responses API.
type (
	responseObject struct {
		ID                string             `json:"id"`
		Object            string             `json:"object"` // "response"
		CreatedAt         int64              `json:"created_at"`
		Status            string             `json:"status"`
		Background        *bool              `json:"background"`
		Error             *openAIError       `json:"error"`
		IncompleteDetails *incompleteDetails `json:"incomplete_details"`
		Instructions      *string            `json:"instructions"`
		MaxOutputTokens   *int               `json:"max_output_tokens"`
		Metadata          map[string]string  `json:"metadata"`
		Model             string             `json:"model"`
		Output            []outputMessage    `json:"output"`
		ParallelToolCalls bool               `json:"parallel_tool_calls"`
		Store             *bool              `json:"store,omitempty"`
		Temperature       *float64           `json:"temperature"`
		Text              responseTextConfig `json:"text"`
		ToolChoice        string             `json:"tool_choice"`
		Tools             []struct{}         `json:"tools"`
		TopP              *float64           `json:"top_p"`
		Truncation        string             `json:"truncation"`
		Usage             *responseUsage     `json:"usage"`
	}
	incompleteDetails struct {
		// Reason is "max_output_tokens" for an answer cut at the token
		// limit, else sluice's finish reason (deadline, idle_timeout,
		// length at the answer size cap).
		Reason string `json:"reason"`
	}
	responseTextConfig struct {
		Format struct {
			Type string `json:"type"`
		} `json:"format"`
	}
	outputMessage struct {
		ID      string       `json:"id"`
		Type    string       `json:"type"` // "message"
		Status  string       `json:"status"`
		Role    string       `json:"role"`
		Content []outputText `json:"content"`
	}
	outputText struct {
		Type        string     `json:"type"` // "output_text"
		Text        string     `json:"text"`
		Annotations []struct{} `json:"annotations"`
		Logprobs    []struct{} `json:"logprobs"`
	}
	// responseUsage counts are estimates, as on the chat completions door.
	responseUsage struct {
		InputTokens        int `json:"input_tokens"`
		InputTokensDetails struct {
			CachedTokens int `json:"cached_tokens"`
		} `json:"input_tokens_details"`
		OutputTokens        int `json:"output_tokens"`
		OutputTokensDetails struct {
			ReasoningTokens int `json:"reasoning_tokens"`
		} `json:"output_tokens_details"`
		TotalTokens int `json:"total_tokens"`
	}
)

// responseEcho is what the answer to a POST echoes of its request: sluice
// does not keep it with the task, so GET and the event stream do not.
type responseEcho struct {
	Background      bool
	Instructions    *string
	MaxOutputTokens *int
	Metadata        map[string]string
	Store           *bool
}

// responseState is a response's state as a pure function of its task's
// transcript (the end, when there is one) or, while it runs, its status.
type responseState struct {
	status     string // the Responses status
	incomplete *incompleteDetails
	err        *openAIError
	itemStatus string // the message item's status
}

// stateOfEnd maps a transcript's end to the response's state.
func stateOfEnd(end *stream.End) responseState {
	switch {
	case end.Event == stream.EventError && end.Code == orchestrator.CodeCancelled:
		return responseState{status: "cancelled", itemStatus: "incomplete"}
	case end.Event == stream.EventError:
		return responseState{status: "failed", itemStatus: "incomplete",
			err: &openAIError{Code: end.Code, Message: end.Message, Type: "server_error"}}
	case end.Event == stream.EventPartial:
		return responseState{status: "incomplete", itemStatus: "incomplete", incomplete: &incompleteDetails{Reason: end.FinishReason}}
	case end.FinishReason == "length":
		return responseState{status: "incomplete", itemStatus: "incomplete", incomplete: &incompleteDetails{Reason: "max_output_tokens"}}
	}
	return responseState{status: "completed", itemStatus: "completed"}
}

// finalText is the output text of an ended transcript: a cut answer gets
// its notice appended, as on the chat completions door.
func finalText(text string, end *stream.End) string {
	if end.Event == stream.EventPartial {
		return text + noticeText(end)
	}
	return text
}

// baseResponse is the response object's fixed part.
func baseResponse(t *orchestrator.Task) responseObject {
	o := responseObject{
		ID: t.ID, Object: "response", CreatedAt: t.CreatedAt.Unix(), Model: t.Model,
		Metadata: map[string]string{}, Output: []outputMessage{}, ParallelToolCalls: true,
		ToolChoice: "auto", Tools: []struct{}{}, Truncation: "disabled",
	}
	o.Text.Format.Type = "text"
	return o
}

// message is the output message item holding text.
func message(t *orchestrator.Task, status, text string, withPart bool) outputMessage {
	m := outputMessage{ID: "msg_" + t.ID, Type: "message", Status: status, Role: "assistant", Content: []outputText{}}
	if withPart {
		m.Content = append(m.Content, part(text))
	}
	return m
}

func part(text string) outputText {
	return outputText{Type: "output_text", Text: text, Annotations: []struct{}{}, Logprobs: []struct{}{}}
}

// endedResponse is the whole response of an ended transcript.
func endedResponse(t *orchestrator.Task, text string, end *stream.End, promptTokens int) responseObject {
	st := stateOfEnd(end)
	o := baseResponse(t)
	o.Status, o.IncompleteDetails, o.Error = st.status, st.incomplete, st.err
	o.Output = []outputMessage{message(t, st.itemStatus, finalText(text, end), true)}
	n := end.Chunks
	if end.Event == stream.EventPartial {
		n++ // the notice
	}
	u := &responseUsage{InputTokens: promptTokens, OutputTokens: n, TotalTokens: promptTokens + n}
	o.Usage = u
	return o
}

// responseOf is the response object of t now: promptTokens is the
// input's estimate (0 when unknown: GET); echo, when set, is the POST's
// request.
func responseOf(t *orchestrator.Task, promptTokens int, echo *responseEcho) responseObject {
	text, chunks, end := t.Transcript().Snapshot()
	var o responseObject
	if end != nil {
		o = endedResponse(t, text, end, promptTokens)
	} else {
		o = baseResponse(t)
		o.Status = "in_progress"
		if t.Status() == orchestrator.StatusQueued {
			o.Status = "queued"
		}
		if chunks > 0 {
			o.Output = []outputMessage{message(t, "in_progress", text, true)}
		}
	}
	if echo != nil {
		o.Background, o.Instructions, o.MaxOutputTokens, o.Store = &echo.Background, echo.Instructions, echo.MaxOutputTokens, echo.Store
		if echo.Metadata != nil {
			o.Metadata = echo.Metadata
		}
	}
	return o
}

// openingEvents is the number of events that open a response's stream
// (sequence numbers 0 to 3): response.created, response.in_progress,
// response.output_item.added, response.content_part.added.
const openingEvents = 4

// responseEvents is the stream.Framing of a response's event stream. Its
// events are a pure function of the task's transcript, so that a replay
// gives the same events and a resume with starting_after is exact on any
// instance:
//
//   - the opening (meta): sequence numbers 0 to 3;
//   - delta k of the transcript: one response.output_text.delta with
//     sequence number 3+k (a lagging reader's merged deltas are one event
//     numbered after their last delta: numbers then skip, text does not);
//   - the end, for a transcript of N deltas: for a cut answer, the notice
//     as one more response.output_text.delta; then
//     response.output_text.done, response.content_part.done,
//     response.output_item.done and response.completed,
//     response.incomplete or response.failed (a cancelled response ends
//     with response.failed whose response is "cancelled"), numbered on
//     from 4+N.
//
// Keep-alives are {"type": "keepalive"} events carrying the sequence
// number of the last event sent (they are not part of the sequence).
//
// The usage in the closing response counts no input tokens: sluice does
// not keep the input with the task, and the events must not depend on
// the instance or the request that serves them.
type responseEvents struct {
	t     *orchestrator.Task
	after int // starting_after: events up to it are not sent; -1: none
	last  int // the sequence number of the last event written
}

var _ stream.Framing = (*responseEvents)(nil)

// heldResponseEvents is responseEvents holding the status line until the
// first event (POST with stream and without background): a task that
// fails before any output is answered as an HTTP error.
type heldResponseEvents struct {
	*responseEvents
	s *Server
}

var _ stream.Holder = (*heldResponseEvents)(nil)

// Refuse implements stream.Holder.
func (h *heldResponseEvents) Refuse(w http.ResponseWriter, end *stream.End) bool {
	if end.Event != stream.EventError || end.Code == orchestrator.CodeCancelled {
		return false
	}
	writeOpenAIError(w, h.s.endError(end))
	return true
}

// event encodes one event with sequence number seq, unless the reader
// has it already (seq <= after).
func (f *responseEvents) event(b *bytes.Buffer, seq int, typ string, fields map[string]any) {
	if seq <= f.after {
		return
	}
	fields["type"] = typ
	fields["sequence_number"] = seq
	data, _ := json.Marshal(fields) // plain values: cannot fail
	b.WriteString("event: ")
	b.WriteString(typ)
	b.WriteString("\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
	f.last = seq
}

func (f *responseEvents) itemFields(m map[string]any) map[string]any {
	m["item_id"] = "msg_" + f.t.ID
	m["output_index"] = 0
	m["content_index"] = 0
	return m
}

// Open implements stream.Framing: the four opening events.
func (f *responseEvents) Open(b *bytes.Buffer) {
	o := baseResponse(f.t)
	o.Status = "in_progress"
	f.event(b, 0, "response.created", map[string]any{"response": o})
	f.event(b, 1, "response.in_progress", map[string]any{"response": o})
	f.event(b, 2, "response.output_item.added", map[string]any{"output_index": 0, "item": message(f.t, "in_progress", "", false)})
	f.event(b, 3, "response.content_part.added", f.itemFields(map[string]any{"part": part("")}))
}

// Delta implements stream.Framing.
func (f *responseEvents) Delta(b *bytes.Buffer, seq int, text string) {
	f.event(b, openingEvents-1+seq, "response.output_text.delta", f.itemFields(map[string]any{"delta": text, "logprobs": []struct{}{}}))
}

// End implements stream.Framing: the closing events.
func (f *responseEvents) End(b *bytes.Buffer, end *stream.End) {
	text, _, _ := f.t.Transcript().Snapshot() // ended: the whole text
	o := endedResponse(f.t, text, end, 0)
	full := finalText(text, end)
	seq := openingEvents + end.Chunks
	if n := noticeText(end); n != "" && end.Event == stream.EventPartial {
		f.event(b, seq, "response.output_text.delta", f.itemFields(map[string]any{"delta": n, "logprobs": []struct{}{}}))
		seq++
	}
	f.event(b, seq, "response.output_text.done", f.itemFields(map[string]any{"text": full, "logprobs": []struct{}{}}))
	f.event(b, seq+1, "response.content_part.done", f.itemFields(map[string]any{"part": part(full)}))
	f.event(b, seq+2, "response.output_item.done", map[string]any{"output_index": 0, "item": o.Output[0]})
	typ := "response.completed"
	switch o.Status {
	case "incomplete":
		typ = "response.incomplete"
	case "failed", "cancelled":
		typ = "response.failed"
	}
	f.event(b, seq+3, typ, map[string]any{"response": o})
}

// KeepAlive implements stream.Framing: a keepalive event, not an SSE
// comment (openai-go v1.12.0 fails to decode a comment-only event).
func (f *responseEvents) KeepAlive(b *bytes.Buffer) {
	data, _ := json.Marshal(map[string]any{"type": "keepalive", "sequence_number": max(f.last, 0)})
	b.WriteString("event: keepalive\ndata: ")
	b.Write(data)
	b.WriteString("\n\n")
}
