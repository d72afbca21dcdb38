package mcphost

import (
	"slices"

	"github.com/keel-dev/keel/internal/settings"
)

// Policy decides which configured servers may start.
type Policy struct {
	// Trusted is workspace trust (trust.IsTrusted, or --trust).
	Trusted bool
	// EnableAllProject, Enabled and DisabledProject are enableAllProjectMcpServers,
	// enabledMcpjsonServers and disabledMcpjsonServers.
	EnableAllProject bool
	Enabled          []string
	DisabledProject  []string
	// Allowed and Denied are the managed allowedMcpServers and deniedMcpServers. An empty Allowed
	// allows everything; Denied always wins.
	Allowed, Denied []settings.MCPServerRule
}

// PolicyFrom reads the MCP settings. The enable settings count only from sources the project
// does not provide: a cloned repository must not be able to approve its own servers.
func PolicyFrom(s *settings.Settings, trusted bool) Policy {
	p := Policy{Trusted: trusted}
	if s == nil {
		return p
	}
	if v := s.EnableAllProjectMcpServers; v.IsSet() && !v.From.Scope.ProjectProvided() {
		p.EnableAllProject = v.V
	}
	for _, v := range s.EnabledMcpjsonServers {
		if !v.From.Scope.ProjectProvided() {
			p.Enabled = append(p.Enabled, v.V)
		}
	}
	for _, v := range s.DisabledMcpjsonServers {
		p.DisabledProject = append(p.DisabledProject, v.V)
	}
	for _, v := range s.AllowedMcpServers {
		p.Allowed = append(p.Allowed, v.V)
	}
	for _, v := range s.DeniedMcpServers {
		p.Denied = append(p.Denied, v.V)
	}
	return p
}

// Apply returns servers with Disabled set on those that must not start, and why.
func (p Policy) Apply(servers []ServerConfig) []ServerConfig {
	out := slices.Clone(servers)
	for i := range out {
		out[i].Disabled = p.reason(out[i])
	}
	return out
}

func (p Policy) reason(s ServerConfig) string {
	if slices.ContainsFunc(p.Denied, func(r settings.MCPServerRule) bool { return matches(r, s) }) {
		return "denied by managed policy (deniedMcpServers)"
	}
	if len(p.Allowed) > 0 && !slices.ContainsFunc(p.Allowed, func(r settings.MCPServerRule) bool { return matches(r, s) }) {
		return "not in the managed allowedMcpServers list"
	}
	if !s.Project() {
		return ""
	}
	if slices.Contains(p.DisabledProject, s.Name) {
		return "disabled in settings (disabledMcpjsonServers)"
	}
	if p.Trusted || p.EnableAllProject || slices.Contains(p.Enabled, s.Name) {
		return ""
	}
	return "project server from .mcp.json: the workspace is not trusted (run `keel trust`, or approve it with enabledMcpjsonServers)"
}

func matches(r settings.MCPServerRule, s ServerConfig) bool {
	switch {
	case r.ServerName != "":
		return r.ServerName == s.Name
	case len(r.ServerCommand) > 0:
		return s.Type == TypeStdio && slices.Equal(r.ServerCommand, append([]string{s.Command}, s.Args...))
	case r.ServerURL != "":
		if s.URL == "" {
			return false
		}
		return wildcard(r.ServerURL, s.URL)
	}
	return false
}

// wildcard matches pattern, where * matches any run of characters (including '/'), against s.
func wildcard(pattern, s string) bool {
	if pattern == "" {
		return s == ""
	}
	if pattern[0] == '*' {
		for i := 0; i <= len(s); i++ {
			if wildcard(pattern[1:], s[i:]) {
				return true
			}
		}
		return false
	}
	return s != "" && pattern[0] == s[0] && wildcard(pattern[1:], s[1:])
}
