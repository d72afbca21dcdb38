package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/procgroup"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// The supervisor tests run the real keel binary (this test binary under the name keel, as
// testscript installs it on PATH): launchers that are SIGKILLed, the supervisor they start,
// and its job processes. keel-nats, which the supervisor runs for the embedded nats-server, is
// built once into the same directory, where the supervisor finds it as it finds it beside an
// installed keel.

var (
	natsOnce sync.Once
	natsErr  error
)

// installKeelNATS builds cmd/keel-nats beside the keel binary at keel, once per test binary.
func installKeelNATS(t *testing.T, keel string) {
	t.Helper()
	natsOnce.Do(func() { _, natsErr = buildtest.CompanionInto(filepath.Dir(keel), "keel-nats") })
	if natsErr != nil {
		t.Fatal(natsErr)
	}
}

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
	srv    *scripted.Server
}

func newSupervisorRig(t *testing.T) *supervisorRig {
	t.Helper()
	return newSupervisorRigWith(t, supervisorScenario)
}

// newSupervisorRigWith is newSupervisorRig with the model answering scenario.
func newSupervisorRigWith(t *testing.T, scenario string) *supervisorRig {
	t.Helper()
	keel, err := exec.LookPath("keel")
	if err != nil {
		t.Fatalf("the keel command testscript installs is not on PATH: %v", err)
	}
	installKeelNATS(t, keel)
	sc, err := scripted.ParseScenario("supervisor.yaml", []byte(scenario))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := scripted.Start(context.Background(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return newSupervisorRigOn(t, keel, srv, nil)
}

// newSupervisorRigOn is a rig (a machine of its own: keel home, project, supervisor) whose
// model is srv; env adds variables to its settings' env — the supervisor's environment —
// and to its processes'.
func newSupervisorRigOn(t *testing.T, keel string, srv *scripted.Server, env map[string]string) *supervisorRig {
	t.Helper()
	root := t.TempDir()
	r := &supervisorRig{t: t, keel: keel, home: filepath.Join(root, "keel-home"), proj: filepath.Join(root, "proj"), srv: srv}
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
	settingsEnv := map[string]string{"ANTHROPIC_BASE_URL": srv.URL(), "ANTHROPIC_API_KEY": "test-key"}
	maps.Copy(settingsEnv, env)
	settingsJSON, err := json.Marshal(map[string]any{"env": settingsEnv})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(r.home, "settings.json"), settingsJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	r.env = []string{"KEEL_HOME=" + r.home, "HOME=" + filepath.Join(root, "home"), "PATH=" + os.Getenv("PATH")}
	for _, k := range slices.Sorted(maps.Keys(settingsEnv)) {
		r.env = append(r.env, k+"="+settingsEnv[k])
	}
	r.client = daemon.NewClient(daemon.ClientConfig{Home: r.home})
	t.Cleanup(func() {
		if t.Failed() {
			logs, _ := filepath.Glob(filepath.Join(r.home, "supervisor", "*", "*.log"))
			logs = append(logs, filepath.Join(r.home, "supervisor", "supervisor.log"))
			for _, l := range logs {
				b, _ := os.ReadFile(l)
				t.Logf("%s:\n%s", l, b)
			}
		}
	})
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), waittest.Timeout())
		defer cancel()
		if _, err := r.client.Shutdown(ctx); err != nil {
			t.Errorf("stop the supervisor: %v", err)
			if st, err := r.client.Status(context.Background()); err == nil && st.Info != nil {
				_ = syscall.Kill(st.Info.PID, syscall.SIGKILL) // never leave one behind
			}
		}
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

// slowScenario adds to supervisorScenario an agent that holds (in a Bash loop the test
// releases) and writes what it sees of its environment.
func slowScenario(root string) string {
	script := fmt.Sprintf(`touch %[1]s/slow-started; echo "settings=$FROM_SETTINGS shell=$FROM_SHELL" > %[1]s/env.txt; while ! test -e %[1]s/slow-release && test -d %[1]s; do sleep 0.02; done`, root)
	return supervisorScenario + fmt.Sprintf(`
  - name: bg-resumed
    # Before bg-slow: a continued agent's history still holds its first prompt.
    when: {user_text: The process that ran you stopped}
    reply:
      - text: "resumed findings"
  - name: spawn-slow
    when: {user_text: start the slow survey}
    reply:
      - tool_use:
          name: Agent
          input: {description: slow survey, prompt: "BG-SLOW: survey slowly", subagent_type: general-purpose, run_in_background: true}
  - name: bg-slow
    when: {user_text: BG-SLOW}
    reply:
      - tool_use:
          name: Bash
          input: {command: %q, description: survey}
  - name: bg-slow-done
    when: {tool_result: Bash}
    reply:
      - text: "slow findings"
`, script)
}

func (r *supervisorRig) job(agent string) daemon.Job {
	r.t.Helper()
	st, err := r.client.Status(waittest.Context(r.t))
	if err != nil {
		r.t.Fatal(err)
	}
	for _, j := range st.Jobs {
		if j.Agent.ID == agent {
			return j
		}
	}
	r.t.Fatalf("no job for agent %s", agent)
	return daemon.Job{}
}

// launchSlow starts a background agent that holds until released and waits until it runs.
func (r *supervisorRig) launchSlow(root string) string {
	r.t.Helper()
	for _, f := range []string{"slow-started", "slow-release"} {
		_ = os.Remove(filepath.Join(root, f))
	}
	cmd := r.command("-p", "start the slow survey", "--no-wait", "--allowedTools", "Bash", "--output-format", "json")
	cmd.Env = append(cmd.Env, "FROM_SHELL=leaked")
	out, err := cmd.Output()
	if err != nil {
		r.t.Fatalf("launch: %v\n%s", err, out)
	}
	var res struct {
		SessionID string `json:"session_id"`
	}
	if err := json.Unmarshal(out, &res); err != nil || res.SessionID == "" {
		r.t.Fatalf("launcher said %s", out)
	}
	waittest.Until(r.t, "the slow agent to start", func() bool {
		_, err := os.Stat(filepath.Join(root, "slow-started"))
		return err == nil
	})
	st, err := r.client.Status(waittest.Context(r.t))
	if err != nil {
		r.t.Fatal(err)
	}
	for _, j := range st.Jobs {
		if j.Agent.SessionID == res.SessionID {
			return j.Agent.ID
		}
	}
	r.t.Fatalf("no job for session %s", res.SessionID)
	return ""
}

// The supervisor is killed while an agent runs: the agent's process goes on, the next
// supervisor adopts it, and its result is delivered once. Then the agent's own process is
// killed: the supervisor starts it again, it continues from its transcript, and again the
// result is delivered once. The agents' environment is the settings' env, never the
// launching shell's.
func TestSupervisorRecoversAgents(t *testing.T) {
	r := newSupervisorRig(t)
	root := filepath.Dir(r.home)
	sc, err := scripted.ParseScenario("slow.yaml", []byte(slowScenario(root)))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := scripted.Start(context.Background(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	// The agent's command signals through root, beside the project: a directory the sandbox
	// lets it write only because the user's settings say so.
	settingsJSON := fmt.Sprintf(`{"env": {"ANTHROPIC_BASE_URL": %q, "ANTHROPIC_API_KEY": "test-key", "FROM_SETTINGS": "yes"},
		"sandbox": {"filesystem": {"allowWrite": [%q]}}}`, srv.URL(), root)
	if err := os.WriteFile(filepath.Join(r.home, "settings.json"), []byte(settingsJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	for i, kv := range r.env {
		if strings.HasPrefix(kv, "ANTHROPIC_BASE_URL=") {
			r.env[i] = "ANTHROPIC_BASE_URL=" + srv.URL()
		}
	}
	release := func() {
		if err := os.WriteFile(filepath.Join(root, "slow-release"), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// Let the shell loop end when its agent is done with it. A killed agent leaves its loop
	// behind (the job started again does not run it twice): that loop ends with the test's
	// directory, so no test run leaves a process going.
	t.Cleanup(release)

	// The supervisor dies mid-agent.
	agent := r.launchSlow(root)
	st, err := r.client.Status(waittest.Context(t))
	if err != nil || st.Info == nil {
		t.Fatalf("status: %+v, %v", st, err)
	}
	if err := syscall.Kill(st.Info.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "the supervisor to be gone", func() bool { return !r.client.Running() })
	r.run("supervisor", "start")
	release()
	job := r.waitDelivered(agent)
	if job.State != daemon.StateCompleted || job.Result != "slow findings" || job.Attempts != 1 {
		t.Errorf("adopted job: state %s, result %q, attempts %d; want completed, slow findings, 1", job.State, job.Result, job.Attempts)
	}
	env, err := os.ReadFile(filepath.Join(root, "env.txt"))
	if err != nil || strings.TrimSpace(string(env)) != "settings=yes shell=" {
		t.Errorf("the agent's environment: %q (%v); want the settings' variable and not the shell's", env, err)
	}

	// The agent's process dies mid-run.
	agent2 := r.launchSlow(root)
	pid := 0
	waittest.Until(t, "the job to record its process", func() bool {
		pid = r.job(agent2).PID
		return pid > 0
	})
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	job = r.waitDelivered(agent2)
	if job.State != daemon.StateCompleted || job.Result != "resumed findings" || job.Attempts != 2 {
		t.Errorf("restarted job: state %s, result %q, attempts %d; want completed, resumed findings, 2", job.State, job.Result, job.Attempts)
	}
	for _, a := range []daemon.Job{r.job(agent), r.job(agent2)} {
		r.run("--resume", a.Agent.SessionID, "-p", "anything else")
		r.run("--resume", a.Agent.SessionID, "-p", "anything else")
		if n := r.transcriptCount(a.Agent.SessionID, a.Agent.ID); n != 1 {
			t.Errorf("the report of %s is in its session %d times, want once", a.Agent.ID, n)
		}
	}
}

// With coordination.backend "nats" and no URL, the supervisor runs an embedded nats-server
// (JetStream, loopback, its store under the keel home) and teams use it; after a restart it
// serves the same URL and what was stored is still there.
func TestSupervisorEmbeddedNATS(t *testing.T) {
	r := newSupervisorRig(t)
	if err := os.WriteFile(filepath.Join(r.home, "settings.json"), []byte(`{"coordination": {"backend": "nats"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	r.run("supervisor", "start")
	info := func() daemon.Info {
		var st daemon.Status
		if err := json.Unmarshal([]byte(r.run("supervisor", "status", "--json")), &st); err != nil || st.Info == nil {
			t.Fatalf("status: %+v, %v", st, err)
		}
		return *st.Info
	}
	natsURL := func() string { return info().NATSURL }
	url := natsURL()
	if !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Fatalf("embedded NATS at %q; want one on loopback", url)
	}
	if out, want := r.run("supervisor", "status"), fmt.Sprintf("embedded NATS: %s (keel-nats, pid %d)", url, info().NATSPID); !strings.Contains(out, want) {
		t.Errorf("supervisor status says:\n%s\nwant a line %q", out, want)
	}
	ctx := waittest.Context(t)
	b, err := natscoord.Open(ctx, natscoord.Options{URL: url, Team: "local"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.Board().Create(ctx, coord.Task{Subject: "kept across a restart"}); err != nil {
		t.Fatal(err)
	}
	_ = b.Close()
	if _, err := os.Stat(filepath.Join(r.home, "supervisor", "nats", "jetstream")); err != nil {
		t.Errorf("the JetStream store is not under the keel home: %v", err)
	}
	// keel team reaches the team through the same server, found through the supervisor.
	if out := r.run("team", "tasks", "--team", "local"); !strings.Contains(out, "kept across a restart") {
		t.Errorf("keel team tasks on the embedded server: %q", out)
	}
	r.run("supervisor", "stop")
	r.run("supervisor", "start")
	if again := natsURL(); again != url {
		t.Errorf("after a restart the embedded NATS is at %s, was %s", again, url)
	}
	ctx = waittest.Context(t) // the restart's steps took their own time limits
	b, err = natscoord.Open(ctx, natscoord.Options{URL: url, Team: "local"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if tasks, err := b.Board().List(ctx); err != nil || len(tasks) != 1 {
		t.Errorf("after a restart the board holds %v (%v); want the task", tasks, err)
	}

	// The server runs in keel-nats, a child of the supervisor that never outlives it: a
	// SIGKILLed supervisor takes it along (keel-nats stays in the supervisor's process group).
	sup := info()
	if sup.NATSPID <= 0 || sup.NATSPID == sup.PID {
		t.Fatalf("embedded NATS in pid %d, supervisor %d; want a process of its own", sup.NATSPID, sup.PID)
	}
	if err := syscall.Kill(sup.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "keel-nats ends with its SIGKILLed supervisor", func() bool { return procgroup.Gone(sup.PID) })
}
