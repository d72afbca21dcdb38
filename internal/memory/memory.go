// Package memory finds and reads the instruction files keel puts into the system prompt:
// managed (system-wide), user, project (from the repository root down to the working
// directory) and local private files, with their @path includes and path-scoped rules.
//
// Loading never fails a session: an unreadable, binary, oversized or malformed file becomes a
// [Warning] naming the file, and the rest still loads.
package memory

import (
	"fmt"
	"log/slog"
	"path/filepath"
	"runtime"
	"sync"
)

// Kind says where a memory file comes from; it decides its priority and how the prompt
// describes it. Files included with @path take the kind of the file that included them.
type Kind string

// The kinds, lowest priority first.
const (
	KindManaged Kind = "managed"
	KindUser    Kind = "user"
	KindProject Kind = "project"
	KindLocal   Kind = "local"
	// KindAuto is the index of the project's auto memory ([Auto]): not loaded by [Load] but
	// listed beside the loaded files, so whatever shows memory shows the notes too.
	KindAuto Kind = "auto"
)

// SDKType names the kind as the Agent SDK does (User, Project, Local, Managed, AutoMem): in
// InstructionsLoaded hooks' memory_type and the context usage's memory files.
func (k Kind) SDKType() string {
	switch k {
	case KindUser:
		return "User"
	case KindLocal:
		return "Local"
	case KindManaged:
		return "Managed"
	case KindAuto:
		return "AutoMem"
	}
	return "Project"
}

// Defaults for [Options].
const (
	// DefaultWarnChars is the total size, in characters, past which loading warns: every
	// character of memory is sent with every request.
	DefaultWarnChars = 40_000
	// DefaultMaxFileBytes is how much of one file is read; the rest is cut with a warning.
	DefaultMaxFileBytes = 256 << 10
	// MaxIncludeDepth bounds include chains, so a deep (acyclic) chain cannot run away.
	MaxIncludeDepth = 5
)

// File is one loaded memory file.
type File struct {
	// Path is the cleaned absolute path.
	Path string `json:"path"`
	// Display is how the file is named to the model and the user: relative to the working
	// directory when inside the project, "~/…" under the home directory, else absolute. It
	// never contains a temporary directory of the session, so prompts stay byte-stable.
	Display string `json:"display"`
	Kind    Kind   `json:"kind"`
	// Rule is set for files from a rules directory (.keel/rules, .claude/rules).
	Rule bool `json:"rule,omitempty"`
	// Globs are the rule's `paths:` patterns; a rule with globs loads only once a matching
	// file is touched (see [Set.Touch]).
	Globs []string `json:"paths,omitempty"`
	// Chain lists the Display names of the files that included this one, outermost first;
	// empty for a file found by discovery.
	Chain []string `json:"includedBy,omitempty"`
	// Size is the file's size on disk in bytes.
	Size int64 `json:"size"`
	// Truncated says Content holds only the first part of the file.
	Truncated bool `json:"truncated,omitempty"`
	// Content is the text (a rule's frontmatter removed). @mentions stay as written.
	Content string `json:"-"`

	base string // directory a rule's globs are relative to
}

// Warning is a problem with one file that did not stop loading.
type Warning struct {
	Path    string `json:"path,omitempty"` // Display name; empty for a warning about the total
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

func (w Warning) String() string {
	switch {
	case w.Path == "":
		return w.Message
	case w.Line > 0:
		return fmt.Sprintf("%s:%d: %s", w.Path, w.Line, w.Message)
	}
	return w.Path + ": " + w.Message
}

// Options says where to look. Environment lookups ($HOME, $KEEL_HOME) are the caller's job.
type Options struct {
	// Cwd is the working directory; required.
	Cwd string
	// Home is the user's home directory, for "~/" includes, ~/.claude/CLAUDE.md and the
	// default KeelHome. Empty disables them.
	Home string
	// KeelHome is the user's keel directory ($KEEL_HOME); default Home/.keel.
	KeelHome string
	// ManagedPath is the system-wide instructions file; default [DefaultManagedPath]. "-"
	// disables it.
	ManagedPath string
	// MaxFileBytes caps one file; default DefaultMaxFileBytes.
	MaxFileBytes int
	// WarnChars is the total past which loading warns; default DefaultWarnChars.
	WarnChars int
	// ExternalIncludes lets project and local files (the workspace's own) reach outside the
	// project root: an @include or a symlinked memory file that resolves there. Set it for a
	// trusted workspace; until then such files are not read and are listed by
	// [Set.External], so a cloned repository cannot send ~/.ssh/id_rsa to the model. User
	// and managed files are never limited.
	ExternalIncludes bool
	// Refuse, when set, says why a file must not be read into the prompt — a Read deny or ask
	// rule, a path the sandbox masks — or "" when it may be. Every file is asked about, found
	// or included, as written and with its links resolved: a memory file is read by keel
	// itself, so without it an `@secrets/token` a command wrote into CLAUDE.md would send the
	// masked file to the model. A refused file is listed by [Set.Excluded] with a warning.
	Refuse func(path string) string
	// RefuseInclude, when set, says why the file from may not include target, beyond what
	// Refuse says of target alone, or "". It is asked for each include, as written and with
	// its links resolved: a memory file a sandboxed command can write must not reach what the
	// sandbox hides from that command, though the same file is fine to include from elsewhere.
	RefuseInclude func(from, target string) string
	// Logger receives debug lines for skipped candidates; nil discards.
	Logger *slog.Logger
}

// External is a file a project or local memory file reaches outside the project, not read
// because the workspace is not trusted.
type External struct {
	// From is the Display name of the file that names it, Line the line (0 for a memory file
	// that is itself a symlink leading out).
	From string
	Line int
	// Target is the Display name of the file outside.
	Target string
}

func (e External) String() string {
	if e.Line == 0 {
		return e.From + " (a link to " + e.Target + ")"
	}
	return fmt.Sprintf("%s:%d includes %s", e.From, e.Line, e.Target)
}

// Excluded is a file that was not read because [Options.Refuse] refused it.
type Excluded struct {
	// From is the Display name of the file that includes it and Line the line; both empty
	// for a memory file found by discovery.
	From string `json:"from,omitempty"`
	Line int    `json:"line,omitempty"`
	// Target is the Display name of the file left out, Why what refused it.
	Target string `json:"path"`
	Why    string `json:"why"`
}

func (e Excluded) String() string {
	if e.From == "" {
		return e.Target + ": " + e.Why
	}
	return fmt.Sprintf("%s:%d includes %s: %s", e.From, e.Line, e.Target, e.Why)
}

// DefaultManagedPath is where an administrator puts instructions for every user of a machine.
func DefaultManagedPath() string {
	switch runtime.GOOS {
	case "darwin":
		return "/Library/Application Support/keel/KEEL.md"
	case "windows":
		return `C:\ProgramData\keel\KEEL.md`
	}
	return "/etc/keel/KEEL.md"
}

// Set is the result of [Load]: the files in priority order (lowest first), warnings, and the
// path-scoped rules not yet triggered. It is safe for concurrent use.
type Set struct {
	// Root is the project root: the nearest directory upward holding .git, else Cwd.
	Root string

	loader *loader

	// mu guards files, pending, warnings, external and excluded.
	mu       sync.Mutex
	files    []File
	pending  []File
	warnings []Warning
	external []External
	excluded []Excluded
}

// Excluded returns the files [Options.Refuse] kept out, in the order met.
func (s *Set) Excluded() []Excluded {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Excluded(nil), s.excluded...)
}

// External returns the files outside the project that project and local files name but that
// were not read ([Options.ExternalIncludes] unset), in the order met.
func (s *Set) External() []External {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]External(nil), s.external...)
}

// Files returns the loaded files in order, lowest priority first.
func (s *Set) Files() []File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]File(nil), s.files...)
}

// Pending returns the path-scoped rules that have not matched a touched file yet.
func (s *Set) Pending() []File {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]File(nil), s.pending...)
}

// Warnings returns the problems met while loading, in the order met.
func (s *Set) Warnings() []Warning {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Warning(nil), s.warnings...)
}

// Touch tells the set that the agent read or changed paths (absolute, or relative to Cwd). It
// returns the rules (and the files they include) that apply for the first time, in discovery
// order, and adds them to Files. A rule is returned once per Set.
func (s *Set) Touch(paths []string) []File {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []File
	keep := s.pending[:0:0]
	for _, rule := range s.pending {
		if !matchesAny(rule, paths, s.loader.opts.Cwd) {
			keep = append(keep, rule)
			continue
		}
		s.loader.files = nil
		s.loader.warnings = nil
		s.loader.external = nil
		s.loader.excluded = nil
		s.loader.expand(rule, nil)
		out = append(out, s.loader.files...)
		s.warnings = append(s.warnings, s.loader.warnings...)
		s.external = append(s.external, s.loader.external...)
		s.excluded = append(s.excluded, s.loader.excluded...)
	}
	s.pending = keep
	s.files = append(s.files, out...)
	return out
}

// Load discovers and reads the memory files for opts.Cwd. It returns an error only for
// unusable options; problems with files are warnings on the Set.
func Load(opts Options) (*Set, error) {
	if opts.Cwd == "" {
		return nil, fmt.Errorf("load memory: no working directory")
	}
	cwd, err := filepath.Abs(opts.Cwd)
	if err != nil {
		return nil, fmt.Errorf("load memory: %w", err)
	}
	opts.Cwd = filepath.Clean(cwd)
	if opts.KeelHome == "" && opts.Home != "" {
		opts.KeelHome = filepath.Join(opts.Home, ".keel")
	}
	if opts.ManagedPath == "" {
		opts.ManagedPath = DefaultManagedPath()
	}
	if opts.MaxFileBytes <= 0 {
		opts.MaxFileBytes = DefaultMaxFileBytes
	}
	if opts.WarnChars <= 0 {
		opts.WarnChars = DefaultWarnChars
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	root := findRoot(opts.Cwd)
	l := &loader{opts: opts, root: root, seen: map[string]bool{}}
	for _, c := range l.candidates() {
		l.loadCandidate(c)
	}
	s := &Set{Root: root, loader: l, files: l.files, pending: l.pending, warnings: l.warnings, external: l.external, excluded: l.excluded}
	if w, ok := totalWarning(l.files, opts.WarnChars); ok {
		s.warnings = append(s.warnings, w)
	}
	return s, nil
}
