package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/keel-dev/keel/internal/egress"
	"github.com/keel-dev/keel/internal/lsp"
	"github.com/keel-dev/keel/internal/mcphost"
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
	if d := sandbox.ExposedPath(sb.Policy()); d != "" {
		s.warn("Sandbox: " + d + ".")
	}
	if text := s.trackedMaskedNotice(context.Background(), sb); text != "" {
		s.warn("Sandbox: the " + text + ".")
	}
	return sb
}

// NewSandbox is the sandbox a session configured as cfg would run its commands in (on or
// off), from the settings st it would load: for `keel doctor` and `keel sandbox`.
func NewSandbox(cfg runconfig.Config, st *settings.Settings) (*sandbox.Sandbox, error) {
	s, err := sandboxSession(cfg, st)
	if err != nil {
		return nil, err
	}
	return s.newSandbox(), nil
}

// sandboxSession is the little of a session configured as cfg that its sandbox is made from.
func sandboxSession(cfg runconfig.Config, st *settings.Settings) (*Session, error) {
	cwd, err := resolveCwd(cfg.Cwd)
	if err != nil {
		return nil, err
	}
	s := &Session{opts: Options{Cwd: cwd, Home: cfg.Home, Sandbox: cfg.Sandbox}, settings: st, projectDir: ProjectRoot(cwd), logger: slog.New(slog.DiscardHandler)}
	for _, d := range append(append([]string(nil), cfg.AddDirs...), values(st.Permissions.AdditionalDirectories)...) {
		if !filepath.IsAbs(d) {
			d = filepath.Join(cwd, d)
		}
		s.state.AdditionalDirs = append(s.state.AdditionalDirs, filepath.Clean(d))
	}
	return s, nil
}

func (s *Session) newSandbox() *sandbox.Sandbox {
	home := userHome()
	var readDeny []sandbox.PathRule
	for _, r := range s.readDenyRules() {
		// Anchored as the permission rule is: /path at the settings file's directory, path
		// and ./path at the working directory from every settings file.
		readDeny = append(readDeny, sandbox.PathRule{Spec: r.Specifier, Dir: r.Root(s.opts.Cwd)})
	}
	p := sandbox.NewPolicy(sandbox.Input{
		Mode: sandbox.Mode(s.opts.Sandbox), Settings: &s.settings.Sandbox,
		Dirs: append([]string{s.opts.Cwd}, s.state.AdditionalDirs...), Home: home, KeelHome: s.opts.Home,
		Caches: sandbox.Caches(home, os.Getenv), Protect: s.protectedPaths(), ReadDeny: readDeny,
		Unattended: s.unattended(),
	})
	sb := s.settings.Sandbox.Network
	rules := egress.Rules{Allowed: values(sb.AllowedDomains), Denied: values(sb.DeniedDomains), Strict: sb.StrictAllowlist.V}
	if s.checker != nil {
		rules.Ask = s.askNetwork
	}
	rules.Resolve = sandboxResolve
	return sandbox.New(p, sandbox.Options{Proxy: egress.New(rules), Unavailable: func(err error) { s.sandboxUnavailable(p, err) }})
}

// sandboxResolve is the egress proxy's resolver: nil, the system's. Tests give a name to a
// loopback server here.
var sandboxResolve func(ctx context.Context, host string) ([]netip.Addr, error)

// unattended reports a run with no one to ask (no asker, no permission-prompt tool) in auto
// permission mode: a sandbox that cannot start is then an error, never an unsandboxed run.
func (s *Session) unattended() bool {
	return s.checker != nil && s.opts.Asker == nil && s.opts.MCP.PermissionPromptTool == "" &&
		s.checker.Policy().Mode == permission.ModeAuto
}

// sandboxUnavailable is the one notice of a session whose sandbox cannot start here: what is
// missing and how to fix it, and what becomes of the commands; or, for a sandbox that runs
// only in its Landlock-only form, what that form leaves open. Each command's result says it
// too, for the model.
func (s *Session) sandboxUnavailable(p sandbox.Policy, err error) {
	if errors.Is(err, sandbox.ErrLimited) {
		s.warn(fmt.Sprintf("Bash commands run in a weaker sandbox: %v.", err))
		return
	}
	if p.FailIfUnavailable {
		s.warn(fmt.Sprintf("Bash commands will not run: %v (%s).", err, p.FailWhy))
		return
	}
	s.warn(fmt.Sprintf("Bash commands run WITHOUT the sandbox: %v. Set sandbox.failIfUnavailable to refuse them instead, or sandbox.enabled to false (--sandbox off) to run them outside knowingly.", err))
}

// askNetwork decides a connection of a sandboxed command to a host that neither
// sandbox.network.allowedDomains nor deniedDomains names, as Claude Code does: the
// WebFetch(domain:…) rules decide first (so an "always" answer, or a rule written in
// settings, allows the host from then on), and what they leave open is put to the session's
// asker — the terminal's permission prompt, the SDK's can_use_tool, the permission-prompt
// tool. A headless run has no one to ask: the connection is refused, naming the settings
// that would allow it.
func (s *Session) askNetwork(ctx context.Context, host string, port int) (answered bool, err error) {
	hp := net.JoinHostPort(host, strconv.Itoa(port))
	scheme := "https"
	if port == 80 {
		scheme = "http"
	}
	u := scheme + "://" + hp + "/"
	input, _ := json.Marshal(map[string]any{
		"url": u, "host": host, "port": port, "sandboxNetwork": true,
		"description": "Network request outside of the sandbox: " + hp,
	})
	req := permission.Request{Tool: "WebFetch", URL: u, Input: input}
	d := s.checker.Evaluate(req)
	switch d.Behavior {
	case permission.Allow:
		return d.Asked, nil
	case permission.Deny:
		return false, errors.New("denied: " + d.Reason)
	}
	if s.opts.Asker == nil && s.opts.MCP.PermissionPromptTool == "" {
		return false, fmt.Errorf("not in sandbox.network.allowedDomains, and a headless run has no one to ask: add %q to sandbox.network.allowedDomains or \"WebFetch(domain:%s)\" to permissions.allow", host, host)
	}
	d = s.checker.AskAnyway(ctx, req, "a sandboxed command connects to "+hp+", which sandbox.network.allowedDomains does not list", "sandbox")
	if d.Behavior != permission.Allow {
		return false, errors.New("refused when asked: " + d.Reason)
	}
	return true, nil
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
func (s *Session) serverConfine() func(*exec.Cmd) (mcphost.Confined, error) {
	if s.sandbox == nil || !s.sandbox.Policy().WrapMCPServers {
		return nil
	}
	sb := s.sandbox
	return func(cmd *exec.Cmd) (mcphost.Confined, error) {
		run, err := sb.Confine(cmd)
		if err != nil {
			return nil, err // not a nil *sandbox.Run in a non-nil interface
		}
		return run, nil
	}
}

// lspConfine runs the session's language servers inside its sandbox, as it does unless
// sandbox.wrapLspServers is false; nil otherwise.
func (s *Session) lspConfine() func(*exec.Cmd) (lsp.Confined, error) {
	if s.sandbox == nil || !s.sandbox.Policy().WrapLSPServers {
		return nil
	}
	sb := s.sandbox
	return func(cmd *exec.Cmd) (lsp.Confined, error) {
		run, err := sb.Confine(cmd)
		if err != nil {
			return nil, err // not a nil *sandbox.Run in a non-nil interface
		}
		return run, nil
	}
}

// lspOutside is what the session and `keel doctor` say of language servers run outside
// the sandbox that is on.
const lspOutside = "language servers run outside the sandbox (sandbox.wrapLspServers is false): one that loads code from the workspace — a project's node_modules/typescript, its build scripts or proc macros — runs what sandboxed commands wrote there, with your rights"

// lspFinding is `keel doctor`'s line on where the configured language servers run, when
// the sandbox sb is on and there are any.
func (s *Session) lspFinding(sb *sandbox.Sandbox) (sandbox.Finding, bool) {
	servers := map[string]settings.Value[settings.LSPServer]{}
	maps.Copy(servers, s.settings.LSPServers)
	if s.plug != nil {
		maps.Copy(servers, s.plug.LSPServers())
	}
	if !sb.Policy().Enabled() || len(servers) == 0 {
		return sandbox.Finding{}, false
	}
	names := strings.Join(slices.Sorted(maps.Keys(servers)), ", ")
	if !sb.Policy().WrapLSPServers {
		return sandbox.Finding{Name: "language servers", Status: "warn", Detail: names + ": " + lspOutside}, true
	}
	return sandbox.Finding{Name: "language servers", Status: "ok", Detail: names + ": inside the sandbox (sandbox.wrapLspServers); one that cannot start there does not start"}, true
}

// SandboxFindings are `keel doctor`'s sandbox checks for this session (see [sandbox.Doctor]):
// what the machine supports and what the session's sandbox allows, or that it is off.
func (s *Session) SandboxFindings(ctx context.Context) []sandbox.Finding {
	sb := s.sandbox
	if sb == nil {
		sb = s.newSandbox() // off: its policy says so, and nothing is started
	}
	out := sandbox.Doctor(ctx, sb)
	out = append(out, s.trackedMaskedFindings(ctx, sb)...)
	if f, ok := s.lspFinding(sb); ok {
		out = append(out, f)
	}
	return out
}

// SandboxDoctor is `keel doctor`'s sandbox checks for a session configured as cfg with the
// settings st ([NewSandbox], [sandbox.Doctor]), with the masked files git tracks.
func SandboxDoctor(ctx context.Context, cfg runconfig.Config, st *settings.Settings) ([]sandbox.Finding, error) {
	s, err := sandboxSession(cfg, st)
	if err != nil {
		return nil, err
	}
	return s.SandboxFindings(ctx), nil
}
