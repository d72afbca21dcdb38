package fscoord_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/coordtest"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/waittest"
)

func store(poll time.Duration) func(t *testing.T) coordtest.Open {
	return func(t *testing.T) coordtest.Open {
		dir := t.TempDir()
		return func(t *testing.T, cfg coord.Config) coord.Backend {
			t.Helper()
			b, err := fscoord.Open(dir, fscoord.Options{Config: cfg, PollInterval: poll})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	}
}

func TestConformance(t *testing.T) {
	coordtest.Run(t, store(0))
}

// TestConformancePolling runs the suite with watches that poll, as on a filesystem without
// change notification.
func TestConformancePolling(t *testing.T) {
	coordtest.Run(t, store(20*time.Millisecond))
}

// TestConformanceTeams: the teams of a store are the team directories beside each other.
func TestConformanceTeams(t *testing.T) {
	coordtest.RunTeams(t, func(t *testing.T) coordtest.OpenTeam {
		dir := t.TempDir()
		return func(t *testing.T, name string) coord.Backend {
			t.Helper()
			b, err := fscoord.Open(filepath.Join(dir, name), fscoord.Options{})
			if err != nil {
				t.Fatal(err)
			}
			return b
		}
	})
}

func open(t *testing.T, dir string) *fscoord.Backend {
	t.Helper()
	b, err := fscoord.Open(dir, fscoord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b
}

// A task file damaged on disk is reported by name, the rest of the board keeps working, and
// nothing waiting for the damaged task becomes claimable.
func TestCorruptTask(t *testing.T) {
	ctx := waittest.Context(t)
	dir := t.TempDir()
	b := open(t, dir)
	bd := b.Board()
	for _, s := range []string{"one", "two", "three"} {
		if _, err := bd.Create(ctx, coord.Task{Subject: s}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := bd.Update(ctx, "3", coord.TaskChange{AddBlockedBy: []string{"2"}}); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "board", "tasks", "2.json")
	if err := os.WriteFile(path, []byte(`{"id":"2","subj`), 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := bd.Get(ctx, "2")
	if !errors.Is(err, coord.ErrCorrupt) || !strings.Contains(err.Error(), path) {
		t.Errorf("get of a corrupt task: %v; want ErrCorrupt naming %s", err, path)
	}
	list, err := bd.List(ctx)
	if !errors.Is(err, coord.ErrCorrupt) || len(list) != 2 {
		t.Errorf("list: %d tasks, error %v; want the 2 readable ones and ErrCorrupt", len(list), err)
	}
	if _, err := bd.Claim(ctx, "2", "alice", time.Minute); !errors.Is(err, coord.ErrCorrupt) {
		t.Errorf("claim of a corrupt task: %v", err)
	}
	if tk, err := bd.ClaimNext(ctx, "alice", time.Minute); err != nil || tk.ID != "1" {
		t.Fatalf("claim next: %+v, %v; want task 1", tk, err)
	}
	if _, err := bd.ClaimNext(ctx, "bob", time.Minute); !errors.Is(err, coord.ErrNoTask) {
		t.Errorf("task 3 waits for the unreadable task 2, yet claim next gave: %v", err)
	}
	if tk, err := bd.Create(ctx, coord.Task{Subject: "four"}); err != nil || tk.ID != "4" {
		t.Errorf("create next to a corrupt task: %+v, %v", tk, err)
	}
}

func TestCorruptRecordAndMessage(t *testing.T) {
	ctx := waittest.Context(t)
	dir := t.TempDir()
	b := open(t, dir)
	if _, err := b.Records().Put(ctx, "members/alice", json.RawMessage(`{"a":1}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Records().Put(ctx, "members/bob", json.RawMessage(`{"b":1}`)); err != nil {
		t.Fatal(err)
	}
	rec := filepath.Join(dir, "records", "members%alice.json")
	if err := os.WriteFile(rec, []byte("garbage"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Records().Get(ctx, "members/alice"); !errors.Is(err, coord.ErrCorrupt) || !strings.Contains(err.Error(), rec) {
		t.Errorf("get corrupt record: %v", err)
	}
	got, err := b.Records().List(ctx, "members/")
	if len(got) != 1 || !errors.Is(err, coord.ErrCorrupt) {
		t.Errorf("list: %v, %v", got, err)
	}
	// Put recovers a corrupt record by replacing it.
	if _, err := b.Records().Put(ctx, "members/alice", json.RawMessage(`{"a":2}`)); err != nil {
		t.Errorf("put over a corrupt record: %v", err)
	}

	mb := b.Mailbox()
	good := coord.Message{ID: coord.NewID(), From: "x", To: "bob", Text: "fine"}
	if err := mb.Send(ctx, good); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(dir, "mail", "bob", "new", "broken.json")
	if err := os.WriteFile(bad, []byte("{"), 0o600); err != nil {
		t.Fatal(err)
	}
	msgs, err := mb.Fetch(ctx, "bob", 0)
	if len(msgs) != 1 || msgs[0].Text != "fine" || !errors.Is(err, coord.ErrCorrupt) {
		t.Fatalf("fetch beside a corrupt message: %v, %v", msgs, err)
	}
	if msgs, err := mb.Fetch(ctx, "bob", 0); len(msgs) != 1 || err != nil {
		t.Errorf("the corrupt message is reported once and set aside; second fetch: %v, %v", msgs, err)
	}
	if _, err := os.Stat(filepath.Join(dir, "mail", "bob", "bad", "broken.json")); err != nil {
		t.Errorf("the corrupt message was not kept for inspection: %v", err)
	}
}

func TestDeliveredHistory(t *testing.T) {
	ctx := waittest.Context(t)
	b := open(t, t.TempDir())
	mb := b.Mailbox()
	var ids []string
	for _, text := range []string{"a", "b", "c"} {
		m := coord.Message{ID: coord.NewID(), From: "lead", To: "w", Text: text}
		ids = append(ids, m.ID)
		if err := mb.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	if err := mb.Ack(ctx, "w", ids[:2]...); err != nil {
		t.Fatal(err)
	}
	got, err := mb.(coord.MailLog).Delivered(ctx, "w", 0)
	if err != nil || len(got) != 2 || got[0].Text != "a" || got[1].Text != "b" {
		t.Errorf("delivered: %v, %v", got, err)
	}
}

// A line torn by a crash mid-append is skipped by readers and ended by the next append;
// nothing else of the log is lost.
func TestEventLogTornLine(t *testing.T) {
	ctx := waittest.Context(t)
	dir := t.TempDir()
	ev := open(t, dir).Events()
	if err := ev.Append(ctx, "alice", json.RawMessage(`"one"`)); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(dir, "events", "alice.log"), os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"seq":2,"time":"2026-01-01T00:00:00Z","data":"tw`); err != nil {
		t.Fatal(err)
	}
	f.Close()
	// Another process's handle appends next (this one would too: the file grew behind it).
	if err := open(t, dir).Events().Append(ctx, "alice", json.RawMessage(`"two"`), json.RawMessage(`"three"`)); err != nil {
		t.Fatal(err)
	}
	got, err := ev.Read(ctx, "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, e := range got {
		texts = append(texts, string(e.Data))
	}
	if want := []string{`"one"`, `"two"`, `"three"`}; strings.Join(texts, " ") != strings.Join(want, " ") {
		t.Errorf("after a torn line the log reads %v, want %v", texts, want)
	}
}
