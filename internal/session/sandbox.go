package session

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/keel-dev/keel/internal/egress"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

// buildSandbox is the session's one sandbox, from --sandbox, the settings' sandbox block and
// the Read deny rules, with the egress proxy for its network; nil when it is off. Nothing is
// started until the first command.
func (s *Session) buildSandbox() *sandbox.Sandbox {
	sb := s.newSandbox()
	if !sb.Policy().Enabled() {
		return nil
	}
	return sb
}

// NewSandbox is the sandbox a session configured as cfg would run its commands in (on or
// off), from the settings st it would load: for `keel doctor` and `keel sandbox`.
func NewSandbox(cfg runconfig.Config, st *settings.Settings) (*sandbox.Sandbox, error) {
	cwd, err := resolveCwd(cfg.Cwd)
	if err != nil {
		return nil, err
	}
	s := &Session{opts: Options{Cwd: cwd, Home: cfg.Home, Sandbox: cfg.Sandbox}, settings: st, projectDir: ProjectRoot(cwd)}
	for _, d := range append(append([]string(nil), cfg.AddDirs...), values(st.Permissions.AdditionalDirectories)...) {
		if !filepath.IsAbs(d) {
			d = filepath.Join(cwd, d)
		}
		s.state.AdditionalDirs = append(s.state.AdditionalDirs, filepath.Clean(d))
	}
	return s.newSandbox(), nil
}

func (s *Session) newSandbox() *sandbox.Sandbox {
	home := userHome()
	var readDeny []sandbox.PathRule
	for _, v := range s.settings.Permissions.Deny {
		r, err := permission.ParseRule(v.V, permission.Deny, permission.Source{})
		if err != nil || r.Tool != "Read" || r.Specifier == "" {
			continue
		}
		readDeny = append(readDeny, sandbox.PathRule{Spec: r.Specifier, Dir: s.opts.ruleDir(v.From)})
	}
	p := sandbox.NewPolicy(sandbox.Input{
		Mode: sandbox.Mode(s.opts.Sandbox), Settings: &s.settings.Sandbox,
		Dirs: append([]string{s.opts.Cwd}, s.state.AdditionalDirs...), Home: home, KeelHome: s.opts.Home,
		Caches: sandbox.Caches(home, os.Getenv), Protect: s.protectedPaths(), ReadDeny: readDeny,
	})
	sb := s.settings.Sandbox.Network
	proxy := egress.New(egress.Rules{Allowed: values(sb.AllowedDomains), Denied: values(sb.DeniedDomains), Strict: sb.StrictAllowlist.V})
	return sandbox.New(p, sandbox.Options{Proxy: proxy})
}

func values(vs []settings.Value[string]) []string {
	out := make([]string, 0, len(vs))
	for _, v := range vs {
		out = append(out, v.V)
	}
	return out
}

// sandboxAutoAllows says whether sandbox.autoAllowBashIfSandboxed answers r without asking: a
// Bash call that will run in a working sandbox, asked about by the mode rather than by an ask
// rule. Deny rules were applied before any question, so they still refuse.
func (s *Session) sandboxAutoAllows(r permission.AskRequest) bool {
	if s.sandbox == nil || !s.sandbox.Policy().AutoAllowBash || r.Rule != nil || r.Request.Tool != "Bash" {
		return false
	}
	var in struct {
		Command string `json:"command"`
		Disable bool   `json:"dangerouslyDisableSandbox"`
	}
	if json.Unmarshal(r.Request.Input, &in) != nil {
		return false
	}
	return s.sandbox.Policy().Choose(in.Command, in.Disable) == sandbox.Inside && s.sandbox.Available() == nil
}

// hookSandbox is the sandbox hooks run in: the session's, when sandbox.wrapHooks opts in.
func (s *Session) hookSandbox() *sandbox.Sandbox {
	if s.sandbox == nil || !s.sandbox.Policy().WrapHooks {
		return nil
	}
	return s.sandbox
}

// serverConfine runs the session's stdio MCP servers inside its sandbox when
// sandbox.wrapMcpServers asks for it; nil otherwise.
func (s *Session) serverConfine() func(*exec.Cmd) (func(), error) {
	if s.sandbox == nil || !s.sandbox.Policy().WrapMCPServers {
		return nil
	}
	sb := s.sandbox
	return func(cmd *exec.Cmd) (func(), error) {
		run, err := sb.Confine(cmd)
		if err != nil {
			return nil, err
		}
		return func() { run.Release() }, nil
	}
}
