package runconfig

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

func TestWriteRead(t *testing.T) {
	//keel:duration values written and read back, not limits
	want := Config{Cwd: "/w", Model: "m", AllowedTools: []string{"Bash(go test:*)"}, Agents: `{"a":{}}`,
		Team: Team{Enabled: true, Lease: 3 * time.Second, Worker: &Worker{Team: "t", Member: "m"}}, MCP: MCP{ToolTimeout: time.Second}}
	path := filepath.Join(t.TempDir(), "dir", "launch.json")
	if err := want.Write(path); err != nil {
		t.Fatal(err)
	}
	got, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

// A teammate and a job take the lead's configuration but are sessions of their own.
func TestTeammateAndJob(t *testing.T) {
	lead := Config{Cwd: "/w", Model: "m", Agents: `{"a":{}}`, Resume: "r", SessionID: "s", SetupTrigger: "init",
		Team: Team{Enabled: true, Name: "blue", Mode: "process"}, Supervisor: Supervisor{Use: true, Detach: true}}
	mate := lead.Teammate(Worker{Team: "blue", Member: "alice"})
	want := Config{Cwd: "/w", Model: "m", Agents: `{"a":{}}`, Team: Team{Enabled: true, Mode: "process", Worker: &Worker{Team: "blue", Member: "alice"}}}
	if diff := cmp.Diff(want, mate); diff != "" {
		t.Errorf("teammate (-want +got):\n%s", diff)
	}
	job := lead.Job("sid", "/t/sid.jsonl")
	want = Config{Cwd: "/w", Model: "m", Agents: `{"a":{}}`, SessionID: "sid", NoPersistence: true, Supervisor: Supervisor{DetachedFrom: "/t/sid.jsonl"}}
	if diff := cmp.Diff(want, job); diff != "" {
		t.Errorf("job (-want +got):\n%s", diff)
	}
}

func TestOverlay(t *testing.T) {
	//keel:duration values overlaid, not limits
	base := Config{Cwd: "/base", Model: "base", Team: Team{Name: "t", Lease: time.Second}, AddDirs: []string{"a"}}
	got := Overlay(base, Config{Model: "over", Team: Team{Enabled: true}, AddDirs: []string{"b"}})
	want := Config{Cwd: "/base", Model: "over", Team: Team{Name: "t", Lease: time.Second, Enabled: true}, AddDirs: []string{"b"}} //keel:duration a value overlaid
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
}

func TestReadEnv(t *testing.T) {
	env := map[string]string{"KEEL_HOME": "/k", "CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS": "yes", "KEEL_TEAM_LEASE": "2s",
		"KEEL_NATS_URL": " nats://h:4222 ", "MCP_TIMEOUT": "soon", "KEEL_MAX_TURNS": "12", "TMUX": "/tmp/t"}
	e := ReadEnv(func(k string) string { return env[k] })
	if e.Home != "/k" || !e.Teams || e.TeamLease != 2*time.Second || e.NATSURL != "nats://h:4222" || e.MaxTurns != 12 || !e.MaxTurnsSet || !e.InTmux {
		t.Errorf("ReadEnv = %+v", e)
	}
	if err := e.Check(MCPKeys...); err == nil || !strings.Contains(err.Error(), `MCP_TIMEOUT="soon"`) {
		t.Errorf("Check(MCP) = %v; want MCP_TIMEOUT named", err)
	}
	if err := e.Check("KEEL_MAX_TURNS"); err != nil {
		t.Errorf("Check(KEEL_MAX_TURNS) = %v", err)
	}
	var c Config
	e.Apply(&c)
	if c.Home != "/k" || !c.Team.Enabled || c.Team.Lease != 2*time.Second || c.Coordination.NATSURL != "nats://h:4222" || !c.Team.InTmux {
		t.Errorf("Apply = %+v", c)
	}
	explicit := Config{Coordination: Coordination{NATSURL: "nats://other"}}
	e.Apply(&explicit)
	if explicit.Coordination.NATSURL != "nats://other" {
		t.Errorf("the environment overrode an explicit NATS URL: %s", explicit.Coordination.NATSURL)
	}
}
