package session

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// refuseAsks fails the test at any permission question: writes to the auto memory must
// never ask.
func refuseAsks(t *testing.T) permission.Asker {
	return permission.AskerFunc(func(_ context.Context, r permission.AskRequest) (permission.Answer, error) {
		t.Errorf("asked about %+v (%s); auto memory writes must not ask", r.Request, r.Reason)
		return permission.Answer{}, nil
	})
}

// systemOf returns the system blocks of a recorded request, as sent.
func systemOf(t *testing.T, body []byte) json.RawMessage {
	t.Helper()
	var req struct {
		System json.RawMessage `json:"system"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return req.System
}

// TestAutoMemoryReachesTheNextSession: what the model writes to the auto memory in one
// session, without a permission question, is in the next session's first request, and a
// write during that session leaves the system prompt byte-stable across its requests.
func TestAutoMemoryReachesTheNextSession(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	dir := memory.AutoDir(home, cwd)
	index := filepath.Join(dir, memory.AutoIndexName)
	first := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "remember"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("Write", map[string]string{"file_path": index, "content": "- [Build](build.md): make check, never make all\n"}),
			scripted.ToolUse("Write", map[string]string{"file_path": filepath.Join(dir, "build.md"), "content": "make check runs vet and tests\n"}),
		}},
		{When: scripted.Match{ToolResult: "Write"}, Reply: []scripted.Block{scripted.Text("kept")}},
	}}
	h1 := newHarness(t, first, Options{Cwd: cwd, Home: home, Asker: refuseAsks(t)})
	h1.send(t, "remember how to build")
	if got, err := os.ReadFile(index); err != nil || !strings.Contains(string(got), "make check") {
		t.Fatalf("MEMORY.md after the first session: %q, %v", got, err)
	}
	if err := h1.sess.Close(); err != nil {
		t.Fatal(err)
	}

	second := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "note more"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("Read", map[string]string{"file_path": index}),
		}},
		{When: scripted.Match{ToolResult: "Read"}, Times: 1, Reply: []scripted.Block{
			scripted.ToolUse("Write", map[string]string{"file_path": index, "content": "- rewritten mid-session\n"}),
		}},
		{When: scripted.Match{ToolResult: "Write"}, Reply: []scripted.Block{scripted.Text("noted")}},
	}}
	h2 := newHarness(t, second, Options{Cwd: cwd, Home: home, Asker: refuseAsks(t)})
	h2.send(t, "note more")
	h2.send(t, "anything else?")
	reqs := h2.srv.Requests()
	if len(reqs) < 4 {
		t.Fatalf("%d requests, want 4", len(reqs))
	}
	sys0 := systemOf(t, reqs[0].Body)
	if !bytes.Contains(sys0, []byte("make check, never make all")) {
		t.Errorf("the next session's first request lacks the auto memory index:\n%s", sys0)
	}
	for _, r := range reqs[1:] {
		if got := systemOf(t, r.Body); !bytes.Equal(got, sys0) {
			t.Errorf("request %d's system prompt differs from the first's after a write to the memory:\n%s\nvs\n%s", r.N, got, sys0)
		}
	}
	files := h2.sess.insp.MemoryFiles()
	if n := len(files); n == 0 || files[n-1].Kind != memory.KindAuto || !strings.Contains(files[n-1].Content, "rewritten mid-session") {
		t.Errorf("MemoryFiles (for /memory) does not end with the auto memory as it is now: %+v", files)
	}
}

// TestAutoMemoryOff: "autoMemoryEnabled": false leaves the section, the grant and the
// directory out.
func TestAutoMemoryOff(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	if err := os.MkdirAll(filepath.Join(cwd, ".keel"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cwd, ".keel", "settings.json"), []byte(`{"autoMemoryEnabled": false}`), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, &scripted.Scenario{}, Options{Cwd: cwd, Home: home})
	h.send(t, "hello")
	if sys := systemOf(t, h.srv.Requests()[0].Body); bytes.Contains(sys, []byte("Auto memory")) {
		t.Errorf("auto memory switched off, yet the prompt has its section:\n%s", sys)
	}
	if _, err := os.Stat(memory.AutoDir(home, cwd)); err == nil {
		t.Errorf("auto memory switched off, yet its directory was made")
	}
	if d := h.sess.insp.AutoMemoryDir(); d != "" {
		t.Errorf("AutoMemoryDir = %q with auto memory off", d)
	}
}

// TestAutoMemoryUnwritable: a memory directory keel cannot make is said to the user (a
// notice) and to the model (the section), and nothing is granted. A file where the
// directory should be stops even root.
func TestAutoMemoryUnwritable(t *testing.T) {
	home, cwd := t.TempDir(), t.TempDir()
	dir := memory.AutoDir(home, cwd)
	if err := os.MkdirAll(filepath.Dir(dir), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, &scripted.Scenario{}, Options{Cwd: cwd, Home: home})
	events := h.send(t, "hello")
	sys := systemOf(t, h.srv.Requests()[0].Body)
	if !bytes.Contains(sys, []byte("unavailable in this session")) || !bytes.Contains(sys, []byte("cannot be created")) {
		t.Errorf("the prompt does not tell the model the memory is unavailable:\n%s", sys)
	}
	if !strings.Contains(notices(events), "auto memory directory") {
		t.Errorf("no notice says the memory directory is unavailable: %v", events)
	}
	if h.sess.insp.AutoMemoryDir() != "" {
		t.Errorf("an unwritable memory directory was opened")
	}
}

// TestAutoMemoryNotFromAForeignDotGitFile: a .git file a command wrote in a folder, naming
// another project's linked worktree, does not bring that project's auto memory into the
// system prompt of a session started in the folder; the worktree itself still shares it.
func TestAutoMemoryNotFromAForeignDotGitFile(t *testing.T) {
	other, home := gittest.New(t), t.TempDir()
	wt := filepath.Join(t.TempDir(), "w1")
	other.Git("worktree", "add", "-q", "-b", "w1", wt)
	dir := memory.AutoDir(home, other.Dir)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, memory.AutoIndexName), []byte("- OTHER-PROJECT-MEMORY\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sub := filepath.Join(t.TempDir(), "sub2")
	if err := os.MkdirAll(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(sub, ".git"), []byte("gitdir: "+filepath.Join(other.Dir, ".git", "worktrees", "w1")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for cwd, want := range map[string]bool{sub: false, wt: true} {
		h := newHarness(t, &scripted.Scenario{}, Options{Cwd: cwd, Home: home})
		h.send(t, "hello")
		if got := bytes.Contains(systemOf(t, h.srv.Requests()[0].Body), []byte("OTHER-PROJECT-MEMORY")); got != want {
			t.Errorf("session in %s: the other project's memory in the prompt = %v, want %v", cwd, got, want)
		}
	}
}
