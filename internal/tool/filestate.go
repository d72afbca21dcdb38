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
// own reads never change the parent's state.
func (s *FileState) Clone() *FileState {
	s.mu.Lock()
	defer s.mu.Unlock()
	return &FileState{reads: maps.Clone(s.reads)}
}

// Len returns how many files are recorded.
func (s *FileState) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.reads)
}
