package loop

import (
	"context"
	"fmt"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
)

// Cycle is what an agent does between runs of the loop: the part of an agent's life that
// differs by kind. A subagent drains the messages sent to it meanwhile and ends when there
// are none; a teammate runs its idle hooks, tells its lead, and waits for a message or a task
// from the board; the main agent's Send is one run.
type Cycle interface {
	// Next is asked when a run ended — or, with ran.Out nil, before the first run of a history
	// that does not end with a user message (a teammate resumed after its turn had ended).
	// It returns the message that starts the next run, or false when the agent is done.
	Next(ctx context.Context, ran Ran) (message.Message, bool)
}

// Ran is the last run as the driver saw it, with the totals of every run of one [Drive].
type Ran struct {
	// Out and Err are how the last run ended; Out is nil before the first.
	Out *Outcome
	Err error
	// Usage, Ledger, Turns and ToolUses add up every run so far.
	Usage    message.Usage
	Ledger   cost.Ledger
	Turns    int
	ToolUses int
}

// Drive runs the agent from history until its cycle says it is done: fresh — the messages at
// the end of history not yet in the agent's transcript — are recorded, then each run of the
// loop is added up and the cycle's next message is recorded (in the transcript and as a
// UserMessage event) before the next run. A nil cycle makes it one run. It returns the last
// run with the totals; its error is the last run's, or the one that stopped recording.
func Drive(ctx context.Context, a *Agent, history []message.Message, fresh []message.Message, cycle Cycle) (Ran, error) {
	var ran Ran
	for _, m := range fresh {
		if err := a.record(ctx, m, false); err != nil {
			return ran, err
		}
	}
	if n := len(history); cycle != nil && (n == 0 || history[n-1].Role != message.RoleUser) {
		next, ok := cycle.Next(ctx, ran)
		if !ok {
			return ran, nil
		}
		if err := a.record(ctx, next, true); err != nil {
			return ran, err
		}
		history = append(history, next)
	}
	for {
		out, err := a.Run(ctx, history)
		ran.Out, ran.Err = out, err
		ran.Usage = ran.Usage.Add(out.Usage)
		ran.Ledger.Merge(out.Ledger)
		ran.Turns += out.Turns
		ran.ToolUses += countToolUses(out.Messages[len(history):])
		if cycle == nil {
			return ran, err
		}
		next, ok := cycle.Next(ctx, ran)
		if !ok {
			return ran, err
		}
		if err := a.record(ctx, next, true); err != nil {
			return ran, err
		}
		history = append(out.Messages, next)
	}
}

// record appends m to the agent's transcript and, when announce is set, shows it as a
// UserMessage event.
func (a *Agent) record(ctx context.Context, m message.Message, announce bool) error {
	if a.Sink == nil {
		return nil
	}
	uuid, err := a.Sink.Append(ctx, m)
	if err != nil {
		return fmt.Errorf("record message: %w", err)
	}
	if announce {
		a.Sink.Emit(event.UserMessage{Origin: a.Origin, UUID: uuid, Message: m})
	}
	return nil
}

// countToolUses counts the tool calls of the assistant messages in msgs.
func countToolUses(msgs []message.Message) int {
	n := 0
	for _, m := range msgs {
		if m.Role == message.RoleAssistant {
			n += len(m.ToolUses())
		}
	}
	return n
}
