package hooks

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/waittest"
)

// env is a project dir holding the hook scripts.
type env struct {
	t   *testing.T
	dir string
}

func newEnv(t *testing.T) env {
	dir, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return env{t: t, dir: dir}
}

// script writes an executable shell script and returns the command that runs it.
func (e env) script(name, body string) string {
	e.t.Helper()
	p := filepath.Join(e.dir, name)
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+body+"\n"), 0o755); err != nil {
		e.t.Fatal(err)
	}
	return "./" + name
}

func userHook(event, matcher string, timeout float64, commands ...string) settings.HookGroup {
	return hookFrom(settings.ScopeUser, event, matcher, timeout, commands...)
}

func hookFrom(scope settings.Scope, event, matcher string, timeout float64, commands ...string) settings.HookGroup {
	g := settings.HookGroup{Event: event, Matcher: matcher, From: settings.Origin{Scope: scope, Path: string(scope) + ".json", Line: 1}}
	for i, c := range commands {
		g.Hooks = append(g.Hooks, settings.HookCommand{Type: "command", Command: c, Timeout: timeout,
			From: settings.Origin{Scope: scope, Path: string(scope) + ".json", Line: 2 + i}})
	}
	return g
}

func (e env) runner(groups ...settings.HookGroup) *Runner {
	e.t.Helper()
	r, problems := New(Config{Hooks: groups, ProjectDir: e.dir, Trusted: true, Environ: []string{"PATH=" + os.Getenv("PATH")}})
	if len(problems) > 0 {
		e.t.Fatalf("problems: %v", problems)
	}
	return r
}

func editInput() Input {
	return Input{SessionID: "s1", Cwd: "/w", ToolName: "Edit", ToolUseID: "tu1",
		ToolInput: json.RawMessage(`{"file_path":"a.go","old_string":"x","new_string":"y"}`)}
}

func TestExit2BlocksPreToolUse(t *testing.T) {
	e := newEnv(t)
	cmd := e.script("guard.sh", `cat >/dev/null; echo "edits to a.go are not allowed" >&2; exit 2`)
	out := e.runner(userHook("PreToolUse", "Edit|Write", 0, cmd)).Run(t.Context(), PreToolUse, editInput())
	if out.Decision != DecisionBlock || out.Reason != "edits to a.go are not allowed" {
		t.Errorf("outcome = %v %q, want block with the stderr", out.Decision, out.Reason)
	}
	if len(out.Results) != 1 || out.Results[0].ExitCode != 2 {
		t.Errorf("results = %+v", out.Results)
	}
}

func TestStdinAndEnvironment(t *testing.T) {
	e := newEnv(t)
	cmd := e.script("record.sh", `cat > input.json; printf '%s\n%s\n%s\n' "$KEEL_PROJECT_DIR" "$CLAUDE_PROJECT_DIR" "$(pwd)" > env.txt`)
	in := Input{SessionID: "s1", TranscriptPath: "/t.jsonl", Cwd: "/w", PermissionMode: "default", Extra: map[string]any{"x_custom": 1, "session_id": "ignored"}}
	e.runner(userHook("Stop", "", 0, cmd)).Run(t.Context(), Stop, in)
	data, err := os.ReadFile(filepath.Join(e.dir, "input.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(data, &got); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"session_id": "s1", "transcript_path": "/t.jsonl", "cwd": "/w", "permission_mode": "default",
		"hook_event_name": "Stop", "stop_hook_active": false, "x_custom": float64(1)}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("stdin mismatch (-want +got):\n%s", diff)
	}
	envText, err := os.ReadFile(filepath.Join(e.dir, "env.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(strings.Repeat(e.dir+"\n", 3), string(envText)); diff != "" {
		t.Errorf("env mismatch (-want +got):\n%s", diff)
	}
}

func TestJSONOutput(t *testing.T) {
	tests := []struct {
		name   string
		event  Event
		stdout string // printed by the hook, exit 0
		want   Outcome
	}{
		{
			name: "updatedInput", event: PreToolUse,
			stdout: `{"hookSpecificOutput":{"hookEventName":"PreToolUse","permissionDecision":"allow","permissionDecisionReason":"safe","updatedInput":{"file_path":"b.go"}}}`,
			want:   Outcome{Decision: DecisionAllow, Reason: "safe", UpdatedInput: json.RawMessage(`{"file_path":"b.go"}`)},
		},
		{
			name: "deny", event: PreToolUse,
			stdout: `{"hookSpecificOutput":{"permissionDecision":"deny","permissionDecisionReason":"no edits on main"}}`,
			want:   Outcome{Decision: DecisionBlock, Reason: "no edits on main"},
		},
		{
			name: "ask", event: PreToolUse,
			stdout: `{"hookSpecificOutput":{"permissionDecision":"ask"}}`,
			want:   Outcome{Decision: DecisionAsk},
		},
		{
			name: "legacy block", event: Stop,
			stdout: `{"decision":"block","reason":"tests are failing"}`,
			want:   Outcome{Decision: DecisionBlock, Reason: "tests are failing"},
		},
		{
			name: "block where it cannot", event: SessionEnd,
			stdout: `{"decision":"block","reason":"r"}`,
			want:   Outcome{},
		},
		{
			name: "continue false", event: PostToolUse,
			stdout: `{"continue":false,"stopReason":"build broken","systemMessage":"stopping","additionalContext":"ctx"}`,
			want:   Outcome{StopSession: true, StopReason: "build broken", SystemMessages: []string{"stopping"}, AdditionalContext: []string{"ctx"}},
		},
		{
			name: "plain text is context", event: UserPromptSubmit,
			stdout: "the time is noon",
			want:   Outcome{AdditionalContext: []string{"the time is noon"}},
		},
		{
			name: "invalid JSON is text", event: UserPromptSubmit,
			stdout: `{"decision": block}`,
			want:   Outcome{AdditionalContext: []string{`{"decision": block}`}},
		},
		{
			name: "invalid JSON on PreToolUse", event: PreToolUse,
			stdout: `{not json`,
			want:   Outcome{},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			if err := os.WriteFile(filepath.Join(e.dir, "out.txt"), []byte(tt.stdout), 0o644); err != nil {
				t.Fatal(err)
			}
			cmd := e.script("hook.sh", `cat >/dev/null; cat out.txt`)
			got := e.runner(userHook(string(tt.event), "", 0, cmd)).Run(t.Context(), tt.event, editInput())
			res := got.Results
			got.Results, tt.want.Event = nil, tt.event
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("outcome mismatch (-want +got):\n%s", diff)
			}
			invalid := strings.Contains(tt.name, "invalid") || tt.name == "block where it cannot"
			if gotWarn := res[0].Warning != ""; gotWarn != invalid {
				t.Errorf("warning = %q, want one: %v", res[0].Warning, invalid)
			}
		})
	}
}

func TestExitCodes(t *testing.T) {
	tests := []struct {
		name     string
		event    Event
		exit     int
		decision Decision
		warning  bool
	}{
		{"PreToolUse exit 2 blocks", PreToolUse, 2, DecisionBlock, false},
		{"Stop exit 2 continues", Stop, 2, DecisionBlock, false},
		{"UserPromptSubmit exit 2 blocks", UserPromptSubmit, 2, DecisionBlock, false},
		{"Notification exit 2 does not block", Notification, 2, DecisionNone, true},
		{"exit 1 is a non-blocking error", PreToolUse, 1, DecisionNone, true},
		{"exit 0 proceeds", PreToolUse, 0, DecisionNone, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := newEnv(t)
			cmd := e.script("hook.sh", "cat >/dev/null; echo why >&2; exit "+strconv.Itoa(tt.exit))
			out := e.runner(userHook(string(tt.event), "", 0, cmd)).Run(t.Context(), tt.event, editInput())
			if out.Decision != tt.decision {
				t.Errorf("decision = %v, want %v", out.Decision, tt.decision)
			}
			r := out.Results[0]
			if (r.Warning != "") != tt.warning || r.Stderr != "why\n" || r.ExitCode != tt.exit {
				t.Errorf("result = %+v, want warning %v", r, tt.warning)
			}
		})
	}
}

// TestTimeoutKillsProcessGroup: a hook that starts a child and hangs is killed at its timeout,
// child included, and Run returns only once the child is gone. Had the child survived, it
// would hold the output pipe open and Run would have waited out waitDelay (reported as
// exec.ErrWaitDelay).
func TestTimeoutKillsProcessGroup(t *testing.T) {
	e := newEnv(t)
	cmd := e.script("hang.sh", "sleep 300 &\necho $! > child.pid.tmp && mv child.pid.tmp child.pid\nwait")
	quick := e.script("quick.sh", "exit 0")
	// The timeout must fire after the hook started its child, which a loaded machine may not
	// manage in 0.3 s: a run that killed the hook before then proves nothing and is repeated
	// with twice the timeout.
	for timeout := 0.3; ; timeout *= 2 {
		out := e.runner(userHook("PreToolUse", "*", timeout, cmd, quick)).Run(t.Context(), PreToolUse, editInput())
		r := out.Results[0]
		if !r.TimedOut || r.Err == nil || r.ExitCode != -1 {
			t.Fatalf("result = %+v, want a timeout", r)
		}
		if errors.Is(r.Err, exec.ErrWaitDelay) || r.Warning != "" {
			t.Errorf("the child outlived the hook: %v; %s", r.Err, r.Warning)
		}
		if out.Decision != DecisionNone || out.Results[1].ExitCode != 0 {
			t.Errorf("a timed-out hook must not block or stop the others: %+v", out)
		}
		data, err := os.ReadFile(filepath.Join(e.dir, "child.pid"))
		if errors.Is(err, os.ErrNotExist) && time.Duration(timeout*float64(time.Second)) < waittest.Timeout() {
			t.Logf("the hook was killed after %vs before it started its child; again", timeout)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
		if err != nil {
			t.Fatal(err)
		}
		if alive(pid) {
			t.Errorf("child %d still running after Run returned", pid)
		}
		return
	}
}

// alive reports whether pid runs (a zombie has exited and is not running).
func alive(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, os.ErrNotExist) {
		return false
	}
	if err != nil { // no /proc: signal 0 cannot tell a zombie from a live process, so say alive
		return syscall.Kill(pid, 0) == nil
	}
	f := strings.Fields(string(stat[strings.LastIndexByte(string(stat), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// TestParallel: two hooks that can only finish together (each opens a FIFO the other opens
// from the other side) finish, so they ran at the same time.
func TestParallel(t *testing.T) {
	e := newEnv(t)
	for _, f := range []string{"ab", "ba"} {
		if err := syscall.Mkfifo(filepath.Join(e.dir, f), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	a := e.script("a.sh", "cat >/dev/null; echo a > ab; read x < ba; echo got $x")
	b := e.script("b.sh", "cat >/dev/null; read x < ab; echo b > ba; echo got $x")
	out := e.runner(userHook("PostToolUse", "Edit", 10, a, b)).Run(t.Context(), PostToolUse, editInput())
	var got []string
	for _, r := range out.Results {
		got = append(got, r.Stdout)
		if r.Err != nil {
			t.Errorf("%s: %v", r.Command, r.Err)
		}
	}
	if diff := cmp.Diff([]string{"got b\n", "got a\n"}, got); diff != "" {
		t.Errorf("stdout mismatch (-want +got):\n%s", diff)
	}
}

func TestMostRestrictiveWins(t *testing.T) {
	e := newEnv(t)
	allow := e.script("allow.sh", `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"allow","updatedInput":{"a":1}}}'`)
	ask := e.script("ask.sh", `cat >/dev/null; echo '{"hookSpecificOutput":{"permissionDecision":"ask","permissionDecisionReason":"check"}}'`)
	deny := e.script("deny.sh", `cat >/dev/null; echo no >&2; exit 2`)
	tests := []struct {
		name   string
		cmds   []string
		want   Decision
		reason string
		input  bool
	}{
		{"allow", []string{allow}, DecisionAllow, "", true},
		{"ask over allow", []string{allow, ask}, DecisionAsk, "check", true},
		{"deny over all", []string{ask, deny, allow}, DecisionBlock, "no", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := e.runner(userHook("PreToolUse", "Edit", 0, tt.cmds...)).Run(t.Context(), PreToolUse, editInput())
			if out.Decision != tt.want || out.Reason != tt.reason || (out.UpdatedInput != nil) != tt.input {
				t.Errorf("outcome = %v %q input %s, want %v %q input %v", out.Decision, out.Reason, out.UpdatedInput, tt.want, tt.reason, tt.input)
			}
		})
	}
}

func TestMatchers(t *testing.T) {
	tests := []struct {
		matcher string
		tool    string
		want    bool
	}{
		{"", "Bash", true},
		{"*", "mcp__github__create_issue", true},
		{"Bash", "Bash", true},
		{"Bash", "BashOutput", false},
		{"Edit|Write", "Write", true},
		{"Edit|Write", "NotebookEdit", false},
		{"Edit|Write|MultiEdit", "MultiEdit", true},
		{"mcp__github__.*", "mcp__github__create_issue", true},
		{"mcp__github__.*", "mcp__gitlab__create_issue", false},
		{"mcp__github", "mcp__github__create_issue", false},
		{"Notebook.*", "NotebookEdit", true},
		{"mcp__.*__write.*", "mcp__fs__write_file", true},
		{" Read ", "Read", true},
	}
	for _, tt := range tests {
		m, err := compileMatcher(tt.matcher)
		if err != nil {
			t.Fatalf("%q: %v", tt.matcher, err)
		}
		if got := m.match(tt.tool); got != tt.want {
			t.Errorf("matcher %q on %q = %v, want %v", tt.matcher, tt.tool, got, tt.want)
		}
	}
}

func TestMatcherSelectsGroups(t *testing.T) {
	e := newEnv(t)
	echo := func(s string) string { return e.script(s+".sh", "cat >/dev/null; echo "+s) }
	r := e.runner(
		userHook("PreToolUse", "Bash", 0, echo("bash")),
		userHook("PreToolUse", "Edit|Write", 0, echo("edit")),
		userHook("PreToolUse", "", 0, echo("all")),
		userHook("SessionStart", "resume", 0, echo("resume")),
		userHook("Stop", "Bash", 0, echo("stop")), // Stop has no matcher: runs regardless
	)
	run := func(ev Event, in Input) []string {
		var got []string
		for _, res := range r.Run(t.Context(), ev, in).Results {
			got = append(got, strings.TrimSpace(res.Stdout))
		}
		return got
	}
	checks := []struct {
		ev   Event
		in   Input
		want []string
	}{
		{PreToolUse, Input{ToolName: "Write"}, []string{"edit", "all"}},
		{PreToolUse, Input{ToolName: "Bash"}, []string{"bash", "all"}},
		{SessionStart, Input{Source: "startup"}, nil},
		{SessionStart, Input{Source: "resume"}, []string{"resume"}},
		{Stop, Input{}, []string{"stop"}},
	}
	for _, c := range checks {
		if diff := cmp.Diff(c.want, run(c.ev, c.in)); diff != "" {
			t.Errorf("%s %+v mismatch (-want +got):\n%s", c.ev, c.in, diff)
		}
	}
}

func TestTrust(t *testing.T) {
	e := newEnv(t)
	user := e.script("user.sh", "cat >/dev/null; echo user")
	proj := e.script("proj.sh", "cat >/dev/null; echo proj")
	groups := []settings.HookGroup{
		userHook("PreToolUse", "", 0, user),
		hookFrom(settings.ScopeProject, "PreToolUse", "", 0, proj),
		hookFrom(settings.ScopeLocal, "PreToolUse", "", 0, proj+" local"),
	}
	for _, trusted := range []bool{false, true} {
		r, _ := New(Config{Hooks: groups, ProjectDir: e.dir, Trusted: trusted})
		out := r.Run(t.Context(), PreToolUse, editInput())
		var ran []string
		for _, res := range out.Results {
			ran = append(ran, res.Command)
		}
		want := []string{user, proj, proj + " local"}
		notices := 0
		if !trusted {
			want, notices = []string{user}, 2
		}
		if diff := cmp.Diff(want, ran); diff != "" {
			t.Errorf("trusted=%v: ran mismatch (-want +got):\n%s", trusted, diff)
		}
		if len(out.Notices) != notices || (notices > 0 && !strings.Contains(out.Notices[0], "keel trust")) {
			t.Errorf("trusted=%v: notices = %q", trusted, out.Notices)
		}
	}
}

func TestOnceAsyncDedupe(t *testing.T) {
	e := newEnv(t)
	count := e.script("count.sh", "cat >/dev/null; echo x >> count.txt")
	g := userHook("SessionStart", "", 0, count, count) // the duplicate runs once per event
	g.Hooks[0].Once = true
	async := userHook("SessionStart", "", 0, e.script("async.sh", "cat >/dev/null; echo async"))
	async.Hooks[0].Async = true
	done := make(chan Result, 2)
	r, _ := New(Config{Hooks: []settings.HookGroup{g, async}, ProjectDir: e.dir, Trusted: true,
		OnAsync: func(_ Event, res Result) { done <- res }})
	for range 2 {
		r.Run(t.Context(), SessionStart, Input{Source: "startup"})
	}
	r.Wait()
	data, _ := os.ReadFile(filepath.Join(e.dir, "count.txt"))
	if string(data) != "x\n" {
		t.Errorf("once hook ran %d times, want 1", strings.Count(string(data), "x"))
	}
	close(done)
	n := 0
	for res := range done {
		n++
		if res.Stdout != "async\n" {
			t.Errorf("async result = %+v", res)
		}
	}
	if n != 2 {
		t.Errorf("async hook reported %d times, want 2", n)
	}
}

func TestDisableAll(t *testing.T) {
	e := newEnv(t)
	r, _ := New(Config{Hooks: []settings.HookGroup{userHook("Stop", "", 0, e.script("h.sh", "exit 2"))}, DisableAll: true, ProjectDir: e.dir})
	if out := r.Run(t.Context(), Stop, Input{}); len(out.Results) != 0 || out.Decision != DecisionNone {
		t.Errorf("disabled hooks ran: %+v", out)
	}
}

func TestNewProblems(t *testing.T) {
	bad := userHook("PreToolUse", "(?!Bash)", 0, "x")
	prompt := userHook("Stop", "", 0, "x")
	prompt.Hooks[0].Type = "prompt"
	_, problems := New(Config{Hooks: []settings.HookGroup{userHook("PreTooluse", "", 0, "x"), bad, prompt}})
	var got []string
	for _, p := range problems {
		got = append(got, p.Error())
	}
	want := []string{
		"user.json:1: hooks.PreTooluse: keel does not fire this event, so its hooks never run (events: " + eventList() + ")",
		"user.json:1: hooks.PreToolUse: matcher \"(?!Bash)\" is not a valid regular expression (error parsing regexp: invalid or unsupported Perl syntax: `(?!`); its hooks never run",
		"user.json:2: hooks.Stop: hook type \"prompt\" is not supported (only \"command\"); skipped",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestOutputCap(t *testing.T) {
	e := newEnv(t)
	cmd := e.script("loud.sh", "cat >/dev/null; head -c 3000000 /dev/zero")
	start := time.Now()
	out := e.runner(userHook("PostToolUse", "", 0, cmd)).Run(t.Context(), PostToolUse, editInput())
	r := out.Results[0]
	if len(r.Stdout) > outputLimit+100 || !strings.Contains(r.Stdout, "more bytes of hook output dropped") {
		t.Errorf("stdout not capped: %d bytes", len(r.Stdout))
	}
	t.Logf("3 MB of output handled in %v", time.Since(start))
}

// TestProblemsAreReported: a hook that times out, one that prints broken JSON and one that
// fails are each reported once, naming the event, the command and where it is configured; a
// hook that works is not.
func TestProblemsAreReported(t *testing.T) {
	e := newEnv(t)
	var got []string
	r, problems := New(Config{ProjectDir: e.dir, Trusted: true, Environ: []string{"PATH=" + os.Getenv("PATH")},
		Report: func(p string) { got = append(got, p) },
		Hooks: []settings.HookGroup{
			userHook("PreToolUse", "*", 0.2, e.script("hang.sh", "sleep 30")),
			userHook("PostToolUse", "*", 0, e.script("bad.sh", `cat >/dev/null; echo '{"decision": "block",'`)),
			userHook("Stop", "", 0, e.script("fail.sh", "exit 1"), e.script("ok.sh", "exit 0")),
		}})
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	r.Run(t.Context(), PreToolUse, editInput())
	r.Run(t.Context(), PostToolUse, editInput())
	r.Run(t.Context(), Stop, Input{SessionID: "s1"})
	want := []string{
		`PreToolUse hook "./hang.sh" (user.json:2): hook timed out after 200ms and was killed`,
		`PostToolUse hook "./bad.sh" (user.json:2): stdout is not valid JSON (unexpected end of JSON input); treated as text`,
		`Stop hook "./fail.sh" (user.json:2): exit status 1 (not blocking)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("reports mismatch (-want +got):\n%s", diff)
	}
}

// A plugin's hooks run in an untrusted workspace (the plugin was enabled, which is the gate)
// and see the plugin's variables in their environment.
func TestPluginHookEnvironment(t *testing.T) {
	e := newEnv(t)
	cmd := e.script("plug.sh", `cat >/dev/null; printf '%s|%s' "$CLAUDE_PLUGIN_ROOT" "$CLAUDE_PLUGIN_DATA" > plugin-env.txt`)
	g := hookFrom(settings.ScopePlugin, "Stop", "", 0, cmd)
	g.Hooks[0].Env = []string{"CLAUDE_PLUGIN_ROOT=/plugins/p", "CLAUDE_PLUGIN_DATA=/data/p"}
	r, _ := New(Config{Hooks: []settings.HookGroup{g}, ProjectDir: e.dir, Trusted: false})
	r.Run(t.Context(), Stop, Input{SessionID: "s"})
	got, err := os.ReadFile(filepath.Join(e.dir, "plugin-env.txt"))
	if err != nil {
		t.Fatalf("the plugin hook did not run in an untrusted workspace: %v", err)
	}
	if string(got) != "/plugins/p|/data/p" {
		t.Errorf("plugin hook environment = %q", got)
	}
}

// SetPlugins swaps the plugins' hooks: the events fired afterwards see the new set, and the
// settings' own hooks stay.
func TestSetPlugins(t *testing.T) {
	e := newEnv(t)
	user := e.script("user.sh", "cat >/dev/null")
	plug := e.script("plug.sh", "cat >/dev/null")
	r, _ := New(Config{Hooks: []settings.HookGroup{userHook("Stop", "", 0, user)}, ProjectDir: e.dir, Trusted: true,
		Plugins: []settings.HookGroup{hookFrom(settings.ScopePlugin, "Stop", "", 0, plug)}})
	ran := func() []string {
		var out []string
		for _, res := range r.Run(t.Context(), Stop, Input{}).Results {
			out = append(out, res.Command)
		}
		return out
	}
	if diff := cmp.Diff([]string{user, plug}, ran()); diff != "" {
		t.Errorf("with the plugin (-want +got):\n%s", diff)
	}
	if problems := r.SetPlugins(nil); len(problems) != 0 || r.Has(SessionStart) {
		t.Errorf("problems %v", problems)
	}
	if diff := cmp.Diff([]string{user}, ran()); diff != "" {
		t.Errorf("plugin disabled (-want +got):\n%s", diff)
	}
	problems := r.SetPlugins([]settings.HookGroup{hookFrom(settings.ScopePlugin, "NoSuchEvent", "", 0, plug), hookFrom(settings.ScopePlugin, "SessionStart", "", 0, plug)})
	if len(problems) != 1 || !r.Has(SessionStart) {
		t.Errorf("problems %v, has SessionStart %v", problems, r.Has(SessionStart))
	}
}
