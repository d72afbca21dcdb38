package telemetry

import (
	"encoding/json"
	"time"
)

// Line is one JSON line keel writes to keel-otel. The first carries the [Config]; then a
// [SessionInfo]; then prompts and the session's events in the order they happened, each with
// the time keel saw it (spans and durations are measured by keel's clock, not by when
// keel-otel reads the line).
type Line struct {
	At      time.Time       `json:"at"`
	Config  *Config         `json:"config,omitempty"`
	Session *SessionInfo    `json:"session,omitempty"`
	Prompt  *Prompt         `json:"prompt,omitempty"`
	Event   json.RawMessage `json:"event,omitempty"`
}

// SessionInfo describes the session whose events follow.
type SessionInfo struct {
	SessionID string `json:"sessionId"`
	Version   string `json:"version"`
	// StartType is fresh, resume or continue (claude_code.session.count's start_type).
	StartType string `json:"startType"`
	// TerminalType is terminal.type: the TERM_PROGRAM, or "non-interactive" for -p.
	TerminalType string `json:"terminalType,omitempty"`
	// UserID is user.id: an anonymous identifier of this keel installation.
	UserID string `json:"userId,omitempty"`
}

// Prompt opens an interaction: one user prompt and everything done for it until its result.
type Prompt struct {
	// ID is prompt.id, which every event of the interaction carries.
	ID string `json:"id"`
	// Text is sent only when OTEL_LOG_USER_PROMPTS allows; Length always.
	Text   string `json:"text,omitempty"`
	Length int    `json:"length"`
	// TraceID and SpanID are the interaction span's; ParentSpanID is the caller's span from
	// TRACEPARENT in a headless or SDK run, empty otherwise.
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId,omitempty"`
	TraceFlags   string `json:"traceFlags,omitempty"`
	TraceState   string `json:"traceState,omitempty"`
}
