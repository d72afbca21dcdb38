package session

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/keel-dev/keel/internal/companion"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/telemetry"
)

// telemetryFlush bounds how long closing a session waits for keel-otel's last export.
const telemetryFlush = 10 * time.Second

// startTelemetry starts keel-otel for the session when telemetry is switched on: every entry
// point that opens a session through [Open] — headless, the Agent SDK, the terminal UI, an
// editor over ACP, the library — exports the same way. A session run on another's behalf (a
// teammate's worker, a supervisor job) exports nothing: its lead records its events. A run
// without keel-otel goes on without telemetry, with a notice.
func (c *configWiring) startTelemetry(ctx context.Context, cfg runconfig.Config, seams Seams, getenv func(string) string) error {
	s := c.s
	if cfg.Team.Worker != nil || cfg.Supervisor.DetachedFrom != "" || cfg.Offline {
		return nil
	}
	env := c.telemetryEnv(getenv)
	if !telemetryWanted(env) {
		return nil
	}
	tc, err := telemetry.FromEnv(env)
	if err != nil {
		return fmt.Errorf("telemetry configuration: %w", err)
	}
	if !tc.Active() {
		return nil
	}
	bin, err := companion.Find(telemetry.Program, seams.Program)
	if err != nil {
		s.mu.Lock()
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: fmt.Sprintf("telemetry is on but %v; running without it", err)})
		s.mu.Unlock()
		return nil
	}
	start := "fresh"
	switch {
	case cfg.Continue:
		start = "continue"
	case cfg.Resume != "":
		start = "resume"
	}
	opts := telemetry.Options{Binary: bin, Stderr: seams.Stderr, Logger: s.logger,
		Session: telemetry.SessionInfo{SessionID: s.id, Version: cfg.Version, StartType: start, TerminalType: "non-interactive",
			UserID: telemetry.InstallationID(cfg.Home)}}
	if cfg.Interactive {
		opts.Session.TerminalType = getenv("TERM_PROGRAM")
	} else {
		// A headless or SDK run joins its caller's trace.
		opts.Traceparent, opts.Tracestate = getenv("TRACEPARENT"), getenv("TRACESTATE")
	}
	x, err := telemetry.Start(ctx, tc, opts)
	if err != nil || x == nil {
		return err
	}
	s.tel.Store(x)
	s.closers = append(s.closers, func() error {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryFlush)
		defer cancel()
		if err := x.Close(flush); err != nil {
			s.logger.Warn("telemetry", "err", err)
		}
		return nil
	})
	return nil
}

// telemetryEnv is where telemetry's configuration comes from: the env of managed settings
// (an organisation's policy wins), then the process environment, then the env of the user's
// settings — never a project's, which an untrusted repository could use to send the session's
// telemetry to a host of its choosing. Settings are read on the first lookup the environment
// does not answer.
func (c *configWiring) telemetryEnv(getenv func(string) string) func(string) string {
	s := c.s
	var managed, user map[string]string
	load := func() {
		if managed != nil {
			return
		}
		managed, user = map[string]string{}, map[string]string{}
		st, _ := settings.Load(settings.Options{Env: settings.Env{Home: s.opts.Home}, ManagedPath: s.opts.ManagedSettingsPath})
		for name, v := range st.Env {
			if v.From.Scope == settings.ScopeManaged {
				managed[name] = v.V
			} else {
				user[name] = v.V
			}
		}
	}
	return func(k string) string {
		load()
		if v, ok := managed[k]; ok {
			return v
		}
		if v := getenv(k); v != "" {
			return v
		}
		return user[k]
	}
}

// telemetryWanted reads only the switch, so a run with telemetry off reads nothing else.
func telemetryWanted(getenv func(string) string) bool {
	cfg, _ := telemetry.FromEnv(func(k string) string {
		if k == "CLAUDE_CODE_ENABLE_TELEMETRY" || k == "KEEL_ENABLE_TELEMETRY" {
			return getenv(k)
		}
		return ""
	})
	return cfg.Enabled
}

// telemetryLink holds the session's exporter once telemetry has started (nil while it is off
// or not yet started; the exporter's methods are nil-safe).
type telemetryLink struct {
	atomic.Pointer[telemetry.Exporter]
}

// traceparent is the TRACEPARENT of tool call toolUseID's span, which the processes it starts
// inherit; "" while telemetry is off.
func (l *telemetryLink) traceparent(toolUseID string) string { return l.Load().Traceparent(toolUseID) }

// serverTraceparent is the TRACEPARENT an MCP server starts under: the current prompt's span,
// or before the first prompt the caller's (a headless or SDK run); "" while telemetry is off.
func (l *telemetryLink) serverTraceparent() string { return l.Load().Traceparent("") }
