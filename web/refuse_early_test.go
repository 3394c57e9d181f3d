package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// TestBadLastEventIDIsRefused: a Last-Event-ID (or lastEventId) that is
// no event id (letters, a sign, a fraction, more digits than an id has) is
// a 400 invalid_request on both resuming doors, never a replay from the
// start that would repeat what the client has; no task is started for it.
func TestBadLastEventIDIsRefused(t *testing.T) {
	e := newEnv(t, envOpts{})
	var created struct{ ID string }
	if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "resume me", "nocache": true}, &created); st != http.StatusAccepted {
		t.Fatalf("create: %d", st)
	}
	e.waitFinal(created.ID) // its own upstream call is behind it
	before := e.Up.Requests()
	for _, v := range []string{"abc", "-1", "2abc", "1.5", "+2", "99999999999999999999"} {
		for _, c := range []struct{ method, path string }{
			{http.MethodGet, "/v1/tasks/" + created.ID + "/events"},
			{http.MethodPost, "/v1/stream"},
		} {
			var body any
			if c.method == http.MethodPost {
				body = map[string]any{"prompt": "resume " + v, "nocache": true}
			}
			var ans errorAnswer
			st, _ := e.doJSON(c.method, c.path, body, &ans, "Last-Event-ID", v)
			if st != http.StatusBadRequest || ans.Error.Code != "invalid_request" || !strings.Contains(ans.Error.Message, "Last-Event-ID") {
				t.Errorf("%s %s with Last-Event-ID %q: %d %+v; want 400 invalid_request naming Last-Event-ID", c.method, c.path, v, st, ans.Error)
			}
		}
		var ans errorAnswer
		if st, _ := e.doJSON(http.MethodGet, "/v1/tasks/"+created.ID+"/events?lastEventId="+url.QueryEscape(v), nil, &ans); st != http.StatusBadRequest {
			t.Errorf("?lastEventId=%s: %d %+v; want 400", v, st, ans.Error)
		}
	}
	if n := e.Up.Requests(); n != before {
		t.Errorf("%d upstream calls for refused resumes", n-before)
	}
}

// TestBodyRefusedBeforeItArrives: a body refused for what its headers say
// (a declared length over the limit, a type other than JSON, a content
// encoding) is answered at once, without waiting for the body, and the
// connection closes after the answer.
func TestBodyRefusedBeforeItArrives(t *testing.T) {
	e := newEnv(t, envOpts{})
	addr := strings.TrimPrefix(e.URL, "http://")
	for _, c := range []struct {
		name, headers string
		status        int
		code          string
	}{
		{"declared too large", "Content-Type: application/json\r\nContent-Length: 2000000000\r\n", 413, "payload_too_large"},
		{"not JSON", "Content-Type: text/plain\r\nContent-Length: 100\r\n", 415, "unsupported_media_type"},
		{"compressed", "Content-Type: application/json\r\nContent-Encoding: gzip\r\nContent-Length: 100\r\n", 415, "unsupported_media_type"},
	} {
		t.Run(c.name, func(t *testing.T) {
			conn, err := net.Dial("tcp", addr)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			conn.SetDeadline(time.Now().Add(3 * time.Second)) // the body timeout is 10s: an answer within 3s did not wait for it
			// Headers only: the body never comes.
			fmt.Fprintf(conn, "POST /v1/tasks HTTP/1.1\r\nHost: x\r\n%s\r\n", c.headers)
			resp, err := http.ReadResponse(bufio.NewReader(conn), &http.Request{Method: http.MethodPost})
			if err != nil {
				t.Fatalf("no answer before the body: %v", err)
			}
			defer resp.Body.Close()
			var ans errorAnswer
			if err := json.NewDecoder(resp.Body).Decode(&ans); err != nil {
				t.Fatalf("%d, body not JSON: %v", resp.StatusCode, err)
			}
			if resp.StatusCode != c.status || !resp.Close {
				t.Errorf("%d (close %v) %+v; want %d and the connection closed", resp.StatusCode, resp.Close, ans.Error, c.status)
			}
		})
	}
}

// TestErrorsDoNotEchoHugeInput: an error about a number repeats at most a
// short prefix of it, whatever its length.
func TestErrorsDoNotEchoHugeInput(t *testing.T) {
	e := newEnv(t, envOpts{})
	huge := strings.Repeat("9", 200_000)
	for _, body := range []string{
		`{"prompt":"a","max_tokens":` + huge + `}`,
		`{"prompt":"a","temperature":` + huge + `}`,
		`{"prompt":"a","seed":` + huge + `.5}`,
	} {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		resp := e.do(ctx, http.MethodPost, "/v1/tasks", json.RawMessage(body))
		var ans errorAnswer
		err := json.NewDecoder(resp.Body).Decode(&ans)
		resp.Body.Close()
		cancel()
		if err != nil || resp.StatusCode != http.StatusBadRequest || len(ans.Error.Message) > 200 {
			t.Errorf("%.40s…: %d, message of %d bytes (%v); want a 400 with a short message", body, resp.StatusCode, len(ans.Error.Message), err)
		}
	}
}

// TestModelNameMustBePrintable: a model name with a control character is
// a 400 naming model on every door (and "param": "model" on the OpenAI
// doors); nothing is sent upstream. (Invalid UTF-8 in JSON is decoded as
// U+FFFD, a printable character.)
func TestModelNameMustBePrintable(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, model := range []string{"x\u0000y", "m\r\nX-Evil: 1", "tab\there", "del\u007f"} {
		m, _ := json.Marshal(model)
		for _, c := range []struct{ door, body string }{
			{"/v1/tasks", `{"prompt":"p","model":` + string(m) + `}`},
			{"/v1/stream", `{"prompt":"p","model":` + string(m) + `}`},
			{"/v1/chat/completions", `{"messages":[{"role":"user","content":"p"}],"model":` + string(m) + `}`},
		} {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			resp := e.do(ctx, http.MethodPost, c.door, json.RawMessage(c.body))
			var ans errorAnswer
			err := json.NewDecoder(resp.Body).Decode(&ans)
			resp.Body.Close()
			cancel()
			if err != nil || resp.StatusCode != http.StatusBadRequest || !strings.Contains(ans.Error.Message, "model") {
				t.Errorf("%s model %q: %d %+v (%v); want 400 naming model", c.door, model, resp.StatusCode, ans.Error, err)
			}
			if c.door == "/v1/chat/completions" && (ans.Error.Param == nil || *ans.Error.Param != "model") {
				t.Errorf("%s model %q: param %v, want model", c.door, model, ans.Error.Param)
			}
		}
	}
	if n := e.Up.Requests(); n != 0 {
		t.Errorf("%d upstream calls for refused model names", n)
	}
}

// TestRefusalKeepsTheConnection: a request refused because the budget is
// full (503 overloaded, on every door that starts work at once) leaves
// its connection open: the next request goes on the same connection,
// without a new TCP connection per refusal (issue 16: under overload
// most answers are refusals, and a connect each would be most of their
// cost).
func TestRefusalKeepsTheConnection(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: 1}})
	e.Up.SetScript(upstreamtest.Script{StallAfterHeaders: true})
	ctx, cancel := context.WithCancel(context.Background())
	hold := e.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": "hold the slot", "nocache": true, "detach": false})
	defer func() {
		cancel()
		hold.Body.Close()
		e.waitIdle()
	}()
	if hold.StatusCode != http.StatusOK {
		t.Fatalf("holder: %d", hold.StatusCode)
	}
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.URL, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(10 * time.Second))
	br := bufio.NewReader(conn)
	for i, c := range []struct{ path, body string }{
		{"/v1/stream", `{"prompt":"a miss","nocache":true}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"a miss"}],"stream":true,"sluice":{"nocache":true}}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"a miss"}],"sluice":{"nocache":true}}`},
		{"/v1/responses", `{"input":"a miss","stream":true,"sluice":{"nocache":true}}`},
		{"/v1/stream", `{"prompt":"again","nocache":true}`},
	} {
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", c.path, len(c.body), c.body)
		resp, err := http.ReadResponse(br, &http.Request{Method: http.MethodPost})
		if err != nil {
			t.Fatalf("request %d (%s) on the connection: %v", i, c.path, err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusServiceUnavailable || !strings.Contains(string(body), "overloaded") {
			t.Fatalf("%s: %d %s (%v); want 503 overloaded", c.path, resp.StatusCode, body, err)
		}
		if resp.Close {
			t.Errorf("%s: the refusal closes the connection (Connection: close)", c.path)
		}
	}
}

// TestOversizedBodyAnswerReachesAGoClient: a Go client that sends a body
// over the limit (2 MiB against 1 MiB) reads the 413 every time, on every
// door, instead of a write error: the server answers at once and then
// reads and drops the rest of the body before it closes the connection.
// Closing at once (net/http's own way) failed most of these requests with
// "connection reset by peer" or "broken pipe" while the client was still
// writing.
func TestOversizedBodyAnswerReachesAGoClient(t *testing.T) {
	e := newEnv(t, envOpts{})
	big := `{"prompt":"` + strings.Repeat("x", 2<<20) + `"}`
	chat := `{"messages":[{"role":"user","content":"` + strings.Repeat("x", 2<<20) + `"}]}`
	const rounds = 15
	failed := 0
	for _, c := range []struct{ path, body string }{
		{"/v1/stream", big}, {"/v1/tasks", big}, {"/v1/chat/completions", chat},
	} {
		for i := range rounds {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+c.path, strings.NewReader(c.body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := e.HTTP.Do(req)
			if err != nil {
				cancel()
				failed++
				t.Logf("%s #%d: %v", c.path, i, err)
				continue
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			cancel()
			if resp.StatusCode != http.StatusRequestEntityTooLarge || !strings.Contains(string(b), "payload_too_large") {
				t.Errorf("%s #%d: %d %.200s; want 413 payload_too_large", c.path, i, resp.StatusCode, b)
			}
		}
	}
	if failed > 0 {
		t.Errorf("%d of %d oversized requests ended in a transport error instead of the 413", failed, 3*rounds)
	}
}
