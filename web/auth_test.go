package web_test

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web"
)

func TestAuthTenantsAreSeparate(t *testing.T) {
	e := newEnv(t, envOpts{Web: web.Config{APIKeys: map[string]string{"key-a": "a", "key-b": "b"}}})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"secret ", "answer"}})
	authA := []string{"Authorization", "Bearer key-a"}
	authB := []string{"Authorization", "Bearer key-b"}

	for _, hdr := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "key-a"}} {
		var body struct{ Error struct{ Code string } }
		if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "x"}, &body, hdr...); st != 401 || body.Error.Code != "unauthorized" {
			t.Fatalf("%v: %d %+v", hdr, st, body)
		}
	}
	var created struct {
		ID        string
		EventsURL string `json:"events_url"`
	}
	if st, _ := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "tenant a asks", "namespace": "shared"}, &created, authA...); st != 202 {
		t.Fatalf("POST as a: %d", st)
	}
	e.waitFinalAs(created.ID, authA)
	// Tenant b sees neither the task nor a's cache entries.
	if st, _ := e.doJSON(http.MethodGet, "/v1/tasks/"+created.ID, nil, nil, authB...); st != 404 {
		t.Fatalf("b read a's task: %d", st)
	}
	if st, _ := e.doJSON(http.MethodDelete, "/v1/tasks/"+created.ID, nil, nil, authB...); st != 404 {
		t.Fatalf("b cancelled a's task: %d", st)
	}
	if st, _ := e.doJSON(http.MethodGet, "/v1/tasks/"+created.ID+"/events", nil, nil, authB...); st != 404 {
		t.Fatalf("b streamed a's task: %d", st)
	}
	var ex struct{ Decision string }
	e.doJSON(http.MethodGet, "/v1/cache/lookup?namespace=shared&q=tenant+a+asks", nil, &ex, authB...)
	if ex.Decision != "miss" {
		t.Fatalf("b's lookup of a's question: %s", ex.Decision)
	}
	e.doJSON(http.MethodGet, "/v1/cache/lookup?namespace=shared&q=tenant+a+asks", nil, &ex, authA...)
	if ex.Decision != "hit" {
		t.Fatalf("a's own lookup: %s", ex.Decision)
	}
	// EventSource cannot send headers: events_url carries a token for
	// that one task, and only that one.
	if !strings.Contains(created.EventsURL, "?token=") {
		t.Fatalf("events_url without a token: %s", created.EventsURL)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp := e.do(ctx, http.MethodGet, created.EventsURL, nil)
	r := summarise(t, readEvents(t, resp.Body))
	resp.Body.Close()
	if r.Text != "secret answer" {
		t.Fatalf("token stream: %q", r.Text)
	}
	var other struct{ ID string }
	e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "b asks"}, &other, authB...)
	tok := created.EventsURL[strings.Index(created.EventsURL, "?"):]
	if st, _ := e.doJSON(http.MethodGet, "/v1/tasks/"+other.ID+"/events"+tok, nil, nil); st != 404 {
		t.Fatalf("a's token opened b's task: %d", st)
	}
	e.waitFinalAs(other.ID, authB)
}

func (e *env) waitFinalAs(id string, auth []string) {
	e.t.Helper()
	task := e.Orch.GetAny(id)
	select {
	case <-task.Done():
	case <-time.After(30 * time.Second):
		e.t.Fatalf("task %s not final", id)
	}
	if st, _ := e.doJSON(http.MethodGet, "/v1/tasks/"+id, nil, nil, auth...); st != 200 {
		e.t.Fatalf("GET own task: %d", st)
	}
}
