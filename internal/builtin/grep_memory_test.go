package builtin

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
)

// grepMemoryCeiling is the peak RSS a Grep process may reach on the multi-GB file of
// TestGrepMemoryCeiling: the test binary's own (a race-enabled one is the larger) and a
// constant, far below the file's size.
const grepMemoryCeiling = 256 << 20

// TestGrepMemoryCeiling runs Grep in a process of its own on a 4 GiB file whose every line
// matches until a hole (sparse, so it costs no disk), and checks the process's peak RSS:
// the engines stop reading once the answer is full, in content and files_with_matches mode.
// Reading the file whole, as Grep once did, takes 4 GiB.
func TestGrepMemoryCeiling(t *testing.T) {
	if spec := os.Getenv("KEEL_GREP_MEMORY"); spec != "" {
		grepMemoryChild(t, spec)
		return
	}
	if runtime.GOOS != "linux" {
		t.Skip("peak RSS from rusage is read on Linux")
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "huge.txt")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Write(bytes.Repeat([]byte("a line that matches, one of many\n"), 1<<15)); err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(4 << 30); err != nil {
		t.Skipf("no sparse file here: %v", err)
	}
	f.Close()
	engines := []string{"builtin"}
	if _, err := exec.LookPath("rg"); err == nil {
		engines = append(engines, "ripgrep")
	}
	for _, engine := range engines {
		for _, mode := range []string{"content", "files_with_matches"} {
			t.Run(engine+"/"+mode, func(t *testing.T) {
				cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestGrepMemoryCeiling$")
				cmd.Env = append(os.Environ(), "KEEL_GREP_MEMORY="+strings.Join([]string{path, mode, engine}, "|"))
				var out bytes.Buffer
				cmd.Stdout, cmd.Stderr = &out, &out
				if err := cmd.Run(); err != nil {
					t.Fatalf("grep process: %v\n%s", err, out.String())
				}
				rss := int64(cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss) << 10
				t.Logf("peak RSS %d MiB", rss>>20)
				if rss > grepMemoryCeiling {
					t.Errorf("peak RSS %d MiB, over the %d MiB ceiling", rss>>20, grepMemoryCeiling>>20)
				}
				want := "Found 1 file"
				if mode == "content" {
					want = "[Output cut at 30000 chars after"
				}
				if !strings.Contains(out.String(), want) {
					t.Errorf("output does not say %q:\n%.2000s", want, out.String())
				}
			})
		}
	}
}

// grepMemoryChild is the Grep process of TestGrepMemoryCeiling: it prints Grep's answer.
func grepMemoryChild(t *testing.T, spec string) {
	parts := strings.SplitN(spec, "|", 3)
	path, mode := parts[0], parts[1]
	e := GrepBuiltin
	if parts[2] == "ripgrep" {
		e = GrepRipgrep
	}
	env := newEnv(t, filepath.Dir(path))
	res := call(t, Grep(e, ""), env, grepInput{Pattern: "matches", Path: path, OutputMode: mode})
	fmt.Println(res.ResultText())
}

// repeatReader yields n bytes of block repeated: a file streamed rather than stored.
type repeatReader struct {
	block []byte
	off   int
	n     int64
}

func (r *repeatReader) Read(p []byte) (int, error) {
	if r.n <= 0 {
		return 0, io.EOF
	}
	total := 0
	for len(p) > 0 && r.n > 0 {
		k := copy(p[:min(int64(len(p)), r.n)], r.block[r.off:])
		r.off = (r.off + k) % len(r.block)
		p, r.n, total = p[k:], r.n-int64(k), total+k
	}
	return total, nil
}

// TestScanStreams feeds the built-in engine's scanner files far larger than what it may
// allocate, read whole (count mode, and a pattern found nowhere), and lines longer than its
// buffer, held whole or (past maxHeld) matched as a stream: the bytes it allocates stay far
// below what it reads. (Without -race they are a constant; the race detector's sync.Pool
// drops some of the matchers regexp keeps, so a few KiB are allocated per window.)
func TestScanStreams(t *testing.T) {
	const size = 64 << 20
	block := append(bytes.Repeat([]byte("an ordinary line of some source file\n"), 1<<14), "needle here\n"...)
	longLine := func(n int64) io.Reader {
		return io.MultiReader(&repeatReader{block: []byte("xyz"), n: n}, strings.NewReader("needle\nnext\n"))
	}
	tests := []struct {
		name     string
		r        io.Reader
		pattern  string
		mode     string
		maxHeld  int
		matches  int
		line     int
		maxAlloc uint64
		lineSize int
	}{
		{"count", &repeatReader{block: block, n: size}, "needle", "count", 0, size / len(block), size / len(block) * (1<<14 + 1), size / 16, 0},
		{"no match", &repeatReader{block: block, n: size}, "nowhere", "files_with_matches", 0, 0, size / len(block) * (1<<14 + 1), size / 16, 0},
		{"a line held whole", longLine(4 << 20), "needle", "content", 0, 1, 2, 6 * 4 << 20, 4<<20 + 6},
		{"a line matched as a stream", longLine(1 << 20), "needle", "content", 300 << 10, 1, 2, 300<<10 + 1<<20, 1<<20 + 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q, _, ok := newGrepQuery(newEnv(t, t.TempDir()).State, grepInput{Pattern: tt.pattern, OutputMode: tt.mode})
			if !ok {
				t.Fatal("bad query")
			}
			s := &scanner{q: &q, firstOnly: tt.mode == "files_with_matches", maxHeld: tt.maxHeld}
			a := newGrepAnswer(q, 0, nil)
			if tt.mode == "content" {
				s.bb = newBlockBuilder("f", q, true, a)
			}
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			if _, err := s.scan(context.Background(), tt.r); err != nil {
				t.Fatal(err)
			}
			runtime.ReadMemStats(&after)
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > tt.maxAlloc {
				t.Errorf("allocated %d KiB while scanning, over %d KiB", alloc>>10, tt.maxAlloc>>10)
			}
			if s.matches != tt.matches || s.line < tt.line {
				t.Errorf("matches %d, lines %d; want %d, at least %d", s.matches, s.line, tt.matches, tt.line)
			}
			if s.bb != nil {
				want := fmt.Sprintf("f:1:%s… [line truncated: %d bytes]", strings.Repeat("xyz", 334)[:maxGrepLineChars], tt.lineSize)
				if got := s.bb.block.lines; len(got) != 1 || got[0] != want {
					t.Errorf("block lines %.200q", got)
				}
			}
		})
	}
}
