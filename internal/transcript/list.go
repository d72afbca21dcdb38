package transcript

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Summary describes one session for listing.
type Summary struct {
	ID          string `json:"id"`
	Path        string `json:"path"`
	Title       string `json:"title,omitempty"`
	FirstPrompt string `json:"firstPrompt,omitempty"`
	// Branch is the git branch the first prompt was written on, when keel knew it.
	Branch  string    `json:"branch,omitempty"`
	Updated time.Time `json:"updated"`
	Size    int64     `json:"size"`
	// Messages counts the user and assistant entries in the file, all branches included.
	Messages int `json:"messages"`
}

// listFile is what listing needs of an open transcript.
type listFile interface {
	io.ReaderAt
	Stat() (fs.FileInfo, error)
	Close() error
}

// List returns the sessions in projectDir, most recently updated first. Each is described from
// its index file, catching up on only the bytes written since the index (a missing or stale
// index costs one scan of that file). A missing directory has no sessions.
func List(projectDir string) ([]Summary, error) {
	return list(projectDir, func(p string) (listFile, error) { return os.Open(p) })
}

func list(dir string, open func(string) (listFile, error)) ([]Summary, error) {
	des, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list sessions: %w", err)
	}
	var out []Summary
	for _, de := range des {
		id, ok := strings.CutSuffix(de.Name(), ".jsonl")
		if !ok || de.IsDir() || CheckID(id) != nil {
			continue
		}
		s, err := summarize(filepath.Join(dir, de.Name()), id, open)
		if errors.Is(err, fs.ErrNotExist) {
			continue // removed while listing
		}
		if err != nil {
			return nil, fmt.Errorf("list sessions: %w", err)
		}
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b Summary) int {
		return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

func summarize(path, id string, open func(string) (listFile, error)) (Summary, error) {
	f, err := open(path)
	if err != nil {
		return Summary{}, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return Summary{}, err
	}
	ix, err := refreshIndex(path, f, fi.Size())
	if err != nil {
		return Summary{}, err
	}
	return Summary{ID: id, Path: path, Title: ix.Title, FirstPrompt: ix.FirstPrompt, Branch: ix.Branch,
		Updated: fi.ModTime(), Size: fi.Size(), Messages: ix.Messages}, nil
}

// Find returns the transcript of session id in projectDir. A missing session is an error that
// names the most recent sessions, so the user can pick one.
func Find(projectDir, id string) (string, error) { return FindIn([]string{projectDir}, id) }

// Latest returns the most recently updated session in projectDir, for --continue.
func Latest(projectDir string) (Summary, error) { return LatestIn([]string{projectDir}) }

// Show returns the live conversation of a transcript: its chain entries, oldest first, each
// with the uuid a rewind can go back to.
func Show(ctx context.Context, path string) ([]Entry, error) {
	st, err := Load(ctx, path)
	if err != nil {
		return nil, err
	}
	return st.Chain, nil
}

// Remove deletes a transcript with its index and its folder of subagent transcripts. A session
// open in a process is refused with [ErrLocked].
func Remove(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return fmt.Errorf("remove session: %w", err)
	}
	defer f.Close()
	if err := lockFile(f); err != nil {
		return fmt.Errorf("remove session %s: %w", path, err)
	}
	// Remove the transcript last: while it exists, the session is still listed and findable.
	if err := os.RemoveAll(SessionDir(path)); err != nil {
		return fmt.Errorf("remove session: %w", err)
	}
	if err := os.Remove(indexPath(path)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove session: %w", err)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("remove session: %w", err)
	}
	return nil
}
