// Package client is a Go client of sluice's HTTP API: it sends requests,
// turns the contract's error bodies into typed errors (*APIError), decodes
// the answers into views of the server's types, and follows a task's event
// stream, resuming a dropped connection with Last-Event-ID.
//
// Every event stream is read with one SSE library,
// github.com/r3labs/sse/v2: its Client follows GET streams (with
// reconnection and Last-Event-ID), and its EventStreamReader frames the
// streams that answer a POST (POST /v1/stream, POST /v1/chat/completions),
// which its Client cannot request (it only sends GET).
package client

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one sluice server. It is safe for concurrent use.
type Client struct {
	server string // base URL, without a trailing slash
	apiKey string
	http   *http.Client
}

// New returns a client of the sluice at server (an http or https base
// URL). apiKey, when not empty, is sent as Authorization: Bearer. hc is
// the HTTP client to use; nil gives one with bounded dials and response
// headers, fit for a few requests at a time.
func New(server, apiKey string, hc *http.Client) (*Client, error) {
	u, err := url.Parse(server)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%q is not an http(s) URL", server)
	}
	if hc == nil {
		hc = &http.Client{Transport: &http.Transport{
			Proxy:                 http.ProxyFromEnvironment,
			DialContext:           (&net.Dialer{Timeout: 5 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			TLSHandshakeTimeout:   10 * time.Second,
			ResponseHeaderTimeout: 60 * time.Second,
			MaxIdleConnsPerHost:   4,
		}}
	}
	return &Client{server: strings.TrimRight(server, "/"), apiKey: apiKey, http: hc}, nil
}

// Server is the base URL, without a trailing slash.
func (c *Client) Server() string { return c.server }

// CloseIdleConnections closes the idle connections of the HTTP client.
func (c *Client) CloseIdleConnections() { c.http.CloseIdleConnections() }

// APIError is an error answered by the server: a non-2xx status with the
// contract's body {"error": {"code", "message"}} and, for refusals, a
// Retry-After header.
type APIError struct {
	Status     int
	Code       string // the contract's error code; "" when the body was not the contract's
	Message    string
	RetryAfter time.Duration // 0 when the server sent none
}

func (e *APIError) Error() string {
	s := e.Code + ": " + e.Message
	if e.Code == "" {
		s = fmt.Sprintf("HTTP %d: %s", e.Status, e.Message)
	}
	if e.RetryAfter > 0 {
		s += " (retry after " + strconv.Itoa(int(e.RetryAfter/time.Second)) + "s)"
	}
	return s
}

// ErrorBody is the contract's error JSON.
type ErrorBody struct {
	Error struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// readAPIError turns a non-2xx response into an *APIError. It reads (a
// bounded part of) the body but does not close it.
func readAPIError(resp *http.Response) *APIError {
	raw, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	e := &APIError{Status: resp.StatusCode}
	if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s > 0 {
		e.RetryAfter = time.Duration(s) * time.Second
	}
	var b ErrorBody
	if json.Unmarshal(raw, &b) == nil && b.Error.Message != "" {
		e.Code, e.Message = b.Error.Code, b.Error.Message
	} else {
		e.Message = strings.TrimSpace(string(raw))
		if e.Message == "" {
			e.Message = http.StatusText(resp.StatusCode)
		}
	}
	return e
}

// Send makes one request to path (relative to the server, with its query)
// with an optional JSON body (a []byte is sent as it is) and returns the
// response when its status is 2xx; the caller closes its body. Any other
// status is returned as an *APIError. accept, when not empty, is the
// Accept header.
func (c *Client) Send(ctx context.Context, method, path string, body any, accept string) (*http.Response, error) {
	var r io.Reader
	if body != nil {
		b, ok := body.([]byte)
		if !ok {
			var err error
			if b, err = json.Marshal(body); err != nil {
				return nil, err
			}
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.server+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	c.auth(req.Header)
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		return nil, readAPIError(resp)
	}
	return resp, nil
}

// Do sends a request with an optional JSON body and decodes a 2xx JSON
// answer into out (unless out is nil). It returns the response headers,
// also with an *APIError.
func (c *Client) Do(ctx context.Context, method, path string, body, out any) (http.Header, error) {
	resp, err := c.Send(ctx, method, path, body, "")
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if out != nil {
		if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
			return resp.Header, fmt.Errorf("%s %s: bad JSON answer: %w", method, path, err)
		}
	}
	return resp.Header, nil
}

func (c *Client) auth(h http.Header) {
	if c.apiKey != "" {
		h.Set("Authorization", "Bearer "+c.apiKey)
	}
}

// TaskPath is the path of a task.
func TaskPath(id string) string { return "/v1/tasks/" + url.PathEscape(id) }

// CreateTask starts a task (POST /v1/tasks). The headers hold its cache
// decision (X-Cache, X-Cache-Kind, X-Cache-Score).
func (c *Client) CreateTask(ctx context.Context, req TaskRequest) (Created, http.Header, error) {
	var out Created
	h, err := c.Do(ctx, http.MethodPost, "/v1/tasks", req, &out)
	return out, h, err
}

// Task polls a task (GET /v1/tasks/{id}).
func (c *Client) Task(ctx context.Context, id string) (Task, error) {
	var out Task
	_, err := c.Do(ctx, http.MethodGet, TaskPath(id), nil, &out)
	return out, err
}

// Cancel cancels a queued or running task (DELETE /v1/tasks/{id}) and
// returns its view after the cancellation.
func (c *Client) Cancel(ctx context.Context, id string) (Task, error) {
	var out Task
	_, err := c.Do(ctx, http.MethodDelete, TaskPath(id), nil, &out)
	return out, err
}

// Budget reads the in-flight budget (GET /v1/budget).
func (c *Client) Budget(ctx context.Context) (Budget, error) {
	var out Budget
	_, err := c.Do(ctx, http.MethodGet, "/v1/budget", nil, &out)
	return out, err
}
