package daemon

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/waittest"
)

// The supervisor's environment is the user's identity, KEEL_HOME, a standard PATH and the
// settings' env — nothing else of the shell that started it.
func TestEnviron(t *testing.T) {
	shell := map[string]string{"HOME": "/home/u", "USER": "u", "PATH": "/venv/bin:/usr/bin", "VIRTUAL_ENV": "/venv", "AWS_PROFILE": "prod"}
	got := Environ(func(k string) string { return shell[k] }, "/home/u/.keel", map[string]string{"ANTHROPIC_API_KEY": "k", "PATH": "/opt/bin:/usr/bin"})
	want := []string{"ANTHROPIC_API_KEY=k", "HOME=/home/u", "KEEL_HOME=/home/u/.keel", "PATH=/opt/bin:/usr/bin", "USER=u"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("environment mismatch (-want +got):\n%s", diff)
	}
	if def := Environ(func(string) string { return "" }, "/k", nil); !slices.Contains(def, "PATH="+defaultPath) {
		t.Errorf("without a PATH in settings: %v", def)
	}
}

// A job's result is queued as the notification the session's queue reads, once: a second
// delivery (after a crash between queueing and marking it) leaves one.
func TestDeliverOnce(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "notifications", "main")
	j := Job{Agent: subagent.DetachedAgent{ID: "a1", Description: "survey", ToolUseID: "toolu_1", NotifyDir: dir},
		State: StateCompleted, Result: "7 files"}
	for range 2 {
		if err := deliver(j); err != nil {
			t.Fatal(err)
		}
	}
	files, _ := filepath.Glob(filepath.Join(dir, "*.json"))
	if len(files) != 1 {
		t.Fatalf("%d notification files, want 1", len(files))
	}
	q, err := background.OpenQueue(dir)
	if err != nil {
		t.Fatal(err)
	}
	if q.Len() != 1 {
		t.Errorf("the session's queue holds %d notifications, want 1", q.Len())
	}
	got := notification(j)
	if got.Summary != `Agent "survey" completed` || got.Status != background.StatusCompleted || got.Result != "7 files" {
		t.Errorf("notification = %+v", got)
	}
}

// Job records change by compare-and-set: concurrent updates all land.
func TestStoreUpdates(t *testing.T) {
	ctx := waittest.Context(t)
	l := NewLayout(t.TempDir())
	if err := os.MkdirAll(l.Jobs, 0o700); err != nil {
		t.Fatal(err)
	}
	st, err := openStore(l)
	if err != nil {
		t.Fatal(err)
	}
	defer st.close()
	if err := st.create(ctx, Job{Agent: subagent.DetachedAgent{ID: "a1"}, State: StateQueued, Created: time.Now()}); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 8)
	for range 8 {
		go func() {
			_, err := st.update(ctx, "a1", func(j *Job) error { j.Attempts++; return nil })
			done <- err
		}()
	}
	for range 8 {
		if err := waittest.Recv(t, "an update", done); err != nil {
			t.Fatal(err)
		}
	}
	j, _, err := st.get(ctx, "a1")
	if err != nil || j.Attempts != 8 {
		t.Errorf("after 8 concurrent increments: %+v, %v", j, err)
	}
	if _, err := st.update(context.Background(), "missing", func(*Job) error { return nil }); err == nil {
		t.Error("update of a missing job succeeded")
	}
}
