package builtin

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// makeBenchTree writes files small source-like files in 100 files per directory, with a
// .gitignore and a needle in one file of every thousand.
func makeBenchTree(b *testing.B, files int) string {
	b.Helper()
	dir := b.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".gitignore"), []byte("*.tmp\nignored/\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	body := strings.Repeat("func f(x int) int { return x * 2 } // some ordinary line\n", 20)
	for i := range files {
		d := filepath.Join(dir, fmt.Sprintf("d%03d", i/1000), fmt.Sprintf("e%02d", i/100%10))
		if i%100 == 0 {
			if err := os.MkdirAll(d, 0o755); err != nil {
				b.Fatal(err)
			}
		}
		content := body
		if i%1000 == 0 {
			content += "needle_value := 42\n"
		}
		if err := os.WriteFile(filepath.Join(d, fmt.Sprintf("f%d.go", i)), []byte(content), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkGrep searches a 100,000-file tree (BENCH_GREP_FILES overrides the size) with the
// built-in walker and with ripgrep.
func BenchmarkGrep(b *testing.B) {
	files := 100000
	if n := os.Getenv("BENCH_GREP_FILES"); n != "" {
		fmt.Sscan(n, &files)
	}
	dir := makeBenchTree(b, files)
	rg, _ := exec.LookPath("rg")
	for _, engine := range []struct {
		name string
		e    GrepEngine
	}{{"builtin", GrepBuiltin}, {"ripgrep", GrepRipgrep}} {
		b.Run(engine.name, func(b *testing.B) {
			if engine.e == GrepRipgrep && rg == "" {
				b.Skip("rg is not on PATH")
			}
			env := newEnv(b, dir)
			tl := Grep(engine.e, rg)
			in := grepInput{Pattern: `needle_\w+`, OutputMode: "content"}
			want := files / 1000
			for b.Loop() {
				res := call(b, tl, env, in)
				if n := strings.Count(res.ResultText(), "needle_value"); res.IsError || n != want {
					b.Fatalf("found %d needles, want %d: %.300s", n, want, res.ResultText())
				}
			}
		})
	}
}

// repoRoot returns the module's root: the tree of a mid-sized repository, for benchmarks.
func repoRoot(b *testing.B) string {
	b.Helper()
	dir, err := filepath.Abs(".")
	if err != nil {
		b.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		if filepath.Dir(dir) == dir {
			b.Fatal("no go.mod above the package")
		}
		dir = filepath.Dir(dir)
	}
}

// BenchmarkSearchRepo runs Grep (both engines: a rare and a common pattern) and Glob over
// this repository, the cost of a search on a mid-sized tree.
func BenchmarkSearchRepo(b *testing.B) {
	root := repoRoot(b)
	rg, _ := exec.LookPath("rg")
	for _, engine := range []struct {
		name string
		e    GrepEngine
	}{{"builtin", GrepBuiltin}, {"ripgrep", GrepRipgrep}} {
		for _, in := range []struct {
			name string
			in   grepInput
		}{
			{"rare", grepInput{Pattern: `ErrNotHosted\b`, OutputMode: "content"}},
			{"common", grepInput{Pattern: `func \w+\(`, OutputMode: "count"}},
			{"common-files", grepInput{Pattern: `func \w+\(`}},
		} {
			b.Run("Grep/"+engine.name+"/"+in.name, func(b *testing.B) {
				if engine.e == GrepRipgrep && rg == "" {
					b.Skip("rg is not on PATH")
				}
				env := newEnv(b, root)
				tl := Grep(engine.e, rg)
				for b.Loop() {
					if res := call(b, tl, env, in.in); res.IsError || !strings.Contains(res.ResultText(), ".go") {
						b.Fatalf("%.300s", res.ResultText())
					}
				}
			})
		}
	}
	b.Run("Glob", func(b *testing.B) {
		env := newEnv(b, root)
		for b.Loop() {
			if res := call(b, Glob(), env, globInput{Pattern: "**/*.go"}); res.IsError || !strings.Contains(res.ResultText(), ".go") {
				b.Fatalf("%.300s", res.ResultText())
			}
		}
	})
}
