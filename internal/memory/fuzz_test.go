package memory

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/frontmatter"
)

// FuzzLoadIncludes writes fuzzed text into a small include graph (a.md and b.md may name each
// other, themselves, missing files and directories) and checks Load terminates, loads each
// file at most once, and keeps include chains within the depth limit.
func FuzzLoadIncludes(f *testing.F) {
	f.Add("@a.md", "@b.md @./KEEL.md")
	f.Add("```\n@b.md\n```", "`@a.md` @~/x.md @/ @..")
	f.Add("@b.md#x @sub", "@a.md\\ @KEEL.md")
	f.Fuzz(func(t *testing.T, a, b string) {
		dir := t.TempDir()
		for name, content := range map[string]string{
			"KEEL.md": "@a.md @b.md",
			"a.md":    a,
			"b.md":    b,
		} {
			if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
			t.Fatal(err)
		}
		s, err := Load(Options{Cwd: dir, Home: dir, ManagedPath: "-"})
		if err != nil {
			t.Fatal(err)
		}
		seen := map[string]bool{}
		for _, f := range s.Files() {
			if seen[f.Path] {
				t.Fatalf("%s loaded twice", f.Path)
			}
			seen[f.Path] = true
			if len(f.Chain) > MaxIncludeDepth {
				t.Fatalf("chain too deep: %v", f.Chain)
			}
		}
		if len(s.Files()) > 3 {
			t.Fatalf("loaded %d files from 3", len(s.Files()))
		}
	})
}

// FuzzRuleFrontmatter feeds arbitrary rules files through the frontmatter split and the
// paths parser: no panic, and any globs returned are non-empty and usable for matching.
func FuzzRuleFrontmatter(f *testing.F) {
	f.Add([]byte("---\npaths: src/**\n---\nbody"))
	f.Add([]byte("---\npaths:\n  - '*.go'\n  - [x\n---\n"))
	f.Add([]byte("---\npaths: {a: b}\n---\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		doc := frontmatter.Split(data)
		if doc.YAML == nil {
			return
		}
		globs, _, err := parseGlobs(doc.YAML)
		if err != nil {
			return
		}
		rule := File{Globs: globs, base: "/p"}
		for _, g := range globs {
			if g == "" {
				t.Fatalf("empty glob from %q", data)
			}
		}
		matchesAny(rule, []string{"/p/x/y.go"}, "/p")
	})
}
