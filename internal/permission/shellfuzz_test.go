package permission

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/waittest"
)

// The differential fuzz: generated command lines are checked under the single allow rule
// Bash(git status:*), and every line keel would allow runs under real bash (the way the Bash
// tool runs it) in a throw-away directory whose PATH holds only marker programs. A marker
// other than git that runs is a hit: keel allowed a line that runs something its rule does
// not cover.
//
// KEEL_SHELLFUZZ_N sets how many lines to generate (default 3000, the make test run);
// KEEL_SHELLFUZZ_SEED picks the seed (default 1; "random" draws one and logs it).

// fuzzSettings reads a fuzz's size and seed from PREFIX_N (default n) and PREFIX_SEED
// (default 1; "random" draws one, which the caller logs).
func fuzzSettings(t *testing.T, prefix string, n int) (int, uint64) {
	t.Helper()
	if v := os.Getenv(prefix + "_N"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			t.Fatalf("%s_N=%q is not a positive number", prefix, v)
		}
	}
	seed := uint64(1)
	switch v := os.Getenv(prefix + "_SEED"); v {
	case "":
	case "random":
		seed = uint64(time.Now().UnixNano())
	default:
		s, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s_SEED=%q is not a number or \"random\"", prefix, v)
		}
		seed = s
	}
	return n, seed
}

// fuzzWords are the words the generator builds commands from; each gets a marker program.
var fuzzWords = []string{"git", "status", "touch", "rm", "X", "cat", "ls", "echo", "env", "nice",
	"timeout", "xargs", "find", "sudo", "sh", "bash", "true", "EOF", "E", "x", "y", "diff", "log",
	"push", "sub", "nohup", "stdbuf", "command", "builtin", "exec", "eval", "source", "time", "tee"}

// fuzzHarness runs allowed lines under bash with marker programs.
type fuzzHarness struct {
	markers string
	checker *Checker
}

func newFuzzHarness(t testing.TB) *fuzzHarness {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("SKIPPED: bash is not installed, so keel's shell parser cannot be compared with it (scripts/test.sh installs it)")
	}
	markers := t.TempDir()
	for _, w := range fuzzWords {
		if _, ok := transparentWrappers.Get()[w]; ok {
			// A transparent wrapper is allowed to run, so it is the real program, which then
			// runs the wrapped command through the same PATH; a missing one is not found.
			if real, err := exec.LookPath(w); err == nil {
				if err := os.Symlink(real, filepath.Join(markers, w)); err != nil {
					t.Fatal(err)
				}
			}
			continue
		}
		script := "#!/bin/sh\nprintf '%s\\n' " + w + " >> \"$FUZZ_LOG\"\n"
		if err := os.WriteFile(filepath.Join(markers, w), []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	rules := mustRules(t, Allow, "Bash(git status:*)")
	return &fuzzHarness{markers: markers, checker: New(Config{Policy: Policy{Mode: ModeDefault, Rules: rules}})}
}

// allowed reports whether keel allows cmd in dir under Bash(git status:*).
func (h *fuzzHarness) allowed(cmd, dir string) bool {
	return h.checker.Evaluate(Request{Tool: "Bash", Command: cmd, Cwd: dir}).Behavior == Allow
}

// run runs cmd in a fresh directory below scratch, as the Bash tool would, and returns the
// markers other than git that ran.
func (h *fuzzHarness) run(ctx context.Context, scratch, cmd string) ([]string, error) {
	dir, err := os.MkdirTemp(scratch, "run")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		return nil, err
	}
	// ./touch and the like resolve in the cwd, not through PATH.
	for _, w := range fuzzWords {
		if _, err := os.Lstat(filepath.Join(h.markers, w)); w == "sub" || err != nil {
			continue // the directory cd goes to, or a wrapper not installed
		}
		if err := os.Symlink(filepath.Join(h.markers, w), filepath.Join(dir, w)); err != nil {
			return nil, err
		}
	}
	log := filepath.Join(dir, "fuzz.log")
	res, err := shell.Run(ctx, shell.Command{Script: cmd, Dir: dir, Timeout: waittest.Scale(10 * time.Second),
		Env: []string{"PATH=" + h.markers, "FUZZ_LOG=" + log, "HOME=" + dir}})
	if err != nil {
		return nil, err
	}
	if res.TimedOut {
		return nil, fmt.Errorf("timed out")
	}
	data, _ := os.ReadFile(log)
	var hits []string
	for _, name := range strings.Fields(string(data)) {
		if name != "git" {
			hits = append(hits, name)
		}
	}
	return hits, nil
}

func TestShellDifferentialFuzz(t *testing.T) {
	n, seed := fuzzSettings(t, "KEEL_SHELLFUZZ", 3000)
	h := newFuzzHarness(t)
	scratch := t.TempDir()
	gen := newFuzzGen(seed)
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		for range n {
			lines <- gen.line()
		}
	}()
	var (
		allowedN, ran atomic.Int64
		mu            sync.Mutex // guards hits and failures
		hits          []string
		failures      []string
		wg            sync.WaitGroup
	)
	ctx := t.Context()
	for range 4 {
		wg.Go(func() {
			for line := range lines {
				if !h.allowed(line, scratch) {
					continue
				}
				allowedN.Add(1)
				got, err := h.run(ctx, scratch, line)
				ran.Add(1)
				mu.Lock()
				switch {
				case err != nil:
					failures = append(failures, fmt.Sprintf("%q: %v", line, err))
				case len(got) > 0:
					hits = append(hits, fmt.Sprintf("%q ran %v", line, got))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("shell fuzz: seed %d, %d lines generated, %d allowed, %d run, %d hits", seed, n, allowedN.Load(), ran.Load(), len(hits))
	for _, f := range failures {
		t.Errorf("could not run an allowed line: %s", f)
	}
	for _, hit := range hits {
		t.Errorf("allowed under Bash(git status:*) but bash ran another program: %s", hit)
	}
	if allowedN.Load() < int64(n)/50 {
		t.Errorf("only %d of %d lines were allowed: the generator no longer exercises the allow path", allowedN.Load(), n)
	}
}

// FuzzShellMatcher is the native fuzz target for the matcher: analysing a line never panics
// or hangs, and a line allowed under Bash(git status:*) runs nothing else under bash.
func FuzzShellMatcher(f *testing.F) {
	gen := newFuzzGen(7)
	for range 40 {
		f.Add(gen.line())
	}
	for _, s := range []string{"git status", "git status #\\\ntouch X", "git status \\\r\n touch X",
		"git status <<'E'\ntouch X\nE\n", "git status; touch X", "cd sub && git status"} {
		f.Add(s)
	}
	h := newFuzzHarness(f)
	scratch := f.TempDir()
	f.Fuzz(func(t *testing.T, line string) {
		if !h.allowed(line, scratch) {
			return
		}
		got, err := h.run(t.Context(), scratch, line)
		if err != nil {
			t.Skipf("could not run: %v", err)
		}
		if len(got) > 0 {
			t.Errorf("%q is allowed under Bash(git status:*) but ran %v", line, got)
		}
	})
}

// fuzzGen generates command lines: an allowed-looking start followed by glue that bash and a
// parser may split differently, random token soups, here-documents with near-miss
// delimiters, and quotes left open across lines.
type fuzzGen struct {
	r *rand.Rand
}

func newFuzzGen(seed uint64) *fuzzGen {
	return &fuzzGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

var (
	fuzzGlue = []string{
		"#\\\n", "# note \\\n", "#\\", " \\\r\n", "\r\n", "\r", "\\\r", "\\\n", " #\n", "#'\n", "#\"\n",
		";", "&", "&&", "||", "|", "|&", "\n", "\v", "\f", "\t", " ", "'", "\"", "`", "$(", ")",
		"\\;", "\\&", "\\|", "\\\\\n", "\u00a0", "\u2028", "\x85", "\x00", "\\\u00a0", "\\\t", "#\\\r\n",
		"<<EOF\n", "<<'EOF'\n", "<<-EOF\n\t", "<<\"EOF\"\n", "<<E\n", "<<\\EOF\n", "<<'E'\\\n", "<<E;", "<<<", "<(", ">(",
		"{", "}", "(", "\\(", "\\)", "$", "${", "$'", "$\"", "!", "~", "=", "*", "?", "[", "]", "\\\"", "\\'",
		"2>&1", ">/dev/null", "<", ">", ">>", "<>", "&>", "\\#", "\\\\", "\n\t", " \\\n", "\\\n\\\n",
		";#", "&#", "|#", "#;", "\\\n#", "\n#\\\n", "${IFS}", "\\ ", "\t#", "$'\\n'", "<<<'", "\\\u2028", "\u0085",
		" #\\\\\n", "'#\\\n'", "\"#\\\n\"", "$(#\n)", "`#\n`", "\\\r\n#", "\x1b", "\x7f",
	}
	fuzzPayloads = []string{"touch X", "rm x", "X", "./touch X", "ls", "cat", "echo touch; touch X", "sub/../touch X",
		"env touch X", "nice touch X", "timeout 5 touch X", "command touch X", "exec touch X", "time touch X",
		"xargs touch", "find . -exec touch {} +", "eval touch X", "sh -c 'touch X'", "builtin eval touch X"}
	fuzzArgs = []string{"", " -s", " --short", " --porcelain", " -uno", " .", " sub", " 'a b'", " \"a b\"", " a\\ b",
		" $HOME", " ${HOME}", " ~", " *", " {a,b}", " -- x", " \\$x", " '#'", " \"#\"", " a#b", " \\#",
		" '\\'", " \"\\\\\"", " $'a\\'b'", " $'\\n'", " \"$(\"", " '$('", " '`'", " \"\\`\""}
)

func (g *fuzzGen) pick(list []string) string { return list[g.r.IntN(len(list))] }

func (g *fuzzGen) line() string {
	switch g.r.IntN(10) {
	case 0, 1, 2, 3:
		return g.injection()
	case 4, 5:
		return g.heredoc()
	case 6:
		return g.quotes()
	default:
		return g.soup()
	}
}

// start is a command Bash(git status:*) covers, in one of its spellings.
func (g *fuzzGen) start() string {
	s := []string{"git status", "git status", "git status", "git 'status'", "g\\it status", "\"git\" status",
		"git --no-pager status", "timeout 5 git status", "env git status", "nice git status", "command git status",
		"cd sub && git status", "(git status)", "{ git status; }", "time git status", "! git status"}
	return g.pick(s) + g.pick(fuzzArgs)
}

func (g *fuzzGen) injection() string {
	var b strings.Builder
	b.WriteString(g.start())
	for range 1 + g.r.IntN(3) {
		b.WriteString(g.pick(fuzzGlue))
	}
	b.WriteString(g.pick(fuzzPayloads))
	if g.r.IntN(3) == 0 {
		b.WriteString(g.pick(fuzzGlue))
		b.WriteString(g.pick(fuzzArgs))
	}
	return b.String()
}

func (g *fuzzGen) heredoc() string {
	delims := []string{"EOF", "E", "'EOF'", "\"EOF\"", "\\EOF", "E\\OF", "'E'OF", "EOF ", "$x", "E-F", "E.F"}
	ends := []string{"EOF", "E", "EOF ", " EOF", "\tEOF", "EOF\\", "EOF\r", "EOF;", "'EOF'", "EO\\\nF", "E-F", "E.F", ""}
	op := g.pick([]string{"<<", "<<", "<<-", "<< "})
	var b strings.Builder
	b.WriteString(g.start() + " " + op + g.pick(delims))
	if g.r.IntN(4) == 0 {
		b.WriteString(g.pick(fuzzGlue) + g.pick(fuzzPayloads))
	}
	b.WriteString("\n")
	for range g.r.IntN(4) {
		switch g.r.IntN(3) {
		case 0:
			b.WriteString(g.pick(fuzzPayloads))
		case 1:
			b.WriteString(g.pick(ends))
		default:
			b.WriteString(g.pick(fuzzGlue) + g.pick(fuzzPayloads))
		}
		b.WriteString(g.pick([]string{"\n", "\n", "\\\n", "\r\n", "\n\t"}))
	}
	b.WriteString(g.pick(ends))
	b.WriteString(g.pick([]string{"\n", "", "\r\n", " \n", "\\\n"}))
	if g.r.IntN(2) == 0 {
		b.WriteString(g.pick(fuzzPayloads))
	}
	return b.String()
}

func (g *fuzzGen) quotes() string {
	q := g.pick([]string{"'", "\"", "`", "$'", "$\"", "\\", "#", "$(", "${"})
	return g.start() + " " + q + g.pick([]string{"a", "", " ", "\\"}) + g.pick([]string{"\n", "\r\n", "\\\n"}) +
		g.pick(fuzzPayloads) + g.pick([]string{"", q, "'", "\"", ")", "}", "`"}) + g.pick([]string{"", "\n", ";"}) +
		g.pick([]string{"", g.pick(fuzzPayloads)})
}

func (g *fuzzGen) soup() string {
	var b strings.Builder
	if g.r.IntN(2) == 0 {
		b.WriteString(g.start())
	}
	for range 1 + g.r.IntN(8) {
		switch g.r.IntN(4) {
		case 0:
			b.WriteString(g.pick(fuzzGlue))
		case 1:
			b.WriteString(g.pick(fuzzPayloads))
		case 2:
			b.WriteString(g.pick(fuzzArgs))
		default:
			b.WriteString(" " + g.pick(fuzzWords))
		}
	}
	return b.String()
}
