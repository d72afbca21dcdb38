package builtin

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// searchTree is one fixture for Glob and Grep: nested .gitignore files with negation,
// directory-only and anchored rules, hidden files, .git, a binary and a CRLF file.
var searchTree = map[string]string{
	".gitignore":          "*.log\nbuild/\n/root-only.txt\n!keep.log\n",
	"a.go":                "package a\n\nfunc Alpha() {}\n// TODO: alpha\n",
	"b.py":                "def beta():\n    # todo beta\n    pass\n",
	"root-only.txt":       "TODO root\n",
	"sub/root-only.txt":   "TODO sub root-only\n",
	"debug.log":           "TODO log\n",
	"keep.log":            "TODO keep\n",
	"build/out.go":        "// TODO build\n",
	"sub/build":           "TODO file named build\n",
	"sub/.gitignore":      "*.md\n!README.md\n",
	"sub/notes.md":        "TODO notes\n",
	"sub/README.md":       "TODO readme\nmore\nTODO again\n",
	"sub/deep/c.ts":       "const c = 1; // TODO c\nline2\nline3\nline4\nTODO: x\n",
	".hidden/h.go":        "// TODO hidden\n",
	".git/config":         "TODO git\n",
	"bin.dat":             "TODO\x00binary\n",
	"crlf.txt":            "TODO crlf\r\nsecond\r\n",
	"multi.txt":           "start\nfoo\nbar\nend\n",
	"vendor/lib/v.go":     "// TODO vendored\n",
	"sub/deep/nested.yml": "todo: yes\n",
}

// makeSearchTree writes searchTree with distinct modification times (later paths in sorted
// order are newer) and returns its root.
func makeSearchTree(t testing.TB) string {
	t.Helper()
	dir := t.TempDir()
	writeFiles(t, dir, searchTree)
	paths := slices.Sorted(func(yield func(string) bool) {
		for p := range searchTree {
			if !yield(p) {
				return
			}
		}
	})
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	for i, p := range paths {
		mt := base.Add(time.Duration(i) * time.Minute)
		if err := os.Chtimes(filepath.Join(dir, p), mt, mt); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestGlob(t *testing.T) {
	dir := makeSearchTree(t)
	tests := []struct {
		name string
		in   globInput
	}{
		{"go files", globInput{Pattern: "**/*.go"}},
		{"markdown", globInput{Pattern: "**/*.md"}},
		{"negated log", globInput{Pattern: "*.log"}},
		{"in path", globInput{Pattern: "**/*", Path: "sub"}},
		{"braces", globInput{Pattern: "**/*.{ts,yml}"}},
		{"absolute pattern", globInput{Pattern: filepath.Join(dir, "sub", "*.md")}},
		{"none", globInput{Pattern: "**/*.rs"}},
		{"bad pattern", globInput{Pattern: "[a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, dir)
			tt.in.Pattern = strings.ReplaceAll(tt.in.Pattern, dir, env.State.Cwd)
			res := call(t, Glob(), env, tt.in)
			golden(t, "glob/"+strings.ReplaceAll(tt.name, " ", "_"), render(res, env.State.Cwd))
		})
	}
}

func TestGlobCap(t *testing.T) {
	dir := t.TempDir()
	files := map[string]string{}
	for i := range 150 {
		files[fmt.Sprintf("f%03d.txt", i)] = ""
	}
	writeFiles(t, dir, files)
	env := newEnv(t, dir)
	res := call(t, Glob(), env, globInput{Pattern: "*.txt"})
	lines := strings.Split(res.ResultText(), "\n")
	if len(lines) != 101 || lines[100] != "[50 more files not shown (150 matched). Use a narrower pattern or path.]" {
		t.Errorf("got %d lines, last %q", len(lines), lines[len(lines)-1])
	}
}

func TestParseIgnore(t *testing.T) {
	got := parseIgnore([]byte("# c\n\n*.o\n!keep.o\nbuild/\n/top\na/b\n\\#lit\ntrail   \n"))
	want := []ignoreRule{
		{pattern: "*.o"}, {pattern: "keep.o", negate: true}, {pattern: "build", dirOnly: true},
		{pattern: "top", anchored: true}, {pattern: "a/b", anchored: true}, {pattern: "#lit"}, {pattern: "trail"},
	}
	if diff := cmp.Diff(want, got, cmp.AllowUnexported(ignoreRule{})); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

var grepCases = []struct {
	name string
	in   grepInput
}{
	{"files", grepInput{Pattern: "TODO"}},
	{"ignore case", grepInput{Pattern: "todo", IgnoreCase: true}},
	{"content", grepInput{Pattern: "TODO", OutputMode: "content"}},
	{"content no numbers", grepInput{Pattern: "TODO", OutputMode: "content", LineNums: new(false)}},
	{"context", grepInput{Pattern: "TODO", OutputMode: "content", Context: 1}},
	{"after", grepInput{Pattern: "TODO c", OutputMode: "content", After: 2}},
	{"before", grepInput{Pattern: "TODO: x", OutputMode: "content", Before: 2}},
	{"count", grepInput{Pattern: "TODO", OutputMode: "count"}},
	{"type go", grepInput{Pattern: "TODO", Type: "go"}},
	{"type alias", grepInput{Pattern: "todo", Type: "yml", IgnoreCase: true, OutputMode: "content"}},
	{"glob name", grepInput{Pattern: "TODO", Glob: "*.md"}},
	{"glob path", grepInput{Pattern: "TODO", Glob: "sub/**"}},
	{"glob braces", grepInput{Pattern: "TODO", Glob: "*.{go,ts}"}},
	{"glob exclude dir", grepInput{Pattern: "TODO", Glob: "!sub"}},
	{"multiline", grepInput{Pattern: "foo\\nbar", Multiline: true, OutputMode: "content"}},
	{"multiline dotall", grepInput{Pattern: "start.*end", Multiline: true, OutputMode: "count"}},
	{"head limit", grepInput{Pattern: "TODO", OutputMode: "content", HeadLimit: 3}},
	{"path dir", grepInput{Pattern: "TODO", Path: "sub", OutputMode: "content"}},
	{"path file", grepInput{Pattern: "TODO", Path: "sub/README.md", OutputMode: "count"}},
	{"crlf end", grepInput{Pattern: "crlf$", OutputMode: "content"}},
	{"no match", grepInput{Pattern: "nothing-here"}},
	{"regex class", grepInput{Pattern: `func [A-Z]\w+\(\)`, OutputMode: "content"}},
}

// TestGrep checks the built-in engine against golden files, and ripgrep against the built-in
// engine: both must give the same answer on the same tree.
func TestGrep(t *testing.T) {
	dir := makeSearchTree(t)
	for _, tt := range grepCases {
		t.Run(tt.name, func(t *testing.T) {
			checkEngines(t, dir, tt.in, "grep/"+strings.ReplaceAll(tt.name, " ", "_"), nil)
		})
	}
}

// checkEngines compares the built-in engine's answer to in with the golden file name, and
// ripgrep's (when rg is on PATH) with the built-in one's, after rgView adjusts the latter for
// what rg cannot know.
func checkEngines(t *testing.T, dir string, in grepInput, name string, rgView func(string) string) {
	t.Helper()
	env := newEnv(t, dir)
	builtin := render(call(t, Grep(GrepBuiltin, ""), env, in), env.State.Cwd)
	golden(t, name, builtin)
	rg, err := exec.LookPath("rg")
	if err != nil {
		t.Skip("rg is not on PATH; only the built-in engine was checked")
	}
	viaRg := render(call(t, Grep(GrepRipgrep, rg), env, in), env.State.Cwd)
	if rgView != nil {
		builtin = rgView(builtin)
	}
	if diff := cmp.Diff(builtin, viaRg); diff != "" {
		t.Errorf("ripgrep disagrees with the built-in engine (-builtin +rg):\n%s", diff)
	}
}

func TestGrepErrors(t *testing.T) {
	dir := makeSearchTree(t)
	env := newEnv(t, dir)
	tests := []struct {
		name string
		in   grepInput
	}{
		{"bad regex", grepInput{Pattern: "a("}},
		{"unknown type", grepInput{Pattern: "a", Type: "cobol"}},
		{"missing path", grepInput{Pattern: "a", Path: "nope"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := call(t, Grep(GrepBuiltin, ""), env, tt.in)
			golden(t, "grep/error_"+strings.ReplaceAll(tt.name, " ", "_"), render(res, env.State.Cwd))
		})
	}
	env.State.Cwd = dir
	res := call(t, Grep(GrepRipgrep, filepath.Join(dir, "no-rg")), env, grepInput{Pattern: "a"})
	if !res.IsError {
		t.Errorf("a missing rg binary gave %s", res.ResultText())
	}
}

func TestGrepOutputCap(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"big.txt": strings.Repeat("match "+strings.Repeat("y", 2000)+"\n", 200)})
	env := newEnv(t, dir)
	out := call(t, Grep(GrepBuiltin, ""), env, grepInput{Pattern: "match", OutputMode: "content"}).ResultText()
	if len(out) > maxGrepOutput+300 || !strings.Contains(out, "[Output cut at 30000 chars") || !strings.Contains(out, "[line truncated: 2006 bytes]") {
		t.Errorf("output of %d bytes, ends %q", len(out), out[max(0, len(out)-200):])
	}
}

// TestGrepCut: answers cut by the output limit or head_limit, with files read only in part
// (more matches than can be shown), lines longer than the limits, and more matching files
// than fit. ripgrep must give the same answer as the built-in engine here too.
func TestGrepCut(t *testing.T) {
	// Where the output is cut depends on the length of the paths: the root's is fixed.
	dir := fixedLengthDir(t, 80)
	var many strings.Builder
	for i := range 5000 {
		fmt.Fprintf(&many, "hit %d\n", i)
		if i%7 == 0 {
			many.WriteString("quiet line\n")
		}
	}
	files := map[string]string{
		"a-many.txt":  many.String(),
		"b-long.txt":  "short hit\n" + strings.Repeat("é", 1500) + " hit\n" + strings.Repeat("x", 300<<10) + " hit at the end\nlast hit\n",
		"c-after.txt": "hit\n",
	}
	for i := range 600 {
		files[fmt.Sprintf("d/f%04d.txt", i)] = "one hit\n"
	}
	writeFiles(t, dir, files)
	tests := []struct {
		name string
		in   grepInput
	}{
		{"content", grepInput{Pattern: "hit", OutputMode: "content"}},
		{"content context", grepInput{Pattern: "hit 1\\d\\d$", OutputMode: "content", Context: 2, Path: "a-many.txt"}},
		{"content head limit", grepInput{Pattern: "hit", OutputMode: "content", HeadLimit: 20}},
		{"long lines", grepInput{Pattern: "hit", OutputMode: "content", Path: "b-long.txt"}},
		{"files", grepInput{Pattern: "hit"}},
		{"count", grepInput{Pattern: "hit", OutputMode: "count"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			checkEngines(t, dir, tt.in, "grep/cut_"+strings.ReplaceAll(tt.name, " ", "_"), nil)
		})
	}
}

// fixedLengthDir returns a new directory whose absolute path (symlinks resolved) is n bytes
// long.
func fixedLengthDir(t *testing.T, n int) string {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	pad := n - len(base) - 1
	if pad < 1 {
		t.Fatalf("the temporary directory %s is longer than %d bytes", base, n)
	}
	dir := filepath.Join(base, strings.Repeat("d", pad))
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestGlobKeepsOnlyTheNewest: Glob holds the files it shows, not every match, and shows the
// same ones whatever order the walk finds them in.
func TestGlobKeepsOnlyTheNewest(t *testing.T) {
	base := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	var all []hit
	for i := range 10000 {
		all = append(all, hit{fmt.Sprintf("/p/f%05d", i), base.Add(time.Duration(i%997) * time.Second)})
	}
	var n newestHits
	for _, i := range rand.Perm(len(all)) {
		n.add(all[i])
		if len(n.hits) > maxGlobResults {
			t.Fatalf("holding %d hits", len(n.hits))
		}
	}
	slices.SortFunc(all, compareHits)
	if diff := cmp.Diff(all[:maxGlobResults], n.hits, cmp.AllowUnexported(hit{})); diff != "" || n.total != len(all) {
		t.Errorf("total %d; mismatch (-want +got):\n%s", n.total, diff)
	}
}

// TestGrepShowsLinesAsATerminalWould: colour codes and what a carriage return redrew are
// left out of the lines Grep shows, by both engines.
func TestGrepShowsLinesAsATerminalWould(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"build.log": "\x1b[1;31mERROR\x1b[0m disk full\nfine\n 10%\r 55%\r100% ERROR again\n"})
	want := "$ROOT/build.log:1:ERROR disk full\n$ROOT/build.log:3:100% ERROR again\n"
	engines := []GrepEngine{GrepBuiltin}
	if _, err := exec.LookPath("rg"); err == nil {
		engines = append(engines, GrepRipgrep)
	}
	for _, e := range engines {
		env := newEnv(t, dir)
		got := render(call(t, Grep(e, ""), env, grepInput{Pattern: "ERROR", OutputMode: "content"}), env.State.Cwd)
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("engine %d: mismatch (-want +got):\n%s", e, diff)
		}
	}
}
