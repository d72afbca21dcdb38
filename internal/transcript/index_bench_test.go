package transcript

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// cpuTime is the user and system time this process has used.
func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// indexBenchFiles are transcripts an index may have to catch up on, each about size bytes:
// what keel writes (long messages), many short entries (tool calls and results), a session
// whose user entries carry no prompt text (a subagent's), and lines another tool wrote with
// the header fields not first.
func indexBenchFiles(b *testing.B, dir string, size int64) map[string]string {
	out := map[string]string{}
	gen := func(name string, line func(g *benchGen, i int, parent string) string) {
		path := filepath.Join(dir, name+".jsonl")
		f, g := benchFile(b, path)
		parent := ""
		for i := 0; g.n < size; i++ {
			parent = line(g, i, parent)
		}
		benchClose(b, f, g)
		out[name] = path
	}
	short := strings.Repeat("x", 300)
	gen("long", func(g *benchGen, _ int, parent string) string { return g.msg(parent) })
	gen("short", func(g *benchGen, i int, parent string) string {
		id := "s" + strconv.Itoa(i)
		typ := "assistant"
		if i%2 == 0 {
			typ = "user"
		}
		g.line(`{"type":"` + typ + `","uuid":"` + id + `","parentUuid":"` + parent + `","sessionId":"bench","timestamp":"2025-01-02T03:04:05Z","message":{"role":"` + typ + `","content":[{"type":"text","text":"` + short + `"}]}}`)
		return id
	})
	gen("noprompt", func(g *benchGen, i int, parent string) string {
		id := "n" + strconv.Itoa(i)
		if i%2 == 0 {
			g.line(`{"type":"user","uuid":"` + id + `","parentUuid":"` + parent + `","sessionId":"bench","timestamp":"2025-01-02T03:04:05Z","message":{"role":"user","content":[{"type":"tool_result","tool_use_id":"t` + id + `","content":[{"type":"text","text":"` + short + `"}]}]}}`)
		} else {
			g.line(`{"type":"assistant","uuid":"` + id + `","parentUuid":"` + parent + `","sessionId":"bench","timestamp":"2025-01-02T03:04:05Z","message":{"role":"assistant","content":[{"type":"tool_use","id":"t` + id + `","name":"Bash","input":{"command":"` + short + `"}}]}}`)
		}
		return id
	})
	gen("foreign", func(g *benchGen, i int, parent string) string {
		id := "f" + strconv.Itoa(i)
		g.line(`{"parentUuid":"` + parent + `","isSidechain":false,"cwd":"/src/p","sessionId":"bench","type":"user","message":{"role":"user","content":[{"type":"text","text":"` + short + `"}]},"uuid":"` + id + `","timestamp":"2025-01-02T03:04:05Z"}`)
		return id
	})
	return out
}

// BenchmarkIndexCatchUp rebuilds the listing index of transcripts that another process
// appended to (no index covers them): every line is classified from its first bytes, as
// replay does, and only the first prompt and titles are decoded. Warm: the files are in the
// page cache after the first iteration. Run:
//
//	go test -run '^$' -bench IndexCatchUp -benchtime 5x ./internal/transcript/
func BenchmarkIndexCatchUp(b *testing.B) {
	files := indexBenchFiles(b, b.TempDir(), 256<<20)
	for _, name := range []string{"long", "short", "noprompt", "foreign"} {
		path := files[name]
		b.Run(name, func(b *testing.B) {
			f, err := os.Open(path)
			if err != nil {
				b.Fatal(err)
			}
			defer f.Close()
			fi, err := f.Stat()
			if err != nil {
				b.Fatal(err)
			}
			b.SetBytes(fi.Size())
			var ix indexFile
			cpu := cpuTime()
			for b.Loop() {
				os.Remove(indexPath(path))
				if ix, err = refreshIndex(path, f, fi.Size()); err != nil {
					b.Fatal(err)
				}
			}
			// On a shared machine the wall clock counts the time others ran; the process's CPU
			// time does not.
			if used := (cpuTime() - cpu).Seconds(); used > 0 {
				b.ReportMetric(float64(fi.Size())*float64(b.N)/used/1e6, "cpu-MB/s")
			}
			if ix.Messages < 1000 || ix.Size != fi.Size() || (name != "noprompt") != (ix.FirstPrompt != "") {
				b.Fatalf("index %+v", ix)
			}
		})
	}
}
