// Package settings reads keel's settings files (and Claude Code's), merges them by precedence
// and remembers, for every value, the file and line it came from. [Sources] is the one place
// that states the precedence; [Load] reads them; [Settings.Render] shows the result with
// provenance for `keel config`.
//
// A bad file never disables the others: malformed JSON drops that file, an invalid value drops
// that value, and both are reported as [Problem]s naming file, line and the valid options.
// Unknown keys are kept and warned about. A session refuses to start while a file is
// [Settings.Unreadable] (its deny rules would be gone) unless told to ignore it.
package settings

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path"

	"github.com/keel-dev/keel/internal/trust"
)

// Options says where to look. The zero value reads only the managed file.
type Options struct {
	// Env supplies $KEEL_HOME for the user settings file.
	Env Env
	// ProjectDir is the project root holding .keel/ and .claude/; "" reads no project files.
	ProjectDir string
	// ManagedPath overrides DefaultManagedPath (tests).
	ManagedPath string
	// Flags are command-line flags that set keys.
	Flags Flags
	// SettingsArgs are the --settings values in command-line order: a file path, or a JSON
	// object when the value starts with "{".
	SettingsArgs []string
	// FileScopes, when not nil, limits the settings files read to these scopes (user,
	// project, local: --setting-sources); managed policy and the command line always apply.
	FileScopes []Scope
	// Trust says the user vouched for the workspace on this run (--trust, keel.Options.Trust).
	// Otherwise Load itself looks ProjectDir up in the trust records under Env.Home
	// ([trust.Decide]), so no caller can forget the question: until the workspace is trusted,
	// its project and local files may add deny and ask rules, but their widening keys
	// (permissions.allow, defaultMode, additionalDirectories, env, hooks, helper commands,
	// teams, coordination, webSearch, lspServers…: [WideningKeys]) are skipped and listed in
	// [Settings.Ignored]. User, managed and command-line settings are unaffected.
	Trust bool
}

// FileState says what Load did with a source.
type FileState string

// File states.
const (
	FileLoaded  FileState = "loaded"
	FileMissing FileState = "missing" // an optional file that does not exist
	FileBad     FileState = "bad"     // unreadable or malformed: nothing from it was used
)

// FileStatus is the fate of one source.
type FileStatus struct {
	Scope Scope     `json:"scope"`
	Path  string    `json:"file"`
	State FileState `json:"state"`
}

// Load reads every source of [Sources], highest priority first, and merges them. It returns an
// error only for problems of severity error, joined, after loading all that could be loaded;
// the returned Settings is always usable.
func Load(opts Options) (*Settings, error) {
	s := &Settings{Trusted: opts.ProjectDir == "" || trust.Decide(opts.Env.Home, opts.ProjectDir, opts.Trust)}
	for _, src := range sources(opts, !s.Trusted) {
		s.Files = append(s.Files, FileStatus{Scope: src.Scope, Path: src.Path, State: s.loadSource(src)})
	}
	return s, s.Err()
}

// Unreadable returns the problems of the files that could not be read or parsed at all: every
// value in them — deny rules included — is missing from the merged settings.
func (s *Settings) Unreadable() []Problem {
	bad := map[string]bool{}
	for _, f := range s.Files {
		if f.State == FileBad {
			bad[f.Path] = true
		}
	}
	var out []Problem
	for _, p := range s.Problems {
		if bad[p.Path] && p.Severity == SeverityError {
			out = append(out, p)
		}
	}
	return out
}

// Err joins the problems of severity error, or returns nil.
func (s *Settings) Err() error {
	var errs []error
	for _, p := range s.Problems {
		if p.Severity == SeverityError {
			errs = append(errs, p)
		}
	}
	return errors.Join(errs...)
}

func (s *Settings) loadSource(src Source) FileState {
	data := src.Inline
	if data == nil {
		var err error
		data, err = os.ReadFile(src.Path)
		switch {
		case errors.Is(err, fs.ErrNotExist) && src.Optional:
			return FileMissing
		case err != nil && src.Optional && StandIn(src.Path):
			// The sandbox's stand-in for an absent settings file while a command runs (or
			// left behind by a keel that was killed meanwhile): no settings.
			return FileMissing
		case err != nil:
			s.Problems = append(s.Problems, Problem{Severity: SeverityError, Path: src.Path,
				Msg: fmt.Sprintf("read %s settings: %v", src.Scope, err)})
			return FileBad
		}
	}
	if err := s.apply(src, data); err != nil {
		return FileBad
	}
	return FileLoaded
}

// apply merges one document below every source applied before it.
func (s *Settings) apply(src Source, data []byte) error {
	data = bytes.TrimPrefix(data, []byte("\xef\xbb\xbf"))
	f := &fileCtx{src: src, data: data, problems: &s.Problems}
	if len(bytes.TrimSpace(data)) == 0 {
		return nil // an empty file sets nothing
	}
	root, err := parseTree(data)
	if err != nil {
		f.errorf(errOffset(err), "%v (file ignored)", err)
		return err
	}
	if root.kind != kindObject {
		f.errorf(root.off, "settings are %s, want a JSON object (file ignored)", root.kind)
		return errors.New("not an object")
	}
	applyMembers(s, f, "", root, keyTable.Get())
	return nil
}

// CacheTTL1hFor reports whether requests from querySource ("main", "sdk", "agent:reviewer")
// should ask for the one-hour cache lifetime.
func (s *Settings) CacheTTL1hFor(querySource string) bool {
	for _, p := range s.CacheTTL1h {
		if ok, _ := path.Match(p.V, querySource); ok {
			return true
		}
	}
	return false
}

// StandIn reports whether path is an empty directory: what keel's sandbox holds in place of
// an absent protected file (a settings file, .mcp.json, .claude/) while a command runs, so
// that the command cannot create it — or what a killed keel left behind. keel's readers take
// it for absent.
func StandIn(path string) bool {
	entries, err := os.ReadDir(path)
	return err == nil && len(entries) == 0
}
