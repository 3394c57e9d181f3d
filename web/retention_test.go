package web_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// Issue 10, item 2: a task dropped to keep the retention limits is
// unknown: GET and its events answer the contract's 404 not_found, while
// the newest finished tasks are still readable.
func TestEvictedTaskIs404(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{MaxRetainedTasks: 3}})
	var ids []string
	for i := range 5 {
		var created struct{ ID string }
		if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "q" + strings.Repeat("?", i), "nocache": true}, &created); st != http.StatusAccepted {
			t.Fatalf("POST /v1/tasks: %d", st)
		}
		e.waitFinal(created.ID)
		ids = append(ids, created.ID)
	}
	for i, id := range ids {
		var body struct {
			Error struct{ Code, Message string }
		}
		st, _ := e.doJSON(http.MethodGet, "/v1/tasks/"+id, nil, &body)
		switch {
		case i < 2 && (st != http.StatusNotFound || body.Error.Code != "not_found"):
			t.Fatalf("evicted task %d: %d %+v, want 404 not_found", i, st, body)
		case i >= 2 && st != http.StatusOK:
			t.Fatalf("kept task %d: %d", i, st)
		}
	}
	var body struct{ Error struct{ Code string } }
	if st, _ := e.doJSON(http.MethodGet, "/v1/tasks/"+ids[0]+"/events", nil, &body); st != http.StatusNotFound || body.Error.Code != "not_found" {
		t.Fatalf("events of an evicted task: %d %+v", st, body)
	}
}

// An answer longer than SLUICE_MAX_ANSWER_BYTES reaches the client cut,
// as a partial event with its notice, and the upstream is not read to
// its end.
func TestMaxAnswerBytesOverHTTP(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{MaxAnswerBytes: 50}})
	chunks := make([]string, 100)
	for i := range chunks {
		chunks[i] = "0123456789"
	}
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks})
	_, r := e.stream(map[string]any{"prompt": "long"})
	var end struct {
		FinishReason string `json:"finish_reason"`
		Notice, Code string
	}
	if err := json.Unmarshal([]byte(r.Terminal.Data), &end); err != nil {
		t.Fatal(err)
	}
	if r.Terminal.Type != "partial" || end.FinishReason != "length" || end.Code != "answer_too_large" || end.Notice == "" {
		t.Fatalf("terminal %+v", r.Terminal)
	}
	if r.Text != strings.Repeat("0123456789", 5) {
		t.Fatalf("text %q, want the first 50 bytes", r.Text)
	}
	e.waitIdle()
}
