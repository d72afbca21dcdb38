package session

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/lsp"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/sandbox"
)

// buildLSP starts the language-server manager of the lspServers settings (no server runs
// until a file of its language is read or edited). Servers a project configures run only
// once the workspace is trusted, as its hooks do; every server runs inside the session's
// sandbox unless sandbox.wrapLspServers is false.
func (c *configWiring) buildLSP() {
	s := c.s
	var servers []lsp.Config
	all := s.plug.LSPServers()
	maps.Copy(all, s.settings.LSPServers)
	for _, name := range slices.Sorted(maps.Keys(all)) {
		v := all[name]
		if v.From.Scope.ProjectProvided() && !c.trusted() {
			s.notices = append(s.notices, event.Notice{Level: "warn",
				Text: fmt.Sprintf("lspServers.%s in %s is ignored until this workspace is trusted (keel trust)", name, v.From.Path)})
			continue
		}
		srv := v.V
		cfg := lsp.Config{Name: name, Command: srv.Command, Args: srv.Args, Env: srv.Env, Extensions: srv.ExtensionToLanguage,
			InitializationOptions: srv.InitializationOptions, Settings: srv.Settings, WorkspaceFolder: srv.WorkspaceFolder,
			StartupTimeout:  time.Duration(srv.StartupTimeout * float64(time.Millisecond)),
			ShutdownTimeout: time.Duration(srv.ShutdownTimeout * float64(time.Millisecond)),
			NoRestart:       srv.RestartOnCrash != nil && !*srv.RestartOnCrash}
		if srv.MaxRestarts != nil {
			cfg.MaxRestarts = *srv.MaxRestarts
		}
		servers = append(servers, cfg)
	}
	if len(servers) == 0 {
		return
	}
	// keel's own credentials are no language server's business: a server runs code from the
	// workspace, and the sandbox's network may reach an allowed domain.
	environ := sandbox.WithoutCredentials(s.opts.MCP.Environ)
	confine := s.lspConfine()
	if s.sandbox != nil && confine == nil {
		s.warn("Sandbox: " + lspOutside + ".")
	}
	if confine == nil {
		// Outside, Python keeps its bytecode where no sandboxed command plants any.
		environ = hostexec.PythonEnv(environ)
	}
	s.lsp = lsp.New(lsp.Options{Servers: servers, Root: s.projectDir, Environ: environ, Wait: s.opts.LSPWait, Confine: confine, Logger: s.logger})
}

// lspObserver hands the main agent diagnostics that arrived after its edit's result was
// returned, at the next request boundary.
type lspObserver struct{ s *Session }

func (o lspObserver) Observe(context.Context) []message.Block {
	if text := lsp.Format(o.s.lsp.Late(""), o.s.Cwd()); text != "" {
		return []message.Block{message.Text(text)}
	}
	return nil
}
