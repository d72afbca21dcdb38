package session

import (
	"context"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/toolgate"
	"github.com/keel-dev/keel/internal/transcript"
)

// newGate wires an agent's tool gate (internal/toolgate) to the session: its hooks (h, a
// subagent's own joined with the session's, or nil for the session's), the skills' grants,
// the rewind snapshots, the path-scoped rules, the language servers and the transcript.
func newGate(s *Session, checker *permission.Checker, origin event.Origin, emit func(event.Event), h hooks.EventRunner) *toolgate.Gate {
	var runner hooks.EventRunner = sessionHooks{s}
	if h != nil {
		runner = h
	}
	c := toolgate.Config{
		Checker: checker, Origin: origin, Emit: emit, Hooks: runner,
		HookInput:     s.hookd.Input,
		Granted:       s.sk.Granted,
		Interrupt:     s.sdk.interrupt,
		Validator:     s.validator,
		Touched:       s.noteTouched,
		TrackEdit:     s.undo.TrackEdit,
		Unrecoverable: s.undo.Unrecoverable,
		RecordMode: func(mode string) {
			s.persist.recordMetadata(context.Background(), transcript.TypeMode, mode)
		},
	}
	if s.lsp != nil {
		c.LSP = s.lsp
	}
	return toolgate.New(c)
}

// sessionHooks runs the session's hooks as they stand at each call, as the gate did when it
// held the session.
type sessionHooks struct{ s *Session }

func (h sessionHooks) Run(ctx context.Context, ev hooks.Event, in hooks.Input) hooks.Outcome {
	return h.s.hooks.Run(ctx, ev, in)
}
