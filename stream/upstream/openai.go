package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"mime"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sse "github.com/tmaxmax/go-sse"
)

// DefaultConnectTimeout bounds an upstream dial when OpenAIConfig leaves
// ConnectTimeout zero.
const DefaultConnectTimeout = time.Second

const (
	// maxEventSize bounds one SSE event of an upstream answer. Real chunks
	// are a few hundred bytes; 1 MiB leaves room for odd servers.
	maxEventSize = 1 << 20
	// maxErrorBody is how much of a non-200 body StatusError keeps.
	maxErrorBody = 512
	// drainLimit and drainWait bound the read of what follows [DONE] (the
	// end of the chunked body), so that the connection can be reused
	// without ever waiting on a server that keeps the response open.
	drainLimit = 4 << 10
	drainWait  = 20 * time.Millisecond
)

var readConfig = &sse.ReadConfig{MaxEventSize: maxEventSize}

// OpenAIConfig configures an OpenAI-compatible streaming client. The zero
// value is not usable: BaseURL is required.
type OpenAIConfig struct {
	// BaseURL is the API root, the part before /chat/completions,
	// e.g. http://127.0.0.1:11434/v1 (Ollama) or https://api.openai.com/v1.
	// Required; the scheme must be http or https.
	BaseURL string
	// APIKey is sent as "Authorization: Bearer APIKey".
	// default: empty, no Authorization header
	APIKey string
	// Client sends the requests. It must not have an overall Timeout: an
	// answer streams for as long as it takes, and the caller's context
	// bounds it.
	// default: a client of its own, with a clone of http.DefaultTransport
	// whose dials time out after ConnectTimeout
	Client *http.Client
	// ConnectTimeout bounds establishing the TCP connection of the default
	// Client; it is ignored when Client is set. Negative: no bound but the
	// operating system's.
	// default: DefaultConnectTimeout (1s)
	ConnectTimeout time.Duration
	// Name identifies the upstream in budgets, breakers, metrics and logs.
	// default: the host (and port) of BaseURL
	Name string
}

// OpenAI streams answers from an OpenAI-compatible Chat Completions API
// (OpenAI, vLLM, Ollama, llama.cpp server, ...). It is safe for concurrent
// use.
type OpenAI struct {
	endpoint string // {BaseURL}/chat/completions
	models   string // {BaseURL}/models
	hostPort string // the host:port dialled by Ping
	apiKey   string
	client   *http.Client
	name     string
	connect  time.Duration
}

var (
	_ Upstream = (*OpenAI)(nil)
	_ Emitter  = (*OpenAI)(nil)
)

// NewOpenAI returns a client for cfg, or an error if cfg.BaseURL is not an
// absolute http or https URL.
func NewOpenAI(cfg OpenAIConfig) (*OpenAI, error) {
	u, err := url.Parse(strings.TrimSpace(cfg.BaseURL))
	if err != nil {
		return nil, fmt.Errorf("stream: upstream base URL: %w", err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("stream: upstream base URL %q: scheme must be http or https", cfg.BaseURL)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("stream: upstream base URL %q: no host", cfg.BaseURL)
	}
	u.RawQuery, u.Fragment = "", ""
	o := &OpenAI{
		endpoint: u.JoinPath("chat", "completions").String(),
		models:   u.JoinPath("models").String(),
		hostPort: hostPort(u),
		apiKey:   cfg.APIKey,
		client:   cfg.Client,
		name:     cfg.Name,
		connect:  cfg.ConnectTimeout,
	}
	if o.name == "" {
		o.name = u.Host
	}
	if o.client == nil {
		o.client = newHTTPClient(cfg.ConnectTimeout)
	}
	return o, nil
}

// hostPort is u's host with the scheme's default port when it has none.
func hostPort(u *url.URL) string {
	if u.Port() != "" {
		return u.Host
	}
	if u.Scheme == "https" {
		return net.JoinHostPort(u.Hostname(), "443")
	}
	return net.JoinHostPort(u.Hostname(), "80")
}

// Ping reports whether the upstream accepts a TCP connection, within ctx
// and the connect timeout. It is the readiness check: cheap, and it spends
// no tokens (a model endpoint may need a key, or a model name, to answer
// anything more).
func (o *OpenAI) Ping(ctx context.Context) error {
	d := net.Dialer{Timeout: o.connect}
	if o.connect <= 0 {
		d.Timeout = DefaultConnectTimeout
	}
	c, err := d.DialContext(ctx, "tcp", o.hostPort)
	if err != nil {
		return &ConnectError{Err: err}
	}
	return c.Close()
}

// maxModelsBody bounds the model list read by Models.
const maxModelsBody = 1 << 20

// Models asks the upstream which models it serves (GET {BaseURL}/models)
// and returns their ids in the upstream's order. ctx bounds it. A non-200
// answer is a *StatusError; an unreachable upstream a *ConnectError.
func (o *OpenAI) Models(ctx context.Context) ([]string, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.models, nil)
	if err != nil {
		return nil, err
	}
	if o.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+o.apiKey)
	}
	req.Header.Set("Accept", "application/json")
	resp, err := o.client.Do(req)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return nil, ctxErr
		}
		return nil, &ConnectError{Err: err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, statusError(resp)
	}
	var list struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxModelsBody)).Decode(&list); err != nil {
		return nil, fmt.Errorf("stream: %s: not a model list: %w", o.models, err)
	}
	ids := make([]string, 0, len(list.Data))
	for _, m := range list.Data {
		if m.ID != "" {
			ids = append(ids, m.ID)
		}
	}
	return ids, nil
}

// upstreamWriteBuffer is the write buffer of an upstream connection.
const upstreamWriteBuffer = 1 << 10

func newHTTPClient(connect time.Duration) *http.Client {
	switch {
	case connect == 0:
		connect = DefaultConnectTimeout
	case connect < 0:
		connect = 0
	}
	dialer := &net.Dialer{Timeout: connect, KeepAlive: 30 * time.Second}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dialer.DialContext
	// One upstream host carries up to a whole budget of streams; keep
	// their connections rather than redial (and renegotiate TLS) each time.
	tr.MaxIdleConnsPerHost = 64
	// A connection's write buffer lives as long as the connection, and
	// each streaming answer holds one: it only gathers the request's
	// headers (a body larger than the buffer is written straight
	// through), so 1 KiB instead of net/http's 4 KiB costs nothing and
	// saves 3 KiB per open upstream stream.
	tr.WriteBufferSize = upstreamWriteBuffer
	return &http.Client{Transport: tr}
}

// Name identifies the upstream.
func (o *OpenAI) Name() string { return o.name }

type chatRequest struct {
	Model     string    `json:"model"`
	Messages  []Message `json:"messages"`
	Stream    bool      `json:"stream"`
	MaxTokens int       `json:"max_tokens,omitempty"`
	Sampling
}

// chatChunk is the part of a chat.completion.chunk (or, with Message, of a
// whole chat.completion) that the client reads.
type chatChunk struct {
	Choices []chatChoice    `json:"choices"`
	Error   json.RawMessage `json:"error"`
}

// chatChoice is the part of one choice that the client reads.
type chatChoice struct {
	Delta struct {
		Content string `json:"content"`
	} `json:"delta"`
	Message struct {
		Content string `json:"content"`
	} `json:"message"`
	FinishReason string `json:"finish_reason"`
}

// APIError is an error object that the upstream sent inside a 200 answer,
// such as {"error": {"message": "...", "type": "server_error"}} in place of
// a chunk. Stream returns it joined with ErrTruncated, since the answer
// ends there without its final chunk.
type APIError struct {
	Message string
	Type    string
	Code    string
}

func (e *APIError) Error() string {
	var b strings.Builder
	b.WriteString("stream: upstream sent an error")
	if e.Type != "" || e.Code != "" {
		b.WriteString(" (")
		b.WriteString(strings.Trim(e.Type+" "+e.Code, " "))
		b.WriteString(")")
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	return b.String()
}

// parseAPIError reads the OpenAI error object in its usual shapes: an
// object with message, type and code (a string or a number), or a bare
// string.
func parseAPIError(raw json.RawMessage) *APIError {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return &APIError{Message: s}
	}
	var obj struct {
		Message string          `json:"message"`
		Type    string          `json:"type"`
		Code    json.RawMessage `json:"code"`
	}
	if json.Unmarshal(raw, &obj) != nil {
		return &APIError{Message: truncate(string(raw), maxErrorBody)}
	}
	e := &APIError{Message: obj.Message, Type: obj.Type}
	if len(obj.Code) > 0 && string(obj.Code) != "null" {
		if json.Unmarshal(obj.Code, &e.Code) != nil {
			e.Code = string(obj.Code)
		}
	}
	return e
}

// Stream sends req to {BaseURL}/chat/completions with "stream": true and
// sends each non-empty content delta on out. See Upstream for the contract.
//
// It returns nil after "data: [DONE]", or at the end of the body when a
// finish_reason came first (some servers omit [DONE]); ErrTruncated
// (wrapping the read error, if any) when the body ends before either;
// a *StatusError for any status but 200; a *ConnectError when no response
// arrived at all; the error object of an "error" chunk as an *APIError
// joined with ErrTruncated; and ctx.Err() once ctx is done.
func (o *OpenAI) Stream(ctx context.Context, req Request, out chan<- Chunk) error {
	return o.StreamTo(ctx, req, sendTo(ctx, out))
}

// StreamTo is Stream with each chunk passed to emit (Emitter).
func (o *OpenAI) StreamTo(ctx context.Context, req Request, emit func(Chunk) error) error {
	body, err := json.Marshal(chatRequest{
		Model:     req.Model,
		Messages:  req.Messages,
		Stream:    true,
		MaxTokens: max(req.MaxTokens, 0),
		Sampling:  req.Sampling,
	})
	if err != nil {
		return fmt.Errorf("stream: encode request: %w", err)
	}
	// reqCtx lets Stream cut the body read short after [DONE] (see drain)
	// without touching the caller's ctx.
	reqCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	hreq, err := http.NewRequestWithContext(reqCtx, http.MethodPost, o.endpoint, bytes.NewReader(body))
	if err != nil {
		return fmt.Errorf("stream: build request: %w", err)
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	if o.apiKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+o.apiKey)
	}

	resp, err := o.client.Do(hreq)
	if err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return &ConnectError{Err: err}
	}
	defer resp.Body.Close()

	if resp.StatusCode != http.StatusOK {
		return statusError(resp)
	}
	if mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type")); mt == "application/json" {
		// The server ignored "stream": true and answered in one piece.
		return o.relayObject(ctx, resp.Body, emit)
	}

	finished := false // a choice carried a finish_reason.
	length := false   // ... and it was "length".
	done := func() error {
		if length {
			return ErrLength
		}
		return nil
	}
	var c chatChunk // reused: decodeChunk resets it
	for ev, err := range sse.Read(resp.Body, readConfig) {
		if err != nil {
			if ctxErr := ctx.Err(); ctxErr != nil {
				return ctxErr
			}
			if finished {
				// The answer was whole; only the [DONE] marker was lost.
				return done()
			}
			return fmt.Errorf("%w: %w", ErrTruncated, err)
		}
		data := strings.TrimSpace(ev.Data)
		if data == "[DONE]" {
			drain(resp.Body, cancel)
			return done()
		}
		if data == "" {
			continue
		}
		if err := decodeChunk(data, &c); err != nil {
			if ev.Type == "error" {
				return fmt.Errorf("%w: %w", ErrTruncated, &APIError{Message: truncate(data, maxErrorBody)})
			}
			return fmt.Errorf("%w: bad chunk %q: %w", ErrTruncated, truncate(data, 128), err)
		}
		if len(c.Error) > 0 && string(c.Error) != "null" {
			return fmt.Errorf("%w: %w", ErrTruncated, parseAPIError(c.Error))
		}
		if len(c.Choices) == 0 {
			continue // e.g. the usage chunk of stream_options.include_usage.
		}
		ch := c.Choices[0]
		if ch.FinishReason != "" {
			finished = true
			length = ch.FinishReason == "length"
		}
		if ch.Delta.Content == "" {
			continue
		}
		if err := emit(Chunk{Text: ch.Delta.Content}); err != nil {
			return err
		}
	}
	if ctxErr := ctx.Err(); ctxErr != nil {
		return ctxErr
	}
	if finished {
		return done()
	}
	return ErrTruncated
}

// relayObject relays a whole chat.completion answer as one chunk.
func (o *OpenAI) relayObject(ctx context.Context, body io.Reader, emit func(Chunk) error) error {
	var c chatChunk
	if err := json.NewDecoder(io.LimitReader(body, maxEventSize)).Decode(&c); err != nil {
		if ctxErr := ctx.Err(); ctxErr != nil {
			return ctxErr
		}
		return fmt.Errorf("%w: bad chat.completion: %w", ErrTruncated, err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return fmt.Errorf("%w: %w", ErrTruncated, parseAPIError(c.Error))
	}
	if len(c.Choices) == 0 {
		return fmt.Errorf("%w: chat.completion without choices", ErrTruncated)
	}
	if text := c.Choices[0].Message.Content; text != "" {
		if err := emit(Chunk{Text: text}); err != nil {
			return err
		}
	}
	if c.Choices[0].FinishReason == "length" {
		return ErrLength
	}
	return nil
}

// drain reads what little follows [DONE] so that the transport can reuse
// the connection, giving up (by cancelling the request) after drainWait.
func drain(body io.Reader, cancel context.CancelFunc) {
	t := time.AfterFunc(drainWait, cancel)
	defer t.Stop()
	_, _ = io.Copy(io.Discard, io.LimitReader(body, drainLimit))
}

// statusError reads the start of a non-200 answer into a *StatusError.
func statusError(resp *http.Response) *StatusError {
	b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	return &StatusError{
		Code:       resp.StatusCode,
		RetryAfter: retryAfter(resp.Header, time.Now()),
		Body:       strings.TrimSpace(strings.ToValidUTF8(string(b), "\uFFFD")),
	}
}

// retryAfter reads how long the upstream asks us to wait: the
// Retry-After header in seconds or as an HTTP date, or the retry-after-ms
// header that OpenAI sends and its SDKs prefer. It returns 0 when absent,
// malformed or in the past.
func retryAfter(h http.Header, now time.Time) time.Duration {
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms > 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond))
		}
	}
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs <= 0 || secs > 1e9 {
			return 0
		}
		return time.Duration(secs) * time.Second
	}
	if t, err := http.ParseTime(v); err == nil {
		if d := t.Sub(now); d > 0 {
			return d
		}
	}
	return 0
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n]
}
