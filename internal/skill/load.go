package skill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/sandbox"
)

// Options say where to look and how invocations behave. Environment lookups ($HOME,
// $KEEL_HOME) are the caller's job.
type Options struct {
	// Cwd is the working directory; required.
	Cwd string
	// ProjectRoot bounds the project directories searched; default: the nearest directory
	// above Cwd holding .git, else Cwd.
	ProjectRoot string
	// Home is the user's home directory, for ~/.claude and the default KeelHome; empty
	// disables the user level.
	Home string
	// KeelHome is $KEEL_HOME; default Home/.keel.
	KeelHome string
	// NoBundled leaves out the bundled skills; NoProject the project's own (.claude and .keel
	// folders from the project root down to Cwd).
	NoBundled bool
	NoProject bool
	// Prompts lists MCP prompts; nil means none.
	Prompts PromptSource
	// Plugins are the enabled plugins, in load order.
	Plugins []Plugin
	// AllowShell decides whether a "!" shell command in a body may run, given the entry's
	// allowed-tools; a non-nil error denies it and is shown in its place. Nil denies every
	// command: running shell from a file needs a permission check.
	AllowShell func(ctx context.Context, command string, allowedTools []string) error
	// BeforeShell, if set, is asked first about every "!" command of a trusted entry (the
	// PreSkillShellCommand hooks); a non-nil error keeps the command from running.
	BeforeShell func(ctx context.Context, cmd ShellCommand) error
	// UntrustedProject says the user has not trusted the workspace: its skills and commands
	// (project sources) are marked [Skill.Untrusted].
	UntrustedProject bool
	// Refuse, when set, says why a file must not be read into a prompt — a Read deny or ask
	// rule, a path the sandbox masks — or "" when it may be: an entry's own file and each
	// file its body mentions with @path are asked about, since keel reads them itself, not
	// through a Read call the rules decide. A refused mention is left out with a note.
	Refuse func(path string) string
	// ShellTimeout bounds one shell command; default 30s.
	ShellTimeout time.Duration
	// Sandbox runs the shell commands (!`cmd`) inside it, as Bash's; nil runs them without.
	Sandbox *sandbox.Sandbox
	// ListingBudget caps the listing in the system prompt, in bytes; default
	// DefaultListingBudget.
	ListingBudget int
	// Logger receives debug lines; nil discards.
	Logger *slog.Logger
}

// dirSpec is one directory to search, in priority order.
type dirSpec struct {
	dir    string
	kind   Kind
	source Source
}

// Load gathers skills and commands from every source (see the package comment for the
// order) and returns them with the problems found. A bad file never stops the load: it is
// reported and, when unusable, left out.
func Load(opts Options) (*Catalog, []Problem) {
	if opts.Cwd == "" {
		panic("skill: Options.Cwd is required")
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.KeelHome == "" && opts.Home != "" {
		opts.KeelHome = filepath.Join(opts.Home, ".keel")
	}
	if opts.ProjectRoot == "" {
		opts.ProjectRoot = findRoot(opts.Cwd)
	}
	c := &Catalog{opts: opts, byName: map[string]*Skill{}}
	var problems []Problem
	if !opts.NoBundled {
		for _, s := range bundledSkills() {
			c.add(s)
		}
	}
	for _, p := range opts.Plugins {
		found, probs := loadPlugin(opts.entries(), p)
		opts.Logger.Debug("plugin entries loaded", "plugin", p.Name, "found", len(found), "problems", len(probs))
		for _, s := range found {
			c.add(s)
		}
		problems = append(problems, probs...)
	}
	for _, d := range searchDirs(opts) {
		var found []Skill
		var probs []Problem
		if d.kind == KindSkill {
			found, probs = loadSkillDir(opts.entries(), d.dir, d.source)
		} else {
			found, probs = loadCommandDir(opts.entries(), d.dir, d.source)
		}
		opts.Logger.Debug("skill dir searched", "dir", d.dir, "found", len(found), "problems", len(probs))
		for _, s := range found {
			s.Untrusted = opts.UntrustedProject && (s.Source == SourceProject || s.Source == SourceClaudeProject)
			c.add(s)
		}
		problems = append(problems, probs...)
	}
	return c, problems
}

// searchDirs lists the directories to search, lowest priority first.
func searchDirs(opts Options) []dirSpec {
	var out []dirSpec
	level := func(base, vendor string, src Source) {
		out = append(out,
			dirSpec{filepath.Join(base, vendor, "commands"), KindCommand, src},
			dirSpec{filepath.Join(base, vendor, "skills"), KindSkill, src})
	}
	if opts.Home != "" {
		level(opts.Home, ".claude", SourceClaudeUser)
	}
	if opts.KeelHome != "" {
		out = append(out,
			dirSpec{filepath.Join(opts.KeelHome, "commands"), KindCommand, SourceUser},
			dirSpec{filepath.Join(opts.KeelHome, "skills"), KindSkill, SourceUser})
	}
	if opts.NoProject {
		return out
	}
	for _, dir := range projectDirs(opts.ProjectRoot, opts.Cwd) {
		level(dir, ".claude", SourceClaudeProject)
		level(dir, ".keel", SourceProject)
	}
	return out
}

// ProjectDirs are the folders, relative to a project directory, that Load reads skills and
// commands from — in the project's root and in every directory below it down to the working
// directory. A skill's allowed-tools grants tools and its ! lines run commands, so the sandbox
// keeps each of them read-only.
func ProjectDirs() []string {
	root := string(filepath.Separator) + "project"
	var out []string
	for _, d := range searchDirs(Options{Cwd: root, ProjectRoot: root}) {
		if rel, err := filepath.Rel(root, d.dir); err == nil && filepath.IsLocal(rel) {
			out = append(out, rel)
		}
	}
	return out
}

// findRoot returns the nearest directory at or above cwd holding .git, or cwd.
func findRoot(cwd string) string {
	for dir := cwd; ; {
		if _, err := os.Stat(filepath.Join(dir, ".git")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return cwd
		}
		dir = parent
	}
}

// projectDirs lists root and every directory below it down to cwd, outermost first. A cwd
// outside root gives just cwd.
func projectDirs(root, cwd string) []string {
	rel, err := filepath.Rel(root, cwd)
	if err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return []string{cwd}
	}
	dirs := []string{root}
	if rel == "." {
		return dirs
	}
	dir := root
	for _, part := range strings.Split(rel, string(filepath.Separator)) {
		dir = filepath.Join(dir, part)
		dirs = append(dirs, dir)
	}
	return dirs
}

// loadSkillDir loads every <dir>/<name>/SKILL.md.
func loadSkillDir(files entryFiles, dir string, src Source) ([]Skill, []Problem) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, []Problem{{Path: dir, Msg: "read skills directory: " + err.Error()}}
	}
	var out []Skill
	var problems []Problem
	for _, e := range entries {
		sub := filepath.Join(dir, e.Name())
		if st, err := os.Stat(sub); err != nil || !st.IsDir() { // follows symlinked skill folders
			continue
		}
		found, probs := loadOneSkill(files, sub, src)
		out = append(out, found...)
		problems = append(problems, probs...)
	}
	return out, problems
}

// loadOneSkill loads the skill folder dir (its SKILL.md); a folder without one holds no skill.
func loadOneSkill(files entryFiles, dir string, src Source) ([]Skill, []Problem) {
	path := filepath.Join(dir, "SKILL.md")
	data, err := files.read(path)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			return nil, []Problem{{Path: path, Msg: err.Error(), Skipped: true}}
		}
		return nil, nil
	}
	s, probs, ok := parseSkill(path, filepath.Base(dir), data, KindSkill, src)
	if !ok {
		return nil, probs
	}
	s.Dir = dir
	s.read = fileBody(path)
	return []Skill{s}, probs
}

// loadCommandDir loads every markdown file below dir; subdirectories namespace the name
// (frontend/component.md is frontend:component).
func loadCommandDir(files entryFiles, dir string, src Source) ([]Skill, []Problem) {
	if st, err := os.Stat(dir); err != nil || !st.IsDir() {
		return nil, nil
	}
	var out []Skill
	var problems []Problem
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			problems = append(problems, Problem{Path: path, Msg: err.Error()})
			return nil
		}
		if d.IsDir() || !strings.EqualFold(filepath.Ext(path), ".md") {
			return nil
		}
		rel, _ := filepath.Rel(dir, path)
		name := strings.ReplaceAll(filepath.ToSlash(strings.TrimSuffix(rel, filepath.Ext(rel))), "/", ":")
		data, err := files.read(path)
		if err != nil {
			problems = append(problems, Problem{Path: path, Msg: err.Error(), Skipped: true})
			return nil
		}
		s, probs, ok := parseSkill(path, name, data, KindCommand, src)
		problems = append(problems, probs...)
		if ok {
			s.read = fileBody(path)
			out = append(out, s)
		}
		return nil
	})
	if err != nil {
		problems = append(problems, Problem{Path: dir, Msg: "walk commands: " + err.Error()})
	}
	return out, problems
}

// parseSkill reads one file's frontmatter into a Skill. defName is the folder name (skills) or
// the path-derived name (commands). ok is false when the entry must be dropped.
func parseSkill(path, defName string, data []byte, kind Kind, src Source) (Skill, []Problem, bool) {
	p := splitFile(path, data)
	s := Skill{Kind: kind, Source: src, Path: path}
	problems := p.problems
	if err := p.fields(path, &s); err != nil {
		return Skill{}, append(problems, err.(Problem)), false
	}
	switch {
	case kind == KindCommand:
		// A command's name is its path, as in Claude Code; a frontmatter name is only kept.
		if s.Name != "" && s.Name != defName {
			if s.Extra == nil {
				s.Extra = map[string]any{}
			}
			s.Extra["name"] = s.Name
		}
		s.Name = defName
	case s.Name == "":
		s.Name = defName
	case strings.ContainsAny(s.Name, " \t/\\"):
		problems = append(problems, Problem{Path: path, Line: p.keyLine["name"],
			Msg: "name " + quote(s.Name) + " has spaces or slashes; using the folder name " + quote(defName)})
		s.Name = defName
	}
	if s.Description == "" {
		s.Description = firstText(p.body)
	}
	return s, problems, true
}

func quote(s string) string { return `"` + s + `"` }

// firstText is the first non-empty line of a body, without heading marks, at most 100
// characters: the description of a command that has none.
func firstText(body string) string {
	for line := range strings.SplitSeq(body, "\n") {
		line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#"))
		if line == "" || line == "---" {
			continue
		}
		return truncate(line, 100)
	}
	return ""
}

// entryFiles reads skill and command files, at discovery and at invocation alike. A file is
// resolved once; refuse judges it as written and as resolved (an entry may be a link a
// repository ships to a file a rule keeps from the model, and at discovery its first line
// would become the listed description of an entry that has none); then the resolved file is
// read as a regular file with no link on the way and no FIFO waited on
// ([atomicfile.ReadRegular]), so a command swapping it for a link after the check cannot
// have keel read where the link leads, and a FIFO left there cannot hold keel's start.
type entryFiles struct{ refuse func(path string) string }

func (o Options) entries() entryFiles { return entryFiles{refuse: o.Refuse} }

func (f entryFiles) read(path string) ([]byte, error) {
	real, err := filepath.EvalSymlinks(path)
	if err != nil {
		return nil, err
	}
	if f.refuse != nil {
		why := f.refuse(path)
		if why == "" && real != path {
			why = f.refuse(real)
		}
		if why != "" {
			return nil, fmt.Errorf("%s is not read: %s", path, why)
		}
	}
	return atomicfile.ReadWhole(real, maxEntryBytes)
}

// maxEntryBytes bounds a skill or command file; a larger one is a problem, not read.
const maxEntryBytes = 4 << 20

// fileBody returns a reader of the body of the file at path, re-read on every call so an
// edit made during the session applies on the next invocation.
func fileBody(path string) func() (string, error) {
	return func() (string, error) {
		data, err := os.ReadFile(path)
		if err != nil {
			return "", err
		}
		return splitFile(path, data).body, nil
	}
}

// add puts s into the catalog; a later entry of the same name replaces an earlier one. c.mu
// is not needed: add runs only during Load.
func (c *Catalog) add(s Skill) {
	if old, ok := c.byName[s.Name]; ok {
		s.Overrides = append([]string{old.Path}, old.Overrides...)
	}
	c.byName[s.Name] = &s
}

// sorted returns the file-based entries in name order.
func (c *Catalog) sorted() []*Skill {
	c.mu.RLock()
	defer c.mu.RUnlock()
	out := make([]*Skill, 0, len(c.byName))
	for _, s := range c.byName {
		out = append(out, s)
	}
	slices.SortFunc(out, func(a, b *Skill) int { return cmp.Compare(a.Name, b.Name) })
	return out
}
