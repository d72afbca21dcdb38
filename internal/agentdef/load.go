package agentdef

import (
	"context"
	"errors"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Options says where Load looks. Every directory is optional: a missing one is skipped.
type Options struct {
	// ProjectDir is the project root; .keel/agents and the other harnesses' folders are read
	// below it.
	ProjectDir string
	// HomeDir is the user's home, for ~/.claude/agents, ~/.gemini/agents, ~/.codex and
	// ~/.config/opencode.
	HomeDir string
	// KeelHome is keel's user directory ($KEEL_HOME); its agents folder is the user source.
	// Empty means HomeDir/.keel.
	KeelHome string
	// Plugins are the enabled plugins' agent folders, in load order.
	Plugins []Plugin
	// CLIAgents is the value of the --agents flag (JSON), or empty.
	CLIAgents string
	// ManagedDir holds agents set by managed policy; they override every other source.
	ManagedDir string
	// NoCompat skips the folders of other harnesses (.claude, .gemini, .codex, .opencode).
	NoCompat bool
	// Logger receives debug records; nil discards.
	Logger *slog.Logger
}

// Plugin is one plugin's agents folder, or one agent file of it. Its agents are named
// "<Name>:<agent>" so that two plugins cannot collide with each other or with the user's
// agents.
type Plugin struct {
	Name string
	Dir  string
}

// layout is how a folder holds its definitions.
type layout int

const (
	layoutTree     layout = iota // *.md and *.json files, in sub-folders too
	layoutFlat                   // *.md files directly in the folder
	layoutCodex                  // config.toml with [agents.*] plus agents/*.toml
	layoutOpencode               // *.md files in sub-folders, named by their path
)

// location is one place definitions are read from.
type location struct {
	source Source
	format Format
	dir    string
	layout layout
	prefix string // plugin namespace
}

// locations states the precedence of every folder, lowest first; a later definition of a name
// overrides an earlier one. Between sources the order is: built-in, plugin, user,
// project, CLI (--agents), managed. Within the user and project sources the other harnesses'
// folders come first and keel's own last, so a .keel definition always wins; among the others
// .claude wins over .gemini, .codex and .opencode, because Claude Code's format is keel's own
// and maps without loss, while the others lose fields in translation.
func locations(o Options) []location {
	var locs []location
	for _, p := range o.Plugins {
		locs = append(locs, location{SourcePlugin, FormatKeel, p.Dir, layoutTree, p.Name})
	}
	compat := func(source Source, root string, opencode ...string) {
		if o.NoCompat || root == "" {
			return
		}
		for _, dir := range opencode {
			locs = append(locs, location{source, FormatOpencode, filepath.Join(root, dir), layoutOpencode, ""})
		}
		locs = append(locs,
			location{source, FormatCodex, filepath.Join(root, ".codex"), layoutCodex, ""},
			location{source, FormatGemini, filepath.Join(root, ".gemini", "agents"), layoutFlat, ""},
			location{source, FormatKeel, filepath.Join(root, ".claude", "agents"), layoutTree, ""},
		)
	}
	compat(SourceUser, o.HomeDir, filepath.Join(".config", "opencode", "agent"), filepath.Join(".config", "opencode", "agents"))
	keelHome := o.KeelHome
	if keelHome == "" && o.HomeDir != "" {
		keelHome = filepath.Join(o.HomeDir, ".keel")
	}
	if keelHome != "" {
		locs = append(locs, location{SourceUser, FormatKeel, filepath.Join(keelHome, "agents"), layoutTree, ""})
	}
	compat(SourceProject, o.ProjectDir, filepath.Join(".opencode", "agent"), filepath.Join(".opencode", "agents"))
	if o.ProjectDir != "" {
		locs = append(locs, location{SourceProject, FormatKeel, filepath.Join(o.ProjectDir, ".keel", "agents"), layoutTree, ""})
	}
	return locs
}

// ProjectDirs are the folders, relative to the project directory, that Load reads the
// project's definitions from, the other harnesses' included: a definition carries hooks and
// MCP servers keel runs, so the sandbox keeps each of them read-only.
func ProjectDirs() []string {
	root := string(filepath.Separator) + "project"
	var out []string
	for _, l := range locations(Options{ProjectDir: root}) {
		if rel, err := filepath.Rel(root, l.dir); l.source == SourceProject && err == nil && filepath.IsLocal(rel) {
			out = append(out, rel)
		}
	}
	return out
}

// CLIPath is the Path of definitions given with --agents.
const CLIPath = "--agents"

// Load reads every source, lowest precedence first, and returns the merged set. Problems in a
// file are diagnostics in the set, never a reason to stop: the good definitions are always
// returned. The error is non-nil only when ctx ends first.
func Load(ctx context.Context, o Options) (*Set, error) {
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var defs []*Definition
	var diags []Diagnostic
	add := func(source Source, prefix string, ds []*Definition, dg []Diagnostic) {
		for _, d := range ds {
			d.Source = source
			if prefix != "" {
				d.Name = prefix + ":" + d.Name
				d.Plugin = prefix
			}
		}
		defs = append(defs, ds...)
		diags = append(diags, dg...)
	}
	add(SourceBuiltin, "", Builtins(), nil)
	locs := locations(o)
	for _, loc := range locs {
		ds, dg, err := loc.read(ctx)
		if err != nil {
			return nil, err
		}
		add(loc.source, loc.prefix, ds, dg)
	}
	if strings.TrimSpace(o.CLIAgents) != "" {
		ds, dg := ParseJSON(CLIPath, []byte(o.CLIAgents))
		add(SourceCLI, "", ds, dg)
	}
	if o.ManagedDir != "" {
		loc := location{SourceManaged, FormatKeel, o.ManagedDir, layoutTree, ""}
		ds, dg, err := loc.read(ctx)
		if err != nil {
			return nil, err
		}
		add(loc.source, "", ds, dg)
	}
	set := NewSet(defs)
	set.diags = diags
	logger.Debug("agents loaded", "definitions", len(defs), "active", len(set.active), "problems", len(diags))
	return set, nil
}

// read parses every definition file of one location.
func (l location) read(ctx context.Context) ([]*Definition, []Diagnostic, error) {
	if l.dir == "" {
		return nil, nil, nil
	}
	if l.layout == layoutCodex {
		return readCodexDir(ctx, l.dir)
	}
	files, diag := l.files()
	var defs []*Definition
	diags := diag
	for _, path := range files {
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			diags = append(diags, Diagnostic{Path: path, Severity: SeverityError, Message: "read: " + err.Error()})
			continue
		}
		var def *Definition
		var dg []Diagnostic
		switch {
		case l.layout == layoutOpencode:
			def, dg = parseOpencode(path, data, opencodeName(l.dir, path))
		case l.format == FormatGemini:
			def, dg = parseGemini(path, data)
		case strings.EqualFold(filepath.Ext(path), ".json"):
			def, dg = parseJSONFile(path, data)
		default:
			def, dg = ParseMarkdown(path, data)
		}
		diags = append(diags, dg...)
		if def != nil {
			defs = append(defs, def)
		}
	}
	return defs, diags, nil
}

// files lists a location's definition files in a stable order.
func (l location) files() ([]string, []Diagnostic) {
	exts := []string{".md"}
	if l.layout == layoutTree {
		exts = append(exts, ".json")
	}
	want := func(name string) bool { return slices.Contains(exts, strings.ToLower(filepath.Ext(name))) }
	var files []string
	var diags []Diagnostic
	if st, err := os.Stat(l.dir); err == nil && st.Mode().IsRegular() {
		return []string{l.dir}, nil // a plugin that names its agent files one by one
	}
	if l.layout == layoutFlat {
		entries, err := os.ReadDir(l.dir)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			diags = append(diags, Diagnostic{Path: l.dir, Severity: SeverityError, Message: "read folder: " + err.Error()})
		}
		for _, e := range entries {
			if !e.IsDir() && want(e.Name()) {
				files = append(files, filepath.Join(l.dir, e.Name()))
			}
		}
		return files, diags
	}
	err := filepath.WalkDir(l.dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			if errors.Is(err, fs.ErrNotExist) && path == l.dir {
				return fs.SkipAll
			}
			diags = append(diags, Diagnostic{Path: path, Severity: SeverityError, Message: "read folder: " + err.Error()})
			return nil
		}
		if !e.IsDir() && want(e.Name()) {
			files = append(files, path)
		}
		return nil
	})
	if err != nil {
		diags = append(diags, Diagnostic{Path: l.dir, Severity: SeverityError, Message: "read folder: " + err.Error()})
	}
	return files, diags
}

// readCodexDir reads a .codex folder: the roles registered in config.toml, then the role files
// in agents/ that config.toml does not claim.
func readCodexDir(ctx context.Context, dir string) ([]*Definition, []Diagnostic, error) {
	var defs []*Definition
	var diags []Diagnostic
	claimed := map[string]bool{}
	config := filepath.Join(dir, "config.toml")
	if data, err := os.ReadFile(config); err == nil {
		roles, dg := codexConfigRoles(config, data)
		diags = append(diags, dg...)
		for _, r := range roles {
			if err := ctx.Err(); err != nil {
				return nil, nil, err
			}
			claimed[filepath.Clean(r.path)] = true
			def, dg := readCodexRole(config, r)
			diags = append(diags, dg...)
			if def != nil {
				defs = append(defs, def)
			}
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		diags = append(diags, Diagnostic{Path: config, Severity: SeverityError, Message: "read: " + err.Error()})
	}
	agents := filepath.Join(dir, "agents")
	entries, err := os.ReadDir(agents)
	if err != nil && !errors.Is(err, fs.ErrNotExist) {
		diags = append(diags, Diagnostic{Path: agents, Severity: SeverityError, Message: "read folder: " + err.Error()})
	}
	for _, e := range entries {
		path := filepath.Join(agents, e.Name())
		if e.IsDir() || filepath.Ext(e.Name()) != ".toml" || claimed[path] {
			continue
		}
		if err := ctx.Err(); err != nil {
			return nil, nil, err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			diags = append(diags, Diagnostic{Path: path, Severity: SeverityError, Message: "read: " + err.Error()})
			continue
		}
		def, dg := parseCodexRole(codexRole{path: path, fromFile: true}, data)
		diags = append(diags, dg...)
		if def != nil {
			defs = append(defs, def)
		}
	}
	return defs, diags, nil
}
