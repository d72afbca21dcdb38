package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	"github.com/keel-dev/keel/internal/message"
)

var update = flag.Bool("update", false, "rewrite golden files")

// countingFile counts the bytes read through it.
type countingFile struct {
	*os.File
	n *atomic.Int64
}

func (f countingFile) ReadAt(p []byte, off int64) (int, error) {
	n, err := f.File.ReadAt(p, off)
	f.n.Add(int64(n))
	return n, err
}

func TestListReadsOnlyWhatTheIndexLacks(t *testing.T) {
	home := t.TempDir()
	dir := ProjectDir(home, "/src/proj")
	mk := func(id, prompt string, n int, mtime time.Time) string {
		path := filepath.Join(dir, id+".jsonl")
		w, err := Create(t.Context(), path, testOpts(id))
		if err != nil {
			t.Fatal(err)
		}
		mustAppend(t, w, userText(prompt))
		for i := range n {
			mustAppend(t, w, assistantText(fmt.Sprintf("%d %s", i, strings.Repeat("z", 10<<10))))
		}
		mustAppend(t, w, Entry{Type: TypeCustomTitle, Value: json.RawMessage(`"title ` + id + `"`)})
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, mtime, mtime); err != nil {
			t.Fatal(err)
		}
		return path
	}
	t0 := time.Date(2025, 5, 1, 0, 0, 0, 0, time.UTC)
	big := mk("big", "first   prompt\nof big", 500, t0.Add(time.Hour))
	mk("small", "hello", 1, t0)

	var read atomic.Int64
	open := func(p string) (listFile, error) {
		f, err := os.Open(p)
		return countingFile{f, &read}, err
	}
	got, err := list(dir, open)
	if err != nil {
		t.Fatal(err)
	}
	bigSize := int64(len(readFile(t, big)))
	want := []Summary{
		{ID: "big", Path: big, Title: "title big", FirstPrompt: "first prompt of big", Branch: "main", Updated: t0.Add(time.Hour), Size: bigSize, Messages: 501},
		{ID: "small", Path: filepath.Join(dir, "small.jsonl"), Title: "title small", FirstPrompt: "hello", Branch: "main", Updated: t0, Messages: 2},
	}
	if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(Summary{}, "Size")); diff != "" {
		t.Errorf("list mismatch (-want +got):\n%s", diff)
	}
	if read.Load() != 0 {
		t.Errorf("list read %d transcript bytes with fresh indexes, want 0", read.Load())
	}

	// Entries written after the last index update (a crash before Sync): only they are read.
	tail := `{"type":"user","uuid":"late","parentUuid":null,"sessionId":"big","message":{"role":"user","content":[{"type":"text","text":"late"}]}}` + "\n"
	appendBytes(t, big, []byte(tail))
	read.Store(0)
	got, err = list(dir, open)
	if err != nil {
		t.Fatal(err)
	}
	if got[0].ID != "big" || got[0].Messages != 502 {
		t.Errorf("after a stale index: %+v", got[0])
	}
	if read.Load() > int64(len(tail)) {
		t.Errorf("list read %d bytes, want only the %d bytes after the index", read.Load(), len(tail))
	}

	// Without an index the file is scanned once, with the same result.
	if err := os.Remove(indexPath(big)); err != nil {
		t.Fatal(err)
	}
	again, err := List(dir)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(got, again, cmpopts.IgnoreFields(Summary{}, "Updated")); diff != "" {
		t.Errorf("rebuilt index mismatch (-want +got):\n%s", diff)
	}
}

func TestFindMissingListsRecent(t *testing.T) {
	home := t.TempDir()
	dir := ProjectDir(home, "/p")
	w, err := Create(t.Context(), filepath.Join(dir, "abc.jsonl"), testOpts("abc"))
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, userText("the prompt"))
	w.Close()
	if p, err := Find(dir, "abc"); err != nil || p != filepath.Join(dir, "abc.jsonl") {
		t.Fatalf("Find existing: %q, %v", p, err)
	}
	_, err = Find(dir, "nope")
	if err == nil || !strings.Contains(err.Error(), "abc") || !strings.Contains(err.Error(), "the prompt") {
		t.Errorf("Find missing: %v; want the recent sessions listed", err)
	}
	if _, err := Find(dir, "../x"); err == nil {
		t.Error("Find accepted a path as id")
	}
}

func TestRemove(t *testing.T) {
	w, path := newSession(t, "s")
	mustAppend(t, w, userText("x"))
	w.Close()
	agent, meta := AgentPaths(path, "a1")
	aw, err := Create(t.Context(), agent, testOpts("s"))
	if err != nil {
		t.Fatal(err)
	}
	aw.Close()
	if err := WriteAgentMeta(meta, AgentMeta{AgentID: "a1", AgentType: "explore", ParentSessionID: "s", ToolUseID: "tu1"}); err != nil {
		t.Fatal(err)
	}
	if err := Remove(path); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{path, indexPath(path), SessionDir(path)} {
		if _, err := os.Stat(p); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("%s still there after Remove (err %v)", filepath.Base(p), err)
		}
	}
}

func TestPaths(t *testing.T) {
	tests := []struct{ cwd, want string }{
		{"/home/u/my proj", "-home-u-my-proj"},
		{"/a/b/", "-a-b"},
		{"/x.y_z", "-x-y-z"},
	}
	for _, tt := range tests {
		if got := SanitizeCWD(tt.cwd); got != tt.want {
			t.Errorf("SanitizeCWD(%q) = %q, want %q", tt.cwd, got, tt.want)
		}
	}
	long := "/" + strings.Repeat("d", 300)
	if a, b := SanitizeCWD(long), SanitizeCWD(long+"x"); len(a) > 200 || a == b {
		t.Errorf("long paths: %d bytes, distinct %v", len(a), a != b)
	}
	p := SessionPath("/h", "/w", "id1")
	if want := filepath.Join("/h", "projects", "-w", "id1.jsonl"); p != want {
		t.Errorf("SessionPath = %q, want %q", p, want)
	}
	tr, meta := AgentPaths(p, "x")
	if tr != filepath.Join("/h", "projects", "-w", "id1", "subagents", "agent-x.jsonl") || meta != strings.TrimSuffix(tr, ".jsonl")+".meta.json" {
		t.Errorf("AgentPaths = %q, %q", tr, meta)
	}
	m := AgentMeta{AgentID: "x", AgentType: "general", Description: "d", ParentSessionID: "id1", ToolUseID: "tu"}
	mp := filepath.Join(t.TempDir(), "a", "agent-x.meta.json")
	if err := WriteAgentMeta(mp, m); err != nil {
		t.Fatal(err)
	}
	got, err := ReadAgentMeta(mp)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(m, got); diff != "" {
		t.Errorf("agent meta mismatch (-want +got):\n%s", diff)
	}
}

func TestExportGolden(t *testing.T) {
	opts := testOpts("exp")
	path := filepath.Join(t.TempDir(), "exp.jsonl")
	w, err := Create(t.Context(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	mustAppend(t, w, Entry{Type: TypeCustomTitle, Value: json.RawMessage(`"Fix the build"`), UUID: "m1"})
	mustAppend(t, w, Entry{Type: TypeSummary, Summary: "Earlier we read main.go.", UUID: "b1"})
	mustAppend(t, w, Entry{Type: TypeUser, UUID: "u1", Message: userText("Why does it fail?").Message})
	am := message.Assistant(message.Text("Let me look."), message.ToolUse("tu1", "Read", json.RawMessage(`{"path":"main.go"}`)))
	mustAppend(t, w, Entry{Type: TypeAssistant, UUID: "a1", Message: &am})
	um := message.User(message.ToolResult("tu1", []message.Block{message.Text("package main\n```go\n```")}, false))
	mustAppend(t, w, Entry{Type: TypeUser, UUID: "u2", Message: &um})
	w.Close()
	st := mustLoad(t, path)
	for _, f := range []struct {
		name   string
		export func(*bytes.Buffer) error
	}{
		{"export.md", func(b *bytes.Buffer) error { return ExportMarkdown(b, st) }},
		{"export.json", func(b *bytes.Buffer) error { return ExportJSON(b, st) }},
	} {
		var got bytes.Buffer
		if err := f.export(&got); err != nil {
			t.Fatal(err)
		}
		golden := filepath.Join("testdata", f.name)
		if *update {
			if err := os.WriteFile(golden, got.Bytes(), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), got.String()); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", f.name, diff)
		}
	}
}
