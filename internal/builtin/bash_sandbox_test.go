//go:build linux

package builtin

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/tool"
)

func resultText(r tool.Result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// visibleDir is a directory outside the sandbox's writable roots that it shows, read-only:
// beside the test's sources, since /tmp is private to each sandboxed command.
func visibleDir(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(wd, ".sandbox-test-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

// sandboxFor is a workspace-write sandbox of dir with sb's settings; the test is skipped,
// saying so, where the machine cannot run it.
func sandboxFor(t *testing.T, dir string, sb settings.Sandbox) *sandbox.Sandbox {
	t.Helper()
	s := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Settings: &sb, Dirs: []string{dir}}), sandbox.Options{})
	if err := s.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	return s
}

// TestSandboxedBash: Bash's foreground and background commands run in the sandbox; a denied
// write comes back naming the path and the setting that would allow it; a cd still persists.
func TestSandboxedBash(t *testing.T) {
	dir, outside := t.TempDir(), visibleDir(t)
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		t.Fatal(err)
	}
	jobs := shell.NewJobs()
	t.Cleanup(jobs.Close)
	bash := SandboxedBash(jobs, sandboxFor(t, dir, settings.Sandbox{}))
	env := newEnv(t, dir)
	res := call(t, bash, env, bashInput{Command: "echo in > inside.txt; echo out > " + outside + "/x; cd sub"})
	text := resultText(res)
	for _, want := range []string{"[Sandbox: writing " + outside + "/x was denied: it is outside the writable roots. Add it to sandbox.filesystem.allowWrite", "[Working directory is now"} {
		if !strings.Contains(text, want) {
			t.Errorf("result lacks %q:\n%s", want, text)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "x")); err == nil {
		t.Error("a sandboxed command wrote outside the workspace")
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "inside.txt")); string(b) != "in\n" {
		t.Errorf("an allowed write did not land: %q", b)
	}
	res = call(t, bash, env, bashInput{Command: "echo '{}' > .mcp.json"})
	if text := resultText(res); !strings.Contains(text, "always read-only inside the sandbox") {
		t.Errorf("a write to .mcp.json was not explained:\n%s", text)
	}
	res = call(t, bash, env, bashInput{Command: "touch " + outside + "/bg; echo bg-done", RunInBackground: true})
	id, _ := res.Output.(map[string]any)["backgroundTaskId"].(string)
	if err := jobs.Wait(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(outside, "bg")); err == nil {
		t.Error("a background command wrote outside the workspace")
	}
}

// TestSandboxedBashSaysWhatItDisarmed: a repository a command made with a configuration that
// names a program is disarmed as the command ends, and the model is told — in the Bash result,
// and in a background command's output.
func TestSandboxedBashSaysWhatItDisarmed(t *testing.T) {
	dir := t.TempDir()
	jobs := shell.NewJobs()
	t.Cleanup(jobs.Close)
	bash := SandboxedBash(jobs, sandboxFor(t, dir, settings.Sandbox{}))
	env := newEnv(t, dir)
	want := func(repo string) string {
		return "[Sandbox: the command wrote " + filepath.Join(dir, repo, ".git", "config") + ", a git configuration that sets core.fsmonitor"
	}
	res := call(t, bash, env, bashInput{Command: "git init -q fg && git -C fg config core.fsmonitor 'touch x'"})
	if text := resultText(res); !strings.Contains(text, want("fg")) {
		t.Errorf("the result does not say what was disarmed:\n%s", text)
	}
	res = call(t, bash, env, bashInput{Command: "git init -q bg && git -C bg config core.fsmonitor 'touch x'", RunInBackground: true})
	id, _ := res.Output.(map[string]any)["backgroundTaskId"].(string)
	if err := jobs.Wait(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	snap, err := jobs.Read(id, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(snap.Output, want("bg")) {
		t.Errorf("the background command's output does not say what was disarmed:\n%s", snap.Output)
	}
}

// TestBashDangerouslyDisableSandbox: the field is offered only with a sandbox; it runs the
// command outside when allowUnsandboxedCommands allows (the permission flow decides the
// call), and is refused when it does not. Excluded commands run outside.
func TestBashDangerouslyDisableSandbox(t *testing.T) {
	dir, outside := t.TempDir(), visibleDir(t)
	if strings.Contains(string(Bash(shell.NewJobs()).InputSchema()), "dangerouslyDisableSandbox") {
		t.Error("Bash without a sandbox offers dangerouslyDisableSandbox")
	}
	jobs := shell.NewJobs()
	t.Cleanup(jobs.Close)
	env := newEnv(t, dir)
	allow := SandboxedBash(jobs, sandboxFor(t, dir, settings.Sandbox{ExcludedCommands: []settings.Value[string]{{V: "touch:*"}}}))
	call(t, allow, env, bashInput{Command: "touch " + outside + "/a", DangerouslyDisableSandbox: true})
	call(t, allow, env, bashInput{Command: "touch " + outside + "/b"})
	call(t, allow, env, bashInput{Command: "touch " + outside + "/c; touch " + outside + "/d"})
	for name, want := range map[string]bool{"a": true, "b": true, "c": false, "d": false} {
		if _, err := os.Stat(filepath.Join(outside, name)); (err == nil) != want {
			t.Errorf("%s written outside: %v, want %v", name, err == nil, want)
		}
	}
	var strict settings.Sandbox
	strict.AllowUnsandboxedCommands = settings.Value[bool]{V: false, From: settings.Origin{Scope: "user"}}
	refuse := SandboxedBash(jobs, sandboxFor(t, dir, strict))
	res := call(t, refuse, env, bashInput{Command: "touch " + outside + "/e", DangerouslyDisableSandbox: true})
	if !res.IsError || !strings.Contains(resultText(res), "allowUnsandboxedCommands is false") {
		t.Errorf("dangerouslyDisableSandbox with allowUnsandboxedCommands false: %s", resultText(res))
	}
}

// TestBashSandboxUnavailable: a sandbox that cannot start never runs a command silently
// outside: the result says so, and with failIfUnavailable the command does not run.
func TestBashSandboxUnavailable(t *testing.T) {
	dir := t.TempDir()
	mk := func(fail bool) tool.Tool {
		var sb settings.Sandbox
		sb.FailIfUnavailable.V = fail
		p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Settings: &sb, Dirs: []string{dir}})
		return SandboxedBash(shell.NewJobs(), sandbox.New(p, sandbox.Options{Executable: filepath.Join(dir, "no-keel")}))
	}
	env := newEnv(t, dir)
	res := call(t, mk(false), env, bashInput{Command: "echo ran"})
	if text := resultText(res); !strings.Contains(text, "ran") || !strings.Contains(text, "[Not sandboxed: sandbox unavailable") {
		t.Errorf("unavailable sandbox, no failIfUnavailable:\n%s", text)
	}
	res = call(t, mk(true), env, bashInput{Command: "echo ran > ran.txt"})
	if _, err := os.Stat(filepath.Join(dir, "ran.txt")); err == nil || !res.IsError || !strings.Contains(resultText(res), "failIfUnavailable") {
		t.Errorf("unavailable sandbox with failIfUnavailable ran the command or did not say why: %s", resultText(res))
	}
}

// TestSandboxedBashWithoutKeelsCredentials: a sandboxed command does not see the credentials
// keel itself uses (its model's key), which it could send out through any allowed domain;
// the user's other variables stay. Outside the sandbox the environment is left as it is.
func TestSandboxedBashWithoutKeelsCredentials(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-keels-own")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "Authorization=Bearer keels-own")
	t.Setenv("MCP_CLIENT_SECRET", "mcp-oauth-secret")
	t.Setenv("KEEL_NATS_URL", "nats://u:pass@127.0.0.1:4222")
	t.Setenv("KEEL_TEST_USER_VAR", "users-own")
	jobs := shell.NewJobs()
	t.Cleanup(jobs.Close)
	script := `echo "key=$ANTHROPIC_API_KEY headers=$OTEL_EXPORTER_OTLP_HEADERS mcp=$MCP_CLIENT_SECRET nats=$KEEL_NATS_URL user=$KEEL_TEST_USER_VAR"`
	text := resultText(call(t, SandboxedBash(jobs, sandboxFor(t, dir, settings.Sandbox{})), newEnv(t, dir), bashInput{Command: script}))
	if !strings.Contains(text, "key= headers= mcp= nats= user=users-own") {
		t.Errorf("inside the sandbox: %s", text)
	}
	text = resultText(call(t, Bash(jobs), newEnv(t, dir), bashInput{Command: script}))
	if !strings.Contains(text, "key=sk-ant-keels-own") || !strings.Contains(text, "user=users-own") {
		t.Errorf("outside the sandbox: %s", text)
	}
}

// TestExcludedCommandSkipsWritablePATH: a command a sandboxed session runs outside the
// sandbox (here an excluded one) does not look its program up in a PATH entry sandboxed
// commands can write — a .venv/bin first on PATH, where one of them could have put a
// program of that name — and the result says which entries it left out.
func TestExcludedCommandSkipsWritablePATH(t *testing.T) {
	dir, trusted := t.TempDir(), t.TempDir()
	venv := filepath.Join(dir, ".venv", "bin")
	for d, says := range map[string]string{venv: "PLANTED", trusted: "TRUSTED"} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(d, "mytool"), []byte("#!/bin/sh\necho "+says+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", venv+string(filepath.ListSeparator)+trusted+string(filepath.ListSeparator)+os.Getenv("PATH"))
	jobs := shell.NewJobs()
	t.Cleanup(jobs.Close)
	bash := SandboxedBash(jobs, sandboxFor(t, dir, settings.Sandbox{ExcludedCommands: []settings.Value[string]{{V: "mytool"}}}))
	text := resultText(call(t, bash, newEnv(t, dir), bashInput{Command: "mytool"}))
	if !strings.Contains(text, "TRUSTED") || strings.Contains(text, "PLANTED") {
		t.Errorf("the excluded command ran the program a sandboxed command could have planted:\n%s", text)
	}
	if !strings.Contains(text, "without the PATH entries sandboxed commands can write: "+venv) {
		t.Errorf("the result does not say which PATH entries were left out:\n%s", text)
	}
}

// TestBashSandboxBusy: a probe that fails because a limit was full (the helper cannot fork:
// another session's command can fill the user's process limit on purpose) is not the
// machine's answer: the command is refused — not run outside, with or without
// failIfUnavailable — nobody is told the sandbox is off, and the next call probes again and
// runs inside once the limit frees.
func TestBashSandboxBusy(t *testing.T) {
	dir := t.TempDir()
	sandboxFor(t, dir, settings.Sandbox{})
	outside := visibleDir(t)
	exe := filepath.Join(t.TempDir(), "keel")
	if err := os.WriteFile(exe, []byte("#!/bin/sh\necho 'bwrap: Creating new namespace failed: Resource temporarily unavailable' >&2\nexit 1\n"), 0o755); err != nil {
		t.Fatal(err)
	}
	var told []error
	p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{dir}})
	bash := SandboxedBash(shell.NewJobs(), sandbox.New(p, sandbox.Options{Executable: exe, Unavailable: func(err error) { told = append(told, err) }}))
	env := newEnv(t, dir)
	res := call(t, bash, env, bashInput{Command: "echo ran > ran.txt; touch " + outside + "/busy"})
	if _, err := os.Stat(filepath.Join(dir, "ran.txt")); err == nil || !res.IsError || !strings.Contains(resultText(res), "could not start this time") {
		t.Fatalf("a busy probe ran the command or did not say why: %s", resultText(res))
	}
	if len(told) > 0 {
		t.Errorf("a busy probe was announced as the machine's answer: %v", told)
	}

	// The limit frees: the same file, which the sandbox holds open, is keel's helper again.
	self, err := os.ReadFile(testExecutable(t))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(exe, self, 0o755); err != nil {
		t.Fatal(err)
	}
	res = call(t, bash, env, bashInput{Command: "echo ran > ran.txt; touch " + outside + "/busy"})
	if _, err := os.Stat(filepath.Join(dir, "ran.txt")); err != nil || strings.Contains(resultText(res), "Not sandboxed") {
		t.Fatalf("the next call did not probe again and run: %s", resultText(res))
	}
	if _, err := os.Stat(filepath.Join(outside, "busy")); err == nil {
		t.Errorf("the next call ran outside the sandbox: %s", resultText(res))
	}
}

// testExecutable is this test binary, which serves as the sandbox's helper (TestMain).
func testExecutable(t *testing.T) string {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return exe
}

// TestSandboxedBashDisarmsTheRepositoryItEnters: a command that makes a repository where the
// release's search does not look (below node_modules) and cd's into it leaves the session —
// and outside the sandbox its status line and hooks — in a repository whose core.fsmonitor
// is gone by the time the result is back, and the result says so; a later command that sets
// it again while the session stays there is disarmed as well.
func TestSandboxedBashDisarmsTheRepositoryItEnters(t *testing.T) {
	dir := t.TempDir()
	jobs := shell.NewJobs()
	t.Cleanup(jobs.Close)
	bash := SandboxedBash(jobs, sandboxFor(t, dir, settings.Sandbox{}))
	env := newEnv(t, dir)
	repo := filepath.Join(dir, "node_modules", "pkg")
	config := filepath.Join(repo, ".git", "config")
	fsmonitor := func() string {
		t.Helper()
		out, _ := gitexec.Runner{}.Output(t.Context(), dir, "config", "--file", config, "--get", "core.fsmonitor")
		return strings.TrimSpace(string(out))
	}
	res := call(t, bash, env, bashInput{Command: "mkdir -p node_modules/pkg && cd node_modules/pkg && git init -q && git config core.fsmonitor 'touch x'"})
	text := resultText(res)
	if got := fsmonitor(); got != "" {
		t.Errorf("core.fsmonitor = %q in the repository the session is in, want it gone:\n%s", got, text)
	}
	if !strings.Contains(text, config+", a git configuration that sets core.fsmonitor") {
		t.Errorf("the result does not say what was disarmed:\n%s", text)
	}
	env.State.Cwd = repo // as the runner applies the result's new directory
	res = call(t, bash, env, bashInput{Command: "git config core.fsmonitor 'touch y' && pwd"})
	if text := resultText(res); !strings.Contains(text, repo) || fsmonitor() != "" {
		t.Errorf("a later command in the same repository kept core.fsmonitor = %q:\n%s", fsmonitor(), text)
	}
}
