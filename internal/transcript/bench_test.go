package transcript

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"testing"
)

const benchSize = 1 << 30

// benchGen writes synthetic transcripts quickly: lines are formatted by hand, in the shape the
// Writer produces, with ~8 KB of text each.
type benchGen struct {
	w   *bufio.Writer
	n   int64
	seq int
	pad string
}

func newBenchGen(w io.Writer) *benchGen {
	return &benchGen{w: bufio.NewWriterSize(w, 1<<20), pad: strings.Repeat("lorem ipsum ", 680)}
}

func (g *benchGen) line(s string) {
	g.w.WriteString(s)
	g.w.WriteByte('\n')
	g.n += int64(len(s)) + 1
}

func (g *benchGen) msg(parent string) string {
	g.seq++
	id := "m" + strconv.Itoa(g.seq)
	typ, role := "user", "user"
	if g.seq%2 == 0 {
		typ, role = "assistant", "assistant"
	}
	p := "null"
	if parent != "" {
		p = strconv.Quote(parent)
	}
	g.line(`{"type":"` + typ + `","uuid":"` + id + `","parentUuid":` + p +
		`,"sessionId":"bench","timestamp":"2025-01-02T03:04:05Z","cwd":"/src/p","version":"0.1.0","message":{"role":"` +
		role + `","content":[{"type":"text","text":"` + id + " " + g.pad + `"}]}}`)
	return id
}

// genWithBoundary writes ~1 GiB of one long conversation, a compaction boundary, then 200
// more messages.
func genWithBoundary(b *testing.B, path string) {
	f, g := benchFile(b, path)
	leaf := ""
	for g.n < benchSize {
		leaf = g.msg(leaf)
	}
	g.line(`{"type":"summary","uuid":"boundary","parentUuid":"` + leaf + `","sessionId":"bench","timestamp":"2025-01-02T03:04:05Z","summary":"so far","metadata":{"custom-title":"\"bench\""}}`)
	leaf = "boundary"
	for range 200 {
		leaf = g.msg(leaf)
	}
	benchClose(b, f, g)
}

// genNoBoundary writes ~1 GiB without a compaction boundary: a live chain of 1000 messages
// (~8 MiB), each followed by an abandoned branch of ~130 messages and a rewind back to it, as
// left by a user who rewound a lot. Replay must read all of it; it must keep only the chain.
func genNoBoundary(b *testing.B, path string) {
	f, g := benchFile(b, path)
	const trunk = 1000
	branch := int(benchSize / trunk / int64(len(g.pad)+200))
	leaf := ""
	for range trunk {
		leaf = g.msg(leaf)
		side := leaf
		for range branch {
			side = g.msg(side)
		}
		g.line(`{"type":"rewind","uuid":"r` + leaf + `","parentUuid":null,"sessionId":"bench","timestamp":"2025-01-02T03:04:05Z","leafUuid":"` + leaf + `"}`)
	}
	benchClose(b, f, g)
}

func benchFile(b *testing.B, path string) (*os.File, *benchGen) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	g := newBenchGen(f)
	g.line(`{"type":"meta","uuid":"meta","parentUuid":null,"sessionId":"bench","timestamp":"2025-01-02T03:04:05Z","schemaVersion":1}`)
	return f, g
}

func benchClose(b *testing.B, f *os.File, g *benchGen) {
	if err := g.w.Flush(); err != nil {
		b.Fatal(err)
	}
	// Let write-back finish, so the runs below measure reading, not the disk catching up.
	if err := f.Sync(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
}

// peakRSS resets the kernel's high-water mark of resident memory, runs fn with the timer on,
// and returns the new high-water mark in MiB (Linux; 0 elsewhere).
func peakRSS(b *testing.B, fn func()) float64 {
	b.StopTimer()
	runtime.GC()
	debug.FreeOSMemory()
	_ = os.WriteFile("/proc/self/clear_refs", []byte("5"), 0)
	b.StartTimer()
	fn()
	b.StopTimer()
	defer b.StartTimer()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for l := range bytes.Lines(status) {
		if v, ok := bytes.CutPrefix(l, []byte("VmHWM:")); ok {
			kb, _ := strconv.Atoi(strings.TrimSuffix(strings.TrimSpace(string(v)), " kB"))
			return float64(kb) / 1024
		}
	}
	return 0
}

// BenchmarkResume1GiB resumes generated 1 GiB transcripts beside a plain read of the same
// file (what `cat file > /dev/null` does: 128 KiB reads). The files are generated here, in
// b.TempDir, only when the benchmark runs. Run:
//
//	go test -run '^$' -bench Resume1GiB -benchtime 5x ./internal/transcript/
func BenchmarkResume1GiB(b *testing.B) {
	dir := b.TempDir()
	files := []struct {
		name string
		gen  func(*testing.B, string)
	}{{"boundary", genWithBoundary}, {"noboundary", genNoBoundary}}
	for _, f := range files {
		path := filepath.Join(dir, f.name+".jsonl")
		f.gen(b, path)
		b.Run("cat/"+f.name, func(b *testing.B) {
			buf := make([]byte, 128<<10)
			var rss float64
			for b.Loop() {
				rss = max(rss, peakRSS(b, func() {
					fh, err := os.Open(path)
					if err != nil {
						b.Fatal(err)
					}
					defer fh.Close()
					n, err := io.CopyBuffer(io.Discard, struct{ io.Reader }{fh}, buf)
					if err != nil || n < benchSize {
						b.Fatalf("read %d bytes: %v", n, err)
					}
				}))
			}
			b.ReportMetric(rss, "peakRSS-MiB")
		})
		b.Run("resume/"+f.name, func(b *testing.B) {
			var rss float64
			var st *State
			for b.Loop() {
				rss = max(rss, peakRSS(b, func() {
					var err error
					if st, err = Load(b.Context(), path); err != nil {
						b.Fatal(err)
					}
				}))
			}
			var live int
			for _, e := range st.Chain {
				if e.Message != nil {
					live += len(e.Message.TextOf())
				}
			}
			if len(st.Chain) < 200 {
				b.Fatalf("chain of %d entries", len(st.Chain))
			}
			b.ReportMetric(rss, "peakRSS-MiB")
			b.ReportMetric(float64(live)/(1<<20), "live-MiB")
			b.ReportMetric(float64(st.Scanned)/(1<<20), "scanned-MiB")
			b.Logf("%s: chain %d entries, scanned %s", f.name, len(st.Chain), fmt.Sprint(st.Scanned))
		})
	}
}

// writeHugeLine writes a transcript whose one user message is a text of size bytes (with a
// newline and a quote every 64 KiB, so the JSON has escapes), followed by a short reply.
func writeHugeLine(tb testing.TB, path string, size int) {
	tb.Helper()
	f, err := os.Create(path)
	if err != nil {
		tb.Fatal(err)
	}
	w := bufio.NewWriterSize(f, 1<<20)
	w.WriteString(`{"type":"meta","uuid":"meta","parentUuid":null,"sessionId":"huge","schemaVersion":1}` + "\n")
	w.WriteString(`{"type":"user","uuid":"u1","parentUuid":null,"sessionId":"huge","timestamp":"2025-01-02T03:04:05Z","message":{"role":"user","content":[{"type":"text","text":"`)
	block := strings.Repeat("x", 64<<10-3) + `\n\"`
	for n := 0; n < size; n += 64 << 10 {
		w.WriteString(block)
	}
	w.WriteString(`"}]}}` + "\n")
	w.WriteString(`{"type":"assistant","uuid":"a1","parentUuid":"u1","sessionId":"huge","timestamp":"2025-01-02T03:04:06Z","message":{"role":"assistant","content":[{"type":"text","text":"done"}]}}` + "\n")
	if err := w.Flush(); err != nil {
		tb.Fatal(err)
	}
	if err := f.Close(); err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkResumeHugeLine resumes a transcript with a 100 MiB line. Run:
//
//	go test -run '^$' -bench ResumeHugeLine -benchtime 3x ./internal/transcript/
func BenchmarkResumeHugeLine(b *testing.B) {
	path := filepath.Join(b.TempDir(), "huge.jsonl")
	writeHugeLine(b, path, 100<<20)
	var rss float64
	for b.Loop() {
		rss = max(rss, peakRSS(b, func() {
			w, st, err := Resume(b.Context(), path, Options{})
			if err != nil {
				b.Fatal(err)
			}
			if len(st.Chain) != 2 {
				b.Fatalf("chain of %d entries", len(st.Chain))
			}
			w.Close()
		}))
		os.Remove(indexPath(path)) // each run builds the index again, as for a file copied in
	}
	b.ReportMetric(rss, "peakRSS-MiB")
}
