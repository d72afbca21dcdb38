//go:build unix

package shadow_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/shadow"
)

// generate writes a repository-like tree of n files (100 to a directory, 1–3 KiB of text
// each) under dir.
func generate(b *testing.B, dir string, n int) {
	b.Helper()
	line := strings.Repeat("the quick brown fox jumps over the lazy dog ", 2) + "\n"
	for i := range n {
		p := filepath.Join(dir, fmt.Sprintf("pkg%03d", i/100), fmt.Sprintf("file%03d.go", i%100))
		if i%100 == 0 {
			if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
				b.Fatal(err)
			}
		}
		body := fmt.Sprintf("// file %d\n%s", i, strings.Repeat(line, 12+i%24))
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			b.Fatal(err)
		}
	}
}

// childCPU is the CPU time (user and system) of the child processes waited for so far: git's
// cost, which the wall clock on a loaded machine overstates.
func childCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkCapture10k is the per-turn cost of the shadow capture on a 10,000-file directory:
// each iteration is a turn that changed three files (and one that changed none), captured
// after the first full capture. The first capture's time is reported as first-capture-ms, and
// the CPU time git spent per capture as git-cpu-ms/op.
//
//	go test -run '^$' -bench Capture10k -benchtime 20x ./internal/shadow/
func BenchmarkCapture10k(b *testing.B) {
	dir, home := b.TempDir(), b.TempDir()
	generate(b, dir, 10_000)
	r, err := shadow.Open(b.Context(), dir, shadow.Options{Home: home, Session: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	if _, err := r.Capture(b.Context(), "first"); err != nil {
		b.Fatal(err)
	}
	first := time.Since(start)
	b.Run("three-files-changed", func(b *testing.B) {
		turn := 0
		cpu := childCPU(b)
		for b.Loop() {
			turn++
			for k := range 3 {
				p := filepath.Join(dir, fmt.Sprintf("pkg%03d", (turn*7+k)%100), fmt.Sprintf("file%03d.go", (turn*13+k)%100))
				if err := os.WriteFile(p, fmt.Appendf(nil, "// turn %d\n", turn), 0o644); err != nil {
					b.Fatal(err)
				}
			}
			if _, err := r.Capture(b.Context(), fmt.Sprint("turn ", turn)); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64(first.Milliseconds()), "first-capture-ms")
		b.ReportMetric(float64((childCPU(b)-cpu).Microseconds())/1000/float64(b.N), "git-cpu-ms/op")
	})
	b.Run("unchanged", func(b *testing.B) {
		cpu := childCPU(b)
		for b.Loop() {
			if _, err := r.Capture(b.Context(), "unchanged"); err != nil {
				b.Fatal(err)
			}
		}
		b.ReportMetric(float64((childCPU(b)-cpu).Microseconds())/1000/float64(b.N), "git-cpu-ms/op")
	})
}
