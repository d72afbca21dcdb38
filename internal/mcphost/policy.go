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
		if p.Dir != "" {
			out[i] = safePath(out[i], p.Dir)
		}
	}
	return out
}

// safePath returns s, started in dir, so that the Python it runs leaves the working directory
// off sys.path — PYTHONSAFEPATH=1 in its environment, or as env's assignment where env clears
// it, or -P where -E makes Python ignore it — unless what runs is a script (Python puts the
// script's own directory there instead), a module the working directory holds (the
// project's, which needs it), or the configuration sets PYTHONSAFEPATH itself. Python puts
// the working directory first for -m, -c and standard input: a datetime.py or PKG/ a
// sandboxed command (or the repository) puts there would run in place of the standard
// library's or the installed package's. An option keel does not know counts as a flag, so
// what follows it is no script unless it reads as one: leaving the directory off costs an
// installed module nothing. A Python started through a shell (`sh -c`, `env -S`) is not seen.
func safePath(s ServerConfig, dir string) ServerConfig {
	if s.Type != TypeStdio && s.Type != "" {
		return s
	}
	run, ok := parsePython(append([]string{s.Command}, s.Args...), dir)
	if !ok || run.safe || run.script || run.assigned || run.module != "" && projectModule(run.module, run.dir) {
		return s
	}
	if _, set := s.Env["PYTHONSAFEPATH"]; set {
		return s
	}
	env := maps.Clone(s.Env)
	if env == nil {
		env = map[string]string{}
	}
	env["PYTHONSAFEPATH"] = "1"
	s.Env = env
	// run.at indexes the command line; the arguments start one after it.
	switch {
	case run.ignoresEnv:
		s.Args = slices.Insert(slices.Clone(s.Args), run.at, "-P")
	case run.cleared:
		s.Args = slices.Insert(slices.Clone(s.Args), run.at-1, "PYTHONSAFEPATH=1")
	}
	return s
}

// projectModule reports whether the top-level package of module lies in dir.
func projectModule(module, dir string) bool {
	top, _, _ := strings.Cut(module, ".")
	if top == "" || strings.ContainsAny(top, `/\`) {
		return false
	}
	_, errDir := os.Stat(filepath.Join(dir, top))
	_, errFile := os.Stat(filepath.Join(dir, top+".py"))
	return errDir == nil || errFile == nil
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
// provides (committed with it) or a sandboxed command could have written — or would read a
// configuration file of the runner's there ([PackageRun.Configured]), which can name any
// program for it to run.
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
	counts := func(path string) bool { return inRepo(path) || writable(path) }
	command := strings.Join(append([]string{s.Command}, s.Args...), " ")
	if path := run.Provided(p.Dir, counts); path != "" {
		return p.copyReason(command, run, path, writable(path))
	}
	// A trusted workspace's .npmrc that only sets what starts nothing is the user's to keep
	// (the sandbox keeps it read-only, and one a command makes goes aside).
	configCounts := func(path string) bool { return counts(path) && !(p.Trusted && HarmlessConfig(path, true)) }
	if path := run.Configured(p.Dir, configCounts); path != "" {
		return p.configReason(command, run, path, writable(path))
	}
	return ""
}

// copyReason says why a server is not started whose runner would run the copy of its
// package at path; exposed says sandboxed commands can write there.
func (p Policy) copyReason(command string, run PackageRun, path string, exposed bool) string {
	if !exposed {
		return fmt.Sprintf("`%s` would run the copy of %s the workspace provides (%s), and the workspace is not trusted: trusting it (`keel trust`) starts the server",
			command, run.Package, path)
	}
	// Trust would not start it: the copy is still one a sandboxed command could write.
	why := fmt.Sprintf("`%s` would run, outside the sandbox, the copy of %s at %s, which sandboxed commands can write: set sandbox.wrapMcpServers to run the server in the sandbox, or start the package's executable by its path to run that copy knowingly",
		command, run.Package, path)
	return why + p.notTrustedEither()
}

// configReason says why a server is not started whose runner would read its configuration
// file at path; exposed says it lies where sandboxed commands write.
func (p Policy) configReason(command string, run PackageRun, path string, exposed bool) string {
	if !exposed {
		return fmt.Sprintf("`%s` would read %s, %s configuration the workspace provides, which can name any program for it to run (script-shell, node-options, yarnPath…), and the workspace is not trusted: trusting it (`keel trust`) starts the server",
			command, path, run.Runner)
	}
	// keel keeps the file read-only in the sandbox, but not what it names (a yarnPath
	// release, a pnpmfile elsewhere), and one a running command makes stays until it ends.
	why := fmt.Sprintf("`%s` would read %s, %s configuration in a folder sandboxed commands write, which can name any program for it to run outside the sandbox (script-shell, node-options, yarnPath…) — what it names can lie there too: set sandbox.wrapMcpServers to run the server in the sandbox, or install the package and start its executable by its path",
		command, path, run.Runner)
	return why + p.notTrustedEither()
}

func (p Policy) notTrustedEither() string {
	if p.Trusted {
		return ""
	}
	return " (the workspace is not trusted either, and trusting it alone does not start the server)"
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
