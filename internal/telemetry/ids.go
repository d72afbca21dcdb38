package telemetry

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strings"
)

// Span ids are derived, not drawn: the span of tool call X in trace T is always
// SpanID(T, "tool", X). So keel can hand a Bash command, a hook or an MCP server the
// TRACEPARENT of the tool call it runs under without asking keel-otel, and a worker on another
// host that knows the trace and the Agent call that spawned it names the same parent span.

// Span kinds, the key each is derived from.
const (
	KindTool    = "tool"    // a tool call: its tool_use id
	KindRequest = "request" // a model request: the agent id and the request's number
	KindTurn    = "turn"    // a teammate's turn: its name and the turn's number
)

// SpanID derives the span id of the span of kind for key in trace (hex, 16 digits).
func SpanID(trace, kind, key string) string {
	h := sha256.Sum256([]byte(trace + "\x00" + kind + "\x00" + key))
	if allZero(h[:8]) {
		h[0] = 1 // the all-zero id is invalid
	}
	return hex.EncodeToString(h[:8])
}

// NewTraceID returns a random trace id (hex, 32 digits); NewSpanID a random span id.
func NewTraceID() string { return randomHex(16) }

// NewSpanID returns a random span id (hex, 16 digits).
func NewSpanID() string { return randomHex(8) }

func randomHex(n int) string {
	b := make([]byte, n)
	for allZero(b) {
		_, _ = rand.Read(b)
	}
	return hex.EncodeToString(b)
}

func allZero(b []byte) bool {
	for _, x := range b {
		if x != 0 {
			return false
		}
	}
	return true
}

// Traceparent formats a W3C traceparent header value for a sampled span.
func Traceparent(trace, span string) string {
	if trace == "" || span == "" {
		return ""
	}
	return "00-" + trace + "-" + span + "-01"
}

// ParseTraceparent reads a W3C traceparent (TRACEPARENT in a headless or SDK run): the trace
// id, the caller's span id and the flags. (No regular expression: a compiled one would be
// package initialisation every keel start pays.)
func ParseTraceparent(v string) (trace, span, flags string, err error) {
	parts := strings.Split(strings.ToLower(strings.TrimSpace(v)), "-")
	if len(parts) != 4 || !isHex(parts[0], 2) || parts[0] == "ff" || !isHex(parts[1], 32) || !isHex(parts[2], 16) || !isHex(parts[3], 2) ||
		strings.Trim(parts[1], "0") == "" || strings.Trim(parts[2], "0") == "" {
		return "", "", "", fmt.Errorf("TRACEPARENT %q is not a W3C traceparent (00-<32 hex>-<16 hex>-<2 hex>)", v)
	}
	return parts[1], parts[2], parts[3], nil
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	_, err := hex.DecodeString(s)
	return err == nil
}
