package shadow

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
)

// Mark says that the prompt Prompt (a transcript message id) started with the directory Dir
// at the checkpoint Commit: a point a rewind can go back to.
type Mark struct {
	Prompt string `json:"prompt"`
	Dir    string `json:"dir"`
	Commit string `json:"commit"`
}

// Marks are one session's rewind points, kept at $KEEL_HOME/shadow/marks/<session>.jsonl
// beside the shadow repositories: a session may change directory (a worktree), so the marks
// name theirs, and a later process (keel rewind) finds them by session id alone. Appends are
// one write each, so a crash leaves at most a torn last line, which reading skips. Safe for
// concurrent use.
type Marks struct {
	path string

	// mu serialises appends.
	mu sync.Mutex
}

// OpenMarks returns the marks of session under keel's home; the file is made on the first
// [Marks.Add].
func OpenMarks(home, session string) (*Marks, error) {
	if !sessionRE.Get().MatchString(session) {
		return nil, fmt.Errorf("shadow marks: session %q: want 1-128 letters, digits, - and _", session)
	}
	return &Marks{path: filepath.Join(home, "shadow", "marks", session+".jsonl")}, nil
}

// Add records m.
func (ms *Marks) Add(m Mark) error {
	b, err := json.Marshal(m)
	if err != nil {
		return err
	}
	ms.mu.Lock()
	defer ms.mu.Unlock()
	if err := os.MkdirAll(filepath.Dir(ms.path), 0o700); err != nil {
		return fmt.Errorf("shadow marks: %w", err)
	}
	f, err := os.OpenFile(ms.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o600)
	if err != nil {
		return fmt.Errorf("shadow marks: %w", err)
	}
	_, err = f.Write(append(b, '\n'))
	return errors.Join(err, f.Close())
}

// All returns the marks in the order they were added; a prompt marked twice (a resumed
// session's replay) keeps its first mark. No file is no marks.
func (ms *Marks) All() ([]Mark, error) {
	f, err := os.Open(ms.path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("shadow marks: %w", err)
	}
	defer f.Close()
	var out []Mark
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var m Mark
		if json.Unmarshal(sc.Bytes(), &m) != nil || m.Prompt == "" || seen[m.Prompt] {
			continue // a torn tail
		}
		seen[m.Prompt] = true
		out = append(out, m)
	}
	return out, sc.Err()
}
