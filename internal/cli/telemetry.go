package cli

import (
	"context"
	"fmt"
	"iter"
	"time"

	"github.com/keel-dev/keel/internal/companion"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/render"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/telemetry"
)

// telemetryFlush bounds how long a run's end waits for keel-otel's last export.
const telemetryFlush = 10 * time.Second

// telemetryEnv is where telemetry's configuration comes from: the env of managed settings
// (an organisation's policy wins), then the process environment, then the env of the user's
// settings — never a project's, which an untrusted repository could use to send the session's
// telemetry to a host of its choosing. Settings are read on the first lookup the environment
// does not answer.
func (a *app) telemetryEnv() func(string) string {
	var managed, user map[string]string
	load := func() {
		if managed != nil {
			return
		}
		managed, user = map[string]string{}, map[string]string{}
		for name, v := range a.userSettings().Env {
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
		if v := a.getenv(k); v != "" {
			return v
		}
		return user[k]
	}
}

// startTelemetry starts keel-otel for session id when telemetry is on; nil (and no cost)
// when it is off. A run without keel-otel goes on without telemetry, with a notice.
func (a *app) startTelemetry(ctx context.Context, f *runFlags, sessionID string) (*telemetry.Exporter, error) {
	env := a.telemetryEnv()
	if !telemetryWanted(env) {
		return nil, nil
	}
	cfg, err := telemetry.FromEnv(env)
	if err != nil {
		return nil, usageError{fmt.Errorf("telemetry configuration: %w", err)}
	}
	if !cfg.Active() {
		return nil, nil
	}
	bin, err := companion.Find(telemetry.Program, a.keelExe())
	if err != nil {
		fmt.Fprintf(a.std.Err, "keel: telemetry is on but %v; running without it\n", err)
		return nil, nil
	}
	start := "fresh"
	switch {
	case f.continueLast:
		start = "continue"
	case f.resume != "":
		start = "resume"
	}
	return telemetry.Start(ctx, cfg, telemetry.Options{Binary: bin, Stderr: a.std.Err, Logger: a.logger,
		Traceparent: a.getenv("TRACEPARENT"), Tracestate: a.getenv("TRACESTATE"),
		Session: telemetry.SessionInfo{SessionID: sessionID, Version: Version, StartType: start, TerminalType: "non-interactive",
			UserID: telemetry.InstallationID(a.env.Home)}})
}

func telemetryWanted(getenv func(string) string) bool {
	cfg, _ := telemetry.FromEnv(func(k string) string {
		if k == "CLAUDE_CODE_ENABLE_TELEMETRY" || k == "KEEL_ENABLE_TELEMETRY" {
			return getenv(k)
		}
		return ""
	})
	return cfg.Enabled
}

// closeTelemetry waits a bounded time for keel-otel's last export.
func (a *app) closeTelemetry(ctx context.Context, x *telemetry.Exporter) {
	if x == nil {
		return
	}
	flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), telemetryFlush)
	defer cancel()
	if err := x.Close(flush); err != nil {
		a.logger.Warn("telemetry", "err", err)
	}
}

// observedRenderer passes every event it renders to telemetry too.
type observedRenderer struct {
	render.Renderer
	x *telemetry.Exporter
}

func (o observedRenderer) Render(e event.Event) error {
	o.x.Observe(e)
	return o.Renderer.Render(e)
}

// observedPrompts opens an interaction for each prompt handed out.
func observedPrompts(next func() (string, bool, error), x *telemetry.Exporter) func() (string, bool, error) {
	return func() (string, bool, error) {
		p, ok, err := next()
		if ok && err == nil {
			x.Prompt(p)
		}
		return p, ok, err
	}
}

// observedTurn is a turn of the control protocol seen by telemetry: its prompt and events.
func observedTurn(x *telemetry.Exporter, prompt string, turn iter.Seq2[event.Event, error]) iter.Seq2[event.Event, error] {
	if x == nil {
		return turn
	}
	x.Prompt(prompt)
	return func(yield func(event.Event, error) bool) {
		for e, err := range turn {
			if err == nil {
				x.Observe(e)
			}
			if !yield(e, err) {
				return
			}
		}
	}
}
