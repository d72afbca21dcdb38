// Package trust records which project directories the user trusts. Until a workspace is
// trusted, nothing it provides runs: a cloned repository must not execute its hooks just
// because keel was started in it. Trust is per directory (exact match, after resolving
// symlinks) so trusting a parent does not silently trust every project below it.
package trust

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// FileName is the trust record's name under $KEEL_HOME.
const FileName = "trusted-projects.json"

type record struct {
	Projects map[string]entry `json:"projects"`
}

type entry struct {
	TrustedAt time.Time `json:"trustedAt"`
}

// canonical resolves dir to an absolute path without symlinks, so one project has one key.
func canonical(dir string) (string, error) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("resolve %s: %w", dir, err)
	}
	return real, nil
}

func read(home string) (record, error) {
	r := record{Projects: map[string]entry{}}
	data, err := os.ReadFile(filepath.Join(home, FileName))
	if errors.Is(err, fs.ErrNotExist) {
		return r, nil
	}
	if err != nil {
		return r, fmt.Errorf("read trust record: %w", err)
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return r, fmt.Errorf("read trust record %s: %w", filepath.Join(home, FileName), err)
	}
	if r.Projects == nil {
		r.Projects = map[string]entry{}
	}
	return r, nil
}

// IsTrusted reports whether dir was granted trust under home ($KEEL_HOME). A damaged record is
// an error, which callers must treat as untrusted.
func IsTrusted(home, dir string) (bool, error) {
	key, err := canonical(dir)
	if err != nil {
		return false, err
	}
	r, err := read(home)
	if err != nil {
		return false, err
	}
	_, ok := r.Projects[key]
	return ok, nil
}

// Decide is the one trust rule every command applies: a workspace is trusted when the user
// vouched for it on this run (granted: --trust, keel.Options.Trust) or recorded trust in it
// under home. Without a keel home, or with a damaged record, it is untrusted: a record read
// from anywhere else (the project's own directory) would let a project trust itself.
func Decide(home, dir string, granted bool) bool {
	if granted {
		return true
	}
	if home == "" || dir == "" {
		return false
	}
	ok, err := IsTrusted(home, dir)
	return err == nil && ok
}

// Grant records trust in dir under home, creating home if needed. Concurrent grants from two
// processes may lose one of them (last rename wins); the record itself is never torn.
func Grant(home, dir string) error {
	return update(home, dir, func(r *record, key string) {
		r.Projects[key] = entry{TrustedAt: time.Now().UTC()}
	})
}

// Revoke removes trust in dir; revoking an untrusted dir is not an error.
func Revoke(home, dir string) error {
	return update(home, dir, func(r *record, key string) { delete(r.Projects, key) })
}

func update(home, dir string, change func(*record, string)) error {
	key, err := canonical(dir)
	if err != nil {
		return err
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("create keel home: %w", err)
	}
	r, err := read(home)
	if err != nil {
		return err
	}
	change(&r, key)
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode trust record: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(home, FileName), append(data, '\n'), 0o600)
}
