package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/buildtest"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/waittest"
)

// The task the scripted model works through: a command and a new file in one turn (so a kill
// during the command leaves a call that never started), a read, an edit, a second command.
// Each call's effect is visible on disk, so the test can tell what really ran. The commands
// pause briefly so kills land inside them too.
var (
	bashOne  = scripted.ToolUse("Bash", map[string]string{"command": "echo ran step-one >> log.txt; sleep 0.02; echo ran step-one", "description": "step one"})
	writeF   = scripted.ToolUse("Write", map[string]string{"file_path": "f.txt", "content": "content: draft\n"})
	readF    = scripted.ToolUse("Read", map[string]string{"file_path": "f.txt"})
	editF    = scripted.ToolUse("Edit", map[string]string{"file_path": "f.txt", "old_string": "draft", "new_string": "final"})
	bashTwo  = scripted.ToolUse("Bash", map[string]string{"command": "echo ran step-two >> log.txt; sleep 0.02; echo ran step-two", "description": "step two"})
	check    = scripted.ToolUse("Bash", map[string]string{"command": "cat log.txt f.txt 2>/dev/null; echo checked", "description": "check"})
	killTask = [][]scripted.Block{{bashOne, writeF}, {readF}, {editF}, {bashTwo}}
)

// killScenario is a model that behaves as a careful one would after a crash: told its calls did
// not run, it sends them again (it trusts keel — so a wrong "did not run" shows up as a command
// that ran twice); told one may have run, or given no news, it looks at the files first and
// goes on from what it finds.
func killScenario() *scripted.Scenario {
	var rules []scripted.Rule
	for i, step := range killTask {
		again := step
		if step[0].Name == "Edit" {
			again = []scripted.Block{readF} // a new process has not read the file: read it, then edit
		}
		rules = append(rules, scripted.Rule{Name: fmt.Sprintf("redo %d", i+1),
			When: scripted.Match{UserText: fmt.Sprintf("continue from step %d", i+1), Contains: tool.CrashNotRunText}, Reply: again})
	}
	// The redo rules come after this one: a turn that may have half run is checked, not redone.
	rules = append([]scripted.Rule{{Name: "check what may have run", When: scripted.Match{UserText: "continue", Contains: "it may have run"},
		Reply: []scripted.Block{scripted.Text("Checking what already happened."), check}}}, rules...)
	rules = append(rules,
		scripted.Rule{Name: "check", When: scripted.Match{UserText: "continue"}, Reply: []scripted.Block{scripted.Text("Checking what already happened."), check}},
		scripted.Rule{Name: "done", When: scripted.Match{Contains: "ran step-two"}, Reply: []scripted.Block{scripted.Text("task done")}},
		scripted.Rule{Name: "step 4", When: scripted.Match{Contains: "content: final"}, Reply: []scripted.Block{bashTwo}},
		scripted.Rule{Name: "step 3", When: scripted.Match{ToolResult: "Read", Contains: "content: draft"}, Reply: []scripted.Block{editF}},
		scripted.Rule{Name: "step 2 after check", When: scripted.Match{Contains: "content: draft"}, Reply: []scripted.Block{readF}},
		scripted.Rule{Name: "step 2", When: scripted.Match{Contains: "f.txt (1 line)"}, Reply: []scripted.Block{readF}},
		scripted.Rule{Name: "step 1 write", When: scripted.Match{Contains: "ran step-one"}, Reply: []scripted.Block{writeF}},
		scripted.Rule{Name: "step 1", When: scripted.Match{UserText: "do the task"}, Reply: append([]scripted.Block{scripted.Text("Starting.")}, killTask[0]...)},
		scripted.Rule{Name: "step 1 after check", When: scripted.Match{Contains: "checked"}, Reply: killTask[0]},
	)
	return &scripted.Scenario{Rules: rules, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("lost: nothing scripted for this")}}}
}

// killStats are the figures the kill test reports.
type killStats struct {
	kills, continues, notStarted int
	mayHaveRun, didNotRun        int
	requests, cutOff, invalid    int
	doubleRuns, unexplained      int
}

func (s *killStats) add(o killStats) {
	s.kills += o.kills
	s.continues += o.continues
	s.notStarted += o.notStarted
	s.mayHaveRun += o.mayHaveRun
	s.didNotRun += o.didNotRun
	s.requests += o.requests
	s.cutOff += o.cutOff
	s.invalid += o.invalid
	s.doubleRuns += o.doubleRuns
	s.unexplained += o.unexplained
}

// TestProcessKill runs `keel -p` on the task above against the scripted model, kills it with
// SIGKILL at a random moment, runs `keel --continue -p` to the end, and checks: every request
// the model server received was valid; no command ran twice; a call keel said did not run had
// no effect; every call that may have run was reported to the model as such; the task ends
// done. KEEL_PROCESS_KILLS sets the number of kills (default 200; more for a long run).
func TestProcessKill(t *testing.T) {
	if testing.Short() {
		t.Skip("starts hundreds of keel processes")
	}
	kills := 200
	if s := os.Getenv("KEEL_PROCESS_KILLS"); s != "" {
		var err error
		if kills, err = strconv.Atoi(s); err != nil || kills < 1 {
			t.Fatalf("KEEL_PROCESS_KILLS=%q is not a positive number", s)
		}
	}
	// A plain build: the race-enabled test binary starts and runs several times slower, and
	// this test starts keel hundreds of times; the in-process tests race-check the same code.
	exe := buildtest.Keel(t, buildtest.Options{})
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("KEEL_PROCESS_KILL_SEED"); s != "" {
		seed, _ = strconv.ParseUint(s, 10, 64)
	}
	t.Logf("seed %d (KEEL_PROCESS_KILL_SEED reproduces it)", seed)
	root := t.TempDir()
	// Two workers, each with its own model server and directories: the cycles are independent,
	// and most of a cycle is waiting on a process.
	const workers = 2
	var (
		mu sync.Mutex // guards st
		st killStats
	)
	t.Run("kills", func(t *testing.T) {
		for w := range workers {
			t.Run(fmt.Sprintf("worker-%d", w), func(t *testing.T) {
				t.Parallel()
				rng := rand.New(rand.NewPCG(seed, uint64(w)))
				for i := w; i < kills; i += workers {
					var one killStats
					killCycle(t, exe, filepath.Join(root, strconv.Itoa(i)), rng, &one)
					mu.Lock()
					st.add(one)
					mu.Unlock()
					if t.Failed() {
						t.Fatalf("kill %d failed (seed %d)", i, seed)
					}
				}
			})
		}
	})
	t.Logf("%d kills, %d continues (%d before keel had started the session), %d requests (%d cut off by a kill), %d invalid requests, "+
		"%d calls reported as may have run, %d as did not run, %d double runs, %d unexplained",
		st.kills, st.continues, st.notStarted, st.requests, st.cutOff, st.invalid, st.mayHaveRun, st.didNotRun, st.doubleRuns, st.unexplained)
	if st.invalid != 0 || st.doubleRuns != 0 || st.unexplained != 0 {
		t.Errorf("invalid requests %d, double runs %d, unexplained %d: all must be 0", st.invalid, st.doubleRuns, st.unexplained)
	}
}

// killCycle is one kill and its continue, in a project directory of its own.
func killCycle(t *testing.T, exe, dir string, rng *rand.Rand, st *killStats) {
	t.Helper()
	srv, err := scripted.Start(t.Context(), "", killScenario(), scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	env := append(os.Environ(), "KEEL_HOME="+filepath.Join(dir, ".keel-home"), "HOME="+filepath.Join(dir, ".home"),
		"ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=test", "ANTHROPIC_MODEL=claude-test")
	keel := func(args ...string) *exec.Cmd {
		cmd := exec.CommandContext(t.Context(), exe, args...)
		cmd.Dir, cmd.Env = dir, env
		return cmd
	}

	// The run to kill: after a random number of model requests, at a random moment.
	cmd := keel("-p", "do the task", "--dangerously-skip-permissions")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	if n := rng.IntN(len(killTask) + 2); n > 0 {
		if _, err := srv.WaitRequests(waittest.Context(t), n); err != nil {
			cmd.Process.Kill()
			cmd.Wait()
			t.Fatalf("keel made fewer than %d requests: %v\n%s", n, err, stderr.String())
		}
	}
	// A random pause moves the kill to a random point of keel's work; it waits for nothing.
	time.Sleep(time.Duration(rng.IntN(40_000)) * time.Microsecond) //keel:duration a random moment to kill at, not a limit
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	if err := cmd.Wait(); err == nil {
		t.Logf("keel finished before the kill: %s", stderr.String())
	}
	st.kills++
	killed := effects(t, dir)

	// The continue, to the end.
	st.continues++
	before := len(srv.Requests())
	step := lastStep(t, srv)
	out, err := keel("--continue", "-p", fmt.Sprintf("continue from step %d", step), "--dangerously-skip-permissions").CombinedOutput()
	if err != nil && strings.Contains(string(out), "no earlier session") {
		// Killed before the session was written: nothing to continue, so start again.
		st.notStarted++
		out, err = keel("-p", "do the task", "--dangerously-skip-permissions").CombinedOutput()
	}
	if err != nil || !strings.Contains(string(out), "task done") {
		holders, _ := exec.Command("sh", "-c", "for p in /proc/[0-9]*; do ls -l $p/fd 2>/dev/null | grep -q '"+dir+"' && echo $p $(cat $p/cmdline | tr '\\0' ' '); done").CombinedOutput()
		t.Fatalf("the run after the kill did not finish the task: %v\n%s\nholders:\n%s\nrequests (rule: last message):\n%s", err, out, holders, requestTrail(srv.Requests()))
	}

	reqs := srv.Requests()
	st.requests += len(reqs)
	first := before // the continue's first request
	for k, r := range reqs {
		// k == before: the killed upload may be recorded only after before was read.
		if k <= before && strings.HasPrefix(r.Error, "read request body") {
			st.cutOff++ // the kill cut the upload short: keel never finished sending it
			if k == before {
				first++
			}
			continue
		}
		if r.Status != 200 {
			st.invalid++
			t.Errorf("request %d was refused: %d %s", r.N, r.Status, r.Error)
		}
	}
	if len(reqs) > first {
		judgeRepair(t, reqs[first].Body, killed, st)
	}
	final := effects(t, dir)
	for _, marker := range []string{"ran step-one", "ran step-two"} {
		if n := final.runs[marker]; n != 1 {
			st.doubleRuns += max(n-1, 0)
			t.Errorf("%q ran %d times; log:\n%s", marker, n, final.log)
		}
	}
	if final.file != "content: final\n" {
		t.Errorf("f.txt = %q after the task", final.file)
	}
}

// diskState is what the steps left on disk.
type diskState struct {
	log  string
	runs map[string]int
	file string
}

func effects(t *testing.T, dir string) diskState {
	t.Helper()
	log, _ := os.ReadFile(filepath.Join(dir, "log.txt"))
	file, _ := os.ReadFile(filepath.Join(dir, "f.txt"))
	s := diskState{log: string(log), runs: map[string]int{}, file: string(file)}
	sc := bufio.NewScanner(bytes.NewReader(log))
	for sc.Scan() {
		s.runs[sc.Text()]++
	}
	return s
}

// lastStep is the step the model asked for last (1-based), from the replies the server gave:
// the step the killed run was at, which the continue prompt names (a model would remember).
func lastStep(t *testing.T, srv *scripted.Server) int {
	t.Helper()
	step := 1
	for _, r := range srv.Requests() {
		if n, ok := strings.CutPrefix(r.Rule, "step "); ok {
			if k, err := strconv.Atoi(strings.Fields(n)[0]); err == nil {
				step = k
			}
		}
	}
	return step
}

// judgeRepair reads the first request after the kill: every call keel answered as "did not
// run" must have left no trace, and a call that left one must have been reported as one that
// may have run.
func judgeRepair(t *testing.T, body []byte, killed diskState, st *killStats) {
	t.Helper()
	msgs, err := anthropic.DecodeMessages(body)
	if err != nil {
		t.Fatalf("request body: %v", err)
	}
	uses := map[string]message.Block{}
	for _, m := range msgs {
		for _, b := range m.ToolUses() {
			uses[b.ID] = b
		}
	}
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type != message.TypeToolResult {
				continue
			}
			text := message.Message{Content: b.Content}.TextOf()
			switch {
			case text == tool.CrashNotRunText:
				st.didNotRun++
				if ranAtKill(uses[b.ToolUseID], killed) {
					st.unexplained++
					t.Errorf("keel said call %s (%s) did not run, but it did: %s", b.ToolUseID, uses[b.ToolUseID].Input, killed.log)
				}
			case strings.HasPrefix(text, "keel stopped before this call finished; it may have run"):
				st.mayHaveRun++
			}
		}
	}
}

// ranAtKill reports whether the effect of call u is on disk: its command's line in the log,
// the file it writes, the change it makes.
func ranAtKill(u message.Block, s diskState) bool {
	var in struct {
		Command   string `json:"command"`
		OldString string `json:"old_string"`
	}
	_ = json.Unmarshal(u.Input, &in)
	switch {
	case u.Name == "Bash" && strings.Contains(in.Command, "step-one"):
		return s.runs["ran step-one"] > 0
	case u.Name == "Bash" && strings.Contains(in.Command, "step-two"):
		return s.runs["ran step-two"] > 0
	case u.Name == "Write":
		return s.file != ""
	case u.Name == "Edit":
		return strings.Contains(s.file, "final")
	}
	return false
}

// requestTrail is one line per request the model saw: the rule that answered and the end of
// its last message, so a failed cycle says where the scenario lost its way.
func requestTrail(reqs []scripted.Recorded) string {
	var b strings.Builder
	for _, r := range reqs {
		var body struct {
			Messages []json.RawMessage `json:"messages"`
		}
		_ = json.Unmarshal(r.Body, &body)
		last := ""
		if n := len(body.Messages); n > 0 {
			last = string(body.Messages[n-1])
			if len(last) > 400 {
				last = "…" + last[len(last)-400:]
			}
		}
		fmt.Fprintf(&b, "%d %s (%d %s): %s\n", r.N, r.Rule, r.Status, r.Error, last)
	}
	return b.String()
}
