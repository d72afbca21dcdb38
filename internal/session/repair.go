package session

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/compact"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/transcript"
)

// repairResumed answers the calls a crash left without results, so the next request is valid
// and the model knows what may already have happened: a call with a tool_started entry may
// have run, one without did not. The answers are appended to the transcript as an ordinary
// user entry. Other damage (a history written by an older keel) is repaired in memory only.
func (p *Persistence) repairResumed(ctx context.Context, st *transcript.State) {
	s := p.s
	if n := len(s.history); n > 0 && s.history[n-1].Role == message.RoleAssistant {
		if uses := s.history[n-1].ToolUses(); len(uses) > 0 {
			p.answerInterrupted(ctx, uses, st.Started)
		}
	}
	fixed, notes := loop.RepairHistory(s.history)
	if len(notes) > 0 {
		s.history = fixed
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: "the resumed conversation broke the model API's rules; keel repaired it: " +
			strings.Join(notes, "; ")})
	}
}

func (p *Persistence) answerInterrupted(ctx context.Context, uses []message.Block, started map[string]transcript.ToolStart) {
	s := p.s
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
	id, err := p.record(ctx, transcript.Entry{Type: transcript.TypeUser, Message: &m})
	if err == nil && s.transcript != nil {
		err = s.transcript.Sync(ctx)
	}
	if err != nil {
		// The answers still go into this run's history; the next resume repairs again.
		s.logger.Warn("record repair of interrupted calls", "err", err)
	}
	s.history = append(s.history, m)
	s.uuids = append(s.uuids, id)
	text := fmt.Sprintf("the last run stopped before %d tool call(s) finished; none of them had started, and the model was told so", len(uses))
	if len(ran) > 0 {
		text = fmt.Sprintf("the last run stopped before %d tool call(s) finished; %s may have run, and the model was told to check before repeating them",
			len(uses), strings.Join(ran, ", "))
	}
	s.notices = append(s.notices, event.Notice{Level: "warn", Text: text})
}

// restore rebuilds the session's state from a replayed transcript.
func (p *Persistence) restore(ctx context.Context, st *transcript.State) *prompt.Environment {
	s := p.s
	if st == nil {
		return nil
	}
	// The context, not the full messages: results cleared before are stubs again, so the
	// next request repeats the last one's prefix byte for byte.
	msgs, uuids := st.Context()
	if b, ok := st.Boundary(); ok {
		msgs = append([]message.Message{compact.SummaryMessage(b.Summary)}, msgs...)
		uuids = append([]string{b.UUID}, uuids...)
	}
	s.history, s.uuids = msgs, uuids
	p.repairResumed(ctx, st)
	if st.TornTail > 0 {
		s.notices = append(s.notices, event.Notice{Level: "warn",
			Text: fmt.Sprintf("the transcript ended in an incomplete entry (%d bytes, from a crash); it was skipped", st.TornTail)})
	}
	if st.BadLines > 0 {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: fmt.Sprintf("%d damaged transcript lines were skipped", st.BadLines)})
	}
	if st.Repairs.Any() {
		s.notices = append(s.notices, event.Notice{Level: "warn", Text: st.Repairs.String()})
	}
	if todos := st.Todos(); len(todos) > 0 {
		var items []event.Todo
		if json.Unmarshal(todos, &items) == nil {
			s.todos.Set(items)
		}
	}
	if mode := st.Mode(); mode != "" && s.opts.PermissionMode == "" {
		if m, err := permission.ParseMode(mode); err == nil {
			s.checker.SetMode(m)
		}
	}
	var set agentSetting
	if raw := st.AgentSetting(); len(raw) > 0 && json.Unmarshal(raw, &set) == nil {
		return set.Environment
	}
	return nil
}
