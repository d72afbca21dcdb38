package tool

import (
	"maps"
	"sync"
	"time"
)

// FileRead records what the agent saw of a file, so Write and Edit can refuse to overwrite a
// file that changed since (or was never read).
type FileRead struct {
	ModTime time.Time
	Size    int64
	// Hash is the hex SHA-256 of the content as read.
	Hash string
	// Partial is true when only a range was read (offset/limit).
	Partial bool
	// View names what Read showed of the file (the lines asked for, an image, a notebook)
	// while that result is in the agent's context; a Read of the same view of the unchanged
	// file then returns a short stub instead. Empty when the agent only knows the content
	// (it wrote or edited the file) or its context lost the result (see [FileState.ForgetViews]).
	View string
}

// FileState is an agent's file-read state. It is safe for concurrent use: parallel Read calls
// record into it.
type FileState struct {
	// mu guards reads.
	mu    sync.Mutex
	reads map[string]FileRead
}

// NewFileState returns an empty state.
func NewFileState() *FileState { return &FileState{reads: map[string]FileRead{}} }

// Record stores what was read of the file at the absolute path.
func (s *FileState) Record(path string, r FileRead) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reads[path] = r
}

// Lookup returns the record for path.
func (s *FileState) Lookup(path string) (FileRead, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	r, ok := s.reads[path]
	return r, ok
}

// Forget drops the record for path (after a write the agent has not read the new content).
func (s *FileState) Forget(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.reads, path)
}

// Clone returns an independent copy: a child agent starts from its parent's reads, and its
// own reads never change the parent's state. It starts without their views: the parent's
// Read results are not in the child's context.
func (s *FileState) Clone() *FileState {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := &FileState{reads: maps.Clone(s.reads)}
	for p, r := range c.reads {
		r.View = ""
		c.reads[p] = r
	}
	return c
}

// ForgetViews marks every Read result as gone from the agent's context, so the next Read of
// each file returns its content again; Edit and Write still know what was read. The agent's
// owner calls it whenever the context drops earlier results: a compaction, a rewind, a
// /clear.
func (s *FileState) ForgetViews() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p, r := range s.reads {
		r.View = ""
		s.reads[p] = r
	}
}

// ForgetView does what ForgetViews does for one file: its Read result was cleared from the
// context.
func (s *FileState) ForgetView(path string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if r, ok := s.reads[path]; ok {
		r.View = ""
		s.reads[path] = r
	}
}

// Len returns how many files are recorded.
func (s *FileState) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reads)
}
