package permission

import (
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"mvdan.cc/sh/v3/syntax"
)

// TestBashGlobAgainstBash compares bashGlob with real bash on generated patterns over a
// directory of awkward names: bash's expansion must always be within keel's (keel may match
// more, never less), and for plain ASCII names the two must be equal.
func TestBashGlobAgainstBash(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("SKIPPED: bash is not installed (scripts/test.sh installs it)")
	}
	dir := t.TempDir()
	names := []string{"secrets", "secret1", "Secret", ".secret", ".env", "s", "a]b", "a[b", "a-b", "a!b", "a^b",
		"sécret", "é", "a\\b", "-x", "a*b", "a?b", "ab", "b", "x.txt", "X.TXT", "1", "_"}
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"token.txt", ".hidden", "é.txt"} {
		if err := os.WriteFile(filepath.Join(dir, "sub", n), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	atoms := []string{"s", "e", "c", "r", "t", "1", ".", "*", "?", "[", "]", "!", "^", "-", "a", "b", "x", "\\",
		"[:alpha:]", "[:digit:]", "[:upper:]", "[:punct:]", "é", "/", "sub", "txt", "\\*", "\\[", "[!", "[^", "a-z", "_"}
	r := rand.New(rand.NewPCG(3, 5))
	var pats []string
	for range 1500 {
		var b strings.Builder
		for range 1 + r.IntN(6) {
			b.WriteString(atoms[r.IntN(len(atoms))])
		}
		p := b.String()
		if strings.HasSuffix(p, "\\") || strings.HasPrefix(p, "/") || strings.Contains(p, "//") {
			continue
		}
		pats = append(pats, p)
	}
	// One bash run for all patterns: each pattern's words, NUL-separated, then a record end.
	var script strings.Builder
	script.WriteString("cd " + dir + " || exit 1\n")
	for _, p := range pats {
		script.WriteString("for f in " + p + "; do printf '%s\\0' \"$f\"; done; printf '\\1\\0'\n")
	}
	for _, locale := range []string{"C", "C.UTF-8"} {
		t.Run(locale, func(t *testing.T) { compareGlobs(t, dir, pats, script.String(), locale) })
	}
}

func compareGlobs(t *testing.T, dir string, pats []string, script, locale string) {
	cmd := exec.Command("bash", "-c", script)
	cmd.Env = append(os.Environ(), "LC_ALL="+locale)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("bash: %v", err)
	}
	records := strings.Split(strings.TrimSuffix(string(out), "\x01\x00"), "\x01\x00")
	if len(records) != len(pats) {
		t.Fatalf("bash gave %d results for %d patterns", len(records), len(pats))
	}
	exact := 0
	for i, p := range pats {
		want := strings.Split(strings.TrimSuffix(records[i], "\x00"), "\x00")
		f := fileWord([]syntaxWordPart{lit(p)})
		if f.unresolved != "" {
			continue
		}
		got := []string{f.literal()}
		if f.glob {
			m, ok := bashGlob(f.pattern, dir)
			if !ok {
				continue // asked about: fine
			}
			if len(m) > 0 {
				got = m
			}
			got = append(got, f.literal())
		}
		for _, w := range want {
			if !slices.Contains(got, w) {
				t.Errorf("pattern %q: bash expands to %q, which keel's %q misses", p, w, got)
			}
		}
		if !slices.ContainsFunc(want, func(w string) bool { return !asciiName(w) }) {
			m, _ := bashGlob(f.pattern, dir)
			if f.glob && len(m) > 0 && !slices.Equal(m, want) && !slices.ContainsFunc(m, func(s string) bool { return !asciiName(s) }) {
				t.Errorf("pattern %q: bash %q, keel %q", p, want, m)
			} else {
				exact++
			}
		}
	}
	t.Logf("%d patterns, %d compared exactly", len(pats), exact)
}

type syntaxWordPart = syntax.WordPart

func lit(s string) *syntax.Lit { return &syntax.Lit{Value: s} }
