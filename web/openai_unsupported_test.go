package web_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestChatRefusesWhatItCannotDo: a chat completions request asking for
// something sluice does not do (tools, function calls, structured output,
// log probabilities, images, audio, files, tool history, several choices)
// is a 400 invalid_request in OpenAI's shape whose param names the field
// and whose message says what is not supported, instead of a plain-text
// answer to part of the request (and a cache entry keyed by it). Nothing
// reaches the upstream.
func TestChatRefusesWhatItCannotDo(t *testing.T) {
	e := newEnv(t, envOpts{})
	const user = `{"role":"user","content":"what is in zone A?"}`
	for _, c := range []struct {
		name, body, param, want string
	}{
		{"tools", `"tools":[{"type":"function","function":{"name":"stock","parameters":{"type":"object"}}}]`, "tools", "tools is not supported by sluice"},
		{"tool_choice required", `"tool_choice":"required"`, "tool_choice", "tool_choice is not supported by sluice"},
		{"tool_choice a function", `"tool_choice":{"type":"function","function":{"name":"stock"}}`, "tool_choice", "tool_choice is not supported by sluice"},
		{"legacy functions", `"functions":[{"name":"stock"}]`, "functions", "functions is not supported by sluice"},
		{"legacy function_call", `"function_call":{"name":"stock"}`, "function_call", "function_call is not supported by sluice"},
		{"json_object", `"response_format":{"type":"json_object"}`, "response_format", `response_format "json_object" is not supported by sluice`},
		{"json_schema", `"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}}`, "response_format", `response_format "json_schema" is not supported by sluice`},
		{"logprobs", `"logprobs":true`, "logprobs", "logprobs is not supported by sluice"},
		{"top_logprobs", `"top_logprobs":3`, "top_logprobs", "top_logprobs is not supported by sluice"},
		{"n", `"n":2`, "n", "n must be 1"},
	} {
		var ans errorAnswer
		st, _ := e.doJSON(http.MethodPost, "/v1/chat/completions", `{"messages":[`+user+`],`+c.body+`}`, &ans)
		if st != http.StatusBadRequest || ans.Error.Code != "invalid_request" || ans.Error.Param == nil || *ans.Error.Param != c.param || !strings.Contains(ans.Error.Message, c.want) {
			t.Errorf("%s: %d %+v (param %v); want 400 invalid_request, param %q, message with %q", c.name, st, ans.Error, deref(ans.Error.Param), c.param, c.want)
		}
	}
	for _, c := range []struct {
		name, messages, want string
	}{
		{"an image part", `{"role":"user","content":[{"type":"text","text":"what is this?"},{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}}]}`, `content parts of type "image_url" are not supported by sluice`},
		{"an image part alone", `{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://example.com/a.png"}}]}`, `messages[0]: content parts of type "image_url" are not supported by sluice`},
		{"an audio part", `{"role":"user","content":[{"type":"text","text":"transcribe"},{"type":"input_audio","input_audio":{"data":"AAAA","format":"wav"}}]}`, `"input_audio"`},
		{"a file part", `{"role":"user","content":[{"type":"file","file":{"file_id":"file-1"}},{"type":"text","text":"summarise"}]}`, `"file"`},
		{"a tool result", `{"role":"user","content":"stock?"},{"role":"assistant","content":"checking"},{"role":"tool","tool_call_id":"c1","content":"42"},` + user, `messages[2]: role "tool" is not supported by sluice`},
		{"an assistant tool call", `{"role":"user","content":"stock?"},{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"stock","arguments":"{}"}}]},` + user, `messages[1].tool_calls is not supported by sluice`},
		{"a legacy function call", `{"role":"user","content":"stock?"},{"role":"assistant","content":null,"function_call":{"name":"stock","arguments":"{}"}},` + user, `messages[1].function_call is not supported by sluice`},
		{"a legacy function result", `{"role":"function","name":"stock","content":"42"},` + user, `messages[0]: role "function" is not supported by sluice`},
	} {
		var ans errorAnswer
		st, _ := e.doJSON(http.MethodPost, "/v1/chat/completions", `{"messages":[`+c.messages+`]}`, &ans)
		if st != http.StatusBadRequest || ans.Error.Code != "invalid_request" || ans.Error.Param == nil || *ans.Error.Param != "messages" || !strings.Contains(ans.Error.Message, c.want) {
			t.Errorf("%s: %d %+v (param %v); want 400 invalid_request, param \"messages\", message with %q", c.name, st, ans.Error, deref(ans.Error.Param), c.want)
		}
	}
	if n := e.Up.Requests(); n != 0 {
		t.Fatalf("%d upstream calls for refused requests", n)
	}
}

// TestChatAcceptsTheNoOpForms: the defaults SDKs and frameworks send for
// the refused features (an empty tool list, tool_choice "none" or "auto",
// a text response_format, logprobs false, parallel_tool_calls, nulls, an
// assistant message with an empty tool_calls) are answered as before.
func TestChatAcceptsTheNoOpForms(t *testing.T) {
	e := newEnv(t, envOpts{})
	for _, body := range []string{
		`"tools":[],"tool_choice":"none"`,
		`"tool_choice":"auto","parallel_tool_calls":true`,
		`"parallel_tool_calls":false`,
		`"tools":null,"tool_choice":null,"functions":null,"function_call":null,"response_format":null,"logprobs":null,"top_logprobs":null`,
		`"functions":[],"function_call":"none"`,
		`"response_format":{"type":"text"}`,
		`"logprobs":false,"top_logprobs":0`,
		`"messages":[{"role":"system","content":"be brief"},{"role":"user","content":"hi"},{"role":"assistant","content":"hello","tool_calls":[]},{"role":"user","content":[{"type":"text","text":"and now?"}]}]`,
	} {
		if !strings.Contains(body, `"messages"`) {
			body = `"messages":[{"role":"user","content":"hi"}],` + body
		}
		var out struct {
			Choices []struct{ Message struct{ Content string } }
		}
		if st, _ := e.doJSON(http.MethodPost, "/v1/chat/completions", `{`+body+`}`, &out); st != http.StatusOK || len(out.Choices) != 1 || out.Choices[0].Message.Content == "" {
			t.Errorf("%s: %d %+v", body, st, out)
		}
	}
}

func deref(p *string) string {
	if p == nil {
		return "<null>"
	}
	return *p
}
