package main

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// TestSluiceBehindSluice points one sluice's upstream at another sluice's
// OpenAI-compatible door: real HTTP between two servers, the OpenAI
// client on one side and the door on the other. The front must relay the
// back's (deterministic) answer exactly.
func TestSluiceBehindSluice(t *testing.T) {
	back := startSluice(t, "-sim-ttft", "5ms", "-sim-gap", "1ms")
	front := startSluice(t, "-upstream", back+"/v1", "-sim-ttft", "5ms")
	ask := func(base, prompt string) map[string]any {
		t.Helper()
		c := &http.Client{Timeout: 30 * time.Second}
		defer c.CloseIdleConnections()
		resp, err := c.Post(base+"/v1/tasks", "application/json", strings.NewReader(`{"prompt":"`+prompt+`","nocache":true}`))
		if err != nil {
			t.Fatal(err)
		}
		var created struct{ ID string }
		json.NewDecoder(resp.Body).Decode(&created)
		resp.Body.Close()
		deadline := time.Now().Add(30 * time.Second)
		for {
			resp, err := c.Get(base + "/v1/tasks/" + created.ID)
			if err != nil {
				t.Fatal(err)
			}
			var v map[string]any
			json.NewDecoder(resp.Body).Decode(&v)
			resp.Body.Close()
			if s := v["status"]; s != "queued" && s != "running" {
				return v
			}
			if time.Now().After(deadline) {
				t.Fatalf("task not final: %v", v)
			}
			time.Sleep(20 * time.Millisecond) // polling is what this client does
		}
	}
	direct := ask(back, "chained question about zone B")
	relayed := ask(front, "chained question about zone B")
	if direct["status"] != "done" || relayed["status"] != "done" || relayed["text"] != direct["text"] || relayed["text"] == "" {
		t.Fatalf("relayed %v\ndirect %v", relayed, direct)
	}
	if relayed["upstream"] == "sim" {
		t.Fatal("the front did not use the back as its upstream")
	}
}
