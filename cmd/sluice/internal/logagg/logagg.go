package logagg

import (
	"context"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"
)

// DefaultKeys are the attributes that, with the level and the message,
// make two records "the same" for a Handler. Per-request attributes
// (task_id, cursor, bytes, timings) are deliberately absent.
var DefaultKeys = []string{"code", "cause", "err", "error", "reason", "upstream", "status", "path", "op", "panic"}

// Config configures a Handler. The zero value works.
type Config struct {
	// Window is how long repeats of a record are held back after it was
	// logged; at its end one summary line reports how many there were.
	// default: 10s
	Window time.Duration
	// Level is the lowest level aggregated; records below it pass through
	// untouched. default: slog.LevelWarn
	Level slog.Leveler
	// Keys are the attribute names (group-qualified, "g.key") that, with
	// the level and the message, identify a repeated record.
	// default: DefaultKeys
	Keys []string
	// MaxKeys bounds the distinct records tracked at once, and so the
	// memory: records beyond it pass through unaggregated (and are
	// counted by OnUntracked). default: 1024
	MaxKeys int
	// OnSuppressed, when set, observes each record held back as a repeat.
	OnSuppressed func(level slog.Level)
	// OnUntracked, when set, observes each record passed through because
	// MaxKeys records were already tracked.
	OnUntracked func()
}

func (c *Config) setDefaults() {
	if c.Window <= 0 {
		c.Window = 10 * time.Second
	}
	if c.Level == nil {
		c.Level = slog.LevelWarn
	}
	if c.Keys == nil {
		c.Keys = DefaultKeys
	}
	if c.MaxKeys <= 0 {
		c.MaxKeys = 1024
	}
}

// Handler is an slog.Handler that passes records to an inner handler
// but holds back repeats of identical warnings and errors (same level,
// message and key attributes) within a window: the first is logged, and
// at the window's end one line "MESSAGE (repeated N times in WINDOW)"
// with the key attributes and repeated=N replaces the rest. This keeps a
// failing dependency from turning every request into a log line.
//
// A Handler owns one goroutine that ends windows; Close stops it and
// emits the pending summaries. After Close, records pass through. It is
// safe for concurrent use, like every slog.Handler.
type Handler struct {
	st     *aggState
	inner  slog.Handler // with this handler's attrs and groups
	group  string       // the qualified group prefix ("a.b."), or ""
	preset []slog.Attr  // key attrs added by WithAttrs, qualified
}

// aggState is shared by a Handler and the handlers derived from it.
type aggState struct {
	cfg  Config
	root slog.Handler // the inner handler without attrs: summaries go here
	keys map[string]bool

	mu      sync.Mutex // protects entries and closed
	entries map[string]*aggEntry
	closed  bool

	stop      chan struct{}
	done      chan struct{}
	closeOnce sync.Once
}

// aggEntry is one tracked record and its current window.
type aggEntry struct {
	level   slog.Level
	msg     string
	attrs   []slog.Attr // the key attributes
	start   time.Time   // when the window began (the logged record)
	repeats int         // records held back in this window
}

// New returns a Handler in front of inner and starts its goroutine. Call
// Close when done.
func New(inner slog.Handler, cfg Config) *Handler {
	cfg.setDefaults()
	st := &aggState{
		cfg: cfg, root: inner, keys: map[string]bool{},
		entries: map[string]*aggEntry{},
		stop:    make(chan struct{}), done: make(chan struct{}),
	}
	for _, k := range cfg.Keys {
		st.keys[k] = true
	}
	go st.windowLoop()
	return &Handler{st: st, inner: inner}
}

// Enabled implements slog.Handler.
func (a *Handler) Enabled(ctx context.Context, l slog.Level) bool {
	return a.inner.Enabled(ctx, l)
}

// WithAttrs implements slog.Handler.
func (a *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return a
	}
	b := *a
	b.inner = a.inner.WithAttrs(attrs)
	b.preset = slices.Clip(a.preset)
	for _, at := range attrs {
		b.preset = a.st.appendKeyAttrs(b.preset, a.group, at)
	}
	return &b
}

// WithGroup implements slog.Handler.
func (a *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return a
	}
	b := *a
	b.inner = a.inner.WithGroup(name)
	b.group = a.group + name + "."
	return &b
}

// appendKeyAttrs appends at (flattened, qualified with prefix) to dst if
// it is a key attribute.
func (st *aggState) appendKeyAttrs(dst []slog.Attr, prefix string, at slog.Attr) []slog.Attr {
	v := at.Value.Resolve()
	if v.Kind() == slog.KindGroup {
		p := prefix
		if at.Key != "" {
			p += at.Key + "."
		}
		for _, g := range v.Group() {
			dst = st.appendKeyAttrs(dst, p, g)
		}
		return dst
	}
	if name := prefix + at.Key; st.keys[name] {
		dst = append(dst, slog.Attr{Key: name, Value: v})
	}
	return dst
}

// Handle implements slog.Handler.
func (a *Handler) Handle(ctx context.Context, r slog.Record) error {
	st := a.st
	if r.Level < st.cfg.Level.Level() {
		return a.inner.Handle(ctx, r)
	}
	attrs := slices.Clip(a.preset)
	r.Attrs(func(at slog.Attr) bool {
		attrs = st.appendKeyAttrs(attrs, a.group, at)
		return true
	})
	key := aggKey(r.Level, r.Message, attrs)
	now := time.Now()

	var summary *aggEntry
	st.mu.Lock()
	if st.closed {
		st.mu.Unlock()
		return a.inner.Handle(ctx, r)
	}
	e, ok := st.entries[key]
	switch {
	case ok && now.Sub(e.start) < st.cfg.Window:
		e.repeats++
		st.mu.Unlock()
		if st.cfg.OnSuppressed != nil {
			st.cfg.OnSuppressed(r.Level)
		}
		return nil
	case ok:
		// The window ended before the loop noticed: close it here, and
		// this record opens the next one.
		if e.repeats > 0 {
			c := *e
			summary = &c
		}
		e.start, e.repeats = now, 0
	case len(st.entries) < st.cfg.MaxKeys:
		st.entries[key] = &aggEntry{level: r.Level, msg: r.Message, attrs: attrs, start: now}
	default:
		st.mu.Unlock()
		if st.cfg.OnUntracked != nil {
			st.cfg.OnUntracked()
		}
		return a.inner.Handle(ctx, r)
	}
	st.mu.Unlock()
	if summary != nil {
		st.emit(ctx, summary)
	}
	return a.inner.Handle(ctx, r)
}

// aggKey identifies a record: level, message and key attributes.
func aggKey(l slog.Level, msg string, attrs []slog.Attr) string {
	var b strings.Builder
	b.WriteString(l.String())
	b.WriteByte(0)
	b.WriteString(msg)
	for _, at := range attrs {
		b.WriteByte(0)
		b.WriteString(at.Key)
		b.WriteByte('=')
		b.WriteString(at.Value.String())
	}
	return b.String()
}

// emit writes the summary of one window to the root handler.
func (st *aggState) emit(ctx context.Context, e *aggEntry) {
	r := slog.NewRecord(time.Now(), e.level,
		fmt.Sprintf("%s (repeated %d times in %s)", e.msg, e.repeats, st.cfg.Window), 0)
	r.AddAttrs(e.attrs...)
	r.AddAttrs(slog.Int("repeated", e.repeats), slog.String("window", st.cfg.Window.String()))
	if st.root.Enabled(ctx, e.level) {
		_ = st.root.Handle(ctx, r) // a failing log sink has nowhere to report to
	}
}

// windowLoop ends the windows that are over, until Close. Ticking at a
// quarter of the window, a summary is at most Window/4 late.
func (st *aggState) windowLoop() {
	defer close(st.done)
	tick := time.NewTicker(st.cfg.Window / 4)
	defer tick.Stop()
	for {
		select {
		case <-tick.C:
			st.flush(false)
		case <-st.stop:
			return
		}
	}
}

// flush emits the summaries of the windows that are over (all of them if
// all is set) and forgets those records, which frees their slots.
func (st *aggState) flush(all bool) {
	now := time.Now()
	var due []*aggEntry
	st.mu.Lock()
	for k, e := range st.entries {
		if all || now.Sub(e.start) >= st.cfg.Window {
			if e.repeats > 0 {
				due = append(due, e)
			}
			delete(st.entries, k)
		}
	}
	st.mu.Unlock()
	slices.SortFunc(due, func(a, b *aggEntry) int { return a.start.Compare(b.start) })
	for _, e := range due {
		st.emit(context.Background(), e)
	}
}

// Close stops the goroutine and emits the pending summaries; later records
// pass through unaggregated. It is safe to call more than once, on any
// handler derived from the same New.
func (a *Handler) Close() error {
	st := a.st
	st.closeOnce.Do(func() {
		close(st.stop)
		<-st.done
		st.mu.Lock()
		st.closed = true
		st.mu.Unlock()
		st.flush(true)
	})
	return nil
}
