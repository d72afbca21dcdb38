package prompt

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/memory"
)

// TestAutoMemorySection: the section carries the index as it was at the first render and
// keeps those bytes while the model changes the files, so the prefix does not churn; the next
// session (here: a Clear) reads what was saved.
func TestAutoMemorySection(t *testing.T) {
	a, err := memory.OpenAuto(filepath.Join(t.TempDir(), "memory"))
	if err != nil {
		t.Fatal(err)
	}
	index := filepath.Join(a.Dir, memory.AutoIndexName)
	if err := os.WriteFile(index, []byte("- [Build](build.md): use make, not go build\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	b := New(Options{AutoMemory: a})
	first := b.Render()
	text := string(first.Bytes)
	for _, want := range []string{"# Auto memory", a.Dir, "Contents of MEMORY.md at the start of this session:\n\n- [Build](build.md): use make, not go build"} {
		if !strings.Contains(text, want) {
			t.Errorf("prompt lacks %q", want)
		}
	}
	if err := os.WriteFile(index, []byte("- [Build](build.md): use make\n- [Tests](tests.md): -race always\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if again := b.Render(); string(again.Bytes) != text {
		t.Fatal("the prompt changed within the session after the model wrote its memory")
	}
	b.Clear()
	if next := string(b.Render().Bytes); !strings.Contains(next, "- [Tests](tests.md): -race always") {
		t.Errorf("after a clear the prompt lacks what was saved:\n%s", next)
	}
	if strings.Contains(string(New(Options{}).Render().Bytes), "# Auto memory") {
		t.Error("a prompt without auto memory has the section")
	}
}

func TestAutoMemorySectionGolden(t *testing.T) {
	golden(t, "auto_memory.golden", []byte(renderAutoMemory(&memory.Auto{Dir: "/home/dev/.keel/projects/-home-dev-proj/memory"})+"\n"))
}
