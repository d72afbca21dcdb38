package loop

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
)

// ToolRecorder is implemented by a [Sink] that persists the conversation: it records that a
// call with side effects is about to run, durably, before it runs. After a crash, resume
// tells the model which calls may have run from that record.
type ToolRecorder interface {
	ToolStarted(ctx context.Context, call tool.Call) error
}

// CrashAnswers is the user message answering calls a crash (or a kill) left without results:
// a call startedAt knows may have run, any other did not. A resumed history ending in those
// calls continues with it, recorded like any message, so the next request is valid and the
// model knows what may already have happened.
func CrashAnswers(uses []message.Block, startedAt func(toolUseID string) (time.Time, bool)) message.Message {
	blocks := make([]message.Block, 0, len(uses))
	for _, u := range uses {
		text := tool.CrashNotRunText
		if at, ok := startedAt(u.ID); ok {
			text = tool.CrashMayHaveRunText(at)
		}
		blocks = append(blocks, message.ToolResult(u.ID, []message.Block{message.Text(text)}, true))
	}
	return message.User(blocks...)
}

// recordingGate runs the agent's gate, then records a call that passed it and is not
// read-only. A call whose start cannot be recorded does not run: its effect would be
// invisible to a later resume.
type recordingGate struct {
	inner tool.Gate
	rec   ToolRecorder
}

func (g recordingGate) Before(ctx context.Context, env *tool.Env, t tool.Tool, call *tool.Call) (tool.Result, bool) {
	if g.inner != nil {
		if res, run := g.inner.Before(ctx, env, t, call); !run {
			return res, false
		}
	}
	if t.ReadOnly(call.Input) {
		return tool.Result{}, true
	}
	if err := g.rec.ToolStarted(context.WithoutCancel(ctx), *call); err != nil {
		return tool.Errorf("keel could not record that %s was starting (%v), so it did not run it.", call.Name, err), false
	}
	return tool.Result{}, true
}

func (g recordingGate) After(ctx context.Context, env *tool.Env, t tool.Tool, call tool.Call, res *tool.Result) {
	if g.inner != nil {
		g.inner.After(ctx, env, t, call, res)
	}
}

// gate is the agent's gate, recording starts when the sink can.
func (a *Agent) gate() tool.Gate {
	if rec, ok := a.Sink.(ToolRecorder); ok {
		return recordingGate{inner: a.Gate, rec: rec}
	}
	return a.Gate
}

// maxInvalidRepeats is how many turns in a row may carry the same invalid call before the run
// stops: a model that cannot produce a valid call would otherwise loop unattended.
const maxInvalidRepeats = 3

// invalidStreak counts consecutive turns that repeat the same invalid calls.
type invalidStreak struct {
	key   string
	count int
	// last describes one of the calls, for the explanation.
	last string
}

// observe records a batch: invalid maps the calls answered with an input error to that
// error. It reports whether the run must stop.
func (s *invalidStreak) observe(calls []tool.Call, invalid map[string]string) bool {
	var keys []string
	desc := ""
	for _, c := range calls {
		if msg, bad := invalid[c.ID]; bad {
			keys = append(keys, c.Name+"\x00"+string(c.Input))
			if desc == "" {
				desc = fmt.Sprintf("%s with input %s (%s)", c.Name, truncate(string(c.Input), 120), truncate(msg, 200))
			}
		}
	}
	if len(keys) == 0 {
		*s = invalidStreak{}
		return false
	}
	slices.Sort(keys)
	key := strings.Join(keys, "\x01")
	if key == s.key {
		s.count++
	} else {
		s.key, s.count = key, 1
	}
	s.last = desc
	return s.count >= maxInvalidRepeats
}

func (s *invalidStreak) explain() string {
	return fmt.Sprintf("the model sent the same invalid tool call %d times in a row: %s. keel stopped the run rather than let it loop; try again, rephrase the prompt, or use another model.",
		s.count, s.last)
}

// RetryLimiter is a tool whose owner bounds how many invalid calls of it a run tolerates
// (StructuredOutput: five answers that miss the schema, then
// error_max_structured_output_retries); the repeated-invalid-call guard leaves its calls to
// that owner.
type RetryLimiter interface{ LimitsRetries() bool }

// guarded drops from invalid the calls of tools that bound their own retries.
func (a *Agent) guarded(ctx context.Context, calls []tool.Call, invalid map[string]string) map[string]string {
	if len(invalid) == 0 || a.Pool == nil {
		return invalid
	}
	pool := a.Pool(ctx)
	names := map[string]bool{}
	for _, t := range pool.Tools() {
		if l, ok := t.(RetryLimiter); ok && l.LimitsRetries() {
			names[t.Name()] = true
		}
	}
	if len(names) == 0 {
		return invalid
	}
	for _, c := range calls {
		if names[c.Name] {
			delete(invalid, c.ID)
		}
	}
	return invalid
}

// NumTurns is a run's turn count as Claude Code reports it (num_turns): one, plus one per
// tool batch after which the loop went on or stopped, and never fewer than its model
// requests. A run that ends right after a batch (a structured answer, the turn limit) counts
// the turn it did not take.
func (o *Outcome) NumTurns() int { return max(o.Turns, 1+o.ToolBatches) }

// invalidCalls returns the calls of a batch answered with an input error, by id, with the
// error: the malformed inputs the stream delivered and the results the runner marked.
func invalidCalls(calls []tool.Call, malformed map[string]string, results []tool.Result) map[string]string {
	out := map[string]string{}
	for id, raw := range malformed {
		out[id] = "input is not a JSON object: " + truncate(raw, 80)
	}
	for i, c := range calls {
		if i < len(results) && results[i].InputError {
			out[c.ID] = results[i].ResultText()
		}
	}
	return out
}
