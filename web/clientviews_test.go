package web_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/sluice-dev/sluice/orchestrator"
	"github.com/sluice-dev/sluice/stream/upstream/upstreamtest"
	"github.com/sluice-dev/sluice/web/client"
)

// decodeStrict decodes raw into v and fails on a field v does not have:
// a view that misses a field of the server's JSON is out of date.
func decodeStrict(t *testing.T, what string, raw []byte, v any) {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		t.Errorf("%s: the client's view does not decode the server's JSON: %v\n%s", what, err, raw)
	}
}

// TestClientViewsDecodeTheServersJSON: the views package web/client
// declares itself (the answers web builds in place) have every field of
// the server's JSON, with the server's values.
func TestClientViewsDecodeTheServersJSON(t *testing.T) {
	e := newEnv(t, envOpts{Orch: orchestrator.Config{RetryBackoff: time.Millisecond, BreakerMinCalls: -1}})
	e.Up.SetScript(upstreamtest.Script{Chunks: []string{"one", " two"}})

	var raw json.RawMessage
	st, hdr := e.doJSON(http.MethodPost, "/v1/tasks", map[string]any{"prompt": "views", "namespace": "views"}, &raw)
	var created client.Created
	decodeStrict(t, "POST /v1/tasks", raw, &created)
	if st != http.StatusAccepted || created.ID == "" || created.ID != hdr.Get("X-Task-Id") || created.URL != hdr.Get("Location") ||
		created.EventsURL != created.URL+"/events" || created.Cache.Status != "miss" || created.Cache.Namespace == "" {
		t.Errorf("created %d %+v", st, created)
	}
	e.waitFinal(created.ID)

	// The terminal events: done, and error.
	_, r := e.stream(map[string]any{"prompt": "views", "namespace": "views"})
	var end client.End
	decodeStrict(t, "done event", []byte(r.Terminal.Data), &end)
	if r.Terminal.Type != "done" || end.FinishReason != "stop" || end.Chunks != 2 || end.FirstTokenMs == nil {
		t.Errorf("done %+v", end)
	}
	e.Up.SetScript(upstreamtest.Script{Status: 500})
	_, r = e.stream(map[string]any{"prompt": "fail", "nocache": true})
	end = client.End{}
	decodeStrict(t, "error event", []byte(r.Terminal.Data), &end)
	if r.Terminal.Type != "error" || end.Code == "" || end.Message == "" {
		t.Errorf("error %+v", end)
	}

	raw = nil
	e.doJSON(http.MethodGet, "/v1/budget", nil, &raw)
	var b client.Budget
	decodeStrict(t, "GET /v1/budget", raw, &b)
	acq, rel := b.Totals()
	if len(b.Upstreams) != 1 || b.Upstreams[0].Name == "" || b.Upstreams[0].Breaker == "" || b.Limit != b.Upstreams[0].Limit || acq == 0 || acq != rel {
		t.Errorf("budget %+v", b)
	}

	raw = nil
	e.doJSON(http.MethodGet, "/v1/cache/stats", nil, &raw)
	var cs client.CacheStats
	decodeStrict(t, "GET /v1/cache/stats", raw, &cs)
	views := 0
	for _, ns := range cs.Namespaces {
		if ns.Name == "views" && ns.Entries == 1 && ns.HitsExact == 1 {
			views++
		}
	}
	if cs.Threshold <= 0 || views != 1 {
		t.Errorf("cache stats %+v", cs)
	}

	raw = nil
	e.doJSON(http.MethodGet, "/v1/tasks/00000000-0000-0000-0000-000000000000", nil, &raw)
	var eb client.ErrorBody
	decodeStrict(t, "error body", raw, &eb)
	if eb.Error.Code != "not_found" || eb.Error.Message == "" {
		t.Errorf("error body %+v", eb)
	}
}
