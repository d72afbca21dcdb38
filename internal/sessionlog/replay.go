package sessionlog

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/compact"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/transcript"
)

// Replayed is a session's state rebuilt from its transcript, for the session to take up.
type Replayed struct {
	// History is the conversation the next request continues, UUIDs its entries' ids,
	// index for index.
	History []message.Message
	UUIDs   []string
	// Notices tell the user what was repaired or skipped.
	Notices []event.Notice
	// Todos is the todo list as last recorded; Mode the permission mode ("" if none).
	Todos []event.Todo
	Mode  string
	// Environment is what the main agent's prompt was rendered from, nil if not recorded.
	Environment *prompt.Environment
}

// Replay rebuilds the conversation and what was recorded beside it from st. The calls a
// crash left without results are answered, and the answers recorded in l (see repair).
func Replay(ctx context.Context, st *transcript.State, l *Log) Replayed {
	// The context, not the full messages: results cleared before are stubs again, so the
	// next request repeats the last one's prefix byte for byte.
	msgs, uuids := st.Context()
	if b, ok := st.Boundary(); ok {
		msgs = append([]message.Message{compact.SummaryMessage(b.Summary)}, msgs...)
		uuids = append([]string{b.UUID}, uuids...)
	}
	r := Replayed{History: msgs, UUIDs: uuids, Mode: st.Mode()}
	r.repair(ctx, st, l)
	if st.TornTail > 0 {
		r.warn(fmt.Sprintf("the transcript ended in an incomplete entry (%d bytes, from a crash); it was skipped", st.TornTail))
	}
	if st.BadLines > 0 {
		r.warn(fmt.Sprintf("%d damaged transcript lines were skipped", st.BadLines))
	}
	if st.Repairs.Any() {
		r.warn(st.Repairs.String())
	}
	if todos := st.Todos(); len(todos) > 0 {
		var items []event.Todo
		if json.Unmarshal(todos, &items) == nil {
			r.Todos = items
		}
	}
	var set AgentSetting
	if raw := st.AgentSetting(); len(raw) > 0 && json.Unmarshal(raw, &set) == nil {
		r.Environment = set.Environment
	}
	return r
}

func (r *Replayed) warn(text string) {
	r.Notices = append(r.Notices, event.Notice{Level: "warn", Text: text})
}

// repair answers the calls a crash left without results, so the next request is valid and
// the model knows what may already have happened: a call with a tool_started entry may have
// run, one without did not. The answers are appended to the transcript as an ordinary user
// entry. Other damage (a history written by an older keel) is repaired in memory only.
func (r *Replayed) repair(ctx context.Context, st *transcript.State, l *Log) {
	if n := len(r.History); n > 0 && r.History[n-1].Role == message.RoleAssistant {
		if uses := r.History[n-1].ToolUses(); len(uses) > 0 {
			r.answerInterrupted(ctx, uses, st.Started, l)
		}
	}
	fixed, notes := loop.RepairHistory(r.History)
	if len(notes) > 0 {
		r.History = fixed
		r.warn("the resumed conversation broke the model API's rules; keel repaired it: " + strings.Join(notes, "; "))
	}
}

func (r *Replayed) answerInterrupted(ctx context.Context, uses []message.Block, started map[string]transcript.ToolStart, l *Log) {
	m := loop.CrashAnswers(uses, func(id string) (time.Time, bool) {
		ts, ok := started[id]
		return ts.Started, ok
	})
	var ran []string
	for _, u := range uses {
		if _, ok := started[u.ID]; ok {
			ran = append(ran, fmt.Sprintf("%s (%s)", u.Name, u.ID))
		}
	}
	id, err := l.Record(ctx, transcript.Entry{Type: transcript.TypeUser, Message: &m})
	if err == nil && l.Writer() != nil {
		err = l.w.Sync(ctx)
	}
	if err != nil && l != nil {
		// The answers still go into this run's history; the next resume repairs again.
		l.logger.Warn("record repair of interrupted calls", "err", err)
	}
	r.History = append(r.History, m)
	r.UUIDs = append(r.UUIDs, id)
	text := fmt.Sprintf("the last run stopped before %d tool call(s) finished; none of them had started, and the model was told so", len(uses))
	if len(ran) > 0 {
		text = fmt.Sprintf("the last run stopped before %d tool call(s) finished; %s may have run, and the model was told to check before repeating them",
			len(uses), strings.Join(ran, ", "))
	}
	r.warn(text)
}

// ResumeAt drops the history after the assistant message at (--resume-session-at) and
// rewinds the transcript's branch to it.
func ResumeAt(ctx context.Context, history []message.Message, uuids []string, at string, l *Log) ([]message.Message, []string, error) {
	idx := slices.Index(uuids, at)
	if idx < 0 {
		return nil, nil, fmt.Errorf("--resume-session-at %s: no such message in the resumed session", at)
	}
	history, uuids = history[:idx+1:idx+1], uuids[:idx+1:idx+1]
	if w := l.Writer(); w != nil {
		if err := w.Rewind(ctx, at); err != nil {
			return nil, nil, fmt.Errorf("--resume-session-at: %w", err)
		}
	}
	return history, uuids, nil
}
