package main

// The terminal client: sluice ask, sluice task, sluice cache. It speaks
// the public HTTP API of a running sluice and follows event streams with
// github.com/r3labs/sse/v2, an SSE implementation independent of the
// server's, with reconnection and Last-Event-ID resume.
//
// Exit codes: 0 the answer is done (or the command succeeded), 2 the
// answer is partial (cut by a timeout; the text so far was printed), 1
// anything else (failed, overloaded, cancelled, bad usage, unreachable
// server), always with a one-line reason on stderr.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	sse "github.com/r3labs/sse/v2"
	"gopkg.in/cenkalti/backoff.v1"

	"github.com/sluice-dev/sluice/cache"
)

func init() {
	subcommands["ask"] = cmdAsk
	subcommands["task"] = cmdTask
	subcommands["cache"] = cmdCache
}

// Exit codes of the client commands.
const (
	exitOK      = 0
	exitFailed  = 1
	exitPartial = 2
)

// Reconnection policy of the event stream follower.
const (
	// resumeTries is the most reconnections of one stream in a row
	// without a new event in between.
	resumeTries = 8
	// resumeMaxBackoff caps the pause between two reconnections.
	resumeMaxBackoff = 2 * time.Second
)

// client talks to one sluice server.
type client struct {
	server string // base URL, without a trailing slash
	apiKey string
	http   *http.Client
	stdout io.Writer
	stderr io.Writer
}

// clientFlags registers the flags every client command has.
func clientFlags(fs *flag.FlagSet, getenv func(string) string) (server, apiKey *string) {
	defServer := getenv("SLUICE_SERVER")
	if defServer == "" {
		defServer = "http://127.0.0.1:8080"
	}
	server = fs.String("server", defServer, "sluice base URL (SLUICE_SERVER)")
	apiKey = fs.String("api-key", getenv("SLUICE_API_KEY"), "API key sent as Authorization: Bearer (SLUICE_API_KEY)")
	return server, apiKey
}

func newClient(server, apiKey string, stdout, stderr io.Writer) (*client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("--server %q is not an http(s) URL", server)
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 60 * time.Second,
		MaxIdleConnsPerHost:   4,
	}
	return &client{
		server: strings.TrimRight(server, "/"), apiKey: apiKey,
		http: &http.Client{Transport: tr}, stdout: stdout, stderr: stderr,
	}, nil
}

func (c *client) close() { c.http.CloseIdleConnections() }

// serverError is an error answered by the server: {"error": {code, message}}.
type serverError struct {
	Status     int
	Code       string
	Message    string
	RetryAfter string
}

func (e *serverError) Error() string {
	s := e.Code + ": " + e.Message
	if e.Code == "" {
		s = fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
	}
	if e.RetryAfter != "" {
		s += " (retry after " + e.RetryAfter + "s)"
	}
	return s
}

// readServerError turns a non-2xx response into a *serverError. It reads
// (a bounded part of) the body but does not close it.
func readServerError(resp *http.Response) *serverError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	var b struct {
		Error struct{ Code, Message string } `json:"error"`
	}
	e := &serverError{Status: resp.StatusCode, RetryAfter: resp.Header.Get("Retry-After")}
	if json.Unmarshal(raw, &b) == nil && b.Error.Message != "" {
		e.Code, e.Message = b.Error.Code, b.Error.Message
	} else {
		e.Message = strings.TrimSpace(string(raw))
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	return e
}

// doJSON sends a request with an optional JSON body and decodes a 2xx
// JSON answer into out. It returns the response headers.
func (c *client) doJSON(ctx context.Context, method, path string, body, out any) (http.Header, error) {
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			return nil, err
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	c.auth(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		return resp.Header, readServerError(resp)
	}
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.Header, fmt.Errorf("%s %s: bad JSON answer: %w", method, path, err)
		}
	}
	return resp.Header, nil
}

func (c *client) auth(h http.Header) {
	if c.apiKey != "" {
		h.Set("Authorization", "Bearer "+c.apiKey)
	}
}

// parseInterspersed parses flags that may come before or after the
// positional arguments ("sluice ask 'q' --json"), and returns the
// positional ones.
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		// After a "--" everything is positional.
		if n := len(args) - len(rest); n > 0 && args[n-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// newFlagSet returns a flag set that prints its usage to stderr.
func newFlagSet(name, usage string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, usage)
		fs.PrintDefaults()
	}
	return fs
}

// usageExit is the exit code of a flag parsing error: 0 for -h.
func usageExit(err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	return exitFailed
}

func fail(stderr io.Writer, format string, a ...any) int {
	fmt.Fprintf(stderr, "sluice: "+format+"\n", a...)
	return exitFailed
}

// interruptible returns a context cancelled by Ctrl-C.
func interruptible() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt)
}

// connect makes the client of a subcommand and its Ctrl-C context; done
// releases both.
func connect(server, apiKey string, stdout, stderr io.Writer) (*client, context.Context, func(), error) {
	c, err := newClient(server, apiKey, stdout, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	ctx, stop := interruptible()
	return c, ctx, func() { stop(); c.close() }, nil
}

const askUsage = `usage: sluice ask [flags] "question"

Asks a running sluice and streams the answer to stdout as it arrives; the
task id, cache status and time to first token go to stderr. The task is
started with POST /v1/tasks (it waits in the server's queue when the
budget is full) and followed on its events_url; a dropped connection is
resumed with Last-Event-ID. Ctrl-C cancels the task.

A cut answer (partial) can be continued: --continue N asks the model up to
N times to go on from the text so far (the question, the text as the
assistant's turn, and a request to continue, as a new task), streaming the
rest right after it. Asking the same question again would start over.

Exit codes: 0 done, 2 partial (cut; the text so far was printed),
1 failed, overloaded, cancelled or any other error.

flags:
`

// cmdAsk is "sluice ask".
func cmdAsk(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sluice ask", askUsage, stderr)
	server, apiKey := clientFlags(fs, getenv)
	asJSON := fs.Bool("json", false, "print the raw events, one JSON object a line, instead of the text")
	ns := fs.String("namespace", "", "cache namespace (default \"default\")")
	nocache := fs.Bool("nocache", false, "neither read nor write the cache")
	model := fs.String("model", "", "model (default: the server's)")
	maxTokens := fs.Int("max-tokens", 0, "most tokens in the answer (0: the server's default)")
	cont := fs.Int("continue", 0, "when the answer is cut, ask the model to continue from the text so far, up to this many times")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		fs.Usage()
		return fail(stderr, "ask needs exactly one non-empty question (quote it)")
	}
	if *cont < 0 || *cont > maxContinue {
		return fail(stderr, "--continue must be between 0 and %d", maxContinue)
	}
	c, ctx, done, err := connect(*server, *apiKey, stdout, stderr)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer done()

	body := map[string]any{"prompt": pos[0], "nocache": *nocache}
	if *ns != "" {
		body["namespace"] = *ns
	}
	if *model != "" {
		body["model"] = *model
	}
	if *maxTokens > 0 {
		body["max_tokens"] = *maxTokens
	}
	var (
		prev  *follower
		sofar strings.Builder // the answer over every round
		ids   []string
	)
	for round := 0; ; round++ {
		var created struct {
			ID        string `json:"id"`
			Status    string `json:"status"`
			EventsURL string `json:"events_url"`
		}
		start := time.Now()
		h, err := c.doJSON(ctx, http.MethodPost, "/v1/tasks", body, &created)
		if err != nil {
			return fail(stderr, "%v", err)
		}
		ids = append(ids, created.ID)
		f := &follower{c: c, json: *asJSON, start: start, quietMeta: true, isAsk: *cont == 0}
		if prev == nil {
			fmt.Fprintf(stderr, "sluice: task %s · cache %s%s · %s\n", created.ID, h.Get("X-Cache"), cacheDetail(h), created.Status)
		} else {
			// A continuation streams on right after the text so far:
			// nothing on stderr in between (it may be the same file).
			f.wrote, f.lastByte = prev.wrote, prev.lastByte
		}
		res := f.follow(ctx, created.EventsURL)
		if res.interrupted {
			// The user gave up on this answer: free its budget slot.
			cctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_, _ = c.doJSON(cctx, http.MethodDelete, "/v1/tasks/"+url.PathEscape(created.ID), nil, nil)
			return fail(stderr, "interrupted; task %s cancelled", created.ID)
		}
		sofar.WriteString(f.text.String())
		if res.event != "partial" || round >= *cont || f.text.Len() == 0 {
			code := f.report(res, created.ID)
			if len(ids) > 1 {
				n, plural := len(ids)-1, "s"
				if n == 1 {
					plural = ""
				}
				fmt.Fprintf(stderr, "sluice: %d continuation%s of the cut answer: tasks %s\n", n, plural, strings.Join(ids, ", "))
			}
			return code
		}
		body = continueBody(body, pos[0], sofar.String())
		prev = f
	}
}

// maxContinue bounds --continue: each continuation is a whole new task.
const maxContinue = 10

// continueTurn asks the model to go on from a cut answer.
const continueTurn = "Continue exactly where your answer above stops. Do not repeat any of it."

// continueBody is the request that continues a cut answer: the question,
// the text so far as the assistant's turn, and a request to continue,
// with the first request's options.
func continueBody(first map[string]any, question, sofar string) map[string]any {
	b := map[string]any{}
	for k, v := range first {
		if k != "prompt" && k != "messages" {
			b[k] = v
		}
	}
	b["messages"] = []map[string]string{
		{"role": "user", "content": question},
		{"role": "assistant", "content": sofar},
		{"role": "user", "content": continueTurn},
	}
	return b
}

func cacheDetail(h http.Header) string {
	s := ""
	if k := h.Get("X-Cache-Kind"); k != "" {
		s += " " + k
	}
	if sc := h.Get("X-Cache-Score"); sc != "" {
		s += " " + sc
	}
	return s
}

const taskUsage = `usage: sluice task [flags] ID

Attaches to an existing task and streams it to stdout: the text so far at
once, then live until its end. A dropped connection is resumed after the
last event received (Last-Event-ID). Ctrl-C detaches (the task goes on).
--poll prints GET /v1/tasks/ID instead.

Exit codes: 0 done (or, with --poll, still running), 2 partial,
1 failed, cancelled, unknown task or any other error.

flags:
`

// cmdTask is "sluice task".
func cmdTask(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sluice task", taskUsage, stderr)
	server, apiKey := clientFlags(fs, getenv)
	poll := fs.Bool("poll", false, "print the task's JSON (GET /v1/tasks/ID) and exit")
	asJSON := fs.Bool("json", false, "print the raw events, one JSON object a line, instead of the text")
	after := fs.Int("after", 0, "start after this delta sequence number (as Last-Event-ID)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) != 1 || pos[0] == "" {
		fs.Usage()
		return fail(stderr, "task needs exactly one task id")
	}
	id := pos[0]
	c, ctx, done, err := connect(*server, *apiKey, stdout, stderr)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer done()

	if *poll {
		var v json.RawMessage
		if _, err := c.doJSON(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(id), nil, &v); err != nil {
			return fail(stderr, "%v", err)
		}
		var out bytes.Buffer
		_ = json.Indent(&out, v, "", "  ") // valid: it was decoded
		out.WriteByte('\n')
		_, _ = stdout.Write(out.Bytes())
		var st struct{ Status string }
		_ = json.Unmarshal(v, &st)
		switch st.Status {
		case "partial":
			return exitPartial
		case "failed", "cancelled":
			return exitFailed
		}
		return exitOK
	}
	// One plain request first: an unreachable server or an unknown task
	// fails at once, where the stream follower would retry (it resumes a
	// stream that was going, not one that never started).
	if _, err := c.doJSON(ctx, http.MethodGet, "/v1/tasks/"+url.PathEscape(id), nil, nil); err != nil {
		return fail(stderr, "%v", err)
	}
	f := &follower{c: c, json: *asJSON, start: time.Now(), after: *after}
	res := f.follow(ctx, "/v1/tasks/"+url.PathEscape(id)+"/events")
	if res.interrupted {
		return fail(stderr, "detached; task %s goes on", id)
	}
	return f.report(res, id)
}

// follower reads one task's event stream. Its handler runs on the
// goroutine that calls follow, so its fields need no lock.
type follower struct {
	c         *client
	json      bool      // print raw events instead of the text
	start     time.Time // when the request was made, for the TTFT
	after     int       // resume point of the first connection
	quietMeta bool      // the caller already printed the task line
	isAsk     bool      // started by sluice ask (which can --continue)

	meta      bool // a meta event was seen (it is replayed on every reconnect)
	lastSeq   int  // the last delta written
	firstAt   time.Duration
	wrote     bool            // any answer text was written to stdout (this task or the one it continues)
	deltas    bool            // this task's stream had a delta
	text      strings.Builder // this task's answer text
	lastByte  byte            // the last byte of text written
	cacheLine string          // from meta, for the summary
}

// followResult is how a stream ended.
type followResult struct {
	event       string          // done, partial, error; "" if none came
	data        json.RawMessage // the terminal event's data
	interrupted bool            // the caller's context ended first
	err         error           // the stream could not be followed
	reconnects  int
}

// follow subscribes to path (relative to the server) and writes the
// stream until its terminal event.
func (f *follower) follow(parent context.Context, path string) followResult {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	var res followResult

	sc := sse.NewClient(f.c.server+path, sse.ClientMaxBufferSize(4<<20))
	sc.Connection = f.c.http
	if f.c.apiKey != "" {
		sc.Headers["Authorization"] = "Bearer " + f.c.apiKey
	}
	if f.after > 0 {
		f.lastSeq = f.after
		sc.LastEventID.Store([]byte(strconv.Itoa(f.after)))
	}
	sc.ResponseValidator = func(_ *sse.Client, resp *http.Response) error {
		if resp.StatusCode == http.StatusOK {
			return nil
		}
		err := readServerError(resp)
		resp.Body.Close()
		if resp.StatusCode >= 500 {
			return err // worth another try
		}
		return backoff.Permanent(err) // 401, 404, ...: no use retrying
	}
	sc.ReconnectNotify = func(err error, d time.Duration) {
		if ctx.Err() != nil {
			return
		}
		res.reconnects++
		fmt.Fprintf(f.c.stderr, "sluice: stream interrupted (%v); resuming after event %d in %s\n", err, f.lastSeq, d.Round(time.Millisecond))
	}
	handler := func(ev *sse.Event) {
		if res.event != "" {
			return
		}
		typ := string(ev.Event)
		switch typ {
		case "meta":
			if f.meta {
				return // replayed on reconnect
			}
			f.meta = true
			f.onMeta(ev.Data)
		case "delta":
			seq, err := strconv.Atoi(string(ev.ID))
			if err == nil && seq <= f.lastSeq {
				return // never happens with a correct server; be safe
			}
			var d struct {
				Text string `json:"text"`
			}
			if err := json.Unmarshal(ev.Data, &d); err != nil {
				return
			}
			f.lastSeq = seq
			if !f.deltas {
				f.firstAt = time.Since(f.start)
			}
			if !f.json {
				_, _ = io.WriteString(f.c.stdout, d.Text)
				if d.Text != "" {
					f.lastByte = d.Text[len(d.Text)-1]
				}
			}
			f.wrote, f.deltas = true, true
			f.text.WriteString(d.Text)
		case "done", "partial", "error":
			res.event, res.data = typ, append(json.RawMessage(nil), ev.Data...)
			cancel() // the server closes now; do not reconnect
		default:
			return
		}
		if f.json {
			f.printJSON(typ, ev)
		}
	}

	// The SSE client reconnects on errors (bounded backoff, Last-Event-ID)
	// but returns nil when the server ends the response cleanly, which a
	// server does without a terminal event only when it dropped this
	// reader (slow reader, restart): subscribe again then, within the
	// same bounds.
	b := newBackoff()
	for tries := 0; ; tries++ {
		// Within one subscription the SSE client retries failed
		// connections itself: at most resumeTries times, stopping at once
		// when ctx ends (after the terminal event, or Ctrl-C).
		sc.ReconnectStrategy = backoff.WithContext(backoff.WithMaxTries(newBackoff(), resumeTries), ctx)
		seqBefore := f.lastSeq
		err := sc.SubscribeRawWithContext(ctx, handler)
		switch {
		case res.event != "":
			return res
		case parent.Err() != nil:
			res.interrupted = true
			return res
		case err != nil:
			res.err = err
			return res
		}
		if f.lastSeq > seqBefore {
			tries = 0
			b.Reset()
		}
		if tries >= resumeTries {
			res.err = errors.New("the server kept closing the stream before its end")
			return res
		}
		d := b.NextBackOff()
		res.reconnects++
		fmt.Fprintf(f.c.stderr, "sluice: stream closed before its end; resuming after event %d in %s\n", f.lastSeq, d.Round(time.Millisecond))
		select {
		case <-time.After(d):
		case <-parent.Done():
			res.interrupted = true
			return res
		}
	}
}

// newBackoff is the pause between reconnections: 100ms doubling (with
// jitter) up to resumeMaxBackoff, with no overall time limit (the number
// of tries bounds it).
func newBackoff() *backoff.ExponentialBackOff {
	b := backoff.NewExponentialBackOff()
	b.InitialInterval, b.MaxInterval, b.MaxElapsedTime = 100*time.Millisecond, resumeMaxBackoff, 0
	b.Reset()
	return b
}

func (f *follower) onMeta(data []byte) {
	var m struct {
		ID        string `json:"id"`
		Model     string `json:"model"`
		Namespace string `json:"namespace"`
		Cache     struct {
			Status string  `json:"status"`
			Kind   string  `json:"kind"`
			Score  float64 `json:"score"`
		} `json:"cache"`
	}
	if json.Unmarshal(data, &m) != nil {
		return
	}
	f.cacheLine = strings.ToUpper(m.Cache.Status)
	if m.Cache.Kind != "" {
		f.cacheLine += " " + m.Cache.Kind
	}
	if m.Cache.Kind == "semantic" {
		f.cacheLine += fmt.Sprintf(" %.3f", m.Cache.Score)
	}
	if !f.quietMeta {
		fmt.Fprintf(f.c.stderr, "sluice: task %s · cache %s · model %s · namespace %s\n", m.ID, f.cacheLine, m.Model, m.Namespace)
	}
}

// printJSON prints one event as {"event", "id", "data"}.
func (f *follower) printJSON(typ string, ev *sse.Event) {
	line := struct {
		Event string          `json:"event"`
		ID    string          `json:"id,omitempty"`
		Data  json.RawMessage `json:"data"`
	}{Event: typ, Data: ev.Data}
	if typ == "delta" {
		line.ID = string(ev.ID)
	}
	if !json.Valid(ev.Data) {
		line.Data, _ = json.Marshal(string(ev.Data)) // a string cannot fail
	}
	b, _ := json.Marshal(line) // valid raw JSON inside: cannot fail
	b = append(b, '\n')
	_, _ = f.c.stdout.Write(b)
}

// report prints the summary line on stderr and returns the exit code.
func (f *follower) report(res followResult, id string) int {
	stderr := f.c.stderr
	// End the answer with a newline on a terminal or in a file, and when
	// stdout and stderr are the same file (2>&1), so that neither the
	// prompt nor the summary line below is glued to it; a pipe of its own
	// gets exactly the task's text.
	if f.wrote && !f.json && f.lastByte != '\n' && endWithNewline(f.c.stdout, stderr) {
		_, _ = io.WriteString(f.c.stdout, "\n")
	}
	if res.err != nil {
		return fail(stderr, "following task %s: %v", id, res.err)
	}
	var end struct {
		FinishReason string `json:"finish_reason"`
		Notice       string `json:"notice"`
		Code         string `json:"code"`
		Message      string `json:"message"`
		FirstTokenMs *int64 `json:"first_token_ms"`
		TotalMs      int64  `json:"total_ms"`
		Chunks       int    `json:"chunks"`
	}
	_ = json.Unmarshal(res.data, &end) // a field that is missing stays zero
	timing := ""
	if f.deltas {
		timing = fmt.Sprintf(" · ttft %dms", f.firstAt.Milliseconds())
		if end.FirstTokenMs != nil {
			timing += fmt.Sprintf(" (server %dms)", *end.FirstTokenMs)
		}
	}
	summary := fmt.Sprintf("%s · %s%s · total %dms · %d chunks · cache %s · task %s",
		res.event, end.FinishReason, timing, end.TotalMs, end.Chunks, f.cacheLine, id)
	switch res.event {
	case "done":
		fmt.Fprintln(stderr, "sluice:", summary)
		return exitOK
	case "partial":
		fmt.Fprintln(stderr, "sluice:", summary)
		fmt.Fprintln(stderr, "sluice: partial answer:", end.Notice)
		if f.isAsk {
			fmt.Fprintln(stderr, "sluice: ask with --continue N to continue cut answers up to N times")
		}
		return exitPartial
	}
	return fail(stderr, "task %s failed: %s: %s", id, end.Code, end.Message)
}

// endWithNewline reports whether the answer written to stdout needs a
// final newline: stdout is a terminal or a regular file, or the same file
// as stderr.
func endWithNewline(stdout, stderr io.Writer) bool {
	out, ok := stdout.(*os.File)
	if !ok {
		return false
	}
	st, err := out.Stat()
	if err != nil {
		return false
	}
	if st.Mode()&os.ModeCharDevice != 0 || st.Mode().IsRegular() {
		return true
	}
	if errf, ok := stderr.(*os.File); ok {
		if est, err := errf.Stat(); err == nil && os.SameFile(st, est) {
			return true
		}
	}
	return false
}

const cacheUsage = `usage: sluice cache lookup [flags] "question"
       sluice cache stats [flags]
       sluice cache eval --pairs FILE.jsonl [flags]   (sluice cache eval -h)

lookup explains the cache decision for a question without changing
anything (POST /v1/cache/lookup): decision, score against the threshold,
facets, the nearest candidates and the reason. stats prints the counters
per namespace (GET /v1/cache/stats). Both print text; --json prints the
server's JSON instead.

flags:
`

// cmdCache is "sluice cache".
func cmdCache(args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "eval" {
		return cmdCacheEval(args[1:], getenv, stdout, stderr) // cacheeval.go: in-process, no server
	}
	fs := newFlagSet("sluice cache", cacheUsage, stderr)
	server, apiKey := clientFlags(fs, getenv)
	ns := fs.String("namespace", "", "cache namespace (default \"default\")")
	model := fs.String("model", "", "model (default: the server's)")
	asJSON := fs.Bool("json", false, "print the server's JSON instead of text (lookup and stats)")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return usageExit(err)
	}
	if len(pos) == 0 {
		fs.Usage()
		return fail(stderr, "cache needs a subcommand: lookup or stats")
	}
	c, ctx, done, err := connect(*server, *apiKey, stdout, stderr)
	if err != nil {
		return fail(stderr, "%v", err)
	}
	defer done()

	switch pos[0] {
	case "lookup":
		if len(pos) != 2 || pos[1] == "" {
			fs.Usage()
			return fail(stderr, "cache lookup needs exactly one question (quote it)")
		}
		var raw json.RawMessage
		body := map[string]string{"q": pos[1], "namespace": *ns, "model": *model}
		if _, err := c.doJSON(ctx, http.MethodPost, "/v1/cache/lookup", body, &raw); err != nil {
			return fail(stderr, "%v", err)
		}
		if *asJSON {
			return printIndented(stdout, raw)
		}
		printExplanation(stdout, raw)
		return exitOK
	case "stats":
		var raw json.RawMessage
		if _, err := c.doJSON(ctx, http.MethodGet, "/v1/cache/stats", nil, &raw); err != nil {
			return fail(stderr, "%v", err)
		}
		if *asJSON {
			return printIndented(stdout, raw)
		}
		printStats(stdout, raw)
		return exitOK
	}
	fs.Usage()
	return fail(stderr, "unknown cache subcommand %q (lookup, stats)", pos[0])
}

func printIndented(w io.Writer, raw json.RawMessage) int {
	var out bytes.Buffer
	if err := json.Indent(&out, raw, "", "  "); err != nil {
		return exitFailed
	}
	out.WriteByte('\n')
	_, _ = w.Write(out.Bytes())
	return exitOK
}

// printExplanation prints a cache lookup explanation for people.
func printExplanation(w io.Writer, raw json.RawMessage) {
	var x cache.Explanation
	_ = json.Unmarshal(raw, &x) // missing fields print as zero values
	decision := strings.ToUpper(x.Decision)
	if x.Kind != "" {
		decision += " (" + x.Kind + ")"
	}
	cmp := "<"
	if x.Score >= x.Threshold {
		cmp = ">="
	}
	fmt.Fprintf(w, "decision:   %s\n", decision)
	fmt.Fprintf(w, "score:      %.3f %s threshold %.3f\n", x.Score, cmp, x.Threshold)
	fmt.Fprintf(w, "reason:     %s\n", x.Reason)
	if x.Stage != "" {
		fmt.Fprintf(w, "stage:      %s\n", x.Stage)
	}
	if v := x.Verify; v != nil {
		fmt.Fprintf(w, "verified:   %v %s (%q)\n", v.Passed, v.Reason, v.Question)
	}
	fmt.Fprintf(w, "namespace:  %s\n", x.Namespace)
	fmt.Fprintf(w, "question:   %q\n", x.Query.Normalized)
	fmt.Fprintf(w, "facets:     %s\n", facetList(x.Query.Facets))
	if len(x.Candidates) == 0 {
		fmt.Fprintln(w, "candidates: none")
		return
	}
	fmt.Fprintln(w, "candidates:")
	for i, c := range x.Candidates {
		match := "facets match"
		if !c.FacetsMatch {
			match = "facets differ"
		}
		fmt.Fprintf(w, "  %d. %.3f  %s %s  %q  (age %ds, ttl %ds, %d hits)\n",
			i+1, c.Score, match, facetList(c.Facets), c.Question, c.AgeS, c.TTLS, c.Hits)
	}
}

// printStats prints the cache counters (GET /v1/cache/stats) as a table.
func printStats(w io.Writer, raw json.RawMessage) {
	var st struct {
		Threshold  float64                `json:"threshold"`
		Namespaces []cache.NamespaceStats `json:"namespaces"`
	}
	_ = json.Unmarshal(raw, &st) // missing fields print as zero values
	fmt.Fprintf(w, "threshold %.3f · %d namespaces\n", st.Threshold, len(st.Namespaces))
	if len(st.Namespaces) == 0 {
		return
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "namespace\tmodel\tentries\tbytes\texact hits\tsemantic hits\tmisses\tbypasses\tevictions\t")
	for _, n := range st.Namespaces {
		fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%d\t\n", n.Name, n.Model, n.Entries, n.Bytes,
			n.HitsExact, n.HitsSemantic, n.Misses, n.Bypasses, n.Evictions)
	}
	_ = tw.Flush()
}

func facetList(f []string) string {
	if len(f) == 0 {
		return "[]"
	}
	return "[" + strings.Join(f, ", ") + "]"
}
