package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
)

// A "detach": false client that drops after its first delta and POSTs the
// same request again at once (a reconnect) gets a whole answer: it never
// joins the task its own leaving is cancelling. (If the reconnect comes
// before the server saw the first connection go, it shares the task,
// which the leaving then no longer cancels.)
func TestCoalesceReconnectAfterLeavingNeverCancelled(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: 8}})
	e.Up.SetScript(upstreamtest.Script{Chunks: chunksN(10), Gap: 10 * time.Millisecond})
	for i := range 20 {
		body := map[string]any{"prompt": fmt.Sprintf("reconnect %d", i), "detach": false}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp := e.do(ctx, http.MethodPost, "/v1/stream", body)
		br := bufio.NewReader(resp.Body)
		for {
			l, err := br.ReadString('\n')
			if err != nil || strings.HasPrefix(l, "event: delta") {
				break
			}
		}
		first := resp.Header.Get("X-Task-Id")
		cancel() // the client leaves
		resp.Body.Close()
		c := readCoalesced(t, e.do(context.Background(), http.MethodPost, "/v1/stream", body))
		if c.status != http.StatusOK || c.result.Terminal.Type != "done" || c.result.Text != strings.Join(chunksN(10), "") {
			t.Fatalf("%d: the reconnect (task %s, first %s, joined %v) ended %d %s %s", i, c.taskID, first, c.joined, c.status, c.result.Terminal.Type, c.result.Terminal.Data)
		}
		if c.taskID != first {
			if v := e.waitFinal(first); v.Status != orchestrator.StatusCancelled {
				t.Fatalf("%d: the left task ended %s, want cancelled", i, v.Status)
			}
		}
	}
}

// The priority class is part of what makes two requests identical: a chat
// stream (interactive by default) with the prompt of a batch task still
// queued does not join it and wait in the batch queue; it waits for an
// interactive slot on its own (here: refused when none frees).
func TestCoalesceInteractiveDoesNotJoinQueuedBatchTask(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{Budget: 1, AcquireTimeout: 50 * time.Millisecond, MaxQueueWait: 5 * time.Second}})
	hold, err := e.Orch.Gates()[0].Acquire(context.Background(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var queued struct{ ID, Status string }
	if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "queued apart"}, &queued); st != http.StatusAccepted || queued.Status != "queued" {
		t.Fatalf("async: %d %+v", st, queued)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := readCoalesced(t, e.do(ctx, http.MethodPost, "/v1/chat/completions", map[string]any{"stream": true,
		"messages": []map[string]string{{"role": "user", "content": "queued apart"}}}))
	var body struct{ Error struct{ Code string } }
	_ = json.Unmarshal(c.body, &body)
	if c.joined || c.taskID == queued.ID || c.status != http.StatusServiceUnavailable || body.Error.Code != "overloaded" {
		t.Fatalf("chat request: task %q (batch %s) joined %v, %d %s; want its own wait, refused overloaded", c.taskID, queued.ID, c.joined, c.status, c.body)
	}
	hold.Release()
	if v := e.waitFinal(queued.ID); v.Status != orchestrator.StatusDone || v.Joined != 0 {
		t.Fatalf("batch task: %s, joined %d", v.Status, v.Joined)
	}
}
