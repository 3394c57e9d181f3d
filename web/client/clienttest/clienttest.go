// Package clienttest holds test helpers for clients of sluice's event
// streams: a proxy that cuts a stream, to prove a client resumes with
// Last-Event-ID.
package clienttest

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
)

// CutProxy forwards to the sluice at Target and ends the first event
// stream (a path ending in /events) it relays after After delta events:
// abruptly, without the end of the chunked body, as a dying proxy or
// network would; or, with Clean, by ending the response, as a server
// dropping a slow reader does. Other requests and later streams pass
// through whole. It records the Last-Event-ID of every events request.
type CutProxy struct {
	Target string
	After  int
	Clean  bool

	mu      sync.Mutex
	lastIDs []string
	cut     bool
}

// ServeHTTP relays r to Target.
func (p *CutProxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	req, _ := http.NewRequestWithContext(r.Context(), r.Method, p.Target+r.URL.RequestURI(), r.Body)
	req.Header = r.Header.Clone()
	resp, err := http.DefaultTransport.RoundTrip(req)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadGateway)
		return
	}
	defer resp.Body.Close()
	for k, v := range resp.Header {
		w.Header()[k] = v
	}
	w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(w)
	if !strings.HasSuffix(r.URL.Path, "/events") {
		_, _ = io.Copy(w, resp.Body)
		return
	}
	p.mu.Lock()
	p.lastIDs = append(p.lastIDs, r.Header.Get("Last-Event-ID"))
	cutThis := !p.cut
	p.cut = true
	p.mu.Unlock()
	sc := bufio.NewScanner(resp.Body)
	sc.Split(splitEvents)
	deltas := 0
	for sc.Scan() {
		if _, err := fmt.Fprintf(w, "%s\n\n", sc.Bytes()); err != nil {
			return
		}
		_ = rc.Flush()
		if strings.Contains(sc.Text(), "event: delta") {
			deltas++
		}
		if cutThis && deltas == p.After {
			if p.Clean {
				return
			}
			panic(http.ErrAbortHandler) // drop the connection mid-stream
		}
	}
}

// LastEventIDs returns the Last-Event-ID of every events request so far
// ("" for none), in order.
func (p *CutProxy) LastEventIDs() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.lastIDs...)
}

// splitEvents splits an SSE body at blank lines.
func splitEvents(data []byte, atEOF bool) (int, []byte, error) {
	if i := bytes.Index(data, []byte("\n\n")); i >= 0 {
		return i + 2, data[:i], nil
	}
	if atEOF && len(data) > 0 {
		return len(data), data, nil
	}
	return 0, nil, nil
}
