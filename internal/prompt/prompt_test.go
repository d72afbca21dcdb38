package prompt

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/goldentest"
	"github.com/keel-dev/keel/internal/memory"
)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, name, got)
}

func allOptions() Options {
	return Options{
		AppendSystemPrompt: "appended",
		Guidance:           "guidance",
		Memory:             func() []memory.File { return []memory.File{{Display: "./KEEL.md", Content: "m"}} },
		Environment:        &Environment{Cwd: "/p", Platform: "linux/amd64", Date: "2026-01-02"},
		Language:           "German",
		ScratchpadDir:      "/scratch",
	}
}

// TestUncachedSections lists every uncached section: none. Adding one breaks the prompt cache
// on every change of its text (what changes during a session goes into a Listing message
// instead), so it must be a visible decision: update this list on purpose.
func TestUncachedSections(t *testing.T) {
	static, dynamic := New(allOptions()).Sections()
	got := map[string]string{}
	for _, s := range append(static, dynamic...) {
		if r := s.UncachedReason(); r != "" {
			got[s.Name()] = r
		}
	}
	want := map[string]string{}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestUncachedNeedsReason(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("Uncached with an empty reason did not panic")
		}
	}()
	Uncached("x", "", func() string { return "" })
}

func TestMemoization(t *testing.T) {
	var memCalls, mcpCalls int
	instr := "first"
	b := New(Options{
		Memory: func() []memory.File {
			memCalls++
			return []memory.File{{Display: "./KEEL.md", Content: "v" + string(rune('0'+memCalls))}}
		},
		Extra: []Section{Uncached("live", "a test of recomputation", func() string {
			mcpCalls++
			return instr
		})},
	})
	r1 := b.Render()
	instr = "second"
	r2 := b.Render()
	if memCalls != 1 || mcpCalls != 2 {
		t.Errorf("memory computed %d times, the uncached section %d times; want 1 and 2", memCalls, mcpCalls)
	}
	if !strings.Contains(string(r2.Bytes), "second") || !strings.Contains(string(r2.Bytes), "v1") {
		t.Errorf("second render:\n%s", r2.Bytes)
	}
	if diff := cmp.Diff(r1.Blocks[0:2], r2.Blocks[0:2]); diff != "" {
		t.Errorf("memoized blocks changed (-first +second):\n%s", diff)
	}
	b.Clear()
	if r3 := b.Render(); memCalls != 2 || !strings.Contains(string(r3.Bytes), "v2") {
		t.Errorf("after Clear memory computed %d times; prompt:\n%s", memCalls, r3.Bytes)
	}
}

func TestRenderShape(t *testing.T) {
	r := New(allOptions()).Render()
	want := []string{StaticName, SectionGuidance, SectionMemory, SectionEnv, SectionLanguage, SectionScratchpad, SectionAppend}
	if diff := cmp.Diff(want, r.Names); diff != "" {
		t.Errorf("names mismatch (-want +got):\n%s", diff)
	}
	if len(r.Blocks) != len(r.Names) {
		t.Fatalf("%d blocks, %d names", len(r.Blocks), len(r.Names))
	}
	static, dyn, ok := strings.Cut(string(r.Bytes), DynamicBoundary)
	if !ok || strings.TrimSpace(static) != r.Blocks[0].Text || strings.Contains(dyn, "You are keel") {
		t.Errorf("boundary does not separate static and dynamic parts:\n%s", r.Bytes)
	}
	if diff := cmp.Diff(string(r.Bytes), string(New(allOptions()).Render().Bytes)); diff != "" {
		t.Errorf("two renders differ (-first +second):\n%s", diff)
	}
	// Empty sections are left out entirely.
	if got := New(Options{}).Render().Names; !cmp.Equal(got, []string{StaticName}) {
		t.Errorf("zero options names = %v", got)
	}
}

func TestReplaceAndAppend(t *testing.T) {
	r := New(Options{SystemPrompt: "You are a reviewer.", AppendSystemPrompt: "Be brief."}).Render()
	want := "You are a reviewer.\n\n" + DynamicBoundary + "\n\nBe brief.\n"
	if diff := cmp.Diff(want, string(r.Bytes)); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{StaticName, SectionAppend}, r.Names); diff != "" {
		t.Errorf("names mismatch (-want +got):\n%s", diff)
	}
}

// TestStaticBudget reports the size of the static prompt, which every request of every agent
// carries, and fails when it outgrows its budget. Raise the budget on purpose, not by drift.
func TestStaticBudget(t *testing.T) {
	const budget = 6 << 10
	r := New(Options{}).Render()
	n := len(r.Blocks[0].Text)
	t.Logf("static system prompt: %d bytes (budget %d)", n, budget)
	if n > budget {
		t.Errorf("static prompt is %d bytes, over the %d budget", n, budget)
	}
}

// fixtureMemory builds a project with nested memory files and includes under a fresh
// temporary directory and loads it.
func fixtureMemory(t *testing.T) ([]memory.File, string) {
	t.Helper()
	tmp := t.TempDir()
	files := map[string]string{
		"home/.keel/KEEL.md":              "Prefer table-driven tests.\n",
		"repo/.git/HEAD":                  "ref: refs/heads/main\n",
		"repo/KEEL.md":                    "# Shop\nA web shop. Conventions: @docs/conventions.md\nMention @reviewers on PRs.\n",
		"repo/docs/conventions.md":        "- Errors are wrapped.\n- See `@docs/secret.md` (not included).\n",
		"repo/docs/secret.md":             "secret",
		"repo/.keel/rules/sql.md":         "---\npaths: ['**/*.sql']\n---\nMigrations are append-only.\n",
		"repo/.keel/rules/style.md":       "Use British spelling.\n",
		"repo/services/api/AGENTS.md":     "The API service. Run `make api-test`.\n@../../docs/api.md\n",
		"repo/docs/api.md":                "Endpoints are versioned under /v1.\n",
		"repo/services/api/KEEL.local.md": "My local port is 8081.\n",
	}
	for name, content := range files {
		p := filepath.Join(tmp, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	set, err := memory.Load(memory.Options{
		Cwd:         filepath.Join(tmp, "repo", "services", "api"),
		Home:        filepath.Join(tmp, "home"),
		ManagedPath: "-",
	})
	if err != nil {
		t.Fatal(err)
	}
	if w := set.Warnings(); len(w) != 0 {
		t.Fatalf("warnings: %v", w)
	}
	return set.Files(), tmp
}

func fixtureOptions(files []memory.File) Options {
	return Options{
		Guidance: "# Session guidance\nSubagents are available for broad searches.",
		Memory:   func() []memory.File { return files },
		Environment: &Environment{
			Cwd: "/home/dev/shop/services/api", Platform: "linux/amd64", Date: "2026-03-14",
			GitRepo: true, Branch: "main", Status: " M services/api/handler.go\n?? notes.txt",
		},
		Language:      "English",
		ScratchpadDir: "/home/dev/.keel/scratch/session",
	}
}

// TestGoldenPrompt renders the full system prompt for a fixture project, twice in two
// different temporary directories: the bytes must match each other (no temporary path leaks)
// and the golden file.
func TestGoldenPrompt(t *testing.T) {
	filesA, tmpA := fixtureMemory(t)
	filesB, _ := fixtureMemory(t)
	a := New(fixtureOptions(filesA)).Render()
	b := New(fixtureOptions(filesB)).Render()
	if diff := cmp.Diff(string(a.Bytes), string(b.Bytes)); diff != "" {
		t.Fatalf("renders from two directories differ (-a +b):\n%s", diff)
	}
	if strings.Contains(string(a.Bytes), tmpA) {
		t.Errorf("prompt contains the temporary directory")
	}
	golden(t, "prompt.golden", a.Bytes)
}

// TestOutputStyle: a style drops the concise-output section, drops the coding instructions
// unless it keeps them, and adds its text near the end; no style leaves the prompt alone.
func TestOutputStyle(t *testing.T) {
	plain := string(New(Options{}).Render().Bytes)
	for _, tt := range []struct {
		keep       bool
		wantCoding bool
	}{{true, true}, {false, false}} {
		r := New(Options{OutputStyle: "# Output style: Pirate\nArr.", KeepCodingInstructions: tt.keep, AppendSystemPrompt: "appended"}).Render()
		text := string(r.Bytes)
		if strings.Contains(text, "Keep replies short") {
			t.Errorf("keep=%v: the concise-output section stayed", tt.keep)
		}
		if got := strings.Contains(text, doingTasks(t)); got != tt.wantCoding {
			t.Errorf("keep=%v: coding instructions present = %v", tt.keep, got)
		}
		if i, j := strings.Index(text, "Arr."), strings.Index(text, "appended"); i < 0 || j < i || i < strings.Index(text, DynamicBoundary) {
			t.Errorf("keep=%v: the style is not a dynamic section before the appended prompt:\n%s", tt.keep, text)
		}
		if !slices.Contains(r.Names, SectionStyle) {
			t.Errorf("keep=%v: sections %v lack %s", tt.keep, r.Names, SectionStyle)
		}
	}
	if !strings.Contains(plain, "Keep replies short") || !strings.Contains(plain, doingTasks(t)) {
		t.Error("without a style the prompt lost a section")
	}
}

func doingTasks(t *testing.T) string {
	t.Helper()
	b, err := staticFS.ReadFile("static/doing_tasks.md")
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(b))[:60]
}
