package cache

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"sync"
	"time"
)

// ChangeOp is the kind of a Change.
type ChangeOp string

// The kinds of change.
const (
	ChangePut   ChangeOp = "put"   // an entry was stored
	ChangePurge ChangeOp = "purge" // a scope was purged
)

// Change is one entry of the shared change log: a put or a purge, with the
// generation of its scope it was made under (for a purge: the generation
// it started). A put carries what another instance cannot compute itself
// (the answer, its creation time, a model embedder's vector) and the
// question it answers; what decides a hit (the normalized text, the exact
// key, the facets) is not on the wire: every instance computes it from the
// question.
type Change struct {
	Pos    string // the change's position in the log (set by ChangeLog.Read)
	Epoch  string // the log's epoch the appender knows (see ChangeLog.Generations)
	Op     ChangeOp
	Origin string // the instance that made it (ShareConfig.Origin)
	Gen    uint64
	Scope  Scope // a put's is its Namespace's
	// Steps is how many generations a purge moves its scope on (purges
	// that waited together to be appended are merged); 0 means 1.
	Steps uint64
	// Known is the generation of its scope the purging instance knows
	// when the purge is appended (its own purges included, but for those
	// still waiting behind this one: they move the scope their own steps
	// when they are appended): the purge moves the scope at least there,
	// so that a log that lost its last writes (a failover, an older
	// snapshot) cannot hand out again a generation that instances already
	// know.
	Known uint64

	// A put's fields.
	Model    string    // Namespace.Model
	Context  string    // Namespace.Context
	Question string    // as asked
	Chunks   []string  // the answer
	Created  time.Time // when it was stored: its TTL counts from here
	Embedder string    // Embedder.Name of the instance that stored it
	Dim      int       // the dimension of its vector (0: none)
	Vector   []float32 // sent only for a model embedder (Builtin re-embeds: it is cheap)
}

// Namespace returns the effective namespace of a put.
func (ch Change) Namespace() Namespace {
	return Namespace{Tenant: ch.Scope.Tenant, Namespace: ch.Scope.Namespace, Model: ch.Model, Context: ch.Context}
}

// ErrStale is ChangeLog.Append's answer to a put made under an older
// generation than its scope's: a purge came first, the put is not logged.
var ErrStale = errors.New("cache: stale generation: the scope was purged after this answer's miss")

// ErrEpoch is ChangeLog.Append's answer when the log's epoch is not the
// change's: the log was reset (e.g. an empty Redis after a restart), so the
// appender must read the generations again before it appends. Append and
// Read also return it after they found that the log went back (it lost
// writes that were already read or relied on) and started a new epoch.
var ErrEpoch = errors.New("cache: the change log was reset (another epoch): read its generations again")

// ErrTrimmed is ChangeLog.Read's answer when changes after the reader's
// position were trimmed before it read them: the reader must read the
// generations again (the trimmed purges are in them) and go on from the
// oldest change kept.
var ErrTrimmed = errors.New("cache: the change log was trimmed past this reader's position")

// ChangeLog is the ordered log of changes that instances sharing a cache
// append to and read from (cache/redislog implements it in Redis). Every
// reader sees the same changes in the same order; the log may forget its
// oldest changes (trimming from the front never reorders), and
// Generations then still tells every scope's current generation.
type ChangeLog interface {
	// Append appends ch atomically with its checks. When the log's epoch
	// is not ch.Epoch it appends nothing and returns ErrEpoch. A purge
	// moves its scope's generation to max(current + ch.Steps (at least
	// 1), ch.Known) and returns the new one. A put is appended only when
	// ch.Gen is its scope's current generation (it returns that
	// generation); an older one returns ErrStale, and a newer one means
	// the log went back: it starts a new epoch and returns ErrEpoch.
	Append(ctx context.Context, ch Change) (gen uint64, err error)
	// Read returns at most max changes after position after ("" = from
	// the oldest kept), oldest first, waiting at most block for the
	// first one, and the position to read from next (after itself when
	// there was nothing; it also moves past changes it could not decode,
	// which it does not return). It returns ErrTrimmed when changes after
	// after were trimmed unread, and ErrEpoch (after starting a new
	// epoch) when the log no longer holds after: it went back.
	Read(ctx context.Context, after string, max int, block time.Duration) (changes []Change, next string, err error)
	// Generations returns the log's epoch and the current generation of
	// every scope purged in it. The epoch names one life of the log: it
	// changes when the log and its generations are lost (an empty Redis),
	// and then the generations start again from 0.
	Generations(ctx context.Context) (epoch string, gens map[Scope]uint64, err error)
}

// ShareConfig tunes the replication of Share. The zero value works.
type ShareConfig struct {
	// Origin names this instance in the changes it appends, so that it
	// does not apply its own puts twice. default: random.
	Origin string
	// Batch is the most changes read at once. default: 256
	Batch int
	// Block is the longest a read waits for a change. default: 1s
	Block time.Duration
	// Outbox bounds the puts waiting to be appended while the log does not
	// answer (plus the one being appended); past it, or past the cache's
	// MaxEntries, or when their entries' bytes would pass the cache's
	// MaxBytes, the oldest waiting put is dropped (it stays local), so the
	// waiting answers never hold more than the cache's own bounds. Purges
	// are never dropped (at most one waits per scope, see queuePurge).
	// default: 10000
	Outbox int
	// MaxPutBytes bounds the question plus the answer, in bytes, of an
	// entry that is shared: a larger one is kept local only (served by
	// this instance, never appended), and one read from the log is not
	// applied. With the log's length this bounds the memory of the log
	// and of an instance warming up from it, whatever clients send.
	// default: DefaultMaxPutBytes
	MaxPutBytes int64
	// Resync is how often the generations are read again in full, on top
	// of after every reconnection. default: 30s
	Resync time.Duration
	// Timeout bounds one Append or Generations call. default: 2s
	Timeout time.Duration
	// MaxBackoff bounds the wait between retries while the log fails
	// (exponential from 50ms, with jitter). default: 2s
	MaxBackoff time.Duration
	// OnError, if set, is told every failed call to the log.
	OnError func(op string, err error)
	// ApplyOwn applies this instance's own puts again when they come back
	// from the log. They are skipped by default (they are stored here
	// already); the entries are the same either way. For tests.
	ApplyOwn bool
}

// DefaultMaxPutBytes is the default ShareConfig.MaxPutBytes: answers of a
// few thousand tokens are shared, prompts of a whole document are not.
const DefaultMaxPutBytes = 16 << 10

// putBytes is the size of a put that ShareConfig.MaxPutBytes bounds: its
// question and its answer.
func putBytes(question string, chunks []string) int64 {
	n := int64(len(question))
	for _, ch := range chunks {
		n += int64(len(ch))
	}
	return n
}

func (sc *ShareConfig) setDefaults() {
	if sc.Origin == "" {
		var b [8]byte
		_, _ = rand.Read(b[:])
		sc.Origin = hex.EncodeToString(b[:])
	}
	if sc.Batch <= 0 {
		sc.Batch = 256
	}
	if sc.Block <= 0 {
		sc.Block = time.Second
	}
	if sc.Outbox <= 0 {
		sc.Outbox = 10000
	}
	if sc.MaxPutBytes <= 0 {
		sc.MaxPutBytes = DefaultMaxPutBytes
	}
	if sc.Resync <= 0 {
		sc.Resync = 30 * time.Second
	}
	if sc.Timeout <= 0 {
		sc.Timeout = 2 * time.Second
	}
	if sc.MaxBackoff <= 0 {
		sc.MaxBackoff = 2 * time.Second
	}
}

// ShareStatus is the state of the shared change log, for /readyz and
// metrics.
type ShareStatus struct {
	Enabled  bool
	Up       bool   // the last read and the last append answered
	Err      string // the last error while not Up
	Position string // the position this instance has read up to
	// Lag is how long this instance has been behind the log: 0 while its
	// last read came back with less than a full batch.
	Lag time.Duration
	// Pending are the changes waiting to be appended.
	Pending int
	// Counters: calls that failed; puts and purges appended; changes of
	// other instances applied; puts refused as stale (a purge came
	// first) and dropped (past Outbox); puts kept local only because
	// their question and answer pass MaxPutBytes (Oversize).
	Errors, Appended, Applied, Refused, Dropped, Oversize int64
}

// sharing is the replication state of a shared Cache: the outbox that
// its writer goroutine drains and its reader goroutine's position. Its
// fields are under mu (not the Cache's lock, which is never held while
// calling the log).
type sharing struct {
	log    ChangeLog
	cfg    ShareConfig
	wake   chan struct{} // buffered 1: the outbox has something
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu        sync.Mutex
	outbox    []pending
	puts      int   // puts in outbox
	putBytes  int64 // the entries' sizes of the puts in outbox
	busy      bool  // the writer is appending outbox[0]: it is not dropped
	readErr   error
	writeErr  error
	epoch     string // the log's epoch as last read; "" before the first read
	stale     bool   // the writer met another epoch: the reader reads the generations again
	pos       string
	behind    time.Time // when the reader was last caught up; zero: it is
	errors    int64
	appended  int64
	applied   int64
	refused   int64
	dropped   int64
	oversize  int64
	fullSyncs int64
}

// pending is a change waiting to be appended; e is a put's local entry,
// removed when the log refuses it, and life the Cache's life its
// generation belongs to (a put of an earlier life goes with generation 0).
type pending struct {
	ch   Change
	e    *entry
	life uint64
}

// Share keeps c in step with every other Cache sharing lg: the entries c
// stores and the purges it makes are appended to lg by one goroutine, and
// the changes of the others are read from lg by another, in log order,
// from the oldest kept (a warm start) and from the last position after an
// outage (a reconnection resumes where it stopped). Both goroutines stop
// when ctx ends or stop is called; stop waits for them, after giving
// waiting purges Timeout more to reach the log. While lg does not answer,
// c serves and stores locally; its puts wait (up to Outbox) and its purges
// wait to be appended when lg answers again. Share fails when c is
// already shared.
func (c *Cache) Share(ctx context.Context, lg ChangeLog, cfg ShareConfig) (stop func(), err error) {
	cfg.setDefaults()
	ctx, cancel := context.WithCancel(ctx)
	sh := &sharing{log: lg, cfg: cfg, wake: make(chan struct{}, 1), cancel: cancel, behind: time.Now()}
	c.mu.Lock()
	if c.share != nil {
		c.mu.Unlock()
		cancel()
		return nil, errors.New("cache: already shared")
	}
	c.share = sh
	c.mu.Unlock()
	sh.done.Add(2)
	go sh.read(ctx, c)
	go sh.write(ctx, c)
	var once sync.Once
	return func() {
		once.Do(func() {
			cancel()
			sh.done.Wait()
			c.mu.Lock()
			c.share = nil
			c.mu.Unlock()
		})
	}, nil
}

// ShareStatus returns the state of the shared change log; Enabled is false
// when c is not shared.
func (c *Cache) ShareStatus() ShareStatus {
	c.mu.RLock()
	sh := c.share
	c.mu.RUnlock()
	if sh == nil {
		return ShareStatus{}
	}
	sh.mu.Lock()
	defer sh.mu.Unlock()
	st := ShareStatus{Enabled: true, Up: sh.readErr == nil && sh.writeErr == nil, Position: sh.pos,
		Pending: len(sh.outbox), Errors: sh.errors, Appended: sh.appended, Applied: sh.applied,
		Refused: sh.refused, Dropped: sh.dropped, Oversize: sh.oversize}
	if err := errors.Join(sh.readErr, sh.writeErr); err != nil {
		st.Err = err.Error()
	}
	if !sh.behind.IsZero() {
		st.Lag = time.Since(sh.behind)
	}
	return st
}

// queuePut queues the put of e, made under gen (vec: its vector before
// storage, sent for a model embedder only), unless its question and answer
// pass MaxPutBytes (it stays local). The waiting puts stay within Outbox
// and the cache's MaxEntries and MaxBytes: the oldest waiting ones are
// dropped first.
func (sh *sharing) queuePut(c *Cache, e *entry, vec []float32, gen Generation) {
	if putBytes(e.question, e.answer.Chunks) > sh.cfg.MaxPutBytes {
		sh.mu.Lock()
		sh.oversize++
		sh.mu.Unlock()
		return
	}
	ch := Change{Op: ChangePut, Origin: sh.cfg.Origin, Gen: gen.n, Scope: e.ns.scope(), Model: e.ns.Model,
		Context: e.ns.Context, Question: e.question, Chunks: e.answer.Chunks, Created: e.created,
		Embedder: c.cfg.Embedder.Name(), Dim: len(vec)}
	if !isBuiltin(c.cfg.Embedder) {
		ch.Vector = vec
	}
	maxPuts := sh.cfg.Outbox
	if c.cfg.MaxEntries > 0 {
		maxPuts = min(maxPuts, c.cfg.MaxEntries)
	}
	over := func() bool {
		return sh.puts >= maxPuts || c.cfg.MaxBytes > 0 && sh.putBytes+e.size > c.cfg.MaxBytes
	}
	sh.mu.Lock()
	for i := 0; i < len(sh.outbox) && over(); {
		if p := sh.outbox[i]; p.ch.Op != ChangePut || i == 0 && sh.busy {
			i++
			continue
		}
		sh.putBytes -= sh.outbox[i].e.size
		sh.outbox = append(sh.outbox[:i], sh.outbox[i+1:]...)
		sh.puts--
		sh.dropped++
	}
	sh.outbox = append(sh.outbox, pending{ch: ch, e: e, life: gen.life})
	sh.puts++
	sh.putBytes += e.size
	sh.mu.Unlock()
	sh.signal()
}

// queuePurge queues the purge of scope; the Purge calling it holds c.mu
// (so a generation it moved is never seen by known without its purge in
// the outbox; the order is c.mu, then sh.mu). The puts of scope still waiting
// are dropped (the purge would drop them everywhere anyway), and a purge
// of scope still waiting is merged into this one (its Steps added), so at
// most one purge per scope waits besides the one being appended, and the
// log moves the scope's generation exactly as far as this instance did.
// The change being appended is never touched.
func (sh *sharing) queuePurge(scope Scope) {
	sh.mu.Lock()
	steps := uint64(1)
	kept := sh.outbox[:0]
	for i, p := range sh.outbox {
		if p.ch.Scope == scope && (i > 0 || !sh.busy) {
			switch p.ch.Op {
			case ChangePut:
				sh.puts--
				sh.putBytes -= p.e.size
			case ChangePurge:
				steps += max(p.ch.Steps, 1)
			}
			continue
		}
		kept = append(kept, p)
	}
	clear(sh.outbox[len(kept):])
	sh.outbox = append(kept, pending{ch: Change{Op: ChangePurge, Origin: sh.cfg.Origin, Scope: scope, Steps: steps}})
	sh.mu.Unlock()
	sh.signal()
}

func (sh *sharing) signal() {
	select {
	case sh.wake <- struct{}{}:
	default:
	}
}

// failed records a failed call to the log.
func (sh *sharing) failed(op string, err error, slot *error) {
	sh.mu.Lock()
	sh.errors++
	*slot = fmt.Errorf("cache log %s: %w", op, err)
	sh.mu.Unlock()
	if sh.cfg.OnError != nil {
		sh.cfg.OnError(op, err)
	}
}

// backoff waits before retry n (from 0) of a failed call, or until ctx
// ends; it reports whether to go on.
func (sh *sharing) backoff(ctx context.Context, n int) bool {
	d := min(50*time.Millisecond<<min(n, 10), sh.cfg.MaxBackoff)
	d = d/2 + mrand.N(d/2+1) // jitter: instances do not retry in step
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// write is the writer goroutine: it appends the outbox in order, keeping
// the head while the log fails. When ctx ends it gives the waiting purges
// Timeout more.
func (sh *sharing) write(ctx context.Context, c *Cache) {
	defer sh.done.Done()
	fails := 0
	for {
		sh.mu.Lock()
		var head *pending
		if len(sh.outbox) > 0 {
			p := sh.outbox[0]
			head = &p
			sh.busy = true
			// The epoch is read with the head and before the Cache's life
			// and generations (resync changes them first and the epoch
			// last): a change sent under the new epoch carries what the new
			// life knows.
			head.ch.Epoch = sh.epoch
		}
		sh.mu.Unlock()
		if head == nil {
			select {
			case <-ctx.Done():
				return
			case <-sh.wake:
				continue
			}
		}
		if ctx.Err() != nil {
			sh.flushPurges(c)
			return
		}
		sh.prepare(c, head)
		if head.ch.Epoch == "" { // the reader has not read the generations yet
			sh.mu.Lock()
			sh.busy = false
			sh.mu.Unlock()
			if !sh.backoff(ctx, 0) {
				sh.flushPurges(c)
				return
			}
			continue
		}
		err := sh.append(ctx, c, *head)
		if errors.Is(err, ErrEpoch) {
			sh.mu.Lock()
			sh.stale = true
			sh.mu.Unlock()
		}
		if err != nil {
			if ctx.Err() != nil {
				sh.flushPurges(c)
				return
			}
			sh.failed("append", err, &sh.writeErr)
			if !sh.backoff(ctx, fails) {
				sh.flushPurges(c)
				return
			}
			fails++
			continue
		}
		fails = 0
	}
}

// prepare sets what a change takes from the Cache when it is appended: a
// put made in an earlier life of the log goes with generation 0 of this
// one (its entry was moved there by the reset), and a purge carries the
// generation this instance knows (Change.Known).
func (sh *sharing) prepare(c *Cache, p *pending) {
	switch p.ch.Op {
	case ChangePut:
		if p.life != c.life.Load() {
			p.ch.Gen = 0
		}
	case ChangePurge:
		c.mu.RLock()
		sh.mu.Lock()
		p.ch.Known = sh.known(c, p.ch.Scope, sh.outbox[1:]) // p is outbox[0], busy
		sh.mu.Unlock()
		c.mu.RUnlock()
	}
}

// known is the generation of scope a purge carries (Change.Known) when
// behind are the changes waiting after it: the generation this instance
// knows, less the steps of scope's purges among behind. This instance
// moved its generation for those too, and they move the log's their own
// steps when they are appended: counted in the first purge's Known as
// well, the log would move the scope further than this instance did, and
// a put this instance made after its purges would be refused as stale
// (TestPurgesWaitingBehindOneBeingAppendedMoveTheLogOnce). The last purge
// waiting carries the whole generation. c.mu (read) and sh.mu are held.
func (sh *sharing) known(c *Cache, scope Scope, behind []pending) uint64 {
	g := c.gens[scope]
	for _, q := range behind {
		if q.ch.Op == ChangePurge && q.ch.Scope == scope {
			g -= min(g, max(q.ch.Steps, 1)) // 0 at least: the Cache's life may have been reset since
		}
	}
	return g
}

// append appends the head of the outbox and pops it unless the log
// failed. A refused put's local entry is removed (when it is still the
// same entry); an appended purge moves its scope to the new generation.
func (sh *sharing) append(ctx context.Context, c *Cache, p pending) error {
	actx, cancel := context.WithTimeout(ctx, sh.cfg.Timeout)
	gen, err := sh.log.Append(actx, p.ch)
	cancel()
	stale := errors.Is(err, ErrStale)
	sh.mu.Lock()
	sh.busy = false
	if err != nil && !stale {
		sh.mu.Unlock()
		return err
	}
	sh.writeErr = nil
	if len(sh.outbox) > 0 && sh.outbox[0].ch.Op == p.ch.Op && sh.outbox[0].e == p.e && sh.outbox[0].ch.Scope == p.ch.Scope {
		clear(sh.outbox[:1])
		sh.outbox = sh.outbox[1:]
		if p.ch.Op == ChangePut {
			sh.puts--
			sh.putBytes -= p.e.size
		}
	}
	if stale {
		sh.refused++
	} else {
		sh.appended++
	}
	sh.mu.Unlock()
	c.mu.Lock()
	switch {
	case stale:
		if e, ok := c.st.get(p.e.id); ok && e == p.e {
			c.st.remove(e.id)
		}
		c.bumpGen(p.ch.Scope, gen)
	case p.ch.Op == ChangePurge:
		c.bumpGen(p.ch.Scope, gen)
	}
	c.mu.Unlock()
	return nil
}

// flushPurges gives the purges still waiting Timeout to reach the log, so
// that a purge made while the log was down is not lost by a stop.
func (sh *sharing) flushPurges(c *Cache) {
	ctx, cancel := context.WithTimeout(context.Background(), sh.cfg.Timeout)
	defer cancel()
	c.mu.RLock()
	sh.mu.Lock()
	var purges []pending
	for i, p := range sh.outbox {
		if p.ch.Op == ChangePurge {
			p.ch.Epoch = sh.epoch
			p.ch.Known = sh.known(c, p.ch.Scope, sh.outbox[i+1:])
			purges = append(purges, p)
		}
	}
	sh.mu.Unlock()
	c.mu.RUnlock()
	for _, p := range purges {
		if _, err := sh.log.Append(ctx, p.ch); err != nil {
			sh.failed("append", err, &sh.writeErr)
			return
		}
	}
}

// read is the reader goroutine: it reads the generations in full (at the
// start, after every failure and every Resync), then the log from its
// position, and applies the changes in order.
func (sh *sharing) read(ctx context.Context, c *Cache) {
	defer sh.done.Done()
	fails := 0
	var synced time.Time
	for ctx.Err() == nil {
		sh.mu.Lock()
		if sh.stale {
			sh.stale, synced = false, time.Time{}
		}
		sh.mu.Unlock()
		if synced.IsZero() || time.Since(synced) > sh.cfg.Resync {
			if err := sh.resync(ctx, c); err != nil {
				if ctx.Err() != nil {
					return
				}
				sh.failed("generations", err, &sh.readErr)
				if !sh.backoff(ctx, fails) {
					return
				}
				fails++
				continue
			}
			synced = time.Now()
		}
		sh.mu.Lock()
		pos := sh.pos
		sh.mu.Unlock()
		changes, next, err := sh.log.Read(ctx, pos, sh.cfg.Batch, sh.cfg.Block)
		if errors.Is(err, ErrTrimmed) {
			// Purges may be among the trimmed changes: read the
			// generations again, then the log from its oldest change (all
			// after pos).
			sh.mu.Lock()
			sh.pos = ""
			sh.mu.Unlock()
			synced = time.Time{}
			continue
		}
		if err != nil {
			if ctx.Err() != nil {
				return
			}
			if errors.Is(err, ErrEpoch) {
				synced = time.Time{} // the log started a new epoch: reset at once
				continue
			}
			sh.failed("read", err, &sh.readErr)
			synced = time.Time{} // purges may have been trimmed meanwhile
			if !sh.backoff(ctx, fails) {
				return
			}
			fails++
			continue
		}
		fails = 0
		applied := int64(0)
		for _, ch := range changes {
			if sh.apply(ctx, c, ch) {
				applied++
			}
		}
		sh.mu.Lock()
		sh.readErr = nil
		sh.pos = next
		sh.applied += applied
		if len(changes) < sh.cfg.Batch {
			sh.behind = time.Time{}
		} else if sh.behind.IsZero() {
			sh.behind = time.Now()
		}
		sh.mu.Unlock()
	}
}

// resync moves every scope to the generation the log has for it. When
// the log's epoch changed (it was lost and started again), the
// generations this instance knew mean nothing any more: every local entry
// is taken as made under generation 0 of the new epoch, the generations
// Lookup handed out are refused by Store (a new life), waiting puts go
// with generation 0, the scopes purged in the new epoch drop their
// entries, and the log is read again from its start.
func (sh *sharing) resync(ctx context.Context, c *Cache) error {
	gctx, cancel := context.WithTimeout(ctx, sh.cfg.Timeout)
	defer cancel()
	epoch, gens, err := sh.log.Generations(gctx)
	if err != nil {
		return err
	}
	sh.mu.Lock()
	reset := sh.epoch != "" && sh.epoch != epoch
	sh.mu.Unlock()
	// The Cache first, the epoch last: the writer reads the epoch before
	// the Cache's life, so a change it sends under the new epoch has the
	// new life's generation (see write and prepare).
	c.mu.Lock()
	if reset {
		for _, e := range c.st.all() {
			e.gen = 0
		}
		clear(c.gens)
		c.life.Add(1) // the generations Lookup handed out mean nothing now
	}
	for s, g := range gens {
		c.bumpGen(s.norm(), g)
	}
	c.mu.Unlock()
	sh.mu.Lock()
	sh.epoch = epoch
	if reset {
		sh.pos = ""
	}
	sh.fullSyncs++
	sh.mu.Unlock()
	return nil
}

// apply applies one change read from the log and reports whether it
// changed anything. A purge moves its scope to its generation (this
// instance's own too: doing it twice changes nothing). A put of another
// instance is stored when its generation is current and its question and
// answer are within MaxPutBytes: this instance computes the normalized
// text, facets and key from the question, and the vector with its own
// embedder when it is Builtin; a model embedder's vector is taken from the
// change only when the embedder's name and dimension are this instance's,
// and the entry is exact-only otherwise.
func (sh *sharing) apply(ctx context.Context, c *Cache, ch Change) bool {
	scope := ch.Scope.norm()
	switch ch.Op {
	case ChangePurge:
		c.mu.Lock()
		defer c.mu.Unlock()
		before := c.gens[scope]
		c.bumpGen(scope, ch.Gen)
		return ch.Origin != sh.cfg.Origin && c.gens[scope] != before
	case ChangePut:
		if ch.Origin == sh.cfg.Origin && !sh.cfg.ApplyOwn {
			return false // stored here already
		}
		if putBytes(ch.Question, ch.Chunks) > sh.cfg.MaxPutBytes {
			return false // past this instance's bound (an older or otherwise configured instance appended it)
		}
	default:
		return false
	}
	c.mu.RLock()
	stale := ch.Gen < c.gens[scope]
	c.mu.RUnlock()
	if stale {
		return false
	}
	now := c.cfg.Now()
	created := ch.Created
	if created.IsZero() || created.After(now) {
		created = now
	}
	if c.cfg.TTL > 0 && !now.Before(created.Add(c.cfg.TTL)) {
		return false // expired already
	}
	ns := ch.Namespace()
	ns.Namespace = scope.Namespace
	norm, long := c.tooLong(ch.Question)
	if norm == "" {
		return false // never cached (see decide), whoever sent it
	}
	var vec []float32
	var r reading
	if !long {
		r = readOf(norm)
		vec = sh.vector(ctx, c, norm, r, ch)
	}
	e := c.newEntry(ns, ch.Question, norm, r.facets, vec, Answer{Chunks: ch.Chunks}, created)
	c.mu.Lock()
	defer c.mu.Unlock()
	if ch.Gen > c.gens[scope] {
		c.bumpGen(scope, ch.Gen) // its purge was trimmed before this instance read it
	}
	return ch.Gen == c.gens[scope] && c.insertLocked(e, ch.Gen, now)
}

// vector returns the vector of a put's normalized question as this
// instance would compute it, or nil (exact tier only).
func (sh *sharing) vector(ctx context.Context, c *Cache, norm string, r reading, ch Change) []float32 {
	if c.cfg.EmbedTimeout < 0 {
		return nil
	}
	if isBuiltin(c.cfg.Embedder) {
		v, _ := c.embed(ctx, norm, r) // in-process and fast
		return v
	}
	if ch.Embedder != c.cfg.Embedder.Name() || ch.Dim == 0 || len(ch.Vector) != ch.Dim {
		return nil // another embedder's vector is never compared with ours
	}
	if d := c.embedDim.Load(); d != int64(ch.Dim) {
		if d != 0 {
			return nil
		}
		// This instance has not embedded anything yet, so it cannot tell
		// whether the dimension is its own: it embeds the question itself.
		v, _ := c.embed(ctx, norm, r)
		return v
	}
	if !r.comparable() {
		return nil // nothing to compare: exact tier only, as here (errNoFeatures)
	}
	v := append([]float32(nil), ch.Vector...)
	if !normalizeL2(v) {
		return nil // a zero vector is similar to nothing (errZeroVector); NaN or Inf fails too
	}
	return v
}
