package client

import (
	"context"
	"net/http"
)

// CacheLookup explains the cache decision for a question without changing
// anything (POST /v1/cache/lookup). Empty namespace and model are the
// server's defaults. (sluice cache prints the server's JSON as it is, so
// only the tests decode it.)
func (c *Client) CacheLookup(ctx context.Context, q, namespace, model string) (Explanation, error) {
	var out Explanation
	_, err := c.Do(ctx, http.MethodPost, "/v1/cache/lookup", CacheLookupRequest{Q: q, Namespace: namespace, Model: model}, &out)
	return out, err
}

// OpenStream sends a request whose answer is an event stream (POST
// /v1/stream, POST /v1/chat/completions with "stream": true, GET an
// events_url) and returns the response (2xx) for NewEventReader; any other
// status is an *APIError. Nothing is resumed: see Follow for that.
func (c *Client) OpenStream(ctx context.Context, method, path string, body any) (*http.Response, error) {
	return c.Send(ctx, method, path, body, "text/event-stream")
}

// CacheStats reads the cache counters per namespace (GET /v1/cache/stats).
// (sluice cache stats prints the server's JSON as it is.)
func (c *Client) CacheStats(ctx context.Context) (CacheStats, error) {
	var out CacheStats
	_, err := c.Do(ctx, http.MethodGet, "/v1/cache/stats", nil, &out)
	return out, err
}
