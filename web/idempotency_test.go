package web_test

import (
	"context"
	"io"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	sse "github.com/tmaxmax/go-sse"

	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

// Issue 10, item 9: an SSE client that reconnects by sending the same
// POST again, with the same Idempotency-Key and Last-Event-ID: 3, is
// attached to the first request's task: it gets the deltas from 4 on (none
// twice, none lost) and the upstream sees one call. On the old code the
// repeat started a second task: a second upstream call and every delta
// again from 1.
func TestIdempotentStreamResumesAfterLastEventID(t *testing.T) {
	e := newEnv(t, envOpts{})
	chunks := make([]string, 10)
	for i := range chunks {
		chunks[i] = "c" + strconv.Itoa(i+1) + " "
	}
	e.Up.SetScript(upstreamtest.Script{Chunks: chunks, Gap: 30 * time.Millisecond})
	body := map[string]any{"prompt": "retry me", "nocache": true}
	const key = "0b6c1e7e-5a1e-4d0e-9a53-1f3c1f7f9a11"

	// The first POST: read three deltas, then the connection drops.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	first := e.do(ctx, http.MethodPost, "/v1/stream", body, "Idempotency-Key", key)
	if first.StatusCode != http.StatusOK {
		t.Fatalf("first POST: %d", first.StatusCode)
	}
	id := first.Header.Get("X-Task-Id")
	var got strings.Builder
	deltas := 0
	for ev, err := range sse.Read(first.Body, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if ev.Type == "delta" {
			got.WriteString(deltaText(t, ev.Data))
			if deltas++; deltas == 3 {
				if ev.LastEventID != "3" {
					t.Fatalf("third delta has id %q", ev.LastEventID)
				}
				break
			}
		}
	}
	first.Body.Close()

	// The repeat: same key, same body, Last-Event-ID: 3.
	resp := e.do(ctx, http.MethodPost, "/v1/stream", body, "Idempotency-Key", key, "Last-Event-ID", "3")
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Task-Id") != id || resp.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat: %d, task %q (first %q), replayed %q", resp.StatusCode, resp.Header.Get("X-Task-Id"), id, resp.Header.Get("Idempotent-Replayed"))
	}
	r := summarise(t, readEvents(t, resp.Body))
	if r.Terminal.Type != "done" {
		t.Fatalf("repeat ended with %+v", r.Terminal)
	}
	if firstID := r.Events[1].ID; firstID != "4" {
		t.Fatalf("the repeat's first delta has id %q, want 4 (after Last-Event-ID 3)", firstID)
	}
	got.WriteString(r.Text)
	if want := strings.Join(chunks, ""); got.String() != want {
		t.Fatalf("deltas before and after the reconnect: %q, want %q (none twice, none lost)", got.String(), want)
	}
	if n := e.Up.Requests(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want 1", n)
	}
}

func deltaText(t *testing.T, data string) string {
	t.Helper()
	var d struct{ Text string }
	if err := jsonUnmarshal(data, &d); err != nil {
		t.Fatal(err)
	}
	return d.Text
}

// The same key with a different body is a 409 idempotency_conflict,
// with nothing started; the key's own request still attaches.
func TestIdempotencyKeyConflict(t *testing.T) {
	e := newEnv(t, envOpts{})
	const key = "k-1"
	var created struct{ ID string }
	st, hdr := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "one", "nocache": true}, &created, "Idempotency-Key", key)
	if st != http.StatusAccepted || hdr.Get("Idempotent-Replayed") != "" {
		t.Fatalf("first POST: %d %v", st, hdr)
	}
	e.waitFinal(created.ID)
	var body struct {
		Error struct{ Code, Message string }
	}
	for _, path := range []string{"/v1/tasks", "/v1/stream"} {
		if st, _ := e.doJSON(http.MethodPost, path, map[string]any{"prompt": "two", "nocache": true}, &body, "Idempotency-Key", key); st != http.StatusConflict || body.Error.Code != "idempotency_conflict" || body.Error.Message == "" {
			t.Fatalf("%s with the key of another request: %d %+v, want 409 idempotency_conflict", path, st, body)
		}
	}
	var again struct{ ID, Status string }
	st, hdr = e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "one", "nocache": true}, &again, "Idempotency-Key", key)
	if st != http.StatusAccepted || again.ID != created.ID || again.Status != "done" || hdr.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("repeat of the first: %d %+v %v", st, again, hdr)
	}
	if n := e.Up.Requests(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want 1", n)
	}
	for _, bad := range []string{strings.Repeat("k", 256), "two words", "ключ"} {
		if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "one"}, &body, "Idempotency-Key", bad); st != http.StatusBadRequest || body.Error.Code != "invalid_request" {
			t.Fatalf("Idempotency-Key %q: %d %+v, want 400", bad, st, body)
		}
	}
}

// Keys are per tenant: tenant b's request with tenant a's key is its own
// task, never a's (nor a conflict with it).
func TestIdempotencyKeysArePerTenant(t *testing.T) {
	e := newEnv(t, envOpts{Web: web.Config{APIKeys: map[string]string{"key-a": "a", "key-b": "b"}}})
	post := func(apiKey, prompt string) (int, string) {
		var created struct{ ID string }
		st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": prompt, "nocache": true}, &created,
			"Authorization", "Bearer "+apiKey, "Idempotency-Key", "shared-key")
		return st, created.ID
	}
	stA, idA := post("key-a", "same")
	stB, idB := post("key-b", "same")
	stC, _ := post("key-b", "different") // b's key is b's: a conflict with b's request only
	if stA != http.StatusAccepted || stB != http.StatusAccepted || idA == idB {
		t.Fatalf("a: %d %s, b: %d %s; want two tasks", stA, idA, stB, idB)
	}
	if stC != http.StatusConflict {
		t.Fatalf("b reusing its key for another request: %d, want 409", stC)
	}
	e.waitFinal(idA, "Authorization", "Bearer key-a")
	e.waitFinal(idB, "Authorization", "Bearer key-b")
	if n := e.Up.Requests(); n != 2 {
		t.Fatalf("the upstream saw %d calls, want 2", n)
	}
}

// The OpenAI door: a repeated chat completion with the same key gets the
// same completion from the same task, without a second upstream call.
func TestIdempotentChatCompletion(t *testing.T) {
	e := newEnv(t, envOpts{})
	body := `{"messages":[{"role":"user","content":"hello?"}],"sluice":{"nocache":true}}`
	var ids []string
	var texts []string
	for range 2 {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		resp := e.do(ctx, http.MethodPost, "/v1/chat/completions", body, "Idempotency-Key", "chat-1")
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		cancel()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("chat: %d %s", resp.StatusCode, raw)
		}
		ids = append(ids, resp.Header.Get("X-Task-Id"))
		texts = append(texts, string(raw))
	}
	if ids[0] != ids[1] || ids[0] == "" {
		t.Fatalf("task ids %v, want the same", ids)
	}
	if texts[0] != texts[1] {
		t.Fatalf("answers differ:\n%s\n%s", texts[0], texts[1])
	}
	if n := e.Up.Requests(); n != 1 {
		t.Fatalf("the upstream saw %d calls, want 1", n)
	}
}

// TestAttachedRepeatDoesNotCancel: detach:false cancels only the task a
// request started; a repeat with the same key that attached to another
// request's task, and leaves early, does not cancel it under its owner.
func TestAttachedRepeatDoesNotCancel(t *testing.T) {
	e := newEnv(t, envOpts{})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"a ", "b ", "c ", "d ", "e "}, Gap: 40 * time.Millisecond})
	const key = "5f0e2b1c-7d3a-4e6b-9c8d-2a1b3c4d5e6f"
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	owner := e.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": "shared", "nocache": true}, "Idempotency-Key", key)
	defer owner.Body.Close()
	if owner.StatusCode != http.StatusOK {
		t.Fatalf("owner: %d", owner.StatusCode)
	}
	repeat := e.do(ctx, http.MethodPost, "/v1/stream", map[string]any{"prompt": "shared", "nocache": true, "detach": false}, "Idempotency-Key", key)
	if repeat.Header.Get("Idempotent-Replayed") != "true" {
		t.Fatalf("the repeat did not attach: %d", repeat.StatusCode)
	}
	for ev, err := range sse.Read(repeat.Body, nil) {
		if err != nil || ev.Type == "delta" {
			break // one delta, then the repeat's client leaves
		}
	}
	repeat.Body.Close()
	r := summarise(t, readEvents(t, owner.Body))
	if r.Terminal.Type != "done" || r.Text != "a b c d e " {
		t.Fatalf("the owner's stream after the repeat left: %q then %+v", r.Text, r.Terminal)
	}
}
