package stream_test

import (
	"bytes"
	"encoding/json"
	"strconv"
	"testing"

	sse "github.com/tmaxmax/go-sse"

	"github.com/sluice-dev/sluice/stream"
)

var jsonStringSeeds = []string{
	"", "plain", " token", "quote \" backslash \\ slash /", "\b\f\n\r\t\x00\x01\x1f\x7f",
	"<script>&amp;</script>", "é 世界 😀", "\u2028 \u2029 \u2027", "bad \xff\xfe \xc3", "\xed\xa0\x80 surrogate bytes",
	"\"", "\\", "\ufffd",
}

// TestAppendJSONStringMatchesEncodingJSON: the framings' string encoder
// writes what json.Marshal writes.
func TestAppendJSONStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range jsonStringSeeds {
		checkJSONString(t, s)
	}
}

// FuzzAppendJSONString compares the string encoder with json.Marshal.
func FuzzAppendJSONString(f *testing.F) {
	for _, s := range jsonStringSeeds {
		f.Add(s)
	}
	f.Fuzz(checkJSONString)
}

func checkJSONString(t *testing.T, s string) {
	t.Helper()
	want, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	if got := stream.AppendJSONString([]byte("x"), s); string(got) != "x"+string(want) {
		t.Fatalf("%q: got %s; json.Marshal: %s", s, got, want)
	}
}

// TestTaskEventsDeltaMatchesGoSSE: the hand-written delta event is the
// bytes go-sse writes for the message of json.Marshal's {"text"}, which
// the task API wrote before.
func TestTaskEventsDeltaMatchesGoSSE(t *testing.T) {
	for i, s := range append(jsonStringSeeds, "multi\nline\r\ntext", "id: 7\nevent: x\n\ndata: y") {
		checkTaskDelta(t, i*1000+1, s)
	}
}

// FuzzTaskEventsDelta compares the delta event with go-sse's encoding.
func FuzzTaskEventsDelta(f *testing.F) {
	for i, s := range jsonStringSeeds {
		f.Add(i, s)
	}
	f.Fuzz(func(t *testing.T, seq int, s string) { checkTaskDelta(t, max(seq, 1), s) })
}

func checkTaskDelta(t *testing.T, seq int, s string) {
	t.Helper()
	data, _ := json.Marshal(struct {
		Text string `json:"text"`
	}{s})
	msg := sse.Message{Type: sse.Type("delta"), ID: sse.ID(strconv.Itoa(seq))}
	msg.AppendData(string(data))
	var want bytes.Buffer
	_, _ = msg.WriteTo(&want)
	var got bytes.Buffer
	got.WriteString("before")
	stream.TaskEvents{}.Delta(&got, seq, s)
	if got.String() != "before"+want.String() {
		t.Fatalf("%d %q:\n got %q\nwant %q", seq, s, got.String(), want.String())
	}
}
