package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

const (
	boardTasks = 20
	// victimTask blocks the first worker that takes it until the test has killed that worker.
	victimTask = 5
)

// workerScenario scripts the lead (create the board, then wait for the team) and the workers
// (for each task, write a file in the worker's own directory and mark the task completed).
func workerScenario() *scripted.Scenario {
	var creates []scripted.Block
	for i := 1; i <= boardTasks; i++ {
		creates = append(creates, scripted.ToolUse("TaskCreate", map[string]string{
			"subject": fmt.Sprintf("job %d", i), "description": fmt.Sprintf("write task-%d.txt", i)}))
	}
	rules := []scripted.Rule{
		{Name: "lead-plan", When: scripted.Match{UserText: "plan the work"}, Reply: creates},
		{Name: "lead-ready", When: scripted.Match{ToolResult: "TaskCreate"}, Reply: []scripted.Block{scripted.Text("Board ready.")}},
		{Name: "task-done", When: scripted.Match{ToolResult: "TaskUpdate"}, Reply: []scripted.Block{scripted.Text("Task done.")}},
		{Name: "worker-ready", When: scripted.Match{UserText: "You joined team"}, Reply: []scripted.Block{scripted.Text("Ready.")}},
	}
	for i := 1; i <= boardTasks; i++ {
		cmd := fmt.Sprintf("echo %d > task-%d.txt", i, i)
		if i == victimTask {
			// The first taker says so and hangs (mid-task) until it is killed; the next one
			// finds the mark and does the work.
			cmd = fmt.Sprintf("test -e ../victim-dead || { touch ../victim-holds; while ! test -e ../victim-dead; do sleep 0.02; done; exit 1; }; %s", cmd)
		}
		rules = append(rules, scripted.Rule{Name: fmt.Sprintf("task-%d", i),
			When: scripted.Match{UserText: fmt.Sprintf("You claimed task #%d from", i)},
			Reply: []scripted.Block{
				scripted.ToolUse("Bash", map[string]string{"command": cmd, "description": "do the job"}),
				scripted.ToolUse("TaskUpdate", map[string]string{"taskId": fmt.Sprint(i), "status": "completed"}),
			}})
	}
	return &scripted.Scenario{Rules: rules, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("Noted.")}}}
}

type worker struct {
	name, dir string
	cmd       *exec.Cmd
	// done is closed when the process has exited, with err its Wait error.
	done chan struct{}
	err  error
}

// stopped is a channel that delivers once the process has exited.
func (w *worker) stopped() <-chan struct{} {
	ch := make(chan struct{}, 1)
	go func() {
		<-w.done
		ch <- struct{}{}
	}()
	return ch
}

// Two `keel worker` processes, each with its own home and working directory (two hosts), and
// a headless lead finish a 20-task board through NATS; one worker is SIGKILLed in the middle
// of a task, and after its lease the other takes that task over and finishes it.
func TestWorkersFinishBoardThroughNATS(t *testing.T) {
	keel, err := exec.LookPath("keel")
	if err != nil {
		t.Fatalf("the keel command testscript installs is not on PATH: %v", err)
	}
	installKeelNATS(t, keel) // keel reaches NATS through keel-nats coord
	nsrv := natstest.Start(t)
	msrv, err := scripted.Start(context.Background(), "", workerScenario(), scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = msrv.Close() })
	root := t.TempDir()
	const teamName = "board20"
	// The lease also sets the heartbeat (a fifth of it) and when a silent member counts as
	// dead: long enough that a loaded machine does not make the live worker look dead.
	lease := waittest.Scale(6 * time.Second)
	env := func(host string) []string {
		return []string{"KEEL_HOME=" + filepath.Join(root, host, "keel-home"), "HOME=" + filepath.Join(root, host, "home"),
			"PATH=" + os.Getenv("PATH"), "ANTHROPIC_BASE_URL=" + msrv.URL(), "ANTHROPIC_API_KEY=test-key",
			"KEEL_NATS_URL=" + nsrv.URL(), "KEEL_TEAM_LEASE=" + lease.String(), "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1"}
	}
	start := func(name string) *worker {
		dir := filepath.Join(root, name)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		w := &worker{name: name, dir: dir, done: make(chan struct{})}
		// The workers' commands meet in root, beside their directories (../victim-holds): the
		// sandbox lets them write there because the user's settings say so.
		for _, d := range []string{"keel-home", "home"} {
			if err := os.MkdirAll(filepath.Join(root, name, d), 0o700); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.WriteFile(filepath.Join(root, name, "keel-home", "settings.json"),
			fmt.Appendf(nil, `{"sandbox": {"filesystem": {"allowWrite": [%q]}}}`, root), 0o600); err != nil {
			t.Fatal(err)
		}
		w.cmd = exec.Command(keel, "worker", "--team", teamName, "--name", name, "--cwd", dir, "--allowedTools", "Bash")
		w.cmd.Env = env(name)
		logf, err := os.Create(filepath.Join(root, name+".log"))
		if err != nil {
			t.Fatal(err)
		}
		w.cmd.Stdout, w.cmd.Stderr = logf, logf
		if err := w.cmd.Start(); err != nil {
			t.Fatal(err)
		}
		go func() {
			w.err = w.cmd.Wait()
			_ = logf.Close()
			close(w.done)
		}()
		t.Cleanup(func() {
			_ = w.cmd.Process.Kill()
			<-w.done
		})
		return w
	}
	workers := []*worker{start("w1"), start("w2")}
	var leadMu sync.Mutex
	var leadLines []string
	// leadOutput is what the lead printed so far, safe while its reader still appends.
	leadOutput := func() []string {
		leadMu.Lock()
		defer leadMu.Unlock()
		return slices.Clone(leadLines)
	}
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		for _, w := range workers {
			b, _ := os.ReadFile(filepath.Join(root, w.name+".log"))
			t.Logf("%s's output:\n%s", w.name, b)
		}
		t.Logf("the lead's output:\n%s", strings.Join(leadOutput(), "\n"))
	})

	// The test's own view of the team, through the same NATS. It lives as long as the test;
	// each step below has its own time limit (the whole run takes longer than one on a loaded
	// machine: a limit shared by all of them ended the last reads of the board).
	view, err := natscoord.Open(waittest.Context(t), natscoord.Options{URL: nsrv.URL(), Team: teamName})
	if err != nil {
		t.Fatal(err)
	}
	defer view.Close()
	joined := waittest.Context(t)
	waittest.Until(t, "both workers to join and idle", func() bool {
		recs, _ := view.Records().List(joined, "members/")
		idle := 0
		for _, r := range recs {
			var m struct{ State string }
			if json.Unmarshal(r.Value, &m) == nil && m.State == "idle" {
				idle++
			}
		}
		return idle == 2
	})

	leadDir := filepath.Join(root, "lead")
	if err := os.MkdirAll(leadDir, 0o700); err != nil {
		t.Fatal(err)
	}
	lead := exec.Command(keel, "-p", "plan the work", "--team-name", teamName, "--cwd", leadDir, "--output-format", "stream-json", "--verbose")
	lead.Env = env("lead")
	leadOut, err := lead.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	lead.Stderr = os.Stderr
	if err := lead.Start(); err != nil {
		t.Fatal(err)
	}
	leadDone := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(leadOut)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			leadMu.Lock()
			leadLines = append(leadLines, sc.Text())
			leadMu.Unlock()
		}
		leadDone <- lead.Wait()
	}()
	t.Cleanup(func() { _ = lead.Process.Kill() })

	// Kill whoever takes the victim task while it is on it.
	waittest.Until(t, "a worker to start on the victim task", func() bool {
		_, err := os.Stat(filepath.Join(root, "victim-holds"))
		return err == nil
	})
	tk, err := view.Board().Get(waittest.Context(t), fmt.Sprint(victimTask))
	if err != nil {
		t.Fatal(err)
	}
	var victim, survivor *worker
	for _, w := range workers {
		if w.name == tk.Owner {
			victim = w
		} else {
			survivor = w
		}
	}
	if victim == nil || tk.Status != coord.StatusInProgress {
		t.Fatalf("the victim task is %s, held by %q: not by a worker", tk.Status, tk.Owner)
	}
	if err := victim.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-victim.done
	if err := os.WriteFile(filepath.Join(root, "victim-dead"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	t.Logf("killed %s in the middle of task %d", victim.name, victimTask)

	// One worker now does the rest of the board alone, after the victim's lease lapses: on a
	// loaded machine that is longer than one time limit, so the limit is on progress — each
	// limit must see another task completed — not on the whole.
	completed := func() int {
		tasks, _ := view.Board().List(waittest.Context(t))
		n := 0
		for _, tk := range tasks {
			if tk.Status == coord.StatusCompleted {
				n++
			}
		}
		return n
	}
	for progress := -1; ; {
		var leadErr error
		select {
		case leadErr = <-leadDone:
		case <-time.After(waittest.Timeout()):
			n := completed()
			if n == progress {
				t.Fatalf("the lead did not finish and no task was completed in %v (%d completed)\n%s", waittest.Timeout(), n, strings.Join(leadOutput(), "\n"))
			}
			progress = n
			continue
		}
		if leadErr != nil {
			t.Fatalf("lead: %v\n%s", leadErr, strings.Join(leadOutput(), "\n"))
		}
		break
	}
	waittest.Recv(t, "the surviving worker to stop when the lead shuts the team down", survivor.stopped())
	if survivor.err != nil {
		t.Errorf("surviving worker: %v", survivor.err)
	}

	tasks, err := view.Board().List(waittest.Context(t))
	if err != nil {
		t.Fatal(err)
	}
	if len(tasks) != boardTasks {
		t.Fatalf("the board has %d tasks, want %d", len(tasks), boardTasks)
	}
	for _, tk := range tasks {
		if tk.Status != coord.StatusCompleted {
			t.Errorf("task %s is %s (owner %q)", tk.ID, tk.Status, tk.Owner)
		}
	}
	done := map[int][]string{}
	for _, w := range workers {
		files, _ := filepath.Glob(filepath.Join(w.dir, "task-*.txt"))
		for _, f := range files {
			var n int
			if _, err := fmt.Sscanf(filepath.Base(f), "task-%d.txt", &n); err == nil {
				done[n] = append(done[n], w.name)
			}
		}
	}
	var missing []int
	for i := 1; i <= boardTasks; i++ {
		if len(done[i]) == 0 {
			missing = append(missing, i)
		} else if len(done[i]) > 1 {
			t.Errorf("task %d was done by %v", i, done[i])
		}
	}
	if len(missing) > 0 {
		t.Errorf("tasks never done: %v", missing)
	}
	if !slices.Equal(done[victimTask], []string{survivor.name}) {
		t.Errorf("the victim task was done by %v, want the survivor %s", done[victimTask], survivor.name)
	}
	// The remote workers' work shows in the lead's stream-json as a local teammate's would:
	// their states, and their replies with the commands they ran, under their agent ids.
	states := map[string]bool{}
	var survivorRan []string
	for _, l := range leadOutput() {
		var line struct {
			Type, Subtype, State string
			AgentName            string `json:"agent_name"`
			Message              struct {
				Content []struct {
					Type  string
					Input struct{ Command string }
				}
			}
		}
		if json.Unmarshal([]byte(l), &line) != nil {
			continue
		}
		if line.Subtype == "teammate_state" {
			states[line.AgentName+" "+line.State] = true
		}
		if line.Type == "assistant" && line.AgentName == survivor.name {
			for _, c := range line.Message.Content {
				if c.Type == "tool_use" && c.Input.Command != "" {
					survivorRan = append(survivorRan, c.Input.Command)
				}
			}
		}
	}
	for _, w := range workers {
		if !states[w.name+" working"] {
			t.Errorf("the lead's stream has no teammate_state working line of the remote worker %s: %v", w.name, states)
		}
	}
	if !slices.ContainsFunc(survivorRan, func(c string) bool { return strings.Contains(c, fmt.Sprintf("task-%d.txt", victimTask)) }) {
		t.Errorf("the lead's stream does not show the survivor %s run the victim task's command; it shows %q", survivor.name, survivorRan)
	}
	for _, w := range workers {
		n := 0
		for _, names := range done {
			if slices.Contains(names, w.name) {
				n++
			}
		}
		t.Logf("%s did %d tasks", w.name, n)
	}
}
