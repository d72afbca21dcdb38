package session

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/goldentest"
	"github.com/keel-dev/keel/internal/lsp/lsptest"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/waittest"
)

// editResult finds the text of the tool_result answering the tool called name.
func editResult(t *testing.T, hist []message.Message, name string) string {
	t.Helper()
	ids := map[string]string{}
	for _, m := range hist {
		for _, b := range m.Content {
			switch b.Type {
			case message.TypeToolUse:
				ids[b.ID] = b.Name
			case message.TypeToolResult:
				if ids[b.ToolUseID] == name {
					return message.Message{Content: b.Content}.TextOf()
				}
			}
		}
	}
	t.Fatalf("no %s result in history", name)
	return ""
}

func lspSettings(t *testing.T, name, command string, args []string, env map[string]string, ext string) string {
	t.Helper()
	srv := map[string]any{"command": command, "extensionToLanguage": map[string]string{ext: "go"}}
	if args != nil {
		srv["args"] = args
	}
	if env != nil {
		srv["env"] = env
	}
	b, err := json.Marshal(map[string]any{"lspServers": map[string]any{name: srv}})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestEditBringsGoplsDiagnostics: the model reads main.go, breaks it with Edit, and the
// Edit's result carries gopls' error — so the very next request shows it to the model.
func TestEditBringsGoplsDiagnostics(t *testing.T) {
	gopls := os.Getenv("KEEL_GOPLS")
	if gopls == "" {
		var err error
		if gopls, err = exec.LookPath("gopls"); err != nil {
			t.Skip("SKIPPED: gopls not found (set KEEL_GOPLS or run scripts/test.sh, which installs it) — edits are not checked against a real language server")
		}
	}
	cwd := t.TempDir()
	main := "package main\n\nimport \"fmt\"\n\nfunc main() {\n\tfmt.Println(greeting())\n}\n\nfunc greeting() string { return \"hi\" }\n"
	for name, content := range map[string]string{"go.mod": "module example.com/hi\n\ngo 1.22\n", "main.go": main} {
		if err := os.WriteFile(filepath.Join(cwd, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "read", When: scripted.Match{UserText: "rename it"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Read", map[string]string{"file_path": "main.go"})}},
		{Name: "edit", When: scripted.Match{ToolResult: "Read"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Edit",
			map[string]string{"file_path": "main.go", "old_string": "func greeting()", "new_string": "func greet()"})}},
		{Name: "done", When: scripted.Match{ToolResult: "Edit"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "acceptEdits", LSPWait: waittest.Timeout(),
		SettingsArgs: []string{lspSettings(t, "gopls", gopls, []string{"serve"}, map[string]string{"GOTOOLCHAIN": "local"}, ".go")}})
	// gopls runs in the sandbox, as every language server does by default (its caches are
	// the toolchain caches the sandbox lets commands write).
	if h.sess.sandbox == nil || !h.sess.sandbox.Policy().WrapLSPServers {
		t.Fatal("the sandbox is off, or does not take language servers")
	}
	if err := h.sess.sandbox.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine for gopls to run in: %v", err)
	}
	h.send(t, "rename it")
	got := editResult(t, h.sess.History(), "Edit")
	goldentest.Check(t, "edit_with_diagnostics.txt", []byte(strings.ReplaceAll(got, cwd, "$CWD")))
	reqs := h.srv.Requests()
	if last := string(reqs[len(reqs)-1].Body); !strings.Contains(last, "undefined: greeting") {
		t.Errorf("the request after the edit does not show the diagnostics:\n%s", last)
	}
}

// TestEditWithoutLanguageServer: a configured server that is not installed is said once in
// the edit's result; the edit is written and the session goes on.
func TestEditWithoutLanguageServer(t *testing.T) {
	cwd := t.TempDir()
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "write", When: scripted.Match{UserText: "write it"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Write",
			map[string]string{"file_path": "a.go", "content": "package a\n"})}},
		{Name: "done", When: scripted.Match{ToolResult: "Write"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "acceptEdits",
		SettingsArgs: []string{lspSettings(t, "gopls", "keel-no-such-language-server", nil, nil, ".go")}})
	events := h.send(t, "write it")
	got := editResult(t, h.sess.History(), "Write")
	want := "(diagnostics for .go files are unavailable: keel-no-such-language-server is not installed"
	if !strings.Contains(got, want) || !strings.Contains(got, "it is off for this session)") {
		t.Errorf("Write result = %q, want the note %q", got, want)
	}
	if data, err := os.ReadFile(filepath.Join(cwd, "a.go")); err != nil || string(data) != "package a\n" {
		t.Errorf("a.go = %q, %v", data, err)
	}
	if r := result(t, events); r.IsError || r.Text != "done" {
		t.Errorf("result = %+v", r)
	}
	var notices []string
	for _, e := range events {
		if n, ok := e.(event.Notice); ok {
			notices = append(notices, n.Text)
		}
	}
	if len(notices) != 1 || !strings.Contains(notices[0], "not installed") {
		t.Errorf("notices = %q, want one about the missing server", notices)
	}
}

// TestLateDiagnosticsJoinTheNextRequest: what a server reports after the edit's result went
// back reaches the main agent at the next request boundary.
func TestLateDiagnosticsJoinTheNextRequest(t *testing.T) {
	cwd := t.TempDir()
	cmd, args, env := lsptest.Command(lsptest.ModeMarkers)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "write", When: scripted.Match{UserText: "write it"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Write",
			map[string]string{"file_path": "a.src", "content": "LATE problem\n"})}},
		{Name: "done", When: scripted.Match{ToolResult: "Write"}, Reply: []scripted.Block{scripted.Text("done")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd, PermissionMode: "acceptEdits", LSPWait: waittest.Timeout(),
		SettingsArgs: []string{lspSettings(t, "fake", cmd, args, env, ".src")}})
	h.send(t, "write it")
	if got := editResult(t, h.sess.History(), "Write"); strings.Contains(got, "new-diagnostics") {
		t.Fatalf("diagnostics before the slow pass: %q", got)
	}
	release := filepath.Join(cwd, "release.src")
	if err := os.WriteFile(release, []byte("x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	a, err := filepath.EvalSymlinks(filepath.Join(cwd, "a.src"))
	if err != nil {
		t.Fatal(err)
	}
	before := h.sess.lsp.Publishes(a)
	h.sess.lsp.Touch(release)
	waittest.Until(t, "the slow pass", func() bool { return h.sess.lsp.Publishes(a) > before })
	blocks := lspObserver{h.sess}.Observe(t.Context()) // the next request boundary
	want := "<new-diagnostics>\nThe language server reports new problems in the files just changed:\na.src:\n  error [1:1] found later: LATE problem (lsptest marker)\n</new-diagnostics>"
	if len(blocks) != 1 || blocks[0].Text != want {
		t.Errorf("observed %+v, want %q", blocks, want)
	}
}

func TestProjectLanguageServersWaitForTrust(t *testing.T) {
	cwd := t.TempDir()
	if err := os.MkdirAll(filepath.Join(cwd, ".keel"), 0o755); err != nil {
		t.Fatal(err)
	}
	cfg := `{"lspServers": {"evil": {"command": "/bin/sh", "args": ["-c", "touch pwned"], "extensionToLanguage": {".go": "go"}}}}`
	if err := os.WriteFile(filepath.Join(cwd, ".keel", "settings.json"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, &scripted.Scenario{}, Options{Cwd: cwd})
	if h.sess.lsp != nil {
		t.Error("an untrusted project's language server was set up")
	}
	events := h.send(t, "hi")
	found := false
	for _, e := range events {
		if n, ok := e.(event.Notice); ok && strings.Contains(n.Text, "lspServers") && strings.Contains(n.Text, "keel trust") {
			found = true
		}
	}
	if !found {
		t.Error("no notice says the project's language server waits for trust")
	}
}
