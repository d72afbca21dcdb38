package team

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/procgroup"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestMain lets the test binary play a teammate process that only keeps its heartbeat
// (TEAM_TEST_HEARTBEAT names the team directory), for the liveness tests.
func TestMain(m *testing.M) {
	if dir := os.Getenv("TEAM_TEST_HEARTBEAT"); dir != "" {
		os.Exit(heartbeatChild(dir, os.Getenv("TEAM_TEST_MEMBER")))
	}
	os.Exit(m.Run())
}

func heartbeatChild(dir, name string) int {
	be, err := fscoord.Open(dir, fscoord.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	tm, err := Open(context.Background(), Config{Name: "crew", Backend: be})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	started := time.Now()
	runner := cmp.Or(os.Getenv("TEAM_TEST_RUNNER"), RunnerRemote)
	for {
		rec := Record{ID: "a00000000000000a1", Name: name, Runner: runner, State: StateWorking, PID: os.Getpid(),
			Host: tm.host, Heartbeat: time.Now(), Started: started}
		if err := tm.putRecord(context.Background(), rec); err != nil {
			fmt.Fprintln(os.Stderr, err)
		}
		time.Sleep(50 * time.Millisecond) //keel:duration the child's heartbeat pace, not a wait for state
	}
}

// clock is a settable clock for leases and heartbeats.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// openLeadAt opens a lead's handle on the team directory dir.
func openLeadAt(t *testing.T, dir string, cfg Config) *Team {
	t.Helper()
	be, err := fscoord.Open(dir, fscoord.Options{Config: coord.Config{Now: cfg.Now}})
	if err != nil {
		t.Fatal(err)
	}
	cfg.Name, cfg.Backend, cfg.Lead = "crew", be, true
	tm, err := Open(t.Context(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.Close(); _ = be.Close() })
	return tm
}

// notices collects the team's notices.
type notices struct {
	mu  sync.Mutex
	got []string
}

func (n *notices) emit(e event.Event) {
	if no, ok := e.(event.Notice); ok {
		n.mu.Lock()
		n.got = append(n.got, no.Text)
		n.mu.Unlock()
	}
}

func (n *notices) saying(s string) int {
	n.mu.Lock()
	defer n.mu.Unlock()
	c := 0
	for _, g := range n.got {
		if strings.Contains(g, s) {
			c++
		}
	}
	return c
}

// A board or member record that cannot be read is no evidence that the team is done: the
// lead keeps waiting, says why once, and settles once the damage is repaired.
func TestSettledNotWhileTeamUnreadable(t *testing.T) {
	for _, tc := range []struct {
		name string
		// damage breaks one file of the team directory and returns the function that repairs it.
		damage func(t *testing.T, dir string) func()
		want   string
	}{
		{"corrupt task", func(t *testing.T, dir string) func() {
			path := filepath.Join(dir, "board", "tasks", "2.json")
			good, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			writeFile(t, path, `{"id":"2","subject":`)
			return func() {
				var tk coord.Task
				if err := json.Unmarshal(good, &tk); err != nil {
					t.Fatal(err)
				}
				tk.Status = coord.StatusCompleted
				b, _ := json.Marshal(tk)
				writeFile(t, path, string(b))
			}
		}, "task board could not be read"},
		{"corrupt member record", func(t *testing.T, dir string) func() {
			// Task 2 done: only the unreadable member could still have work.
			path := filepath.Join(dir, "board", "tasks", "2.json")
			var tk coord.Task
			b, _ := os.ReadFile(path)
			if err := json.Unmarshal(b, &tk); err != nil {
				t.Fatal(err)
			}
			tk.Status = coord.StatusCompleted
			b, _ = json.Marshal(tk)
			writeFile(t, path, string(b))
			path = filepath.Join(dir, "records", "members%bob.json")
			writeFile(t, path, `{"key":"members/bob","value":{`)
			return func() {
				if err := os.Remove(path); err != nil {
					t.Fatal(err)
				}
			}
		}, "member records could not be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			var seen notices
			tm := openLeadAt(t, dir, Config{Lease: time.Minute, Emit: seen.emit})
			ctx := waittest.Context(t)
			addMember(t, tm, "alice", StateIdle)
			for _, s := range []string{"one", "two"} {
				if _, err := tm.be.Board().Create(ctx, coord.Task{Subject: s}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := tm.be.Board().Update(ctx, "1", coord.TaskChange{Status: ptr(coord.StatusCompleted)}); err != nil {
				t.Fatal(err)
			}
			if done, why := tm.Settled(ctx); done || !strings.Contains(why, "claimable by alice") {
				t.Fatalf("Settled with task 2 open = %v, %q", done, why)
			}
			repair := tc.damage(t, dir)
			if done, why := tm.Settled(ctx); done || !strings.Contains(why, tc.want) {
				t.Fatalf("Settled with %s = %v, %q; want not settled because the %s", tc.name, done, why, tc.want)
			}
			waited := make(chan error, 1)
			// The lead's wait lives across the steps below, each with its own time limit (all of
			// them take longer than one on a loaded machine).
			go func() {
				n, err := tm.WaitLead(t.Context())
				if err == nil && n != 0 {
					err = fmt.Errorf("WaitLead woke the lead for %d messages", n)
				}
				waited <- err
			}()
			waittest.Until(t, "a notice that the team cannot be read", func() bool { return seen.saying(tc.want) > 0 })
			select {
			case err := <-waited:
				t.Fatalf("the lead's wait ended while the team could not be read (%v)", err)
			default:
			}
			repair()
			// The repair is a write the wait watches (or its next tick sees).
			if _, err := tm.be.Board().Create(waittest.Context(t), coord.Task{Subject: "three", Status: coord.StatusCompleted}); err != nil {
				t.Fatal(err)
			}
			if err := waittest.Recv(t, "the wait to end once the team is readable and done", waited); err != nil {
				t.Fatal(err)
			}
			if n := seen.saying(tc.want); n != 1 {
				t.Errorf("the problem was noticed %d times, want once: %q", n, seen.got)
			}
			if seen.saying("readable again") != 1 {
				t.Errorf("no notice that the team is readable again: %q", seen.got)
			}
		})
	}
}

func writeFile(t *testing.T, path, s string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(s), 0o600); err != nil {
		t.Fatal(err)
	}
}

// A heartbeat that is late — later than the old rule of three beats and a second — is not
// death while the lease and its margin last; a heartbeat that moves brings a member back; and
// the first sight of a record whose writer's clock runs ahead is not taken for a live one
// forever.
func TestLivenessLateHeartbeat(t *testing.T) {
	clk := &clock{now: time.Now()}
	const lease = 10 * time.Second //keel:duration on the test's fake clock
	tm := openLeadAt(t, t.TempDir(), Config{Lease: lease, Now: clk.Now})
	ctx := waittest.Context(t)
	beat := func(at time.Time) {
		rec, err := tm.record(ctx, "alice")
		if err != nil {
			rec = Record{ID: newAgentID(), Name: "alice", Runner: RunnerRemote, PID: 1 << 30, Host: "elsewhere", Started: at}
		}
		rec.State, rec.Heartbeat = StateWorking, at
		if err := tm.putRecord(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	state := func() State {
		rec, err := tm.record(ctx, "alice")
		if err != nil {
			t.Fatal(err)
		}
		return tm.liveness(rec)
	}
	beat(clk.Now())
	if s := state(); s != StateWorking {
		t.Fatalf("fresh: %s", s)
	}
	clk.add(8 * time.Second) // past 3×2 s + 1 s, inside 10 s + 5 s
	if s := state(); s != StateWorking {
		t.Errorf("8 s without a heartbeat under a 10 s lease: %s, want working", s)
	}
	if done, why := tm.Settled(ctx); done {
		t.Errorf("settled while alice may still be working: %s", why)
	}
	clk.add(6 * time.Second)
	beat(clk.Now().Add(-12 * time.Second)) // a late write whose clock runs 12 s behind
	if s := state(); s != StateWorking {
		t.Errorf("just after a heartbeat stamped by a clock 12 s behind: %s, want working", s)
	}
	clk.add(6 * time.Second)
	if s := state(); s != StateWorking {
		t.Errorf("6 s after a heartbeat (stamped by a clock 12 s behind): %s, want working", s)
	}
	clk.add(10 * time.Second)
	if s := state(); s != StateDead {
		t.Errorf("16 s without a heartbeat under a 10 s lease: %s, want dead", s)
	}

	// A writer whose clock runs an hour ahead: its first sight counts from now, not from then.
	rec := Record{ID: newAgentID(), Name: "bob", Runner: RunnerRemote, State: StateIdle, Host: "elsewhere", Heartbeat: clk.Now().Add(time.Hour)}
	if err := tm.putRecord(ctx, rec); err != nil {
		t.Fatal(err)
	}
	got, _ := tm.record(ctx, "bob")
	if s := tm.liveness(got); s != StateIdle {
		t.Errorf("bob, fresh with a fast clock: %s", s)
	}
	clk.add(20 * time.Second)
	if s := tm.liveness(got); s != StateDead {
		t.Errorf("bob, silent for 20 s with a fast clock: %s, want dead", s)
	}
}

// Real processes: a member whose process is stopped (SIGSTOP) stays working past the old
// staleness rule, comes back when continued, and is dead at once when killed.
func TestLivenessOfARealProcess(t *testing.T) {
	dir := t.TempDir()
	lease := waittest.Scale(4 * time.Second)
	tm := openLeadAt(t, dir, Config{Lease: lease})
	// ctx is the time limit of one step (look reads it when called), renewed at each: the whole
	// test takes longer than one on a loaded machine.
	ctx := waittest.Context(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), "TEAM_TEST_HEARTBEAT="+dir, "TEAM_TEST_MEMBER=alice")
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	look := func() (Record, State) {
		rec, err := tm.record(ctx, "alice")
		if err != nil {
			return Record{}, ""
		}
		return rec, tm.liveness(rec)
	}
	waittest.Until(t, "the child's heartbeat", func() bool { _, s := look(); return s == StateWorking })

	if err := cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	oldRule := 3*tm.heartbeatEvery() + time.Second
	var rec Record
	ctx = waittest.Context(t)
	waittest.Until(t, "the stopped child's heartbeat to be older than three beats and a second", func() bool {
		rec, _ = look()
		return time.Since(rec.Heartbeat) > oldRule
	})
	silent := time.Since(rec.Heartbeat)
	state := tm.liveness(rec)
	if silent < tm.deadAfter() && state != StateWorking {
		t.Errorf("a stopped member silent for %s (lease %s) is %s, want working", silent.Round(time.Millisecond), lease, state)
	}
	if err := cmd.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	ctx = waittest.Context(t)
	waittest.Until(t, "the continued child's heartbeat", func() bool {
		r, s := look()
		return r.Heartbeat.After(rec.Heartbeat) && s == StateWorking
	})

	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	<-exited
	ctx = waittest.Context(t)
	if r, s := look(); s != StateDead {
		t.Errorf("a member whose process was killed is %s (heartbeat %s ago), want dead at once", s, time.Since(r.Heartbeat))
	}
}

// Every teammate dead with work left: the lead is told once, by a message naming who died
// and what is left; if it leaves things so, the team settles with a notice of the work
// undone.
func TestWaitLeadStalledTeam(t *testing.T) {
	var seen notices
	tm := openLeadAt(t, t.TempDir(), Config{Lease: time.Minute, Emit: seen.emit})
	ctx := waittest.Context(t)
	dead := exec.Command("true")
	if err := dead.Run(); err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	rec := Record{ID: newAgentID(), Name: "alice", Color: "blue", AgentType: "general-purpose", Runner: RunnerProcess, State: StateWorking,
		PID: dead.Process.Pid, Host: tm.host, Heartbeat: now, Started: now}
	if err := tm.putRecord(ctx, rec); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.be.Board().Create(ctx, coord.Task{Subject: "write the parser"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.be.Board().Claim(ctx, "1", "alice", time.Minute); err != nil {
		t.Fatal(err)
	}
	n, err := tm.WaitLead(ctx)
	if err != nil || n != 1 {
		t.Fatalf("WaitLead = %d, %v; want the lead woken by one message", n, err)
	}
	blocks := tm.LeadInbox().Observe(ctx)
	if len(blocks) != 1 {
		t.Fatalf("the lead reads %d blocks, want 1", len(blocks))
	}
	text := blocks[0].Text
	for _, want := range []string{`teammate_id="keel"`, "alice (its process", "is gone", "#1 write the parser (in_progress, alice)", "Agent tool"} {
		if !strings.Contains(text, want) {
			t.Errorf("the lead's message does not say %q:\n%s", want, text)
		}
	}
	if err := tm.LeadInbox().Ack(ctx); err != nil {
		t.Fatal(err)
	}
	n, err = tm.WaitLead(ctx)
	if err != nil || n != 0 {
		t.Fatalf("second WaitLead = %d, %v; want settled", n, err)
	}
	if seen.saying("stopping with work left undone") != 1 || seen.saying("#1 write the parser") == 0 {
		t.Errorf("notices %q; want one naming the work left undone", seen.got)
	}
}

// A teammate process this team started on this host that leaves a shutdown request
// unanswered is ended after the timeout — its process group gone — and the task it held goes
// back to the board at once, without waiting for its lease.
func TestShutdownAbortsUnansweringProcess(t *testing.T) {
	dir := t.TempDir()
	tm := openLeadAt(t, dir, Config{Lease: time.Minute, ShutdownTimeout: 200 * time.Millisecond}) //keel:duration meant to pass: the process never answers
	ctx := waittest.Context(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self, "-test.run=^$")
	cmd.Env = append(os.Environ(), "TEAM_TEST_HEARTBEAT="+dir, "TEAM_TEST_MEMBER=alice", "TEAM_TEST_RUNNER="+RunnerProcess)
	procgroup.Own(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() { _ = cmd.Process.Kill(); <-exited })
	waittest.Until(t, "alice's heartbeat", func() bool {
		r, err := tm.record(ctx, "alice")
		return err == nil && tm.liveness(r) == StateWorking
	})
	ctx = waittest.Context(t) // each step has its own time limit
	if _, err := tm.be.Board().Create(ctx, coord.Task{Subject: "the task"}); err != nil {
		t.Fatal(err)
	}
	if _, err := tm.be.Board().Claim(ctx, "1", "alice", time.Hour); err != nil {
		t.Fatal(err)
	}
	err = tm.Shutdown(ctx, "done")
	if err == nil || !strings.Contains(err.Error(), "[alice] did not stop") || !strings.Contains(err.Error(), "aborted") {
		t.Fatalf("Shutdown = %v; want alice aborted", err)
	}
	waittest.Recv(t, "alice's process to be reaped", exited)
	ctx = waittest.Context(t)
	tk, err := tm.be.Board().Get(ctx, "1")
	if err != nil || tk.Status != coord.StatusPending || tk.Owner != "" {
		t.Errorf("task 1 after the abort: %+v, %v; want pending and unowned", tk, err)
	}
	if r, err := tm.record(ctx, "alice"); err != nil || r.State != StateStopped {
		t.Errorf("alice's record after the abort: %+v, %v; want stopped", r, err)
	}
	if msgs, _ := tm.be.Mailbox().Fetch(ctx, "alice", 0); len(msgs) != 1 || msgs[0].Type != TypeShutdownRequest {
		t.Errorf("alice's inbox: %+v; want the unanswered shutdown request", msgs)
	}
}

// A stale read of a member's record (a revision older than one already seen, as a loop that
// read before the last heartbeat's write holds) does not count as its heartbeat moving: the
// member's silence keeps running from the newest heartbeat seen, so one that stopped beating
// is still found dead on time. A member spawned again (a new record id) is seen afresh.
func TestSilenceIgnoresStaleReads(t *testing.T) {
	clk := &clock{now: time.Now()}
	tm := openLeadAt(t, t.TempDir(), Config{Lease: 10 * time.Second, Now: clk.Now}) //keel:duration on the test's fake clock
	t0 := clk.Now()
	rec := func(id string, rev uint64, hb time.Time) Record {
		return Record{ID: id, Name: "alice", Heartbeat: hb, rev: rev}
	}
	tm.silence(rec("a1", 1, t0))
	clk.add(5 * time.Second)
	tm.silence(rec("a1", 2, t0.Add(5*time.Second))) // the heartbeat moved: silence from now
	clk.add(5 * time.Second)
	tm.silence(rec("a1", 1, t0)) // a read that started before revision 2
	clk.add(5 * time.Second)
	if got := tm.silence(rec("a1", 2, t0.Add(5*time.Second))); got != 10*time.Second {
		t.Errorf("silence after a stale read = %s, want 10s (since the heartbeat of revision 2 was seen)", got)
	}
	if got := tm.silence(rec("a2", 1, clk.Now())); got != 0 {
		t.Errorf("silence of a member spawned again = %s, want 0", got)
	}
}
