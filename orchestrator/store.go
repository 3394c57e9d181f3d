package orchestrator

import (
	"container/list"
	"sync"
	"time"
)

// taskStore keeps this instance's tasks by id (its own, and the remote
// ones it follows) until they expire. Sharing tasks with other instances
// is another interface's job (Shared); this one is local.
type taskStore interface {
	// Put adds a task. A task that is already final is also Ended.
	Put(t *Task)
	// Ended tells the store that a task it holds is final: from now on it
	// may be dropped (by age, or to keep the store in its bounds).
	Ended(t *Task)
	// Get returns the task with that id, or nil.
	Get(id string) *Task
	// Sweep drops final tasks that ended before cutoff and returns how
	// many it dropped.
	Sweep(cutoff time.Time) int
	// Len returns the number of tasks held.
	Len() int
}

// retentionLimits bound the finished tasks a memoryStore keeps. Queued and
// running tasks are never dropped (the budget and the queue bound them);
// beyond either limit the tenant holding the most (tasks or bytes, the
// limit that is exceeded) loses its task that ended first, and its id is
// then unknown (404). With one tenant that is the task that ended first;
// with several, one tenant's flood of requests evicts its own tasks before
// anyone else's.
type retentionLimits struct {
	// MaxTasks is the most finished tasks kept; <= 0: no limit.
	MaxTasks int
	// MaxBytes is the most bytes of finished tasks kept, as Task.Size
	// counts them; <= 0: no limit.
	MaxBytes int64
}

// memoryStore is the taskStore, in this process's memory.
type memoryStore struct {
	limits retentionLimits

	mu       sync.RWMutex // protects the fields below
	tasks    map[string]*stored
	finished list.List // of *stored, in the order they ended: the oldest at the front
	bytes    int64     // Size of the finished tasks held
	evicted  int64     // finished tasks dropped to keep the limits, ever
	tenants  map[string]*tenantShare
}

// tenantShare is one tenant's finished tasks in a memoryStore.
type tenantShare struct {
	finished list.List // of *stored, in the order they ended
	bytes    int64
}

// stored is a task in a memoryStore, with its place in the finished list.
type stored struct {
	t    *Task
	size int64
	el   *list.Element // in memoryStore.finished; nil while the task is live
	tel  *list.Element // in its tenant's share
}

var _ taskStore = (*memoryStore)(nil)

// newMemoryStore returns an empty memoryStore that keeps its finished
// tasks within limits.
func newMemoryStore(limits retentionLimits) *memoryStore {
	return &memoryStore{limits: limits, tasks: make(map[string]*stored), tenants: make(map[string]*tenantShare)}
}

// Put adds a task. A task that is already final is also Ended.
func (s *memoryStore) Put(t *Task) {
	final := t.Status().Final()
	s.mu.Lock()
	defer s.mu.Unlock()
	if old := s.tasks[t.ID]; old != nil {
		s.dropLocked(old)
	}
	st := &stored{t: t}
	s.tasks[t.ID] = st
	if final {
		s.endedLocked(st)
	}
}

// Ended marks a stored task final: it joins the back of the finished
// tasks, and the oldest finished tasks are dropped while a limit is
// exceeded.
func (s *memoryStore) Ended(t *Task) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if st := s.tasks[t.ID]; st != nil && st.t == t && st.el == nil {
		s.endedLocked(st)
	}
}

func (s *memoryStore) endedLocked(st *stored) {
	st.size = st.t.Size()
	st.el = s.finished.PushBack(st)
	s.bytes += st.size
	share := s.tenants[st.t.Tenant]
	if share == nil {
		share = &tenantShare{}
		s.tenants[st.t.Tenant] = share
	}
	st.tel = share.finished.PushBack(st)
	share.bytes += st.size
	for s.finished.Len() > 0 {
		overTasks := s.limits.MaxTasks > 0 && s.finished.Len() > s.limits.MaxTasks
		overBytes := s.limits.MaxBytes > 0 && s.bytes > s.limits.MaxBytes
		if !overTasks && !overBytes {
			break
		}
		s.dropLocked(s.largestLocked(overTasks).finished.Front().Value.(*stored))
		s.evicted++
	}
}

// largestLocked returns the share of the tenant holding the most finished
// tasks (byCount) or bytes. The shares are few: one per tenant (API key).
func (s *memoryStore) largestLocked(byCount bool) *tenantShare {
	var top *tenantShare
	for _, sh := range s.tenants {
		if top == nil || byCount && sh.finished.Len() > top.finished.Len() || !byCount && sh.bytes > top.bytes {
			top = sh
		}
	}
	return top
}

func (s *memoryStore) dropLocked(st *stored) {
	if st.el != nil {
		s.finished.Remove(st.el)
		s.bytes -= st.size
		st.el = nil
		share := s.tenants[st.t.Tenant]
		share.finished.Remove(st.tel)
		share.bytes -= st.size
		st.tel = nil
		if share.finished.Len() == 0 {
			delete(s.tenants, st.t.Tenant)
		}
	}
	if s.tasks[st.t.ID] == st {
		delete(s.tasks, st.t.ID)
	}
}

// Get returns the task with that id, or nil.
func (s *memoryStore) Get(id string) *Task {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if st := s.tasks[id]; st != nil {
		return st.t
	}
	return nil
}

// Sweep drops final tasks that ended before cutoff, oldest first.
func (s *memoryStore) Sweep(cutoff time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for s.finished.Len() > 0 {
		st := s.finished.Front().Value.(*stored)
		st.t.mu.Lock()
		endedAt := st.t.endedAt
		st.t.mu.Unlock()
		if !endedAt.Before(cutoff) {
			break
		}
		s.dropLocked(st)
		n++
	}
	return n
}

// Len returns the number of tasks held.
func (s *memoryStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.tasks)
}

// RetentionStats is what the in-memory task store holds.
type RetentionStats struct {
	Tasks         int   `json:"tasks"`          // every task held
	Finished      int   `json:"finished"`       // of which final
	FinishedBytes int64 `json:"finished_bytes"` // their Size
	Evicted       int64 `json:"evicted_total"`  // finished tasks dropped to keep the limits, ever
}

// Stats returns what the store holds.
func (s *memoryStore) Stats() RetentionStats {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return RetentionStats{Tasks: len(s.tasks), Finished: s.finished.Len(), FinishedBytes: s.bytes, Evicted: s.evicted}
}
