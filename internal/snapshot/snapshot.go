// Package snapshot keeps the prior contents of the files a session changes, so a rewind can put
// them back.
//
// Before a tool changes a file it calls [Store.Track]: the file's content is stored once,
// content-addressed (sha256), under $KEEL_HOME/file-history/<session>/blobs, and the current
// snapshot records the file, its blob and mode, or that the file did not exist. There is one
// snapshot per user turn, named by the turn's user-message uuid ([Store.Begin]); at most
// [MaxSnapshots] are kept, the newest. [Store.Restore] puts every file changed since a snapshot
// back as it was when that snapshot began. Changes a store cannot see (shell commands, MCP
// tools) are recorded with [Store.Unrecoverable] and listed by Restore, not undone.
package snapshot

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// MaxSnapshots is how many snapshots a session keeps; older ones are dropped with their blobs.
const MaxSnapshots = 100

// ErrNoTurn is returned by Track and Unrecoverable before the first Begin.
var ErrNoTurn = errors.New("no snapshot begun")

// ErrNotFound is returned by Restore for a snapshot the store does not have (never taken, or
// dropped as older than the newest MaxSnapshots).
var ErrNotFound = errors.New("no such snapshot")

// FileState is a file as it was before the turn first changed it.
type FileState struct {
	Path string `json:"path"`
	// Existed is false for a file the turn created; restoring deletes it.
	Existed bool `json:"existed"`
	// Blob is the sha256 (hex) of the content; Mode its permission bits.
	Blob string      `json:"blob,omitempty"`
	Mode fs.FileMode `json:"mode,omitempty"`
	// NotKept says why the content was not kept (the file was past MaxTracked); a restore
	// names the file as failed with it.
	NotKept string `json:"not_kept,omitempty"`
}

// Action is a change that cannot be undone, such as a shell command or an MCP tool call.
type Action struct {
	Tool        string `json:"tool"`
	Description string `json:"description"`
}

// Snapshot is the record of one user turn.
type Snapshot struct {
	// ID is the uuid of the user message that began the turn.
	ID            string      `json:"id"`
	Time          time.Time   `json:"time"`
	Files         []FileState `json:"files,omitempty"`
	Unrecoverable []Action    `json:"unrecoverable,omitempty"`
}

// Store is the file history of one session. It is safe for concurrent use (tools of one batch
// may run in parallel); one process should own a session's store at a time, as with its
// transcript.
type Store struct {
	dir string
	now func() time.Time

	// mu guards snaps and the files under dir.
	mu    sync.Mutex
	snaps []Snapshot
}

// Dir is the file history directory of a session.
func Dir(home, sessionID string) string {
	return filepath.Join(home, "file-history", sessionID)
}

const manifestName = "snapshots.json"

// Open loads (or starts) the file history of a session.
func Open(home, sessionID string) (*Store, error) {
	if sessionID == "" || sessionID != filepath.Base(sessionID) || sessionID == ".." {
		return nil, fmt.Errorf("open file history: session id %q is not a valid file name", sessionID)
	}
	s := &Store{dir: Dir(home, sessionID), now: time.Now}
	b, err := os.ReadFile(filepath.Join(s.dir, manifestName))
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return s, nil
	case err != nil:
		return nil, fmt.Errorf("open file history: %w", err)
	}
	if err := json.Unmarshal(b, &s.snaps); err != nil {
		return nil, fmt.Errorf("open file history %s: %w", filepath.Join(s.dir, manifestName), err)
	}
	return s, nil
}

// Remove deletes a session's file history.
func Remove(home, sessionID string) error {
	if err := os.RemoveAll(Dir(home, sessionID)); err != nil {
		return fmt.Errorf("remove file history: %w", err)
	}
	return nil
}

// Begin starts the snapshot of a new user turn, named by its user message's uuid, and drops
// the oldest snapshots beyond MaxSnapshots.
func (s *Store) Begin(id string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.snaps = append(s.snaps, Snapshot{ID: id, Time: s.now().UTC()})
	if n := len(s.snaps) - MaxSnapshots; n > 0 {
		s.snaps = slices.Delete(s.snaps, 0, n)
		defer s.collect()
	}
	return s.save()
}

// Track records path's current content in the current snapshot, before a tool changes it. Only
// the first call per file and turn stores anything: that is the content the turn started from.
func (s *Store) Track(path string) error {
	path, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("track %s: %w", path, err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.snaps) == 0 {
		return fmt.Errorf("track %s: %w", path, ErrNoTurn)
	}
	cur := &s.snaps[len(s.snaps)-1]
	if slices.ContainsFunc(cur.Files, func(f FileState) bool { return f.Path == path }) {
		return nil
	}
	st := FileState{Path: path}
	data, mode, err := readTracked(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
	case errors.Is(err, errTooLarge):
		st.Existed, st.NotKept = true, err.Error()
	case err != nil:
		return fmt.Errorf("track %s: %w", path, err)
	default:
		if st.Blob, err = s.putBlob(data); err != nil {
			return fmt.Errorf("track %s: %w", path, err)
		}
		st.Existed, st.Mode = true, mode&(fs.ModePerm|fs.ModeSetuid|fs.ModeSetgid|fs.ModeSticky)
	}
	cur.Files = append(cur.Files, st)
	return s.save()
}

// readTracked reads the regular file at path, which has its links resolved (the path the
// permission gate checked for the edit), without following a link anywhere on the way, its
// own name included: a command swapping a link in for the file just before the edit would
// otherwise have keel copy the file it leads to — a masked or Read-denied one — into the file
// history, where a rewind writes it back into the workspace. O_NONBLOCK: a FIFO swapped in
// fails, it never holds the call.
func readTracked(path string) ([]byte, fs.FileMode, error) {
	f, err := atomicfile.OpenRegular(path)
	if err != nil {
		return nil, 0, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, 0, err
	}
	if fi.Size() > MaxTracked {
		return nil, 0, fmt.Errorf("%s holds %d MiB: %w", path, fi.Size()>>20, errTooLarge)
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxTracked+1))
	if err == nil && int64(len(data)) > MaxTracked {
		err = fmt.Errorf("%s grew past %d MiB while read: %w", path, MaxTracked>>20, errTooLarge)
	}
	return data, fi.Mode(), err
}

// MaxTracked bounds the files the history keeps a copy of. A command can make a sparse file
// of any size for nothing, which keel would otherwise read into memory and copy, as real
// disk, into the history; a larger file is recorded as one a rewind cannot restore.
const MaxTracked = 64 << 20

var errTooLarge = errors.New("larger than the file history keeps")

// Unrecoverable records, in the current snapshot, a change the store cannot undo.
func (s *Store) Unrecoverable(a Action) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.snaps) == 0 {
		return fmt.Errorf("record %s: %w", a.Tool, ErrNoTurn)
	}
	cur := &s.snaps[len(s.snaps)-1]
	cur.Unrecoverable = append(cur.Unrecoverable, a)
	return s.save()
}

// Snapshots returns a copy of the kept snapshots, oldest first.
func (s *Store) Snapshots() []Snapshot {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Snapshot, len(s.snaps))
	for i, sn := range s.snaps {
		sn.Files = slices.Clone(sn.Files)
		sn.Unrecoverable = slices.Clone(sn.Unrecoverable)
		out[i] = sn
	}
	return out
}

func (s *Store) blobPath(sum string) string { return filepath.Join(s.dir, "blobs", sum) }

func (s *Store) putBlob(data []byte) (string, error) {
	h := sha256.Sum256(data)
	sum := hex.EncodeToString(h[:])
	path := s.blobPath(sum)
	if _, err := os.Stat(path); err == nil {
		return sum, nil
	}
	if err := writeAtomic(path, data, 0o600); err != nil {
		return "", err
	}
	return sum, nil
}

// getBlob reads a blob and checks it against its name, so a damaged blob counts as missing.
func (s *Store) getBlob(sum string) ([]byte, error) {
	data, err := os.ReadFile(s.blobPath(sum))
	if err != nil {
		return nil, err
	}
	if h := sha256.Sum256(data); hex.EncodeToString(h[:]) != sum {
		return nil, fmt.Errorf("blob %s is damaged", sum)
	}
	return data, nil
}

func (s *Store) save() error {
	b, err := json.Marshal(s.snaps)
	if err != nil {
		return fmt.Errorf("save file history: %w", err)
	}
	if err := writeAtomic(filepath.Join(s.dir, manifestName), b, 0o600); err != nil {
		return fmt.Errorf("save file history: %w", err)
	}
	return nil
}

// collect deletes blobs no kept snapshot refers to. Failures are left for the next collect.
func (s *Store) collect() {
	used := map[string]bool{}
	for _, sn := range s.snaps {
		for _, f := range sn.Files {
			used[f.Blob] = true
		}
	}
	des, _ := os.ReadDir(filepath.Join(s.dir, "blobs"))
	for _, de := range des {
		if !used[de.Name()] {
			os.Remove(s.blobPath(de.Name()))
		}
	}
}

func writeAtomic(path string, data []byte, perm fs.FileMode) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	return atomicfile.WriteFile(path, data, perm)
}
