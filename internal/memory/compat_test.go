package memory

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/compattest"
)

func compatDir(t *testing.T) string {
	t.Helper()
	return compattest.Dir(t, "memory")
}

// TestCompatCorpus loads each published memory file as a project's memory and checks which
// mentions became includes: real imports load, @handles and mentions in code stay text.
func TestCompatCorpus(t *testing.T) {
	root := compatDir(t)
	tests := []struct {
		repo, file string
		want       []string // Display of every loaded file, in order
	}{
		{"tdimino__claude-code-minoan", "CLAUDE.md", []string{"./CLAUDE.md", "./ARCHITECTURE.md"}},
		{"obra__superpowers", "GEMINI.md", []string{"./GEMINI.md",
			"./skills/using-superpowers/SKILL.md", "./skills/using-superpowers/references/gemini-tools.md"}},
		{"anthropics__claude-code-action", "CLAUDE.md", []string{"./CLAUDE.md"}},
		{"OthmanAdi__planning-with-files", "AGENTS.md", []string{"./AGENTS.md"}},
		{"wshobson__agents", "AGENTS.md", []string{"./AGENTS.md"}},
		{"Yeachan-Heo__oh-my-claudecode", "CLAUDE.md", []string{"./CLAUDE.md"}},
		{"google__adk-go", "CLAUDE.md", []string{"./CLAUDE.md"}},
		{"oaknational__oak-python-starter", "CLAUDE.md", []string{"./CLAUDE.md"}},
	}
	for _, tt := range tests {
		t.Run(tt.repo, func(t *testing.T) {
			dir := filepath.Join(root, tt.repo)
			l := &loader{opts: Options{Cwd: dir, MaxFileBytes: DefaultMaxFileBytes}, root: dir, seen: map[string]bool{}}
			path := filepath.Join(dir, tt.file)
			f, ok := l.read(path, canonical(path), KindProject, 0)
			if !ok {
				t.Fatalf("cannot read %s", tt.file)
			}
			l.expand(f, nil)
			var got []string
			for _, f := range l.files {
				got = append(got, f.Display)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if len(l.warnings) != 0 {
				t.Errorf("warnings: %v", l.warnings)
			}
			for _, f := range l.files {
				if strings.ContainsRune(f.Content, 0) {
					t.Errorf("%s: NUL in content", f.Display)
				}
			}
		})
	}
}
