package runconfig

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/envvar"
)

// Env is what keel reads from the environment for itself (KEEL_*, the CLAUDE_CODE_* switches
// Claude Code users set, MCP_*), read once by [ReadEnv] and passed down: nothing deeper in the
// tree calls os.Getenv. Provider credentials are read by provider/connect through the same
// getenv.
type Env struct {
	// Home is KEEL_HOME, else $HOME/.keel; empty when neither can be found.
	Home string
	// ClaudeConfigDir is CLAUDE_CONFIG_DIR, else $HOME/.claude: where Claude Code and the Agent
	// SDK's session functions keep transcripts (its projects folder).
	ClaudeConfigDir string
	// SDKEntrypoint says a program drives keel as Claude Code's CLI through an Agent SDK: the
	// SDKs set CLAUDE_CODE_ENTRYPOINT to sdk-ts, sdk-py… (Claude Code sets "cli" for its own
	// children, which is not this).
	SDKEntrypoint bool
	// MaxTurns is KEEL_MAX_TURNS, the turn cap of headless runs without --max-turns;
	// MaxTurnsSet says it was given.
	MaxTurns    int
	MaxTurnsSet bool
	// Teams is CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS set to a [Truthy] value.
	Teams bool
	// TeamLease is KEEL_TEAM_LEASE, how long a task claim holds without a heartbeat.
	TeamLease time.Duration
	// InTmux is whether keel runs inside tmux ($TMUX).
	InTmux bool
	// NATSURL is KEEL_NATS_URL: the NATS server(s) of the coordination backend.
	NATSURL string
	// MCPConnectTimeout, MCPToolTimeout and MCPMaxOutputTokens are MCP_TIMEOUT and
	// MCP_TOOL_TIMEOUT (milliseconds) and MAX_MCP_OUTPUT_TOKENS.
	MCPConnectTimeout  time.Duration
	MCPToolTimeout     time.Duration
	MCPMaxOutputTokens int
	// MCPClientSecret is MCP_CLIENT_SECRET, the secret of pre-registered OAuth clients whose
	// configuration gives none. It is a secret: it never enters a [Config].
	MCPClientSecret string
	// SDKReadsSessionState is CLAUDE_CODE_SDK_READS_SESSION_STATE=1: the Agent SDK driving
	// keel reads session_state_changed.
	SDKReadsSessionState bool
	// NoColor is NO_COLOR set; Browser is $BROWSER.
	NoColor bool
	Browser string
	// Debug is KEEL_DEBUG set to a [Truthy] value.
	Debug bool
	// MaxConcurrentSubagents is KEEL_MAX_CONCURRENT_SUBAGENTS, the cap of a fan-out's agents
	// running at once (Claude Code's CLAUDE_CODE_MAX_CONCURRENT_SUBAGENTS); 0 when unset.
	MaxConcurrentSubagents int
	// CronMinInterval is KEEL_TEST_CRON_MIN_INTERVAL, a duration such as 2s: the shortest
	// interval of a scheduled job, below the minute of real use. Test-only: the process tests
	// of the supervisor schedule "@every 3s" to see a recurring job tick across a restart.
	CronMinInterval time.Duration

	// invalid are the values that could not be read, by variable.
	invalid map[string]error
}

// ReadEnv reads keel's knobs through getenv (nil means the process's environment). Values
// that do not parse are kept as problems that [Env.Check] reports when the knob is used, so a
// bad MCP_TIMEOUT does not stop `keel --version`.
func ReadEnv(getenv func(string) string) Env {
	if getenv == nil {
		getenv = os.Getenv
	}
	e := Env{invalid: map[string]error{}}
	e.Home = getenv("KEEL_HOME")
	if e.Home == "" {
		if dir := getenv("HOME"); dir != "" {
			e.Home = filepath.Join(dir, ".keel")
		} else if dir, err := os.UserHomeDir(); err == nil {
			e.Home = filepath.Join(dir, ".keel")
		}
	}
	e.ClaudeConfigDir = getenv("CLAUDE_CONFIG_DIR")
	if e.ClaudeConfigDir == "" {
		if dir := getenv("HOME"); dir != "" {
			e.ClaudeConfigDir = filepath.Join(dir, ".claude")
		} else if dir, err := os.UserHomeDir(); err == nil {
			e.ClaudeConfigDir = filepath.Join(dir, ".claude")
		}
	}
	e.SDKEntrypoint = strings.HasPrefix(getenv("CLAUDE_CODE_ENTRYPOINT"), "sdk")
	if v := getenv("KEEL_MAX_TURNS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			e.invalid["KEEL_MAX_TURNS"] = fmt.Errorf("KEEL_MAX_TURNS=%q is not a number of turns (0: no limit)", v)
		}
		e.MaxTurns, e.MaxTurnsSet = n, err == nil && n >= 0
	}
	e.Teams = envvar.Truthy(getenv("CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS"))
	if v := getenv("KEEL_TEAM_LEASE"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d < 0 {
			e.invalid["KEEL_TEAM_LEASE"] = fmt.Errorf("KEEL_TEAM_LEASE=%q is not a duration such as 30s", v)
		}
		e.TeamLease = max(d, 0)
	}
	e.InTmux = getenv("TMUX") != ""
	e.NATSURL = strings.TrimSpace(getenv("KEEL_NATS_URL"))
	e.MCPConnectTimeout = e.millis(getenv, "MCP_TIMEOUT")
	e.MCPToolTimeout = e.millis(getenv, "MCP_TOOL_TIMEOUT")
	if v := getenv("MAX_MCP_OUTPUT_TOKENS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			e.invalid["MAX_MCP_OUTPUT_TOKENS"] = fmt.Errorf("MAX_MCP_OUTPUT_TOKENS=%q is not a positive number", v)
		} else {
			e.MCPMaxOutputTokens = n
		}
	}
	e.MCPClientSecret = getenv("MCP_CLIENT_SECRET")
	if v := getenv("KEEL_MAX_CONCURRENT_SUBAGENTS"); v != "" {
		n, err := strconv.Atoi(strings.TrimSpace(v))
		if err != nil || n < 1 {
			e.invalid["KEEL_MAX_CONCURRENT_SUBAGENTS"] = fmt.Errorf("KEEL_MAX_CONCURRENT_SUBAGENTS=%q: want a whole number of at least 1", v)
		} else {
			e.MaxConcurrentSubagents = n
		}
	}
	if v := getenv("KEEL_TEST_CRON_MIN_INTERVAL"); v != "" {
		d, err := time.ParseDuration(strings.TrimSpace(v))
		if err != nil || d < time.Second {
			e.invalid["KEEL_TEST_CRON_MIN_INTERVAL"] = fmt.Errorf("KEEL_TEST_CRON_MIN_INTERVAL=%q: want a duration of at least 1s", v)
		} else {
			e.CronMinInterval = d
		}
	}
	e.SDKReadsSessionState = envvar.Truthy(getenv("CLAUDE_CODE_SDK_READS_SESSION_STATE"))
	e.NoColor = getenv("NO_COLOR") != ""
	e.Browser = getenv("BROWSER")
	e.Debug = envvar.Truthy(getenv("KEEL_DEBUG"))
	return e
}

// millis reads a duration in milliseconds, as Claude Code's MCP variables are given.
func (e Env) millis(getenv func(string) string, key string) time.Duration {
	v := getenv(key)
	if v == "" {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		e.invalid[key] = fmt.Errorf("%s=%q is not a positive number of milliseconds", key, v)
		return 0
	}
	return time.Duration(n) * time.Millisecond
}

// Check reports the first of the variables keys whose value could not be read.
func (e Env) Check(keys ...string) error {
	for _, k := range keys {
		if err := e.invalid[k]; err != nil {
			return err
		}
	}
	return nil
}

// MCPKeys are the variables [Env.Apply] reads for MCP servers, for [Env.Check].
var MCPKeys = []string{"MCP_TIMEOUT", "MCP_TOOL_TIMEOUT", "MAX_MCP_OUTPUT_TOKENS"}

// Apply fills what c leaves unset from the environment: keel's directory, teams, the team
// lease, tmux, the NATS server and the MCP limits. What c says explicitly wins.
func (e Env) Apply(c *Config) {
	if c.Home == "" {
		c.Home = e.Home
	}
	if c.SessionHomes == nil {
		c.SessionHomes = e.SessionHomes(c.Home, false)
	}
	c.Team.Enabled = c.Team.Enabled || e.Teams
	if c.Team.Lease == 0 {
		c.Team.Lease = e.TeamLease
	}
	c.Team.InTmux = c.Team.InTmux || e.InTmux
	if c.Coordination.NATSURL == "" {
		c.Coordination.NATSURL = e.NATSURL
	}
	if c.MCP.ConnectTimeout == 0 {
		c.MCP.ConnectTimeout = e.MCPConnectTimeout
	}
	if c.MCP.ToolTimeout == 0 {
		c.MCP.ToolTimeout = e.MCPToolTimeout
	}
	if c.MCP.MaxOutputTokens == 0 {
		c.MCP.MaxOutputTokens = e.MCPMaxOutputTokens
	}
	if c.MaxConcurrentSubagents == 0 {
		c.MaxConcurrentSubagents = e.MaxConcurrentSubagents
	}
	if c.CronMinInterval == 0 {
		c.CronMinInterval = e.CronMinInterval
	}
}

// SessionHomes are the directories whose projects folders hold the sessions of a run with
// keel's directory home: home first, Claude Code's directory second, so keel writes its own
// and finds both. When a program drives keel as Claude Code's CLI (sdk, or the SDK's
// entrypoint variable) Claude Code's comes first: the SDK's listSessions, getSessionMessages
// and forkSession read only there.
func (e Env) SessionHomes(home string, sdk bool) []string {
	homes := []string{home, e.ClaudeConfigDir}
	if sdk || e.SDKEntrypoint {
		homes[0], homes[1] = homes[1], homes[0]
	}
	var out []string
	for _, h := range homes {
		if h != "" && !slices.Contains(out, h) {
			out = append(out, h)
		}
	}
	return out
}
