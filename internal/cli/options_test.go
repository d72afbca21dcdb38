package cli

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
)

// optionsApp is an app in a keel home of the test's own that writes to out and opens no
// session: a run function that reaches one has gone past its checks.
func optionsApp(t *testing.T, out *bytes.Buffer) *app {
	env := map[string]string{"KEEL_HOME": t.TempDir()}
	getenv := func(k string) string { return env[k] }
	return &app{std: Streams{In: strings.NewReader(""), Out: out, Err: out}, env: runconfig.ReadEnv(getenv), getenv: getenv,
		logger: discardLogger(),
		open: func(context.Context, runconfig.Config, session.Seams) (*session.Session, error) {
			return nil, errors.New("no session in this test")
		}}
}

// The run functions check their options before they touch anything, without cobra: a
// mistake is a usage error (exit 2) that says what is wrong.
func TestRunFunctionsRefuseBadOptions(t *testing.T) {
	t.Chdir(t.TempDir())
	var out bytes.Buffer
	a := optionsApp(t, &out)
	ctx := t.Context()
	for _, c := range []struct {
		name string
		run  func() error
		want string
	}{
		{"dashboard", func() error { return a.runDashboard(ctx, &dashboardOptions{Listen: "no-port"}) }, `--listen "no-port" is not host:port`},
		{"scripted", func() error { return a.runScripted(ctx, &scriptedOptions{}) }, "needs a scenario file"},
		{"scripted file", func() error { return a.runScripted(ctx, &scriptedOptions{Scenario: "missing.yaml"}) }, "missing.yaml"},
		{"agents resume", func() error {
			return a.runAgentsResume(ctx, &agentsResumeOptions{AgentID: "../escape", Message: "go on"})
		}, `agent id "../escape"`},
		{"loop", func() error { return a.runLoop(ctx, &loopOptions{Args: []string{"  "}}) }, "usage: /loop"},
		{"worker", func() error { return a.runWorker(ctx, &workerOptions{}) }, "keel worker needs --team"},
		{"team worker", func() error { return a.runTeamWorker(ctx, &teamWorkerOptions{Worker: runconfig.Worker{Team: "crew"}}) }, "needs --team and --member"},
		{"rewind", func() error { return a.runRewind(ctx, &rewindOptions{Session: "s"}) }, "--to MESSAGE_UUID is required"},
		{"mcp add", func() error {
			return a.runMCPAdd(ctx, &mcpAddOptions{Scope: "local", Transport: "ws", Name: "x", Target: "y"})
		}, `--transport "ws"`},
		{"sessions export", func() error { return a.runSessionsExport(ctx, &sessionsExportOptions{ID: "x", Format: "pdf"}) }, `--format "pdf"`},
	} {
		err := c.run()
		var ue usageError
		if !errors.As(err, &ue) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want a usage error saying %q", c.name, err, c.want)
		}
	}
	if out.Len() != 0 {
		t.Errorf("the refused commands wrote:\n%s", out.String())
	}
}

// keel scripted --example prints the commented scenario, whatever else is given.
func TestRunScriptedExample(t *testing.T) {
	var out bytes.Buffer
	a := optionsApp(t, &out)
	if err := a.runScripted(t.Context(), &scriptedOptions{Example: true, Scenario: "ignored.yaml"}); err != nil {
		t.Fatal(err)
	}
	if out.String() != scriptedExample || !strings.Contains(out.String(), "rules") {
		t.Errorf("keel scripted --example printed:\n%s", out.String())
	}
}

// A command that takes the run flags runs from its options alone: which flags were given is
// the options' own (runFlags.given), not asked of a cobra command, so it reaches the session
// it opens — here one that refuses to open.
func TestRunFlagCommandsRunFromTheirOptions(t *testing.T) {
	t.Chdir(t.TempDir())
	var out bytes.Buffer
	a := optionsApp(t, &out)
	err := a.runLoop(t.Context(), &loopOptions{Args: []string{"5m", "check the build"}})
	if err == nil || !strings.Contains(err.Error(), "no session in this test") {
		t.Errorf("runLoop without a cobra command: err = %v, want the session's opening to be reached", err)
	}
	for _, given := range []bool{false, true} {
		f := &runFlags{}
		if given {
			f.given = func(name string) bool { return name == "setting-sources" }
			f.sdk.given = f.given
		}
		if cfg, err := a.runConfig(f); err != nil || cfg.LimitSources != given {
			t.Errorf("runConfig, --setting-sources given %v: LimitSources %v, err %v", given, cfg.LimitSources, err)
		}
	}
}
