package main

// The terminal client: sluice ask, sluice task, sluice cache. It speaks
// the public HTTP API of a running sluice through package web/client,
// which follows event streams with github.com/r3labs/sse/v2 (an SSE
// implementation independent of the server's), with reconnection and
// Last-Event-ID resume; this file holds the flags and the printing.
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
	"net/http"
	"os"
	"os/signal"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/sluice-dev/sluice/cache"
	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream"
	"github.com/sluice-dev/sluice/web/client"
)

// Exit codes of the client commands.
const (
	exitOK      = 0
	exitFailed  = 1
	exitPartial = 2
)

// conn is a client command's link to one sluice: the API client and
// where the command writes.
type conn struct {
	api    *client.Client
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
func connect(server, apiKey string, stdout, stderr io.Writer) (*conn, context.Context, func(), error) {
	api, err := client.New(server, apiKey, nil)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("--server %q is not an http(s) URL", server)
	}
	ctx, stop := interruptible()
	return &conn{api: api, stdout: stdout, stderr: stderr}, ctx, func() { stop(); api.CloseIdleConnections() }, nil
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

	body := client.TaskRequest{Prompt: pos[0], NoCache: *nocache, Namespace: *ns, Model: *model, MaxTokens: max(*maxTokens, 0)}
	var (
		prev  *follower
		sofar strings.Builder // the answer over every round
		ids   []string
	)
	for round := 0; ; round++ {
		start := time.Now()
		created, h, err := c.api.CreateTask(ctx, body)
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
			_, _ = c.api.Cancel(cctx, created.ID)
			return fail(stderr, "interrupted; task %s cancelled", created.ID)
		}
		sofar.WriteString(f.text.String())
		if res.event != stream.EventPartial || round >= *cont || f.text.Len() == 0 {
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
func continueBody(first client.TaskRequest, question, sofar string) client.TaskRequest {
	b := first
	b.Prompt = ""
	b.Messages = []client.Message{
		{Role: "user", Content: question},
		{Role: "assistant", Content: sofar},
		{Role: "user", Content: continueTurn},
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
		// The server's JSON as it is (every field, in its order).
		var v json.RawMessage
		if _, err := c.api.Do(ctx, http.MethodGet, client.TaskPath(id), nil, &v); err != nil {
			return fail(stderr, "%v", err)
		}
		var out bytes.Buffer
		_ = json.Indent(&out, v, "", "  ") // valid: it was decoded
		out.WriteByte('\n')
		_, _ = stdout.Write(out.Bytes())
		var st client.Task
		_ = json.Unmarshal(v, &st)
		switch st.Status {
		case orchestrator.StatusPartial:
			return exitPartial
		case orchestrator.StatusFailed, orchestrator.StatusCancelled:
			return exitFailed
		}
		return exitOK
	}
	// One plain request first: an unreachable server or an unknown task
	// fails at once, where the stream follower would retry (it resumes a
	// stream that was going, not one that never started).
	if _, err := c.api.Task(ctx, id); err != nil {
		return fail(stderr, "%v", err)
	}
	f := &follower{c: c, json: *asJSON, start: time.Now(), after: *after}
	res := f.follow(ctx, client.TaskPath(id)+"/events")
	if res.interrupted {
		return fail(stderr, "detached; task %s goes on", id)
	}
	return f.report(res, id)
}

// follower prints one task's event stream, which client.Follow reads.
// Its callbacks run on the goroutine that calls follow, so its fields
// need no lock.
type follower struct {
	c         *conn
	json      bool      // print raw events instead of the text
	start     time.Time // when the request was made, for the TTFT
	after     int       // resume point of the first connection
	quietMeta bool      // the caller already printed the task line
	isAsk     bool      // started by sluice ask (which can --continue)

	firstAt   time.Duration
	wrote     bool            // any answer text was written to stdout (this task or the one it continues)
	deltas    bool            // this task's stream had a delta
	text      strings.Builder // this task's answer text
	lastByte  byte            // the last byte of text written
	cacheLine string          // from meta, for the summary
}

// followResult is how a stream ended.
type followResult struct {
	event       stream.Event    // done, partial, error; "" if none came
	data        json.RawMessage // the terminal event's data
	interrupted bool            // the caller's context ended first
	err         error           // the stream could not be followed
}

// follow follows the task stream at path (relative to the server) and
// writes it until its terminal event.
func (f *follower) follow(ctx context.Context, path string) followResult {
	r, err := f.c.api.Follow(ctx, path, client.FollowOptions{
		After:   f.after,
		OnEvent: f.onEvent,
		OnResume: func(after int, wait time.Duration, err error) {
			if err == nil {
				fmt.Fprintf(f.c.stderr, "sluice: stream closed before its end; resuming after event %d in %s\n", after, wait.Round(time.Millisecond))
				return
			}
			fmt.Fprintf(f.c.stderr, "sluice: stream interrupted (%v); resuming after event %d in %s\n", err, after, wait.Round(time.Millisecond))
		},
	})
	switch {
	case err == nil:
		return followResult{event: r.End.Type, data: r.End.Data}
	case ctx.Err() != nil:
		return followResult{interrupted: true}
	}
	return followResult{err: err}
}

func (f *follower) onEvent(ev client.Event) {
	switch ev.Type {
	case stream.EventMeta:
		f.onMeta(ev.Data)
	case stream.EventDelta:
		var d client.Delta
		if err := json.Unmarshal(ev.Data, &d); err != nil {
			return
		}
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
	}
	if f.json {
		f.printJSON(ev)
	}
}

func (f *follower) onMeta(data []byte) {
	var m client.Meta
	if json.Unmarshal(data, &m) != nil {
		return
	}
	f.cacheLine = strings.ToUpper(string(m.Cache.Status))
	if m.Cache.Kind != "" {
		f.cacheLine += " " + string(m.Cache.Kind)
	}
	if m.Cache.Kind == cache.KindSemantic {
		f.cacheLine += fmt.Sprintf(" %.3f", m.Cache.Score)
	}
	if !f.quietMeta {
		fmt.Fprintf(f.c.stderr, "sluice: task %s · cache %s · model %s · namespace %s\n", m.ID, f.cacheLine, m.Model, m.Namespace)
	}
}

// printJSON prints one event as {"event", "id", "data"}.
func (f *follower) printJSON(ev client.Event) {
	line := struct {
		Event string          `json:"event"`
		ID    string          `json:"id,omitempty"`
		Data  json.RawMessage `json:"data"`
	}{Event: string(ev.Type), Data: ev.Data}
	if ev.Type == stream.EventDelta {
		line.ID = ev.ID
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
	var end client.End
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
	case stream.EventDone:
		fmt.Fprintln(stderr, "sluice:", summary)
		return exitOK
	case stream.EventPartial:
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
		body := client.CacheLookupRequest{Q: pos[1], Namespace: *ns, Model: *model}
		if _, err := c.api.Do(ctx, http.MethodPost, "/v1/cache/lookup", body, &raw); err != nil {
			return fail(stderr, "%v", err)
		}
		if *asJSON {
			return printIndented(stdout, raw)
		}
		printExplanation(stdout, raw)
		return exitOK
	case "stats":
		var raw json.RawMessage
		if _, err := c.api.Do(ctx, http.MethodGet, "/v1/cache/stats", nil, &raw); err != nil {
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
	var x client.Explanation
	_ = json.Unmarshal(raw, &x) // missing fields print as zero values
	decision := strings.ToUpper(string(x.Decision))
	if x.Kind != "" {
		decision += " (" + string(x.Kind) + ")"
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
	var st client.CacheStats
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
