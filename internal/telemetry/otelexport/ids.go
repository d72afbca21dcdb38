package otelexport

import (
	"context"
	"crypto/rand"

	"go.opentelemetry.io/otel/trace"
)

// derivedIDs gives a span the ids keel chose for it (telemetry.SpanID), handed over in the
// context of tracer.Start, so keel can name a tool call's span to the processes it starts
// before keel-otel has seen it; any other span gets random ids.
type derivedIDs struct{}

type idsKey struct{}

type chosenIDs struct {
	trace trace.TraceID
	span  trace.SpanID
}

// withIDs returns ctx carrying the ids the next span started with it gets.
func withIDs(ctx context.Context, t trace.TraceID, s trace.SpanID) context.Context {
	return context.WithValue(ctx, idsKey{}, chosenIDs{t, s})
}

func (derivedIDs) NewIDs(ctx context.Context) (trace.TraceID, trace.SpanID) {
	if c, ok := ctx.Value(idsKey{}).(chosenIDs); ok && c.trace.IsValid() && c.span.IsValid() {
		return c.trace, c.span
	}
	var t trace.TraceID
	_, _ = rand.Read(t[:])
	return t, derivedIDs{}.NewSpanID(ctx, t)
}

func (derivedIDs) NewSpanID(ctx context.Context, _ trace.TraceID) trace.SpanID {
	if c, ok := ctx.Value(idsKey{}).(chosenIDs); ok && c.span.IsValid() {
		return c.span
	}
	var s trace.SpanID
	_, _ = rand.Read(s[:])
	return s
}
