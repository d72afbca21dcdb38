package tui

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	tea "charm.land/bubbletea/v2"
)

// /init reads the project — its build files, the commands its CI runs, its layout, its README
// and its tool configuration — and writes a KEEL.md from what it found, for the user to
// complete.

func (m *Model) cmdInit(string) tea.Cmd {
	path, err := writeProjectMemory(m.cwd)
	if err != nil {
		m.errorf("could not write the memory file: " + err.Error())
		return nil
	}
	m.notice("wrote " + path + " from the project's files; read it over and add what only you know (conventions, things to avoid)")
	return nil
}

// projectFacts is what /init found.
type projectFacts struct {
	name, summary string
	// commands are "what: command (where it comes from)" lines.
	commands []string
	ci       []string
	layout   []string
	tools    []string
	memory   []string
}

// writeProjectMemory writes KEEL.md in dir from the project's files; an existing one is left.
func writeProjectMemory(dir string) (string, error) {
	path := filepath.Join(dir, "KEEL.md")
	if _, err := os.Stat(path); err == nil {
		return "", errors.New(path + " already exists; not overwriting it")
	}
	text := projectMemory(readProject(dir))
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		return "", fmt.Errorf("write %s: %w", path, err)
	}
	return path, nil
}

func readProject(dir string) projectFacts {
	f := projectFacts{name: filepath.Base(dir), summary: readmeSummary(dir)}
	f.commands = buildCommands(dir)
	f.ci = ciCommands(dir)
	f.layout = layout(dir)
	for _, c := range []struct{ file, what string }{
		{".editorconfig", "editor settings in .editorconfig"}, {".golangci.yml", "golangci-lint (.golangci.yml)"},
		{".golangci.yaml", "golangci-lint (.golangci.yaml)"}, {".eslintrc.json", "ESLint (.eslintrc.json)"},
		{"eslint.config.js", "ESLint (eslint.config.js)"}, {".prettierrc", "Prettier (.prettierrc)"},
		{"rustfmt.toml", "rustfmt (rustfmt.toml)"}, {".pre-commit-config.yaml", "pre-commit hooks (.pre-commit-config.yaml)"},
		{"ruff.toml", "Ruff (ruff.toml)"}, {"tsconfig.json", "TypeScript (tsconfig.json)"},
	} {
		if exists(dir, c.file) {
			f.tools = append(f.tools, c.what)
		}
	}
	for _, name := range []string{"CLAUDE.md", "AGENTS.md", ".cursorrules", "CONTRIBUTING.md"} {
		if exists(dir, name) {
			f.memory = append(f.memory, name)
		}
	}
	return f
}

func projectMemory(f projectFacts) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# %s\n\nNotes for keel about this project, written by /init from the project's files. keel reads this file at the start of every session; keep it short and true.\n\n", f.name)
	if f.summary != "" {
		b.WriteString(f.summary + "\n\n")
	}
	b.WriteString("## Commands\n\n")
	if len(f.commands) == 0 {
		b.WriteString("- (no build file found: say how to build and test)\n")
	}
	for _, c := range f.commands {
		b.WriteString("- " + c + "\n")
	}
	if len(f.ci) > 0 {
		b.WriteString("\nWhat CI runs:\n\n")
		for _, c := range f.ci {
			b.WriteString("- `" + c + "`\n")
		}
	}
	b.WriteString("\n## Layout\n\n")
	for _, l := range f.layout {
		b.WriteString("- " + l + "\n")
	}
	b.WriteString("\n## Conventions\n\n")
	for _, t := range f.tools {
		b.WriteString("- Follow " + t + ".\n")
	}
	b.WriteString("- (code style, naming, what to avoid)\n")
	if len(f.memory) > 0 {
		fmt.Fprintf(&b, "\n## See also\n\n- %s: more notes for agents and contributors.\n", strings.Join(f.memory, ", "))
	}
	return b.String()
}

// buildCommands are the build, test and lint commands the build files define.
func buildCommands(dir string) []string {
	var out []string
	add := func(what, cmd, from string) { out = append(out, fmt.Sprintf("%s: `%s` (%s)", what, cmd, from)) }
	if exists(dir, "go.mod") {
		add("Build", "go build ./...", "go.mod")
		add("Test", "go test ./...", "go.mod")
		add("Vet", "go vet ./...", "go.mod")
	}
	if scripts := packageScripts(dir); len(scripts) > 0 {
		runner := "npm run"
		switch {
		case exists(dir, "pnpm-lock.yaml"):
			runner = "pnpm"
		case exists(dir, "yarn.lock"):
			runner = "yarn"
		case exists(dir, "bun.lockb"), exists(dir, "bun.lock"):
			runner = "bun run"
		}
		for _, s := range scripts {
			add(strings.ToUpper(s[:1])+s[1:], runner+" "+s, "package.json")
		}
	}
	if exists(dir, "Cargo.toml") {
		add("Build", "cargo build", "Cargo.toml")
		add("Test", "cargo test", "Cargo.toml")
		add("Lint", "cargo clippy", "Cargo.toml")
	}
	if exists(dir, "pyproject.toml") || exists(dir, "setup.py") || exists(dir, "requirements.txt") {
		run := ""
		if exists(dir, "uv.lock") {
			run = "uv run "
		} else if exists(dir, "poetry.lock") {
			run = "poetry run "
		}
		add("Test", run+"pytest", firstExisting(dir, "pyproject.toml", "setup.py", "requirements.txt"))
	}
	for _, t := range makeTargets(dir) {
		add("make "+t, "make "+t, "Makefile")
	}
	if exists(dir, "pom.xml") {
		add("Test", "mvn test", "pom.xml")
	}
	if exists(dir, "build.gradle") || exists(dir, "build.gradle.kts") {
		add("Test", "./gradlew test", "build.gradle")
	}
	return out
}

// packageScripts are the usual scripts of package.json.
func packageScripts(dir string) []string {
	b, err := os.ReadFile(filepath.Join(dir, "package.json"))
	if err != nil {
		return nil
	}
	var pkg struct {
		Scripts map[string]string `json:"scripts"`
	}
	if json.Unmarshal(b, &pkg) != nil {
		return nil
	}
	var out []string
	for _, s := range []string{"build", "dev", "start", "test", "lint", "typecheck", "format"} {
		if _, ok := pkg.Scripts[s]; ok {
			out = append(out, s)
		}
	}
	return out
}

var makeTargetRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^([A-Za-z][A-Za-z0-9_-]*):`) })

// makeTargets are the Makefile's targets a person runs: build, test, lint and the like.
func makeTargets(dir string) []string {
	f, err := os.Open(filepath.Join(dir, "Makefile"))
	if err != nil {
		return nil
	}
	defer f.Close()
	wanted := []string{"all", "build", "test", "check", "lint", "fmt", "format", "vet", "run", "install"}
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if m := makeTargetRE().FindStringSubmatch(sc.Text()); m != nil && slices.Contains(wanted, m[1]) && !slices.Contains(out, m[1]) {
			out = append(out, m[1])
		}
	}
	return out
}

var (
	runLineRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^\s*(?:-\s*)?run:\s*(.+)$`) })
	ciWordRE  = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)test|lint|vet|build|check`) })
)

// ciCommands are the one-line commands GitHub Actions workflows run that build, test or lint.
func ciCommands(dir string) []string {
	files, _ := filepath.Glob(filepath.Join(dir, ".github", "workflows", "*.y*ml"))
	var out []string
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(b), "\n") {
			m := runLineRE().FindStringSubmatch(line)
			if m == nil || m[1] == "|" || m[1] == ">" {
				continue
			}
			cmd := strings.Trim(strings.TrimSpace(m[1]), `"'`)
			if ciWordRE().MatchString(cmd) && !slices.Contains(out, cmd) && len(out) < 8 {
				out = append(out, cmd)
			}
		}
	}
	return out
}

// skippedDirs are not described in the layout: dependencies, build output, caches.
var skippedDirs = []string{"node_modules", "vendor", "target", "dist", "build", "out", "__pycache__", "venv", ".venv"}

// layout lists the top-level directories with how many files each holds and of what kind.
func layout(dir string) []string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		name := e.Name()
		if !e.IsDir() || strings.HasPrefix(name, ".") || slices.Contains(skippedDirs, name) {
			continue
		}
		n, ext := countFiles(filepath.Join(dir, name))
		l := fmt.Sprintf("`%s/`: %d files", name, n)
		if ext != "" {
			l += ", mostly " + ext
		}
		out = append(out, l+" — (what it holds)")
	}
	return out
}

// countFiles counts the files under dir (up to a few thousand) and names their most common
// extension.
func countFiles(dir string) (int, string) {
	exts := map[string]int{}
	n := 0
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.IsDir() {
			if p != dir && (strings.HasPrefix(d.Name(), ".") || slices.Contains(skippedDirs, d.Name())) {
				return filepath.SkipDir
			}
			return nil
		}
		n++
		if e := filepath.Ext(p); e != "" {
			exts[e]++
		}
		if n >= 5000 {
			return filepath.SkipAll
		}
		return nil
	})
	keys := make([]string, 0, len(exts))
	for k := range exts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(a, b int) bool {
		return exts[keys[a]] > exts[keys[b]] || exts[keys[a]] == exts[keys[b]] && keys[a] < keys[b]
	})
	if len(keys) == 0 {
		return n, ""
	}
	return n, keys[0]
}

// readmeSummary is the README's first paragraph of prose: no heading, badge or HTML.
func readmeSummary(dir string) string {
	b, err := os.ReadFile(filepath.Join(dir, firstExisting(dir, "README.md", "README", "README.rst", "readme.md")))
	if err != nil {
		return ""
	}
	for _, para := range strings.Split(strings.ReplaceAll(string(b), "\r\n", "\n"), "\n\n") {
		p := strings.TrimSpace(para)
		if p == "" || strings.HasPrefix(p, "#") || strings.HasPrefix(p, "[![") || strings.HasPrefix(p, "<") || strings.HasPrefix(p, "===") {
			continue
		}
		return cut(strings.Join(strings.Fields(p), " "), 400)
	}
	return ""
}

func firstExisting(dir string, names ...string) string {
	for _, n := range names {
		if exists(dir, n) {
			return n
		}
	}
	return names[0]
}

func exists(dir, name string) bool {
	_, err := os.Stat(filepath.Join(dir, name))
	return err == nil
}
