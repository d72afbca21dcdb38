package cli_test

import (
	"bytes"
	"context"
	"net"
	"strings"
	"testing"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/cli"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// The terminal UI opens its session from the whole command line and environment, as every
// other entry point does: --team-name names its team, and KEEL_NATS_URL puts the team on
// NATS (the UI used to drop both, and the team lease, and the embedded server).
func TestTerminalUIHonoursTeamNameAndNATS(t *testing.T) {
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unreachable := "nats://" + l.Addr().String()
	_ = l.Close()

	// ui opens the session as keel-tui does and reports its team.
	ui := func(t *testing.T, env map[string]string, args ...string) (team, stderr string, err error) {
		home := t.TempDir()
		getenv := func(k string) string {
			switch k {
			case "KEEL_HOME":
				return home
			case "ANTHROPIC_BASE_URL":
				return srv.URL()
			case "ANTHROPIC_API_KEY":
				return "test-key"
			case "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS":
				return "1"
			}
			return env[k]
		}
		var openErr error
		run := func(ctx context.Context, opts keel.Options, _ string, _ cli.Streams, _ cli.UI) error {
			sess, err := keel.New(ctx, opts)
			if err != nil {
				openErr = err
				return err
			}
			defer sess.Close()
			team = sess.TeamName()
			return nil
		}
		var out bytes.Buffer
		cli.MainWith(append([]string{"--cwd", t.TempDir()}, args...), cli.Streams{In: strings.NewReader(""), Out: &out, Err: &out}, getenv, run)
		return team, out.String(), openErr
	}

	t.Run("team name", func(t *testing.T) {
		team, out, err := ui(t, nil, "--team-name", "blue-team")
		if err != nil || team != "blue-team" {
			t.Errorf("the UI's team is %q (%v); want blue-team\n%s", team, err, out)
		}
	})
	t.Run("NATS", func(t *testing.T) {
		_, out, err := ui(t, map[string]string{"KEEL_NATS_URL": unreachable})
		if err == nil || !strings.Contains(err.Error(), unreachable) {
			t.Errorf("the UI opened its team without the NATS server KEEL_NATS_URL names (%v)\n%s", err, out)
		}
	})
}
