package keel

import (
	"context"
	"fmt"
	"runtime"
	"strings"

	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/provider/connect"
)

// Check is one finding of [Session.Doctor].
type Check struct {
	// Area groups checks: API, settings, MCP, versions.
	Area, Name string
	// Status is ok, warn or fail; Detail says what was found and, when it is not ok, what to do.
	Status, Detail string
}

// Doctor checks what the session depends on: that the model API answers and accepts the key
// (a request for the model list, which costs nothing), the settings files, the MCP servers,
// and the versions of what keel runs with. Checks other packages own (the sandbox's) are
// added by the caller.
func (s *Session) Doctor(ctx context.Context) []Check {
	checks := []Check{s.apiCheck(ctx)}
	for _, f := range s.SettingsFiles() {
		switch f.State {
		case "loaded":
			checks = append(checks, Check{Area: "settings", Name: f.Path, Status: "ok", Detail: f.Scope + " settings, loaded"})
		case "bad":
			checks = append(checks, Check{Area: "settings", Name: f.Path, Status: "fail", Detail: f.Scope + " settings could not be read; nothing in it is used"})
		}
	}
	for _, p := range s.SettingsProblems() {
		status := "warn"
		if p.Level == "error" {
			status = "fail"
		}
		checks = append(checks, Check{Area: "settings", Name: "problem", Status: status, Detail: p.Text})
	}
	for _, m := range s.MCPServers() {
		c := Check{Area: "MCP", Name: m.Name, Status: "ok", Detail: fmt.Sprintf("%s, %d tools", m.Status, m.Tools)}
		switch m.Status {
		case "connected", "disabled":
		case "needs-auth":
			c.Status, c.Detail = "warn", "needs a sign-in: /mcp login "+m.Name
		case "pending":
			c.Status, c.Detail = "warn", "still connecting"
		default:
			c.Status, c.Detail = "fail", strings.TrimSpace(m.Status+": "+m.Reason)
		}
		checks = append(checks, c)
	}
	return append(checks, versionChecks(ctx)...)
}

// apiCheck asks the model API for its model list with the session's key and address.
func (s *Session) apiCheck(ctx context.Context) Check {
	c := Check{Area: "API", Name: "model API"}
	if s.cfg.Provider != "" && s.cfg.Provider != string(ProviderAnthropic) {
		c.Status, c.Detail = "warn", "not checked for the "+s.cfg.Provider+" provider; a prompt shows whether it answers"
		return c
	}
	cfg := connect.Config{Provider: s.cfg.Provider, Model: s.cfg.Model, APIKey: s.opts.APIKey, BaseURL: s.cfg.BaseURL}
	env := s.opts.Getenv
	if env == nil {
		env = connect.OSEnv
	}
	cat, err := connect.LoadModels(ctx, cfg, env, homeOf(s.cfg), true)
	if err != nil {
		c.Status, c.Detail = "fail", err.Error()
		return c
	}
	c.Status, c.Detail = "ok", fmt.Sprintf("answers and accepts the key; %d models listed", len(cat.Listed()))
	return c
}

// versionChecks report the Go runtime and system, and the tools keel runs when they are there.
// git runs as keel's own git always does, through gitexec (a version asks nothing of the
// repository, but no git call of keel's runs any other way).
func versionChecks(ctx context.Context) []Check {
	out := []Check{{Area: "versions", Name: "go", Status: "ok", Detail: runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH}}
	git, err := gitexec.Runner{}.Output(ctx, "", "--version")
	out = append(out, versionCheck("git", git, err, "worktrees and the git facts in the prompt need it"))
	rg, err := hostexec.Command(ctx, "rg", "--version").Output()
	return append(out, versionCheck("rg", rg, err, "Grep uses its own, slower search"))
}

// versionCheck is a tool's version line, or a warning saying what its absence costs.
func versionCheck(name string, version []byte, err error, missing string) Check {
	c := Check{Area: "versions", Name: name, Status: "ok"}
	if err != nil {
		c.Status, c.Detail = "warn", "not found on PATH; "+missing
	} else {
		c.Detail = strings.TrimSpace(strings.SplitN(string(version), "\n", 2)[0])
	}
	return c
}
