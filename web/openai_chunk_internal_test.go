package web

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/sluice-dev/sluice/orchestrator"
)

// The chat.completion.chunk object as the door encoded it with
// json.Marshal before chunk was written by hand: the reference chunk is
// held to.
type (
	refChunk struct {
		ID      string           `json:"id"`
		Object  string           `json:"object"`
		Created int64            `json:"created"`
		Model   string           `json:"model"`
		Choices []refChunkChoice `json:"choices"`
		Usage   *chatUsage       `json:"usage,omitempty"`
	}
	refChunkChoice struct {
		Index        int       `json:"index"`
		Delta        chatDelta `json:"delta"`
		Logprobs     *struct{} `json:"logprobs"`
		FinishReason *string   `json:"finish_reason"`
	}
)

func refChunkEvent(id string, created int64, model string, delta chatDelta, finish *string, usage *chatUsage) string {
	ch := refChunk{ID: id, Object: "chat.completion.chunk", Created: created, Model: model,
		Choices: []refChunkChoice{{Delta: delta, FinishReason: finish}}, Usage: usage}
	if usage != nil {
		ch.Choices = []refChunkChoice{}
	}
	data, _ := json.Marshal(ch)
	return "data: " + string(data) + "\n\n"
}

// TestChunkMatchesEncodingJSON: every kind of chunk the door sends (role,
// content, keep-alive, finish, usage) is json.Marshal's encoding of the
// chunk object.
func TestChunkMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{"", "plain", "<&> \"q\" \\ \n\t\x00 é 😀 \u2028 \xff"} {
		checkChunk(t, "chatcmpl-"+s, 1700000000, "model "+s, s, "stop", 3)
	}
}

// FuzzChunk compares the hand-written chunk encoder with json.Marshal.
func FuzzChunk(f *testing.F) {
	f.Add("chatcmpl-1", int64(1700000000), "gpt", " token", "length", 7)
	f.Add("", int64(-1), "<m>", "\xff\u2029", "", 0)
	f.Fuzz(checkChunk)
}

func checkChunk(t *testing.T, id string, created int64, model, content, finish string, n int) {
	t.Helper()
	c := &completion{id: id, created: created, t: &orchestrator.Task{Model: model}}
	u := chatUsage{PromptTokens: n, CompletionTokens: n * 2, TotalTokens: n * 3}
	cases := []struct {
		delta  chatDelta
		finish *string
		usage  *chatUsage
	}{
		{chatDelta{Role: "assistant", Content: &content}, nil, nil},
		{chatDelta{Content: &content}, nil, nil},
		{chatDelta{Role: content}, nil, nil},
		{chatDelta{}, &finish, nil},
		{chatDelta{}, nil, &u},
	}
	for i, k := range cases {
		var b bytes.Buffer
		b.WriteString("before")
		c.chunk(&b, k.delta, k.finish, k.usage)
		if want := "before" + refChunkEvent(id, created, model, k.delta, k.finish, k.usage); b.String() != want {
			t.Fatalf("case %d:\n got %q\nwant %q", i, b.String(), want)
		}
	}
}
