package redistest

import (
	"context"
	"io"
	"net"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"
)

// Proxy is a TCP proxy in front of the test Redis that a test can cut
// (connections closed, new ones refused), stall (connections accepted,
// nothing forwarded, no answer) and restore, to play a Redis outage
// without touching the Redis that others share.
type Proxy struct {
	ln     net.Listener
	target string
	wg     sync.WaitGroup // the accept loop and the copy goroutines

	mu    sync.Mutex // protects mode and conns
	mode  proxyMode
	conns map[net.Conn]struct{} // client and Redis sides of open connections, and held ones
}

type proxyMode int

const (
	proxyUp proxyMode = iota
	proxyCut
	proxyStalled
)

// NewProxy starts a proxy to the Redis of url (a redis:// URL) and returns
// it with the URL to use instead (same database). It is closed when t
// ends. It skips t for a Redis Cluster URL: a cluster client learns every
// node's address from the cluster and connects to each directly, so one
// proxy cannot cut it; outage tests run on the single server.
func NewProxy(t testing.TB, redisURL string) (*Proxy, string) {
	t.Helper()
	if strings.Contains(strings.SplitN(redisURL, "://", 2)[0], "+cluster") {
		t.Skip("redistest: a TCP proxy cannot cut a Redis Cluster (its client reaches every node directly): this outage test runs on the single server")
	}
	u, err := url.Parse(redisURL)
	if err != nil {
		t.Fatalf("redis URL %q: %v", redisURL, err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &Proxy{ln: ln, target: u.Host, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	proxied := *u
	proxied.Host = ln.Addr().String()
	return p, proxied.String()
}

// Cut closes every connection and refuses new ones (closes them at once),
// as a Redis that was killed.
func (p *Proxy) Cut() { p.set(proxyCut) }

// Stall closes every connection and holds new ones open without an
// answer, as a Redis that hangs.
func (p *Proxy) Stall() { p.set(proxyStalled) }

// Restore forwards new connections to Redis again.
func (p *Proxy) Restore() { p.set(proxyUp) }

func (p *Proxy) set(m proxyMode) {
	p.mu.Lock()
	p.mode = m
	if m != proxyUp {
		for c := range p.conns {
			c.Close()
		}
		clear(p.conns)
	}
	p.mu.Unlock()
}

func (p *Proxy) close() {
	p.ln.Close()
	p.set(proxyCut)
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		mode := p.mode
		if mode == proxyStalled {
			p.conns[c] = struct{}{} // held: closed by the next mode change
		}
		p.mu.Unlock()
		switch mode {
		case proxyCut:
			c.Close()
		case proxyUp:
			p.wg.Add(1)
			go p.forward(c)
		}
	}
}

// forward joins c to a new connection to Redis until either side ends or
// the mode changes.
func (p *Proxy) forward(c net.Conn) {
	defer p.wg.Done()
	r, err := net.DialTimeout("tcp", p.target, time.Second)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	if p.mode != proxyUp {
		p.mu.Unlock()
		c.Close()
		r.Close()
		return
	}
	p.conns[c], p.conns[r] = struct{}{}, struct{}{}
	p.mu.Unlock()
	done := make(chan struct{}, 2)
	pipe := func(dst, src net.Conn) {
		_, _ = io.Copy(dst, src)
		done <- struct{}{}
	}
	go pipe(r, c)
	go pipe(c, r)
	<-done
	c.Close()
	r.Close()
	<-done
	p.mu.Lock()
	delete(p.conns, c)
	delete(p.conns, r)
	p.mu.Unlock()
}

// Empty deletes every key under prefix in the Redis of url (one server
// or a cluster), as a Redis restarted without persistence would have lost
// them (the shared Redis is never flushed).
func Empty(t testing.TB, url, prefix string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := deletePrefix(ctx, Universal(t, url), prefix); err != nil {
		t.Fatal(err)
	}
}
