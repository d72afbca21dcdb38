package mcphost

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/toolpath"
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
	// Dir is the directory stdio servers start in, Repo the repository around it, and
	// Writable the roots sandboxed commands can write while the server runs outside the
	// sandbox (none when the sandbox is off or confines the servers too): a server a package
	// runner starts in Dir must not run the copy of its package that the untrusted
	// workspace, or a sandboxed command, provides ([PackageRun.Provided]). Empty Dir: not
	// checked.
	Dir, Repo string
	Writable  []string
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
		if p.Dir != "" && installedModule(out[i], p.Dir) {
			// Python puts the working directory first on sys.path for -m: a package a
			// sandboxed command (or the repository) puts there under the module's name would
			// run in its place. The module is installed code, so leaving the directory off
			// loses nothing.
			env := maps.Clone(out[i].Env)
			if env == nil {
				env = map[string]string{}
			}
			if _, set := env["PYTHONSAFEPATH"]; !set {
				env["PYTHONSAFEPATH"] = "1"
			}
			out[i].Env = env
		}
	}
	return out
}

// installedModule reports whether s is a stdio server that Python runs as a module (`python3 -m
// pkg.mod`) whose top-level package is not in dir, where the server starts: installed code.
func installedModule(s ServerConfig, dir string) bool {
	if s.Type != TypeStdio && s.Type != "" || !strings.HasPrefix(filepath.Base(s.Command), "python") {
		return false
	}
	for i, a := range s.Args {
		if a == "-m" && i+1 < len(s.Args) {
			top, _, _ := strings.Cut(s.Args[i+1], ".")
			if top == "" || strings.ContainsAny(top, `/\`) {
				return false
			}
			_, errDir := os.Stat(filepath.Join(dir, top))
			_, errFile := os.Stat(filepath.Join(dir, top+".py"))
			return errDir != nil && errFile != nil
		}
		if a == "--" || !strings.HasPrefix(a, "-") {
			return false // a script, or the end of the interpreter's options
		}
	}
	return false
}

func (p Policy) reason(s ServerConfig) string {
	if slices.ContainsFunc(p.Denied, func(r settings.MCPServerRule) bool { return matches(r, s) }) {
		return "denied by managed policy (deniedMcpServers)"
	}
	if len(p.Allowed) > 0 && !slices.ContainsFunc(p.Allowed, func(r settings.MCPServerRule) bool { return matches(r, s) }) {
		return "not in the managed allowedMcpServers list"
	}
	if s.Project() {
		if slices.Contains(p.DisabledProject, s.Name) {
			return "disabled in settings (disabledMcpjsonServers)"
		}
		if !p.Trusted && !p.EnableAllProject && !slices.Contains(p.Enabled, s.Name) {
			return "project server from .mcp.json: the workspace is not trusted (run `keel trust`, or approve it with enabledMcpjsonServers)"
		}
	}
	return p.workspaceCopy(s)
}

// workspaceCopy says why s must not start: its package runner would run, outside the
// sandbox, a copy of its package in place of the one configured that the untrusted workspace
// provides (committed with it) or a sandboxed command could have written.
func (p Policy) workspaceCopy(s ServerConfig) string {
	if p.Dir == "" || p.Trusted && len(p.Writable) == 0 || s.Type != TypeStdio && s.Type != "" {
		return ""
	}
	run, ok := PackageRunner(s.Command, s.Args)
	if !ok {
		return ""
	}
	writable := func(path string) bool {
		return slices.ContainsFunc(p.Writable, func(w string) bool { return toolpath.Within(path, w) })
	}
	inRepo := func(path string) bool { return !p.Trusted && p.Repo != "" && toolpath.Within(path, p.Repo) }
	path := run.Provided(p.Dir, func(path string) bool { return inRepo(path) || writable(path) })
	command := strings.Join(append([]string{s.Command}, s.Args...), " ")
	switch {
	case path == "":
		return ""
	case writable(path):
		// Trust would not start it: the copy is still one a sandboxed command could write.
		why := fmt.Sprintf("`%s` would run, outside the sandbox, the copy of %s at %s, which sandboxed commands can write: set sandbox.wrapMcpServers to run the server in the sandbox, or start the package's executable by its path to run that copy knowingly",
			command, run.Package, path)
		if !p.Trusted {
			why += " (the workspace is not trusted either, and trusting it alone does not start the server)"
		}
		return why
	}
	return fmt.Sprintf("`%s` would run the copy of %s the workspace provides (%s), and the workspace is not trusted: trusting it (`keel trust`) starts the server",
		command, run.Package, path)
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
