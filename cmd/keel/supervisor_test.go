package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// The supervisor tests run the real keel binary (this test binary under the name keel, as
// testscript installs it on PATH): launchers that are SIGKILLed, the supervisor they start,
// and its job processes.

const supervisorScenario = `
rules:
  - name: drained
    when: {contains: "<task-notification>"}
    reply:
      - text: "Report received."
  - name: bg-child
    when: {user_text: BG-TASK}
    reply:
      - text: "bg findings: 7 files"
  - name: spawn
    when: {user_text: start the survey}
    reply:
      - tool_use:
          name: Agent
          input: {description: survey, prompt: "BG-TASK: count the files", subagent_type: general-purpose, run_in_background: true}
  - name: launched
    when: {tool_result: Agent}
    reply:
      - text: "Launched; I will report when it finishes."
  - name: again
    when: {user_text: anything else}
    reply:
      - text: "Nothing else."
`

// supervisorRig is a keel home whose settings point the supervisor at a scripted model.
type supervisorRig struct {
	t      *testing.T
	keel   string
	home   string
	proj   string
	env    []string
	client *daemon.Client
}

func newSupervisorRig(t *testing.T) *supervisorRig {
	t.Helper()
	keel, err := exec.LookPath("keel")
	if err != nil {
		t.Fatalf("the keel command testscript installs is not on PATH: %v", err)
	}
	sc, err := scripted.ParseScenario("supervisor.yaml", []byte(supervisorScenario))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := scripted.Start(context.Background(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	root := t.TempDir()
	r := &supervisorRig{t: t, keel: keel, home: filepath.Join(root, "keel-home"), proj: filepath.Join(root, "proj")}
	for _, d := range []string{r.home, filepath.Join(r.proj, ".git")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(r.proj, ".git", "HEAD"), []byte("ref: refs/heads/main\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// The supervisor takes its environment from settings, not from the launcher's shell: the
	// model's address reaches its agents only this way.
	settingsJSON := fmt.Sprintf(`{"env": {"ANTHROPIC_BASE_URL": %q, "ANTHROPIC_API_KEY": "test-key"}}`, srv.URL())
	if err := os.WriteFile(filepath.Join(r.home, "settings.json"), []byte(settingsJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	r.env = []string{"KEEL_HOME=" + r.home, "HOME=" + filepath.Join(root, "home"), "PATH=" + os.Getenv("PATH"),
		"ANTHROPIC_BASE_URL=" + srv.URL(), "ANTHROPIC_API_KEY=test-key"}
	r.client = daemon.NewClient(daemon.ClientConfig{Home: r.home})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waittest.Timeout())
		defer cancel()
		_, _ = r.client.Shutdown(ctx)
		_ = r.client.Close()
	})
	return r
}

func (r *supervisorRig) command(args ...string) *exec.Cmd {
	cmd := exec.Command(r.keel, args...)
	cmd.Dir, cmd.Env = r.proj, r.env
	return cmd
}

func (r *supervisorRig) run(args ...string) string {
	r.t.Helper()
	out, err := r.command(args...).CombinedOutput()
	if err != nil {
		r.t.Fatalf("keel %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// launchAndKill starts a headless run whose model launches a background agent, SIGKILLs it
// as soon as the launch receipt is out, and returns the session id and the agent id.
func (r *supervisorRig) launchAndKill() (session, agent string) {
	r.t.Helper()
	cmd := r.command("-p", "start the survey", "--no-wait", "--output-format", "stream-json", "--verbose")
	out, err := cmd.StdoutPipe()
	if err != nil {
		r.t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		r.t.Fatal(err)
	}
	defer func() { _ = cmd.Wait() }()
	lines := make(chan string, 256)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 1<<20), 1<<24)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	for agent == "" {
		line, ok := <-lines
		if !ok {
			r.t.Fatal("the launcher ended before it launched the agent")
		}
		var ev struct {
			SessionID string `json:"session_id"`
			Subtype   string `json:"subtype"`
			TaskID    string `json:"task_id"`
		}
		if json.Unmarshal([]byte(line), &ev) == nil {
			if session == "" && ev.SessionID != "" {
				session = ev.SessionID
			}
			if ev.Subtype == "task_started" {
				agent = ev.TaskID
			}
		}
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		r.t.Fatal(err)
	}
	for range lines {
	}
	return session, agent
}

// waitDelivered waits until the supervisor has queued agent's result.
func (r *supervisorRig) waitDelivered(agent string) daemon.Job {
	r.t.Helper()
	var job daemon.Job
	ctx := waittest.Context(r.t)
	waittest.Until(r.t, "the supervisor to deliver agent "+agent, func() bool {
		st, err := r.client.Status(ctx)
		if err != nil {
			return false
		}
		for _, j := range st.Jobs {
			if j.Agent.ID == agent {
				job = j
				return j.Delivered
			}
		}
		return false
	})
	return job
}

// transcriptCount counts the session's transcript lines that carry agent's notification.
func (r *supervisorRig) transcriptCount(session, agent string) int {
	r.t.Helper()
	paths, _ := filepath.Glob(filepath.Join(r.home, "projects", "*", session+".jsonl"))
	if len(paths) != 1 {
		r.t.Fatalf("transcript of session %s: found %v", session, paths)
	}
	b, err := os.ReadFile(paths[0])
	if err != nil {
		r.t.Fatal(err)
	}
	return strings.Count(string(b), `\u003ctask-id\u003e`+agent+`\u003c/task-id\u003e`) + strings.Count(string(b), "<task-id>"+agent+"</task-id>")
}

// A background agent launched by keel -p --no-wait finishes in the supervisor after its
// launcher was SIGKILLed, and its result reaches the session exactly once when it next runs.
// KEEL_SUPERVISOR_REPS sets the repetitions (100 for the figure; 5 by default).
func TestBackgroundAgentOutlivesKilledLauncher(t *testing.T) {
	reps := 5
	if n, err := strconv.Atoi(os.Getenv("KEEL_SUPERVISOR_REPS")); err == nil && n > 0 {
		reps = n
	}
	r := newSupervisorRig(t)
	lost, doubled := 0, 0
	for rep := range reps {
		session, agent := r.launchAndKill()
		job := r.waitDelivered(agent)
		if job.State != daemon.StateCompleted || !strings.Contains(job.Result, "bg findings: 7 files") {
			t.Fatalf("rep %d: job %+v", rep, job)
		}
		out := r.run("--resume", session, "-p", "anything else")
		if !strings.Contains(out, "Report received.") {
			t.Errorf("rep %d: the resumed session did not get the report: %q", rep, out)
		}
		r.run("--resume", session, "-p", "anything else")
		switch n := r.transcriptCount(session, agent); {
		case n == 0:
			lost++
		case n > 1:
			doubled++
			t.Errorf("rep %d: the report of %s is in the transcript %d times", rep, agent, n)
		}
	}
	t.Logf("%d repetitions: %d lost, %d duplicated", reps, lost, doubled)
	if lost+doubled > 0 {
		t.Errorf("%d of %d reports lost, %d duplicated", lost, reps, doubled)
	}
}
