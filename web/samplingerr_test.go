package web_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"
)

// errorAnswer is the error body of every door (the OpenAI doors add type
// and param).
type errorAnswer struct {
	Error struct {
		Code    string
		Message string
		Param   *string
	}
}

// TestSamplingErrorsNameTheFieldAsSent: a sampling field of the wrong type
// or out of range is a 400 invalid_request whose message names the field
// as the client wrote it (not the server's Go struct) and says what is
// wrong (1e400 is out of range, not "a number, not a number"); on the
// OpenAI doors "param" is the field.
func TestSamplingErrorsNameTheFieldAsSent(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, c := range []struct {
		field, value, want string
	}{
		{"temperature", `"hot"`, `field "temperature" must be a number, not a string`},
		{"top_p", `[1]`, `field "top_p" must be a number, not an array`},
		{"temperature", `1e400`, `field "temperature" is out of range (1e400)`},
		{"presence_penalty", `-1e999`, `field "presence_penalty" is out of range (-1e999)`},
		{"seed", `1.5`, `field "seed" must be a whole number, not a number (1.5)`},
		{"seed", `99999999999999999999`, `field "seed" is out of range (99999999999999999999)`},
		{"temperature", `2.5`, `temperature must be between 0 and 2`},
		{"top_p", `-0.1`, `top_p must be between 0 and 1`},
		{"stop", `5`, `stop must be a string or an array of strings`},
		{"max_tokens", `"many"`, `field "max_tokens" must be a whole number, not a string`},
	} {
		for _, door := range []string{"/v1/tasks", "/v1/stream", "/v1/chat/completions", "/v1/responses"} {
			if door == "/v1/responses" && c.field != "temperature" && c.field != "top_p" {
				continue // the Responses API has only these two
			}
			body := fmt.Sprintf(`{"prompt":"p",%q:%s}`, c.field, c.value)
			switch door {
			case "/v1/chat/completions":
				body = fmt.Sprintf(`{"messages":[{"role":"user","content":"p"}],%q:%s}`, c.field, c.value)
			case "/v1/responses":
				body = fmt.Sprintf(`{"input":"p",%q:%s}`, c.field, c.value)
			}
			var ans errorAnswer
			st, _ := e.doJSON(http.MethodPost, door, body, &ans)
			if st != http.StatusBadRequest || ans.Error.Code != "invalid_request" || !strings.Contains(ans.Error.Message, c.want) {
				t.Errorf("%s %s=%s: %d %+v; want 400 invalid_request %q", door, c.field, c.value, st, ans.Error, c.want)
			}
			if strings.Contains(ans.Error.Message, "samplingIn") || strings.Contains(ans.Error.Message, "not a number (") && c.field != "seed" {
				t.Errorf("%s %s=%s: message %q names the Go struct or says a number is not a number", door, c.field, c.value, ans.Error.Message)
			}
			openAIDoor := door == "/v1/chat/completions" || door == "/v1/responses"
			if openAIDoor && (ans.Error.Param == nil || *ans.Error.Param != c.field) {
				t.Errorf("%s %s=%s: param %v, want %q", door, c.field, c.value, ans.Error.Param, c.field)
			}
		}
	}
	if n := e.Up.Requests(); n != 0 {
		t.Fatalf("%d upstream calls for bad requests", n)
	}
}

// TestEmptyPriorityIsNoChoice: "priority": "" is no choice (like an
// absent or null priority), on every door, so the door's default class
// applies; any other value that is no class is a 400 naming the field.
func TestEmptyPriorityIsNoChoice(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, c := range []struct{ door, body string }{
		{"/v1/tasks", `{"prompt":"p","priority":""}`},
		{"/v1/tasks", `{"prompt":"p","sluice":{"priority":""}}`},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"p"}],"sluice":{"priority":""}}`},
		{"/v1/responses", `{"input":"p","sluice":{"priority":""}}`},
	} {
		st, _ := e.doJSON(http.MethodPost, c.door, c.body, nil)
		if st != http.StatusOK && st != http.StatusAccepted {
			t.Errorf("%s %s: %d, want it served", c.door, c.body, st)
		}
	}
	e.waitIdle()
	for _, c := range []struct{ door, body, param string }{
		{"/v1/tasks", `{"prompt":"p","priority":"urgent"}`, ""},
		{"/v1/tasks", `{"prompt":"p","priority":" "}`, ""},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"p"}],"sluice":{"priority":"Batch!"}}`, "sluice.priority"},
		{"/v1/responses", `{"input":"p","sluice":{"priority":"low"}}`, "sluice.priority"},
	} {
		var ans errorAnswer
		st, _ := e.doJSON(http.MethodPost, c.door, c.body, &ans)
		if st != http.StatusBadRequest || !strings.Contains(ans.Error.Message, `priority must be "interactive" or "batch"`) {
			t.Errorf("%s %s: %d %+v; want 400", c.door, c.body, st, ans.Error)
		}
		if c.param != "" && (ans.Error.Param == nil || *ans.Error.Param != c.param) {
			t.Errorf("%s %s: param %v, want %q", c.door, c.body, ans.Error.Param, c.param)
		}
	}
}

// TestTypeErrorOfAWholeNumberSaysANumber: a whole number where a string
// belongs is "not a number", never "not a number ()" (encoding/json gives
// no literal for such a target), on every field that takes a string.
func TestTypeErrorOfAWholeNumberSaysANumber(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, c := range []struct{ door, body, field string }{
		{"/v1/tasks", `{"prompt":5}`, "prompt"},
		{"/v1/stream", `{"prompt":"p","model":7}`, "model"},
		{"/v1/tasks", `{"prompt":"p","priority":1}`, "priority"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":"p"}],"model":42}`, "model"},
	} {
		var ans errorAnswer
		st, _ := e.doJSON(http.MethodPost, c.door, c.body, &ans)
		want := fmt.Sprintf("field %q must be a string, not a number", c.field)
		if st != http.StatusBadRequest || ans.Error.Code != "invalid_request" || !strings.HasSuffix(ans.Error.Message, want) {
			t.Errorf("%s %s: %d %+v; want 400 invalid_request ending %q", c.door, c.body, st, ans.Error, want)
		}
	}
}
