package memory

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// write creates files under dir; a path ending in "/" is a directory.
func write(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if strings.HasSuffix(name, "/") {
			if err := os.MkdirAll(p, 0o755); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

type fixture struct {
	home, repo, cwd, managed string
}

func newFixture(t *testing.T, files map[string]string) fixture {
	t.Helper()
	tmp := t.TempDir()
	write(t, tmp, files)
	return fixture{
		home:    filepath.Join(tmp, "home"),
		repo:    filepath.Join(tmp, "repo"),
		cwd:     filepath.Join(tmp, "repo", "sub", "pkg"),
		managed: filepath.Join(tmp, "home", "managed", "KEEL.md"),
	}
}

func (fx fixture) load(t *testing.T) *Set {
	t.Helper()
	s, err := Load(Options{Cwd: fx.cwd, Home: fx.home, ManagedPath: fx.managed, ExternalIncludes: true})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func displays(files []File) []string {
	var out []string
	for _, f := range files {
		out = append(out, string(f.Kind)+" "+f.Display)
	}
	return out
}

func warnings(s *Set) []string {
	var out []string
	for _, w := range s.Warnings() {
		out = append(out, w.String())
	}
	return out
}

func TestLoadOrder(t *testing.T) {
	fx := newFixture(t, map[string]string{
		"home/managed/KEEL.md":         "managed",
		"home/.keel/KEEL.md":           "user keel",
		"home/.claude/CLAUDE.md":       "user claude",
		"repo/.git/":                   "",
		"repo/KEEL.md":                 "root keel",
		"repo/.keel/KEEL.md":           "root dot keel",
		"repo/.keel/rules/b.md":        "rule b",
		"repo/.keel/rules/a.md":        "rule a",
		"repo/.keel/rules/x/c.md":      "rule c",
		"repo/.keel/rules/img.png":     "not md",
		"repo/CLAUDE.md":               "root claude",
		"repo/.claude/CLAUDE.md":       "root dot claude",
		"repo/.claude/rules/z.md":      "claude rule",
		"repo/AGENTS.md":               "root agents",
		"repo/KEEL.local.md":           "root local",
		"repo/sub/AGENTS.md":           "sub agents",
		"repo/sub/pkg/KEEL.md":         "pkg keel",
		"repo/sub/pkg/CLAUDE.local.md": "pkg local",
		"CLAUDE.md":                    "above the repo: never read",
	})
	s := fx.load(t)
	want := []string{
		"managed ~/managed/KEEL.md",
		"user ~/.keel/KEEL.md",
		"user ~/.claude/CLAUDE.md",
		"project ../../KEEL.md",
		"project ../../.keel/KEEL.md",
		"project ../../.keel/rules/a.md",
		"project ../../.keel/rules/b.md",
		"project ../../.keel/rules/x/c.md",
		"project ../../CLAUDE.md",
		"project ../../.claude/CLAUDE.md",
		"project ../../.claude/rules/z.md",
		"project ../../AGENTS.md",
		"project ../AGENTS.md",
		"project ./KEEL.md",
		"local ../../KEEL.local.md",
		"local ./CLAUDE.local.md",
	}
	if diff := cmp.Diff(want, displays(s.Files())); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if len(s.Warnings()) != 0 {
		t.Errorf("unexpected warnings: %v", warnings(s))
	}
	if s.Root != fx.repo {
		t.Errorf("root = %s, want %s", s.Root, fx.repo)
	}
}

func TestLoadWithoutGitReadsOnlyCwd(t *testing.T) {
	fx := newFixture(t, map[string]string{
		"repo/KEEL.md":         "parent, not a repo root",
		"repo/sub/pkg/KEEL.md": "cwd",
	})
	got := displays(fx.load(t).Files())
	if diff := cmp.Diff([]string{"project ./KEEL.md"}, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestIncludes(t *testing.T) {
	fx := newFixture(t, map[string]string{
		"repo/.git/": "",
		"repo/sub/pkg/KEEL.md": strings.Join([]string{
			"# Project",
			"@docs/style.md",                  // bare relative
			"See @./docs/style.md again.",     // already loaded: no duplicate
			"Ask @handle or @octocat.",        // handles: plain text
			"`@docs/secret.md` is an example", // code span
			"```",
			"@docs/secret.md",
			"```",
			"@~/notes.md and @missing.md",
			"@docs/logo.png",
			"@docs/blob.txt",
			"@docs/a.md",
		}, "\n"),
		"repo/sub/pkg/docs/style.md":  "style; also @../ABS_PLACEHOLDER",
		"repo/sub/pkg/docs/secret.md": "never included",
		"repo/sub/pkg/docs/logo.png":  "\x89PNG",
		"repo/sub/pkg/docs/blob.txt":  "a\x00b",
		"repo/sub/pkg/docs/a.md":      "@b.md",
		"repo/sub/pkg/docs/b.md":      "@a.md then @c.md",
		"repo/sub/pkg/docs/c.md":      "leaf",
		"home/notes.md":               "home notes",
		"elsewhere/abs.md":            "absolute include",
	})
	// An absolute include needs the temp path, so write it now.
	abs := filepath.Join(filepath.Dir(fx.repo), "elsewhere", "abs.md")
	write(t, fx.cwd, map[string]string{"docs/style.md": "style; also @" + abs})

	s := fx.load(t)
	type row struct {
		Display string
		Chain   string
	}
	var got []row
	for _, f := range s.Files() {
		got = append(got, row{f.Display, strings.Join(f.Chain, " > ")})
	}
	want := []row{
		{"./KEEL.md", ""},
		{"./docs/style.md", "./KEEL.md"},
		{filepath.ToSlash(abs), "./KEEL.md > ./docs/style.md"},
		{"~/notes.md", "./KEEL.md"},
		{"./docs/a.md", "./KEEL.md"},
		{"./docs/b.md", "./KEEL.md > ./docs/a.md"},
		{"./docs/c.md", "./KEEL.md > ./docs/a.md > ./docs/b.md"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}
	wantWarn := []string{
		"./docs/logo.png: not a text file (.png); not included",
		"./docs/blob.txt: binary content; not included",
		"./docs/b.md:1: include cycle ./docs/a.md → ./docs/b.md → ./docs/a.md; not followed",
	}
	if diff := cmp.Diff(wantWarn, warnings(s)); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
	if c := s.Files()[0].Content; !strings.Contains(c, "@docs/style.md") {
		t.Errorf("include mention removed from content: %q", c)
	}
}

func TestIncludeDepthLimit(t *testing.T) {
	files := map[string]string{"repo/sub/pkg/KEEL.md": "@d1.md"}
	for i := 1; i <= 8; i++ {
		files["repo/sub/pkg/d"+string(rune('0'+i))+".md"] = "@d" + string(rune('0'+i+1)) + ".md"
	}
	fx := newFixture(t, files)
	s := fx.load(t)
	if got := len(s.Files()); got != MaxIncludeDepth+1 {
		t.Errorf("loaded %d files, want %d", got, MaxIncludeDepth+1)
	}
	want := []string{"./d5.md:1: includes nested deeper than 5; not followed"}
	if diff := cmp.Diff(want, warnings(s)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestLargeFiles(t *testing.T) {
	big := strings.Repeat(strings.Repeat("x", 99)+"\n", 50_000) // 5 MB
	fx := newFixture(t, map[string]string{
		"repo/sub/pkg/KEEL.md":   big,
		"repo/sub/pkg/AGENTS.md": strings.Repeat("y", 30_000),
	})
	s := fx.load(t)
	files := s.Files()
	if len(files) != 2 {
		t.Fatalf("loaded %d files, want 2", len(files))
	}
	f := files[0]
	if !f.Truncated || f.Size != int64(len(big)) || len(f.Content) > DefaultMaxFileBytes || !strings.HasSuffix(f.Content, "\n") {
		t.Errorf("truncated=%v size=%d content=%d bytes", f.Truncated, f.Size, len(f.Content))
	}
	want := []string{
		"./KEEL.md: is 5000000 bytes; only the first 262100 are used",
		"memory files total 292100 characters, over 40000; each request carries them (largest: ./KEEL.md, 262100)",
	}
	if diff := cmp.Diff(want, warnings(s)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestConditionalRules(t *testing.T) {
	fx := newFixture(t, map[string]string{
		"repo/.git/":                  "",
		"repo/.keel/rules/go.md":      "---\npaths:\n  - \"**/*.go\"\n---\nGo rule @../../docs/go.md\n",
		"repo/docs/go.md":             "go extra",
		"repo/.keel/rules/web.md":     "---\npaths: web/**, \"*.css\"\n---\nweb rule\n",
		"repo/.keel/rules/all.md":     "---\ndescription: everywhere\n---\nall rule\n",
		"repo/.keel/rules/bad.md":     "---\npaths: [unclosed\n---\nbad rule\n",
		"repo/sub/.keel/rules/sub.md": "---\npaths: ['*.md']\n---\nsub rule\n",
	})
	s := fx.load(t)
	got := displays(s.Files())
	want := []string{
		"project ../../.keel/rules/all.md",
		"project ../../.keel/rules/bad.md",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("initial mismatch (-want +got):\n%s", diff)
	}
	if w := warnings(s); len(w) != 1 || !strings.HasPrefix(w[0], "../../.keel/rules/bad.md:2: frontmatter: ") {
		t.Errorf("warnings = %q, want one naming bad.md:2", w)
	}
	if c := s.Files()[0].Content; c != "all rule\n" {
		t.Errorf("frontmatter not stripped: %q", c)
	}

	steps := []struct {
		touched []string
		want    []string
	}{
		{[]string{"README"}, nil},
		{[]string{"../../outside.go"}, []string{"project ../../.keel/rules/go.md", "project ../../docs/go.md"}},
		{[]string{"main.go"}, nil}, // already applied
		{[]string{filepath.Join(fx.repo, "web", "x", "a.js")}, []string{"project ../../.keel/rules/web.md"}},
		{[]string{"../../README.md"}, nil}, // sub.md is relative to sub/, README.md is above it
		{[]string{"doc.md"}, []string{"project ../.keel/rules/sub.md"}},
	}
	for i, st := range steps {
		got := displays(s.Touch(st.touched))
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("step %d %v mismatch (-want +got):\n%s", i, st.touched, diff)
		}
	}
	if n := len(s.Pending()); n != 0 {
		t.Errorf("%d rules still pending", n)
	}
	if n := len(s.Files()); n != 6 {
		t.Errorf("Files has %d entries after touches, want 6", n)
	}
}

func TestParseGlobs(t *testing.T) {
	tests := []struct {
		in      string
		want    []string
		wantErr string
	}{
		{"paths: src/**/*.ts", []string{"src/**/*.ts"}, ""},
		{"paths: \"a/*, ./b/**\"", []string{"a/*", "b/**"}, ""},
		{"paths:\n  - '*.go'\n  - '{x,y}/*'", []string{"*.go", "{x,y}/*"}, ""},
		{"other: 1", nil, ""},
		{"paths: 3", nil, "paths: want a list of globs or a string, got uint64"},
		{"paths: [1]", nil, "paths: 1 is not a string"},
		{"paths: 'a/[b'", nil, `paths: "a/[b" is not a valid glob`},
	}
	for _, tt := range tests {
		got, _, err := parseGlobs([]byte(tt.in))
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if gotErr != tt.wantErr {
			t.Errorf("%q: error %q, want %q", tt.in, gotErr, tt.wantErr)
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%q mismatch (-want +got):\n%s", tt.in, diff)
		}
	}
}

func TestSymlinkedFileLoadsOnce(t *testing.T) {
	fx := newFixture(t, map[string]string{
		"repo/sub/pkg/KEEL.md": "shared",
	})
	if err := os.Symlink("KEEL.md", filepath.Join(fx.cwd, "CLAUDE.md")); err != nil {
		t.Skip("symlinks unavailable:", err)
	}
	if got := displays(fx.load(t).Files()); len(got) != 1 {
		t.Errorf("files = %v, want one", got)
	}
}

// TestExternalIncludesNeedTrust checks that, unless allowed, project files reach nothing
// outside the project: includes by ~, by .., by absolute path, through a symlink, and a
// memory file that is itself a link leading out. User files keep their includes.
func TestExternalIncludesNeedTrust(t *testing.T) {
	fx := newFixture(t, map[string]string{
		"repo/.git/":              "",
		"repo/sub/pkg/KEEL.md":    "@~/notes.md\n@../../../elsewhere/out.md\n@docs/in.md\n@docs/link.md\n@ABS\n",
		"repo/sub/pkg/docs/in.md": "inside",
		"home/notes.md":           "home notes",
		"home/.keel/KEEL.md":      "user file @~/notes.md",
		"elsewhere/out.md":        "outside",
		"elsewhere/agents.md":     "linked memory",
	})
	out := filepath.Join(filepath.Dir(fx.repo), "elsewhere")
	write(t, fx.cwd, map[string]string{"KEEL.md": "@~/notes.md\n@../../../elsewhere/out.md\n@docs/in.md\n@docs/link.md\n@" + out + "/out.md\n"})
	if err := os.Symlink(filepath.Join(out, "out.md"), filepath.Join(fx.cwd, "docs", "link.md")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(out, "agents.md"), filepath.Join(fx.repo, "AGENTS.md")); err != nil {
		t.Fatal(err)
	}
	s, err := Load(Options{Cwd: fx.cwd, Home: fx.home, KeelHome: filepath.Join(fx.home, ".keel"), ManagedPath: fx.managed})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"user ~/.keel/KEEL.md", "user ~/notes.md", "project ./KEEL.md", "project ./docs/in.md"}, displays(s.Files())); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}
	var ext []string
	for _, e := range s.External() {
		ext = append(ext, e.String())
	}
	abs := filepath.ToSlash(filepath.Join(out, "out.md"))
	want := []string{
		"../../AGENTS.md (a link to " + filepath.ToSlash(filepath.Join(out, "agents.md")) + ")",
		"./KEEL.md:2 includes " + abs, "./KEEL.md:4 includes " + abs, "./KEEL.md:5 includes " + abs,
	}
	// ~/notes.md was already loaded by the user file, so it is not listed again.
	if diff := cmp.Diff(want, ext); diff != "" {
		t.Errorf("external mismatch (-want +got):\n%s", diff)
	}
}

// TestRefusedFilesAreLeftOut checks that a file Options.Refuse refuses — included, found by
// discovery, or reached through a link — is not read, is listed as excluded and warned about,
// while the includes beside it still load.
func TestRefusedFilesAreLeftOut(t *testing.T) {
	fx := newFixture(t, map[string]string{
		"repo/.git/":                 "",
		"repo/CLAUDE.md":             "See @secrets/token for the build id.\nAnd @docs/ok.md\nAgain @secrets/token\n",
		"repo/secrets/token":         "TOKEN-SECRET",
		"repo/secrets/other.md":      "OTHER-SECRET",
		"repo/docs/ok.md":            "ALLOWED-TEXT @alias.md",
		"repo/sub/pkg/CLAUDE.md":     "nested",
		"repo/sub/pkg/KEEL.local.md": "LOCAL-SECRET",
	})
	// A link whose own name no rule covers still leads to the refused file.
	if err := os.Symlink(filepath.Join(fx.repo, "secrets", "other.md"), filepath.Join(fx.repo, "docs", "alias.md")); err != nil {
		t.Fatal(err)
	}
	secrets, local := filepath.Join(fx.repo, "secrets"), filepath.Join(fx.cwd, "KEEL.local.md")
	refuse := func(path string) string {
		if path == local || strings.HasPrefix(path, secrets+string(filepath.Separator)) {
			return "a Read deny rule covers it"
		}
		return ""
	}
	s, err := Load(Options{Cwd: fx.cwd, Home: fx.home, ManagedPath: "-", Refuse: refuse})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"project ../../CLAUDE.md", "project ../../docs/ok.md", "project ./CLAUDE.md"}, displays(s.Files())); diff != "" {
		t.Errorf("files mismatch (-want +got):\n%s", diff)
	}
	for _, f := range s.Files() {
		if strings.Contains(f.Content, "SECRET") {
			t.Errorf("%s holds a refused file's content: %q", f.Display, f.Content)
		}
	}
	var excluded []string
	for _, e := range s.Excluded() {
		excluded = append(excluded, e.String())
	}
	want := []string{
		"../../CLAUDE.md:1 includes ../../secrets/token: a Read deny rule covers it",
		"../../docs/ok.md:1 includes ../../docs/alias.md: a Read deny rule covers it",
		"./KEEL.local.md: a Read deny rule covers it",
	}
	if diff := cmp.Diff(want, excluded); diff != "" {
		t.Errorf("excluded mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{
		"../../CLAUDE.md:1: @secrets/token is not included: a Read deny rule covers it",
		"../../docs/ok.md:1: @alias.md is not included: a Read deny rule covers it",
		"./KEEL.local.md: is not loaded: a Read deny rule covers it",
	}, warnings(s)); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
	var text strings.Builder
	if err := NewReport(s).WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "Excluded (not read into the prompt):\n     ../../CLAUDE.md:1 includes ../../secrets/token") {
		t.Errorf("the report does not list the excluded include:\n%s", text.String())
	}
}
