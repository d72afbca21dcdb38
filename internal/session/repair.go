package session

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
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
