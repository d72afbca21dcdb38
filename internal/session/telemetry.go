package session

import (
	"sync/atomic"
	"time"

	"github.com/keel-dev/keel/internal/telemetry"
)

// telemetryFlush bounds how long closing a session waits for keel-otel's last export.
const telemetryFlush = 10 * time.Second

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
