package background

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/waittest"
)

type recorder struct {
	mu     sync.Mutex
	events []string
}

func (r *recorder) emit(e event.Event) {
	r.mu.Lock()
	defer r.mu.Unlock()
	switch e := e.(type) {
	case event.TaskStarted:
		r.events = append(r.events, "started "+e.TaskID)
	case event.TaskUpdated:
		r.events = append(r.events, "updated "+e.TaskID+" "+e.Status)
	case event.TaskNotification:
		r.events = append(r.events, "notification "+e.TaskID+" "+e.Status)
	}
}

func texts(bs []message.Block) []string {
	var out []string
	for _, b := range bs {
		out = append(out, b.Text)
	}
	return out
}

func TestTaskLifecycle(t *testing.T) {
	rec := &recorder{}
	r := New(Options{Dir: t.TempDir(), Emit: rec.emit})
	defer r.Close()
	release := make(chan struct{})
	_, err := r.Start(Spec{ID: "a1", Kind: "local_agent", Description: "count", ToolUseID: "toolu_1"},
		func(ctx context.Context, tk *Task) (string, error) {
			tk.Progress("step one")
			<-release
			return "42", nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if n := r.Outstanding(MainOwner); n != 1 {
		t.Errorf("Outstanding = %d, want 1", n)
	}
	close(release)
	info, err := r.Wait(t.Context(), "a1")
	if err != nil {
		t.Fatal(err)
	}
	if info.Status != StatusCompleted || info.Result != "42" || info.Output != "step one\n" {
		t.Errorf("info = %+v", info)
	}
	n, err := r.WaitIdle(t.Context(), MainOwner)
	if err != nil || n != 1 {
		t.Fatalf("WaitIdle = %d, %v", n, err)
	}
	q, _ := r.Queue(MainOwner)
	want := []string{"<task-notification>\n<task-id>a1</task-id>\n<tool-use-id>toolu_1</tool-use-id>\n<status>completed</status>\n" +
		"<summary>Agent \"count\" completed</summary>\n<result>42</result>\n</task-notification>"}
	if diff := cmp.Diff(want, texts(q.Observe(t.Context()))); diff != "" {
		t.Errorf("notification mismatch (-want +got):\n%s", diff)
	}
	wantEvents := []string{"started a1", "updated a1 running", "updated a1 running", "updated a1 completed", "notification a1 completed"}
	if diff := cmp.Diff(wantEvents, rec.events); diff != "" {
		t.Errorf("events mismatch (-want +got):\n%s", diff)
	}
}

func TestStopKills(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	started := make(chan struct{})
	_, err := r.Start(Spec{ID: "b1", Kind: "local_agent", Description: "forever"}, func(ctx context.Context, tk *Task) (string, error) {
		close(started)
		<-ctx.Done()
		return "", context.Cause(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
	waittest.Recv(t, "the task to start", started)
	stop := StopTool(r)
	res := stop.Call(t.Context(), &tool.Env{}, json.RawMessage(`{"task_id":"b1"}`))
	if res.IsError || !strings.Contains(res.ResultText(), "Stopped task b1") {
		t.Fatalf("TaskStop = %+v", res)
	}
	info, _ := r.Get("b1")
	if info.Status != StatusKilled {
		t.Errorf("status = %s, want killed", info.Status)
	}
	again := stop.Call(t.Context(), &tool.Env{}, json.RawMessage(`{"task_id":"b1"}`))
	if !again.IsError {
		t.Errorf("stopping a stopped task should fail: %+v", again)
	}
	out := OutputTool(r).Call(t.Context(), &tool.Env{}, json.RawMessage(`{"task_id":"b1","block":false}`))
	if !strings.Contains(out.ResultText(), "<status>killed</status>") {
		t.Errorf("TaskOutput = %q", out.ResultText())
	}
}

func TestTaskOutputBlocksUntilDone(t *testing.T) {
	r := New(Options{})
	defer r.Close()
	release := make(chan struct{})
	if _, err := r.Start(Spec{ID: "c1", Description: "job"}, func(ctx context.Context, tk *Task) (string, error) {
		<-release
		return "", errors.New("broke")
	}); err != nil {
		t.Fatal(err)
	}
	done := make(chan tool.Result)
	go func() { done <- OutputTool(r).Call(t.Context(), &tool.Env{}, json.RawMessage(`{"task_id":"c1"}`)) }()
	close(release)
	res := waittest.Recv(t, "TaskOutput to return", done)
	if !strings.Contains(res.ResultText(), "<status>failed</status>") || !strings.Contains(res.ResultText(), "<error>broke</error>") {
		t.Errorf("TaskOutput = %q", res.ResultText())
	}
}

func TestQueueRedeliversUntilAcked(t *testing.T) {
	dir := t.TempDir()
	q, err := OpenQueue(dir)
	if err != nil {
		t.Fatal(err)
	}
	n := Notification{TaskID: "t1", Status: StatusCompleted, Summary: "s", Result: "r"}
	if err := q.Push(n); err != nil {
		t.Fatal(err)
	}
	if err := q.Push(n); err != nil {
		t.Fatal(err)
	}
	if got := len(q.Observe(t.Context())); got != 1 {
		t.Fatalf("observed %d notifications, want 1 (a duplicate push is ignored)", got)
	}
	// The process dies before Ack: a new queue over the same folder has it again.
	q2, _ := OpenQueue(dir)
	if got := len(q2.Observe(t.Context())); got != 1 {
		t.Fatalf("after a crash: observed %d, want 1", got)
	}
	if err := q2.Ack(); err != nil {
		t.Fatal(err)
	}
	q3, _ := OpenQueue(dir)
	if got := q3.Len(); got != 0 {
		t.Fatalf("after Ack: %d pending, want 0", got)
	}
}

func TestQueueReconcileDropsDelivered(t *testing.T) {
	dir := t.TempDir()
	q, _ := OpenQueue(dir)
	a := Notification{TaskID: "a", Status: StatusCompleted, Summary: "a"}
	b := Notification{TaskID: "b", Status: StatusFailed, Summary: "b"}
	_ = q.Push(a)
	_ = q.Push(b)
	// a reached the transcript, then the process died before Ack.
	history := []message.Message{message.User(message.Text(a.Text()))}
	q2, _ := OpenQueue(dir)
	if err := q2.Reconcile(history); err != nil {
		t.Fatal(err)
	}
	got := texts(q2.Observe(t.Context()))
	if diff := cmp.Diff([]string{b.Text()}, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	q3, _ := OpenQueue(dir)
	if q3.Len() != 1 {
		t.Errorf("reconciled file not deleted: %d pending", q3.Len())
	}
}

func TestAdoptHandsNotificationsToParent(t *testing.T) {
	r := New(Options{Dir: t.TempDir()})
	defer r.Close()
	release := make(chan struct{})
	// A subagent starts a background task, then its turn ends: its parent adopts it.
	if _, err := r.Start(Spec{ID: "late", Owner: "agent-1", Description: "late job"}, func(ctx context.Context, tk *Task) (string, error) {
		<-release
		return "done late", nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := r.Adopt("agent-1", MainOwner); err != nil {
		t.Fatal(err)
	}
	if n := r.Outstanding(MainOwner); n != 1 {
		t.Errorf("parent's outstanding = %d, want 1", n)
	}
	close(release)
	if n, err := r.WaitIdle(t.Context(), MainOwner); err != nil || n != 1 {
		t.Fatalf("WaitIdle = %d, %v", n, err)
	}
	q, _ := r.Queue(MainOwner)
	got := texts(q.Observe(t.Context()))
	if len(got) != 1 || !strings.Contains(got[0], "done late") {
		t.Errorf("parent got %q", got)
	}
}

// TestKilledProcessRedeliversOnce kills a real process after the task finished (its
// notification persisted) but before the owner drained it; a new process gets it exactly once.
func TestKilledProcessRedeliversOnce(t *testing.T) {
	if dir := os.Getenv("KEEL_BG_KILL_DIR"); dir != "" {
		r := New(Options{Dir: dir})
		_, _ = r.Start(Spec{ID: "k1", Description: "job"}, func(ctx context.Context, tk *Task) (string, error) { return "found it", nil })
		_, _ = r.WaitIdle(context.Background(), MainOwner)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {}
	}
	dir := t.TempDir()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestKilledProcessRedeliversOnce$")
	cmd.Env = append(os.Environ(), "KEEL_BG_KILL_DIR="+dir)
	err := cmd.Run()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child: %v, want killed", err)
	}
	r := New(Options{Dir: dir})
	defer r.Close()
	q, _ := r.Queue(MainOwner)
	got := texts(q.Observe(t.Context()))
	if len(got) != 1 || !strings.Contains(got[0], "found it") {
		t.Fatalf("after kill: %q, want the one notification", got)
	}
	if err := q.Ack(); err != nil {
		t.Fatal(err)
	}
	r2 := New(Options{Dir: dir})
	q2, _ := r2.Queue(MainOwner)
	if n := q2.Len(); n != 0 {
		t.Errorf("after ack and another restart: %d pending, want 0", n)
	}
}
