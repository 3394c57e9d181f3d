package web_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// TestBadInput sends every kind of bad request and checks the contract's
// JSON error and status, while a task streams undisturbed beside them.
func TestBadInput(t *testing.T) {
	e := newEnv(t, envOpts{Web: web.Config{MaxBody: 4096}})
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks(30, "bystander"), Gap: 5 * time.Millisecond})
	var bystander struct{ ID string }
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "keep going", "nocache": true}, &bystander)

	big := `{"prompt":"` + strings.Repeat("a", 5000) + `"}`
	cases := []struct {
		name, method, path, ctype, body string
		status                          int
		code, mentions                  string
	}{
		{"malformed JSON", "POST", "/v1/stream", "application/json", `{"prompt": "x"`, 400, "invalid_request", "JSON"},
		{"not an object", "POST", "/v1/tasks", "application/json", `[1,2]`, 400, "invalid_request", ""},
		{"two values", "POST", "/v1/tasks", "application/json", `{"prompt":"a"} {"prompt":"b"}`, 400, "invalid_request", "exactly one"},
		{"empty body", "POST", "/v1/tasks", "application/json", ``, 400, "invalid_request", "empty"},
		{"missing prompt", "POST", "/v1/stream", "application/json", `{"namespace":"a"}`, 400, "invalid_request", "prompt or messages"},
		{"empty prompt", "POST", "/v1/stream", "application/json", `{"prompt":"   "}`, 400, "invalid_request", "empty"},
		{"both prompt and messages", "POST", "/v1/tasks", "application/json", `{"prompt":"a","messages":[{"role":"user","content":"b"}]}`, 400, "invalid_request", "exactly one"},
		{"prompt of wrong type", "POST", "/v1/tasks", "application/json", `{"prompt":42}`, 400, "invalid_request", `"prompt"`},
		{"nocache of wrong type", "POST", "/v1/tasks", "application/json", `{"prompt":"a","nocache":"yes"}`, 400, "invalid_request", `"nocache"`},
		{"max_tokens negative", "POST", "/v1/tasks", "application/json", `{"prompt":"a","max_tokens":-1}`, 400, "invalid_request", "max_tokens"},
		{"max_tokens fractional", "POST", "/v1/tasks", "application/json", `{"prompt":"a","max_tokens":1.5}`, 400, "invalid_request", "max_tokens"},
		{"deadline zero", "POST", "/v1/tasks", "application/json", `{"prompt":"a","deadline_ms":0}`, 400, "invalid_request", "deadline_ms"},
		{"bad namespace", "POST", "/v1/stream", "application/json", `{"prompt":"a","namespace":"no spaces"}`, 400, "invalid_request", "namespace"},
		{"long namespace", "POST", "/v1/stream", "application/json", `{"prompt":"a","namespace":"` + strings.Repeat("n", 65) + `"}`, 400, "invalid_request", "namespace"},
		{"messages empty", "POST", "/v1/tasks", "application/json", `{"messages":[]}`, 400, "invalid_request", "messages"},
		{"messages bad role", "POST", "/v1/tasks", "application/json", `{"messages":[{"role":"wizard","content":"a"}]}`, 400, "invalid_request", "role"},
		{"messages without user", "POST", "/v1/tasks", "application/json", `{"messages":[{"role":"system","content":"a"}]}`, 400, "invalid_request", "user"},
		{"messages bad content", "POST", "/v1/tasks", "application/json", `{"messages":[{"role":"user","content":{"x":1}}]}`, 400, "invalid_request", "content"},
		{"messages image part", "POST", "/v1/tasks", "application/json", `{"messages":[{"role":"user","content":[{"type":"text","text":"what is it?"},{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}]}`, 400, "invalid_request", `content parts of type "image_url" are not supported`},
		{"body too large", "POST", "/v1/stream", "application/json", big, 413, "payload_too_large", "limit"},
		{"not JSON", "POST", "/v1/stream", "text/plain", `prompt=hi`, 415, "unsupported_media_type", "JSON"},
		{"form", "POST", "/v1/tasks", "application/x-www-form-urlencoded", `prompt=hi`, 415, "unsupported_media_type", "JSON"},
		{"unknown task", "GET", "/v1/tasks/6f1c8a34-0b9e-4b55-8a8f-3c1d3e0b9a11", "", ``, 404, "not_found", ""},
		{"malformed task id", "GET", "/v1/tasks/not-a-uuid", "", ``, 404, "not_found", ""},
		{"malformed id events", "GET", "/v1/tasks/%00%ff/events", "", ``, 404, "not_found", ""},
		{"delete unknown", "DELETE", "/v1/tasks/6f1c8a34-0b9e-4b55-8a8f-3c1d3e0b9a11", "", ``, 404, "not_found", ""},
		{"unknown path", "GET", "/v1/nothing", "", ``, 404, "not_found", ""},
		{"unknown page asset", "GET", "/static/nothing.js", "", ``, 404, "not_found", ""},
		{"wrong method", "PUT", "/v1/stream", "application/json", `{}`, 405, "method_not_allowed", ""},
		{"lookup without q", "GET", "/v1/cache/lookup", "", ``, 400, "invalid_request", "q"},
		{"lookup bad namespace", "GET", "/v1/cache/lookup?q=a&namespace=%20", "", ``, 400, "invalid_request", "namespace"},
		{"lookup bad JSON", "POST", "/v1/cache/lookup", "application/json", `{"q":`, 400, "invalid_request", ""},
		{"purge bad namespace", "DELETE", "/v1/cache/namespaces/a%20b", "", ``, 400, "invalid_request", "namespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, tc.method, e.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			resp, err := e.HTTP.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			raw, _ := io.ReadAll(resp.Body)
			var body struct {
				Error struct{ Code, Message string }
			}
			if err := jsonUnmarshal(string(raw), &body); err != nil || resp.Header.Get("Content-Type") != "application/json" {
				t.Fatalf("not a JSON error: %d %q %q", resp.StatusCode, resp.Header.Get("Content-Type"), raw)
			}
			if resp.StatusCode != tc.status || body.Error.Code != tc.code || body.Error.Message == "" {
				t.Fatalf("got %d %s, want %d %s", resp.StatusCode, raw, tc.status, tc.code)
			}
			if tc.mentions != "" && !strings.Contains(body.Error.Message, tc.mentions) {
				t.Fatalf("message %q does not mention %q", body.Error.Message, tc.mentions)
			}
		})
	}
	v := e.waitFinal(bystander.ID)
	if v.Status != "done" || v.Text != strings.Join(chunks(30, "bystander"), "") {
		t.Fatalf("the bystander task was disturbed: %+v", v)
	}
}

// FuzzTaskRequest throws arbitrary bodies at POST /v1/tasks: never a 500,
// always JSON.
func FuzzTaskRequest(f *testing.F) {
	for _, s := range []string{`{"prompt":"a"}`, `{"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`, `{"prompt":"a","deadline_ms":1e20}`, `{`, `null`, `{"prompt":null}`} {
		f.Add(s)
	}
	e := newEnv(f, envOpts{})
	e.logTo(nil)() // outside a body, the log goes nowhere: f.Log would panic in there
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"ok"}})
	f.Fuzz(func(t *testing.T, body string) {
		defer e.logTo(t)()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/v1/tasks", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		resp, err := e.HTTP.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		raw, _ := io.ReadAll(resp.Body)
		if resp.StatusCode >= 500 && resp.StatusCode != 503 {
			t.Fatalf("%d for %q: %s", resp.StatusCode, body, raw)
		}
		if resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("not JSON for %q: %s", body, raw)
		}
	})
}
