package web

// The OpenAI-compatible front door: POST /v1/chat/completions and
// GET /v1/models, so that the official OpenAI SDKs work against sluice
// unchanged once their base URL points at it (http://host:8080/v1).

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/stream/upstream"
)

// The finish reasons of the OpenAI API that the door answers with: a cut
// answer (the upstream's token limit, or a partial task) is "length".
const (
	openAIStop   = "stop"
	openAILength = "length"
)

// startedAt is the "created" time of the models listed by GET /v1/models.
var startedAt = time.Now().Unix()

// chatRequest is the body of POST /v1/chat/completions, the OpenAI Chat
// Completions request. Fields:
//
//   - model: the model; empty means the server's default (SLUICE_MODEL).
//     The cache namespace includes it, so models never share answers.
//   - messages: required; content is a string or an array of text
//     content parts (any other part is refused). The cache question is
//     the last user message.
//   - stream: true answers chat.completion.chunk Server-Sent Events ending
//     in "data: [DONE]"; false answers one chat.completion object.
//   - max_tokens, or max_completion_tokens (which wins when both are
//     set): passed upstream as max_tokens.
//   - stream_options.include_usage: adds the usage chunk before [DONE].
//   - n: only 1 (or absent) is accepted; anything else is a 400 naming
//     "n".
//   - sluice: sluice's own options, {"namespace": "wms-prod",
//     "nocache": true}, the same as the task API's fields. The headers
//     X-Sluice-Namespace and X-Sluice-NoCache: true do the same for
//     clients that cannot add body fields; the body wins for the
//     namespace, and nocache is on when either asks for it. Its
//     "priority" ("interactive", the default here, or "batch"), or the
//     header X-Sluice-Priority, picks the budget's priority class.
//   - temperature, top_p, stop (a string or up to 4), seed,
//     presence_penalty, frequency_penalty: validated against OpenAI's
//     ranges and forwarded upstream as they are. Identical requests
//     (these included) share one generation while it runs (coalescing);
//     the cache answers by question and context and does not key on them,
//     except stop: its sequences are part of the context.
//
// Features sluice does not have (tools, function calls, structured
// output, log probabilities, content parts other than text) are refused
// with a 400 naming the field (refuseUnsupported, refuseToolMessages,
// messageIn.text); their no-op forms that SDKs and frameworks send by
// default are accepted. Every other field (user, parallel_tool_calls,
// ...) is accepted and ignored: the pipeline forwards only the fields
// above.
type chatRequest struct {
	Model               *string        `json:"model"`
	Messages            []messageIn    `json:"messages"`
	Stream              *bool          `json:"stream"`
	MaxTokens           *int           `json:"max_tokens"`
	MaxCompletionTokens *int           `json:"max_completion_tokens"`
	StreamOptions       *streamOptions `json:"stream_options"`
	N                   *int           `json:"n"`
	Sluice              *sluiceOptions `json:"sluice"`

	samplingIn // forwarded upstream (sampling.go)

	// Refused unless absent or a no-op (see refuseUnsupported).
	Tools          json.RawMessage `json:"tools"`
	ToolChoice     json.RawMessage `json:"tool_choice"`
	Functions      json.RawMessage `json:"functions"`
	FunctionCall   json.RawMessage `json:"function_call"`
	ResponseFormat *struct {
		Type string `json:"type"`
	} `json:"response_format"`
	Logprobs    *bool `json:"logprobs"`
	TopLogprobs *int  `json:"top_logprobs"`
}

// noToolChoice reports whether a tool_choice (or the legacy
// function_call) asks for no tool call: not set (jsonSet), "none" or
// "auto" (with no tools, auto calls none). Both OpenAI doors use it.
func noToolChoice(raw json.RawMessage) bool {
	switch strings.TrimSpace(string(raw)) {
	case `"none"`, `"auto"`:
		return true
	}
	return !jsonSet(raw)
}

// refuseUnsupported refuses the chat completions features sluice does not
// have, each naming its field, instead of answering plain text as if they
// were not asked for. The no-op forms (tools: [], tool_choice "none" or
// "auto", response_format {"type": "text"}, logprobs false, top_logprobs
// 0, null) pass.
func (cr *chatRequest) refuseUnsupported() error {
	const noTools = "the upstream is asked for text only (no function or tool calls)"
	switch {
	case jsonSet(cr.Tools):
		return unsupported("tools", noTools)
	case !noToolChoice(cr.ToolChoice):
		return unsupported("tool_choice", "there are no tools to choose")
	case jsonSet(cr.Functions):
		return unsupported("functions", noTools)
	case !noToolChoice(cr.FunctionCall):
		return unsupported("function_call", "there are no functions to call")
	case cr.ResponseFormat != nil && cr.ResponseFormat.Type != "" && cr.ResponseFormat.Type != "text":
		return badParam("response_format", "response_format "+strconv.Quote(cr.ResponseFormat.Type)+` is not supported by sluice: only plain text output ("type": "text")`)
	case cr.Logprobs != nil && *cr.Logprobs:
		return unsupported("logprobs", "the upstream's token log probabilities are not forwarded")
	case cr.TopLogprobs != nil && *cr.TopLogprobs != 0:
		return unsupported("top_logprobs", "the upstream's token log probabilities are not forwarded")
	case cr.N != nil && *cr.N != 1:
		return badParam("n", "n must be 1: sluice returns one choice")
	}
	return refuseToolMessages(cr.Messages)
}

// refuseToolMessages refuses the tool history of a conversation: a tool
// result (role "tool", or the legacy "function") or an assistant's tool
// or function call. sluice never makes tool calls, and forwarding their
// text alone would give the upstream a mangled conversation.
func refuseToolMessages(msgs []messageIn) error {
	for i, m := range msgs {
		switch {
		case m.Role == "tool" || m.Role == "function":
			return badParam("messages", fmt.Sprintf("messages[%d]: role %q is not supported by sluice: it answers a tool call, and sluice makes none", i, m.Role))
		case jsonSet(m.ToolCalls):
			return badParam("messages", fmt.Sprintf("messages[%d].tool_calls is not supported by sluice: the upstream is asked for text only", i))
		case jsonSet(m.FunctionCall):
			return badParam("messages", fmt.Sprintf("messages[%d].function_call is not supported by sluice: the upstream is asked for text only", i))
		}
	}
	return nil
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

// Response objects of the Chat Completions API.
type (
	chatCompletion struct {
		ID      string       `json:"id"`
		Object  string       `json:"object"` // "chat.completion"
		Created int64        `json:"created"`
		Model   string       `json:"model"`
		Choices []chatChoice `json:"choices"`
		Usage   chatUsage    `json:"usage"`
	}
	chatChoice struct {
		Index        int         `json:"index"`
		Message      chatMessage `json:"message"`
		Logprobs     *struct{}   `json:"logprobs"`
		FinishReason string      `json:"finish_reason"`
	}
	chatMessage struct {
		Role    string  `json:"role"`
		Content string  `json:"content"`
		Refusal *string `json:"refusal"`
	}
	// chatDelta is the delta of a chat.completion.chunk; completion.chunk
	// encodes the chunk by hand (TestChunkMatchesEncodingJSON holds it to
	// json.Marshal of the whole object).
	chatDelta struct {
		Role    string  `json:"role,omitempty"`
		Content *string `json:"content,omitempty"`
	}
	// chatUsage counts are estimates: sluice has no tokenizer. The prompt
	// counts one token per 4 bytes of message text, the completion one
	// token per streamed chunk (most upstreams send one token a chunk).
	chatUsage struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
		TotalTokens      int `json:"total_tokens"`
	}
)

// openAIErrorBody is the OpenAI error shape. It is the contract's error
// body ({"error": {"code", "message"}}) plus "type" and "param", so both
// the SDKs and contract clients read it.
type openAIErrorBody struct {
	Error openAIError `json:"error"`
}

type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// writeOpenAIError writes err as an OpenAI-shaped error with the
// contract's status, code and Retry-After.
func writeOpenAIError(w http.ResponseWriter, err error) {
	ae := statusError(err)
	if ae.RetryAfter > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(math.Ceil(ae.RetryAfter.Seconds()))))
	}
	oe := openAIError{Message: ae.Message, Type: openAIErrorType(ae.Status), Code: ae.Code}
	if ae.Param != "" {
		oe.Param = &ae.Param
	}
	writeJSON(w, ae.Status, openAIErrorBody{Error: oe})
}

// openAIErrorType is the OpenAI "type" of an error status.
func openAIErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusConflict:
		return "conflict_error"
	case status >= 500:
		return "server_error"
	}
	return "invalid_request_error"
}

// openAITenant authenticates like Server.tenant but answers a 401 in the
// OpenAI shape.
func (s *Server) openAITenant(w http.ResponseWriter, r *http.Request) (string, bool) {
	tenant, ok := s.authenticate(r)
	if !ok {
		challenge(w)
		writeOpenAIError(w, errUnauthorized)
	}
	return tenant, ok
}

// endError maps a task's terminal stream.EventError to the HTTP error of a
// call that has not answered yet.
func (s *Server) endError(end *stream.End) *apiError {
	ae := &apiError{Status: http.StatusBadGateway, Code: end.Code, Message: end.Message}
	switch end.Code {
	case orchestrator.CodeUpstreamError:
	case orchestrator.CodeUpstreamUnavailable:
		ae.Status, ae.RetryAfter = http.StatusServiceUnavailable, s.orch.Config().BreakerCoolDown
	case orchestrator.CodeTTFTTimeout, orchestrator.CodeIdleTimeout:
		ae.Status = http.StatusGatewayTimeout
	case orchestrator.CodeShuttingDown:
		ae.Status, ae.RetryAfter = http.StatusServiceUnavailable, time.Second
	case orchestrator.CodeQueueTimeout:
		// A request that joined a queued task shares its end (coalesce.go).
		ae.Status, ae.RetryAfter = http.StatusServiceUnavailable, s.orch.Config().RetryAfter
	case orchestrator.CodeCancelled:
		ae.Status = http.StatusConflict
	default:
		if ae.Code == "" {
			ae.Code = orchestrator.CodeUpstreamError
		}
	}
	if ae.Message == "" {
		ae.Message = "the task failed: " + ae.Code
	}
	return ae
}

// listModels is GET /v1/models: with configured models (several
// upstreams, orchestrator Config.Models) exactly those, the only ones a
// request may name; else the models the upstream serves (Config.Models),
// or the server's default model when the upstream cannot list them (the
// simulated one, or an upstream that does not answer), and requests may
// name any model: it is passed upstream as it is.
func (s *Server) listModels(w http.ResponseWriter, r *http.Request) {
	if _, ok := s.openAITenant(w, r); !ok {
		return
	}
	ids, owner := []string{s.orch.Config().DefaultModel}, "sluice"
	if names := s.orch.ModelNames(); names != nil {
		ids = names
	} else if s.cfg.Models != nil {
		if ms, err := s.cfg.Models(r.Context()); err != nil {
			s.log.Warn("GET /v1/models: the upstream's list is unavailable; listing the default model", "err", err.Error())
		} else if len(ms) > 0 {
			ids, owner = ms, "upstream"
		}
	}
	data := make([]map[string]any, 0, len(ids))
	for _, id := range ids {
		data = append(data, map[string]any{"id": id, "object": "model", "created": startedAt, "owned_by": owner})
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": data})
}

// chatCompletions is POST /v1/chat/completions (see chatRequest for the
// body). It runs the same pipeline as POST /v1/stream: cache, interactive
// budget (503 overloaded with Retry-After, before any byte), timeouts,
// retries, breaker and partial answers. Every response carries X-Task-Id
// (the task can be inspected at /v1/tasks/{id}) and the X-Cache headers.
//
// A cut answer (task status partial) is the text produced so far, then
// the notice as content ("\n\n[notice]"), then finish_reason "length".
// A failure before any output is an HTTP error with the contract's status
// and code in the OpenAI error shape: 502 upstream_error, 503
// upstream_unavailable, 504 ttft_timeout, 409 cancelled (the task was
// cancelled through DELETE /v1/tasks/{id}), 503 shutting_down.
//
// Streaming runs the task API's write loop (stream.Conn: heartbeats,
// write deadline, catch-up merging, connection metrics) with the
// chat.completion.chunk framing of completion. It holds back the 200
// until the first delta or the end of the task, so that a failure before
// any output is still a proper HTTP error that the SDKs raise. If the
// heartbeat interval (SLUICE_HEARTBEAT) passes first, the 200 is sent
// with a keep-alive (a chunk with empty content, sent on every heartbeat
// of silence) to keep proxies from closing the connection, and a later
// failure is then sent in the stream as {"error": {...}}, which the SDKs
// also raise.
//
// The task does not depend on the caller: if the client leaves, the task
// goes on (its answer fills the cache and stays readable by its id).
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	tenant, ok := s.openAITenant(w, r)
	if !ok {
		return
	}
	cr, req, err := s.decodeChat(w, r, tenant)
	if err != nil {
		writeOpenAIError(w, err)
		return
	}
	// A repeat with the same Idempotency-Key attaches to the first
	// request's task and gets the whole answer again (chunks carry no
	// event ids to resume after).
	t, _ := s.submit(w, r, req, orchestrator.Interactive, writeOpenAIError)
	if t == nil {
		return
	}
	c := &completion{
		s: s, t: t,
		id: "chatcmpl-" + t.ID, created: t.CreatedAt.Unix(),
		promptTokens: estimateTokens(req.Messages),
	}
	if cr.Stream != nil && *cr.Stream {
		c.usage = cr.StreamOptions != nil && cr.StreamOptions.IncludeUsage
		// The task goes on if the client leaves.
		s.serveEvents(r.Context(), w, t, c, 0)
		return
	}
	c.object(r.Context(), w)
}

// decodeChat reads and validates a chat completions request.
func (s *Server) decodeChat(w http.ResponseWriter, r *http.Request, tenant string) (*chatRequest, orchestrator.Request, error) {
	var cr chatRequest
	if err := decodeJSON(w, r, s.cfg.MaxBody, &cr); err != nil {
		return nil, orchestrator.Request{}, err
	}
	if cr.Messages == nil {
		return nil, orchestrator.Request{}, badParam("messages", "messages is required")
	}
	if err := cr.refuseUnsupported(); err != nil {
		return nil, orchestrator.Request{}, err
	}
	tr := taskRequest{Messages: cr.Messages, MaxTokens: cr.MaxTokens, Sluice: cr.Sluice, samplingIn: cr.samplingIn}
	if cr.Model != nil {
		tr.Model = *cr.Model
	}
	if cr.MaxCompletionTokens != nil {
		tr.MaxTokens = cr.MaxCompletionTokens
	}
	req, err := tr.fromOpenAIDoor(r, tenant)
	return &cr, req, err
}

// fromOpenAIDoor completes a request of an OpenAI-compatible door with
// sluice's headers (X-Sluice-Namespace, X-Sluice-NoCache) and the
// Idempotency-Key, and makes it the orchestrator's.
func (tr taskRequest) fromOpenAIDoor(r *http.Request, tenant string) (orchestrator.Request, error) {
	if ns := r.Header.Get("X-Sluice-Namespace"); ns != "" {
		tr.Namespace = ns
	}
	if v := r.Header.Get("X-Sluice-NoCache"); v != "" {
		b, err := strconv.ParseBool(strings.TrimSpace(v))
		if err != nil {
			return orchestrator.Request{}, badRequest("X-Sluice-NoCache must be true or false")
		}
		tr.NoCache = b
	}
	req, err := tr.toOrchestrator(tenant)
	if err == nil {
		err = priority(r, &req)
	}
	if err == nil {
		req.IdempotencyKey, err = idempotencyKey(r)
	}
	return req, err
}

// estimateTokens is the prompt's token count for usage: one token per 4
// bytes of text, at least one per message.
func estimateTokens(msgs []upstream.Message) int {
	n := 0
	for _, m := range msgs {
		n += max(1, (len(m.Content)+3)/4)
	}
	return n
}

// completion answers one chat completions call for task t: as one
// chat.completion object, or as the stream.Framing (a stream.Holder) of
// its chat.completion.chunk stream.
type completion struct {
	s            *Server
	t            *orchestrator.Task
	id           string
	created      int64
	usage        bool // stream_options.include_usage
	promptTokens int
	head         []byte // chunkHead, once encoded; used on the write loop only
}

var _ stream.Holder = (*completion)(nil)

func (c *completion) usageOf(end *stream.End, notice bool) chatUsage {
	n := end.Chunks
	if notice {
		n++
	}
	return chatUsage{PromptTokens: c.promptTokens, CompletionTokens: n, TotalTokens: c.promptTokens + n}
}

// noticeText is the content appended to a cut answer.
func noticeText(end *stream.End) string {
	if end.Notice == "" {
		return ""
	}
	return "\n\n[" + end.Notice + "]"
}

// object waits for the end of the task and answers one chat.completion.
func (c *completion) object(ctx context.Context, w http.ResponseWriter) {
	select {
	case <-c.t.Done():
	case <-ctx.Done():
		return // the client left; the task goes on
	}
	text, _, end := c.t.Transcript().Snapshot()
	if end == nil { // Done is closed after Finish; cannot happen
		writeOpenAIError(w, errors.New("web: task done without an end"))
		return
	}
	finish := openAIStop
	if end.FinishReason == string(orchestrator.FinishLength) {
		finish = openAILength // the upstream's own token limit
	}
	switch end.Event {
	case stream.EventPartial:
		text += noticeText(end)
		finish = openAILength
	case stream.EventError:
		writeOpenAIError(w, c.s.endError(end))
		return
	}
	c.s.writeAnswer(w, http.StatusOK, chatCompletion{
		ID: c.id, Object: "chat.completion", Created: c.created, Model: c.t.Model,
		Choices: []chatChoice{{Message: chatMessage{Role: "assistant", Content: text}, FinishReason: finish}},
		Usage:   c.usageOf(end, end.Event == stream.EventPartial),
	})
}

// Open implements stream.Framing: the role chunk.
func (c *completion) Open(b *bytes.Buffer) {
	empty := ""
	c.chunk(b, chatDelta{Role: "assistant", Content: &empty}, nil, nil)
}

// Delta implements stream.Framing: one content chunk.
func (c *completion) Delta(b *bytes.Buffer, _ int, text string) {
	c.chunk(b, chatDelta{Content: &text}, nil, nil)
}

// KeepAlive implements stream.Framing: a chunk with empty content.
//
// NOTE: not an SSE comment. The official Go SDK (openai-go v1.12.0)
// dispatches an empty event at every blank line and fails to decode it;
// github.com/sashabaranov/go-openai counts comment lines as empty
// messages (it gives up after 300) and glues them to a following
// {"error": ...}, which then fails to parse ("unexpected end of JSON
// input") instead of raising the error. A chunk every SDK reads.
func (c *completion) KeepAlive(b *bytes.Buffer) {
	empty := ""
	c.chunk(b, chatDelta{Content: &empty}, nil, nil)
}

// Refuse implements stream.Holder: a task that failed before any output
// is answered as an HTTP error, which the SDKs raise.
func (c *completion) Refuse(w http.ResponseWriter, end *stream.End) bool {
	if end.Event != stream.EventError {
		return false
	}
	writeOpenAIError(w, c.s.endError(end))
	return true
}

// chunk encodes one chat.completion.chunk event; usage makes it the usage
// chunk (no choices). It writes the bytes json.Marshal wrote of the whole
// chunk object, by hand: that was most of the door's cost per delta.
func (c *completion) chunk(b *bytes.Buffer, delta chatDelta, finish *string, usage *chatUsage) {
	w := append(b.AvailableBuffer(), c.chunkHead()...)
	if usage != nil {
		w = append(w, `],"usage":{"prompt_tokens":`...)
		w = strconv.AppendInt(w, int64(usage.PromptTokens), 10)
		w = append(w, `,"completion_tokens":`...)
		w = strconv.AppendInt(w, int64(usage.CompletionTokens), 10)
		w = append(w, `,"total_tokens":`...)
		w = strconv.AppendInt(w, int64(usage.TotalTokens), 10)
		w = append(w, "}}\n\n"...)
		b.Write(w)
		return
	}
	w = append(w, `{"index":0,"delta":{`...)
	if delta.Role != "" {
		w = append(w, `"role":`...)
		w = stream.AppendJSONString(w, delta.Role)
		if delta.Content != nil {
			w = append(w, ',')
		}
	}
	if delta.Content != nil {
		w = append(w, `"content":`...)
		w = stream.AppendJSONString(w, *delta.Content)
	}
	w = append(w, `},"logprobs":null,"finish_reason":`...)
	if finish != nil {
		w = stream.AppendJSONString(w, *finish)
	} else {
		w = append(w, "null"...)
	}
	w = append(w, "}]}\n\n"...)
	b.Write(w)
}

// chunkHead is the start of every chunk event of the completion, encoded
// once: `data: {"id":...,"object":"chat.completion.chunk","created":...,
// "model":...,"choices":[`.
func (c *completion) chunkHead() []byte {
	if c.head == nil {
		h := append([]byte(nil), `data: {"id":`...)
		h = stream.AppendJSONString(h, c.id)
		h = append(h, `,"object":"chat.completion.chunk","created":`...)
		h = strconv.AppendInt(h, c.created, 10)
		h = append(h, `,"model":`...)
		h = stream.AppendJSONString(h, c.t.Model)
		c.head = append(h, `,"choices":[`...)
	}
	return c.head
}

// writeData encodes one SSE event of data lines only, as the OpenAI API
// sends them.
func writeData(b *bytes.Buffer, data []byte) {
	b.WriteString("data: ")
	b.Write(data)
	b.WriteString("\n\n")
}

// End implements stream.Framing: the notice of a cut answer, the
// finish_reason chunk, the usage chunk and [DONE]; or an in-stream error
// object when the task failed after the 200 was sent.
func (c *completion) End(b *bytes.Buffer, end *stream.End) {
	finish := openAIStop
	if end.FinishReason == string(orchestrator.FinishLength) {
		finish = openAILength // the upstream's own token limit
	}
	switch end.Event {
	case stream.EventError:
		ae := c.s.endError(end)
		data, _ := json.Marshal(openAIErrorBody{Error: openAIError{Message: ae.Message, Type: openAIErrorType(ae.Status), Code: ae.Code}})
		writeData(b, data)
		return
	case stream.EventPartial:
		if n := noticeText(end); n != "" {
			c.chunk(b, chatDelta{Content: &n}, nil, nil)
		}
		finish = openAILength
	}
	c.chunk(b, chatDelta{}, &finish, nil)
	if c.usage {
		u := c.usageOf(end, end.Event == stream.EventPartial)
		c.chunk(b, chatDelta{}, nil, &u)
	}
	b.WriteString("data: [DONE]\n\n")
}
