package settings

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/trust"
)

// Scope is the kind of place a setting came from.
type Scope string

// The scopes, highest priority first. See [Sources] for the exact files.
const (
	ScopeManaged Scope = "managed" // system policy; nothing overrides it
	ScopeCLI     Scope = "cli"     // command-line flags and --settings
	ScopeLocal   Scope = "local"   // .keel/settings.local.json, .claude/settings.local.json
	ScopeProject Scope = "project" // .keel/settings.json, .claude/settings.json
	ScopeUser    Scope = "user"    // $KEEL_HOME/settings.json
)

// ProjectProvided reports whether files of this scope live in the workspace, so that what they
// configure to run (hooks) must wait until the workspace is trusted: a cloned repository must
// not run commands just because it was opened.
func (s Scope) ProjectProvided() bool { return s == ScopeLocal || s == ScopeProject }

// DefaultManagedPath is where administrators put the managed policy file.
const DefaultManagedPath = "/etc/keel/managed-settings.json"

// Source is one place settings are read from.
type Source struct {
	Scope Scope
	// Path is the file to read, or a label for settings that are not in a file ("--model",
	// "--settings").
	Path string
	// Inline, when non-nil, is the JSON document itself (--settings '{...}'); Path is a label.
	Inline []byte
	// Optional sources that do not exist are skipped silently; a missing --settings file is an
	// error.
	Optional bool
	// Untrusted marks a project or local file of a workspace the user has not trusted: its
	// keys that could widen what keel may do are skipped (see [Options.Trust]).
	Untrusted bool
	// flag marks a source made from a command-line flag: its positions mean nothing.
	flag bool
}

// Sources states the settings precedence: the sources Load reads, highest priority first.
// It is the only place the order is decided.
//
// Within a level keel's own file beats Claude Code's (.keel/settings.local.json over
// .claude/settings.local.json, .keel/settings.json over .claude/settings.json), because a
// project that has both wrote the .keel file for keel. Levels are not interleaved: a
// .claude/settings.local.json still beats .keel/settings.json, as local beats project in
// Claude Code. Flags beat --settings, and a later --settings beats an earlier one. Project and
// local sources are marked Untrusted unless the workspace is trusted ([trust.Decide]).
func Sources(opts Options) []Source {
	return sources(opts, opts.ProjectDir != "" && !trust.Decide(opts.Env.Home, opts.ProjectDir, opts.Trust))
}

// ProjectFiles are the settings files, relative to the project directory, that a project
// contributes: their hooks, MCP servers and permission rules run and grant, so the sandbox
// keeps each of them read-only.
func ProjectFiles() []string {
	root := string(filepath.Separator) + "project"
	var out []string
	for _, s := range sources(Options{ProjectDir: root}, false) {
		if rel, err := filepath.Rel(root, s.Path); (s.Scope == ScopeProject || s.Scope == ScopeLocal) && err == nil && filepath.IsLocal(rel) {
			out = append(out, rel)
		}
	}
	return out
}

func sources(opts Options, untrusted bool) []Source {
	var out []Source
	managed := opts.ManagedPath
	if managed == "" {
		managed = DefaultManagedPath
	}
	out = append(out, Source{Scope: ScopeManaged, Path: managed, Optional: true})
	out = append(out, opts.Flags.sources()...)
	for i := len(opts.SettingsArgs) - 1; i >= 0; i-- {
		arg := strings.TrimSpace(opts.SettingsArgs[i])
		if strings.HasPrefix(arg, "{") {
			out = append(out, Source{Scope: ScopeCLI, Path: "--settings", Inline: []byte(arg)})
		} else {
			out = append(out, Source{Scope: ScopeCLI, Path: arg})
		}
	}
	if opts.ProjectDir != "" {
		p, u := opts.ProjectDir, untrusted
		out = append(out,
			Source{Scope: ScopeLocal, Path: filepath.Join(p, ".keel", "settings.local.json"), Optional: true, Untrusted: u},
			Source{Scope: ScopeLocal, Path: filepath.Join(p, ".claude", "settings.local.json"), Optional: true, Untrusted: u},
			Source{Scope: ScopeProject, Path: filepath.Join(p, ".keel", "settings.json"), Optional: true, Untrusted: u},
			Source{Scope: ScopeProject, Path: filepath.Join(p, ".claude", "settings.json"), Optional: true, Untrusted: u},
		)
	}
	if opts.Env.Home != "" {
		out = append(out, Source{Scope: ScopeUser, Path: filepath.Join(opts.Env.Home, "settings.json"), Optional: true})
	}
	if opts.FileScopes != nil {
		out = slices.DeleteFunc(out, func(s Source) bool {
			return (s.Scope == ScopeUser || s.Scope == ScopeProject || s.Scope == ScopeLocal) && !slices.Contains(opts.FileScopes, s.Scope)
		})
	}
	return out
}

// Origin is where one value came from.
type Origin struct {
	Scope Scope  `json:"scope"`
	Path  string `json:"file"`
	Line  int    `json:"line,omitempty"`
	Col   int    `json:"column,omitempty"`
}

// String renders the origin as "scope path:line".
func (o Origin) String() string {
	if o.Line == 0 {
		return fmt.Sprintf("%s %s", o.Scope, o.Path)
	}
	return fmt.Sprintf("%s %s:%d", o.Scope, o.Path, o.Line)
}

// Severity says whether a problem dropped something.
type Severity string

// Severities.
const (
	// SeverityWarning: the value was kept or an unknown key ignored; nothing was lost.
	SeverityWarning Severity = "warning"
	// SeverityError: a value (or, for malformed JSON, the whole file) was not loaded.
	SeverityError Severity = "error"
)

// Problem is one thing wrong in a settings file, with its position.
type Problem struct {
	Severity Severity
	Path     string
	Line     int // 0 when the problem is the file as a whole
	Col      int
	Msg      string
}

// Error renders "path:line:col: msg", the form editors jump to.
func (p Problem) Error() string {
	switch {
	case p.Line == 0:
		return fmt.Sprintf("%s: %s", p.Path, p.Msg)
	case p.Col == 0:
		return fmt.Sprintf("%s:%d: %s", p.Path, p.Line, p.Msg)
	}
	return fmt.Sprintf("%s:%d:%d: %s", p.Path, p.Line, p.Col, p.Msg)
}
