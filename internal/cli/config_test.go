package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/acp"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/transcript"
)

// errCaptured stops a command once its session's configuration is known.
var errCaptured = errors.New("captured")

// notConfiguration are the run flags that say how a run is shown, logged or driven rather
// than what its session is: they need not reach it.
var notConfiguration = map[string]string{
	"print": "rendering", "output-format": "rendering", "input-format": "rendering", "verbose": "rendering",
	"include-partial-messages": "rendering", "replay-user-messages": "rendering", "include-hook-events": "rendering",
	"thinking-display": "rendering", "debug": "logging", "debug-to-stderr": "logging", "debug-file": "logging",
	"init-only": "a mode: runs the hooks and exits",
	// Accepted for the Agent SDK and ignored (a notice names them).
	"channels": "ignored", "betas": "ignored",
	"permission-prompts": "ignored", "task-budget": "ignored", "managed-settings": "ignored",
	"project-config-root": "ignored", "resume-drops-turn": "ignored", "session-mirror": "ignored",
	"managed-settings-in-initialize": "ignored", "await-initialize": "ignored",
	"allow-dangerously-skip-permissions": "ignored", "no-optional-locks": "ignored", "initialize-fields": "ignored",
}

// ownSession are the flags that choose which stored session a session is, or what it does
// at its start: a session started on another's behalf is a session of its own.
var ownSession = []string{"resume", "continue", "fork-session", "resume-session-at", "session-id", "init", "maintenance", "team-name", "no-wait"}

// flagValue is a valid value for each flag that is not its default; dir is a directory
// other than the working one.
func flagValue(f *pflag.Flag, dir string) string {
	switch f.Name {
	case "cwd":
		return dir
	case "permission-mode":
		return "plan"
	case "teammate-mode":
		return "process"
	case "tool-search":
		return "off"
	case "effort":
		return "high"
	case "thinking":
		return "enabled"
	case "provider":
		return "openai"
	case "json-schema":
		return `{"type":"object"}`
	case "agents":
		return `{"reviewer":{"description":"reviews","prompt":"review it"}}`
	case "session-id":
		return "7a3c1c2e-7a0e-4a77-9d1f-3c1e0d3c2b10"
	case "setting-sources":
		return "user"
	case "sandbox":
		return "read-only"
	case "permission-prompt-tool":
		return "mcp__perm__ask"
	}
	switch f.Value.Type() {
	case "bool":
		return "true"
	case "int", "int64":
		return "7"
	case "float64":
		return "1.5"
	}
	return "x-" + f.Name
}

// prerequisites are flags another flag needs beside it.
var prerequisites = map[string][]string{
	"fork-session":      {"--continue"},
	"resume-session-at": {"--resume", "0b6c5e7e-5d0a-4f43-9a51-6b3c4a0e9d11"},
}

// entryPoint is one way a session is opened: run it with the flag arguments and return the
// configuration that reached session.Open (or keel.New).
type entryPoint struct {
	name string
	// skip are flags that do not apply to it, besides notConfiguration.
	skip []string
	open func(t *testing.T, flags []string) runconfig.Config
}

// TestEveryFlagReachesEverySession walks every run flag and proves it reaches the session
// through every entry point: headless, stream-json (the Agent SDK), the terminal UI, keel
// worker, keel team worker, keel agents resume, a supervisor job and a process teammate.
// A flag that one of them drops fails here.
func TestEveryFlagReachesEverySession(t *testing.T) {
	entries, other := entryPoints(t, nil)
	flags := (&app{}).rootCommand().Flags()
	for _, e := range entries {
		t.Run(e.name, func(t *testing.T) {
			base := e.open(t, nil)
			n := 0
			flags.VisitAll(func(f *pflag.Flag) {
				if _, ok := notConfiguration[f.Name]; ok || contains(e.skip, f.Name) || f.Name == "help" || f.Name == "version" {
					return
				}
				n++
				pre := prerequisites[f.Name]
				args := append(append([]string(nil), pre...), "--"+f.Name+"="+flagValue(f, other))
				without := base
				if len(pre) > 0 {
					without = e.open(t, pre)
				}
				if got := e.open(t, args); reflect.DeepEqual(got, without) {
					t.Errorf("--%s=%s does not reach the session", f.Name, flagValue(f, other))
				}
			})
			if n < 30 {
				t.Errorf("only %d flags walked; the walk is not looking at the run flags", n)
			}
		})
	}
}

// storedAgent makes a stored session in cwd with a subagent id, as `keel agents resume`
// finds it, and returns the session's id.
func storedAgent(t *testing.T, home, cwd, id string) string {
	t.Helper()
	const sid = "5e0f6f0a-3f2b-4c7e-9a51-6b3c4a0e9d11"
	path := transcript.SessionPath(home, cwd, sid)
	w, err := transcript.Create(t.Context(), path, transcript.Options{SessionID: sid, CWD: cwd})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	agent, _ := transcript.AgentPaths(path, id)
	if err := os.MkdirAll(filepath.Dir(agent), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(agent, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	return sid
}

// entryPoints are the ways a session is opened, in a keel directory and a working
// directory of the test's own; env adds to the environment. other is a second working
// directory with the same stored agent.
func entryPoints(t *testing.T, env map[string]string) (entries []entryPoint, other string) {
	home := t.TempDir()
	cwd := t.TempDir()
	t.Chdir(cwd)
	// A file or folder a flag names must be there (--add-dir x-add-dir).
	if err := os.Mkdir("x-add-dir", 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile("x-mcp-config", []byte(`{"mcpServers":{}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	getenv := func(k string) string {
		if k == "KEEL_HOME" {
			return home
		}
		return env[k]
	}
	other = t.TempDir()
	agentSession := storedAgent(t, home, cwd, "a1b2c3")
	storedAgent(t, home, other, "a1b2c3")
	// run runs args through the command line, capturing what opens a session.
	run := func(t *testing.T, args []string, stdin string) runconfig.Config {
		t.Helper()
		var got *runconfig.Config
		var out bytes.Buffer
		a := &app{std: Streams{In: strings.NewReader(stdin), Out: &out, Err: &out}, env: runconfig.ReadEnv(getenv), getenv: getenv}
		a.open = func(_ context.Context, cfg runconfig.Config, _ session.Seams) (*session.Session, error) {
			got = &cfg
			return nil, errCaptured
		}
		a.interactive = func(_ context.Context, opts keel.Options, _ string, _ Streams, _ UI) error {
			var cfg runconfig.Config
			if err := json.Unmarshal(opts.Config, &cfg); err != nil {
				t.Fatalf("the terminal UI's options carry no configuration: %v", err)
			}
			got = &cfg
			return errCaptured
		}
		a.acp = func(_ context.Context, c acp.Config) error {
			var cfg runconfig.Config
			if err := json.Unmarshal(c.Options.Config, &cfg); err != nil {
				t.Fatalf("the ACP server's options carry no configuration: %v", err)
			}
			got = &cfg
			return errCaptured
		}
		a.main(t.Context(), args)
		if got == nil {
			t.Fatalf("keel %s opened no session:\n%s", strings.Join(args, " "), out.String())
		}
		return *got
	}
	headless := func(t *testing.T, flags []string) runconfig.Config {
		return run(t, append([]string{"-p", "hi"}, flags...), "")
	}
	entries = []entryPoint{
		{name: "headless", open: headless},
		// The Agent SDK and the terminal UI wait for background agents their own way.
		{name: "stream-json", skip: []string{"no-wait"}, open: func(t *testing.T, flags []string) runconfig.Config {
			args := append([]string{"--input-format", "stream-json", "--output-format", "stream-json"}, flags...)
			return run(t, args, `{"type":"user","message":{"role":"user","content":"hi"}}`+"\n")
		}},
		{name: "terminal UI", skip: []string{"no-wait"}, open: func(t *testing.T, flags []string) runconfig.Config { return run(t, flags, "") }},
		{name: "keel worker", skip: ownSession, open: func(t *testing.T, flags []string) runconfig.Config {
			return run(t, append([]string{"worker", "--team", "t1", "--name", "w1"}, flags...), "")
		}},
		{name: "keel team worker", skip: ownSession, open: func(t *testing.T, flags []string) runconfig.Config {
			return run(t, append([]string{"team", "worker", "--team", "t1", "--member", "m1"}, flags...), "")
		}},
		// An editor chooses each session's stored session itself, and keeps keel running
		// while its agents work.
		{name: "keel acp", skip: append(ownSession, "no-wait"), open: func(t *testing.T, flags []string) runconfig.Config {
			return run(t, append([]string{"acp"}, flags...), "")
		}},
		{name: "keel agents resume", skip: []string{"resume", "no-wait"}, open: func(t *testing.T, flags []string) runconfig.Config {
			cfg := run(t, append([]string{"agents", "resume", "a1b2c3", "go on"}, flags...), "")
			if cfg.Resume != agentSession {
				t.Errorf("agents resume opened session %q, want %q", cfg.Resume, agentSession)
			}
			return cfg
		}},
		{name: "supervisor job", skip: append(ownSession, "no-session-persistence", "teammate-mode"), open: func(t *testing.T, flags []string) runconfig.Config {
			// The launcher records its configuration in the job; the job's process opens
			// its session from the record, as the supervisor runs it.
			lead := headless(t, flags)
			rec, err := json.Marshal(daemon.Job{Launch: lead, Agent: subagent.DetachedAgent{SessionID: "s1", SessionPath: "/p"}})
			if err != nil {
				t.Fatal(err)
			}
			var j daemon.Job
			if err := json.Unmarshal(rec, &j); err != nil {
				t.Fatal(err)
			}
			var got runconfig.Config
			a := &app{env: runconfig.ReadEnv(getenv), getenv: getenv, open: func(_ context.Context, cfg runconfig.Config, _ session.Seams) (*session.Session, error) {
				got = cfg
				return nil, errCaptured
			}}
			if _, err := a.openJob(t.Context(), j); !errors.Is(err, errCaptured) {
				t.Fatalf("openJob: %v", err)
			}
			return got
		}},
		{name: "process teammate", skip: ownSession, open: func(t *testing.T, flags []string) runconfig.Config {
			// The lead writes its configuration beside its team; the teammate's process
			// reads it (keel team worker --config).
			lead := headless(t, flags)
			path := filepath.Join(t.TempDir(), "launch.json")
			if err := lead.Write(path); err != nil {
				t.Fatal(err)
			}
			return run(t, []string{"team", "worker", "--team", "t1", "--member", "m1", "--config", path}, "")
		}},
	}
	return entries, other
}

// TestEnvironmentReachesEverySession: keel's environment knobs reach every session, the
// terminal UI's included (it used to ignore KEEL_NATS_URL and the team lease).
func TestEnvironmentReachesEverySession(t *testing.T) {
	entries, _ := entryPoints(t, map[string]string{"KEEL_NATS_URL": "nats://10.0.0.1:4222", "KEEL_TEAM_LEASE": "42s",
		"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "1", "MCP_TIMEOUT": "1500"})
	for _, e := range entries {
		t.Run(e.name, func(t *testing.T) {
			cfg := e.open(t, nil)
			if cfg.Coordination.NATSURL != "nats://10.0.0.1:4222" || cfg.MCP.ConnectTimeout != 1500*time.Millisecond {
				t.Errorf("KEEL_NATS_URL and MCP_TIMEOUT did not reach the session: %+v, %+v", cfg.Coordination, cfg.MCP)
			}
			if e.name == "supervisor job" {
				return // a job leads no team
			}
			if !cfg.Team.Enabled || cfg.Team.Lease != 42*time.Second {
				t.Errorf("the team switch and lease did not reach the session: %+v", cfg.Team)
			}
		})
	}
}
