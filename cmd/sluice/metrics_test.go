package main

import (
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"
)

// get returns the status and body of GET url with the given bearer key
// ("" for none).
func get(t *testing.T, url, key string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	if key != "" {
		req.Header.Set("Authorization", "Bearer "+key)
	}
	c := &http.Client{Timeout: 10 * time.Second}
	defer c.CloseIdleConnections()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestMetricsKey: with SLUICE_METRICS_KEY, /metrics answers 401 without
// it, also to a tenant's API key (before: open to anyone), and tenants'
// namespace names are not in the scrape by default.
func TestMetricsKey(t *testing.T) {
	base := startSluice(t, "-metrics-key", "scrape-secret", "-api-keys", "tenant-key=acme")
	// A cache lookup in a named namespace.
	req, _ := http.NewRequest(http.MethodGet, base+"/v1/cache/lookup?q=hello&namespace=acme-secret-ns", nil)
	req.Header.Set("Authorization", "Bearer tenant-key")
	if resp, err := http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	} else {
		resp.Body.Close()
	}
	for _, key := range []string{"", "tenant-key", "wrong"} {
		if st, body := get(t, base+"/metrics", key); st != http.StatusUnauthorized || !strings.Contains(body, `"unauthorized"`) {
			t.Fatalf("/metrics with key %q: %d %s; want 401", key, st, body)
		}
	}
	st, body := get(t, base+"/metrics", "scrape-secret")
	if st != http.StatusOK || !strings.Contains(body, "sluice_cache_namespaces") {
		t.Fatalf("/metrics with the metrics key: %d", st)
	}
	if strings.Contains(body, "acme-secret-ns") {
		t.Fatal("a tenant's namespace name is in the scrape")
	}
}

// TestMetricsAddr: with SLUICE_METRICS_ADDR, /metrics is served there
// and not on the main address.
func TestMetricsAddr(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // a free port, for sluice to take
	base := startSluice(t, "-metrics-addr", addr)
	if st, _ := get(t, base+"/metrics", ""); st != http.StatusNotFound {
		t.Fatalf("/metrics on the main address: %d; want 404", st)
	}
	if st, body := get(t, "http://"+addr+"/metrics", ""); st != http.StatusOK || !strings.Contains(body, "sluice_") {
		t.Fatalf("/metrics on the metrics address: %d", st)
	}
	if st, _ := get(t, "http://"+addr+"/v1/budget", ""); st != http.StatusNotFound {
		t.Fatalf("/v1/budget on the metrics address: %d; want 404", st)
	}
}
