package orchestrator

import (
	"sync"
	"time"
)

// TaskStore keeps tasks by id until they expire. A shared (Redis) store
// can stand in for the in-memory one behind this interface.
type TaskStore interface {
	// Put adds a task.
	Put(t *Task)
	// Get returns the task with that id, or nil.
	Get(id string) *Task
	// Sweep drops final tasks that ended before cutoff and returns how
	// many it dropped.
	Sweep(cutoff time.Time) int
	// Len returns the number of tasks held.
	Len() int
}

// MemoryStore is a TaskStore in this process's memory.
type MemoryStore struct {
	mu    sync.RWMutex // protects tasks
	tasks map[string]*Task
}

var _ TaskStore = (*MemoryStore)(nil)

// NewMemoryStore returns an empty MemoryStore.
func NewMemoryStore() *MemoryStore { return &MemoryStore{tasks: make(map[string]*Task)} }

// Put adds a task.
func (s *MemoryStore) Put(t *Task) {
	s.mu.Lock()
	s.tasks[t.ID] = t
	s.mu.Unlock()
}

// Get returns the task with that id, or nil.
func (s *MemoryStore) Get(id string) *Task {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return s.tasks[id]
}

// Sweep drops final tasks that ended before cutoff.
func (s *MemoryStore) Sweep(cutoff time.Time) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for id, t := range s.tasks {
		t.mu.Lock()
		expired := t.status.Final() && t.endedAt.Before(cutoff)
		t.mu.Unlock()
		if expired {
			delete(s.tasks, id)
			n++
		}
	}
	return n
}

// Len returns the number of tasks held.
func (s *MemoryStore) Len() int {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return len(s.tasks)
}
