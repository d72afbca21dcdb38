package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/transcript"
)

// HistoryEntries returns a copy of the conversation with the transcript id of each message,
// index for index, so a frontend can show a resumed conversation and rewind to any prompt in
// it. A compacted conversation starts with the summary message.
func (p *Persistence) HistoryEntries() ([]message.Message, []string) {
	s := p.s
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]message.Message(nil), s.history...), append([]string(nil), s.uuids...)
}

// SetTitle names the session in the transcript (`/rename`): session lists show the title, and
// `--resume TITLE` finds the session by it.
func (p *Persistence) SetTitle(ctx context.Context, title string) error {
	s := p.s
	if s.transcript == nil {
		return errors.New("this session keeps no transcript to name")
	}
	raw, err := json.Marshal(title)
	if err != nil {
		return err
	}
	if _, err := s.transcript.Append(ctx, transcript.Entry{Type: transcript.TypeCustomTitle, Value: raw}); err != nil {
		return fmt.Errorf("name the session: %w", err)
	}
	return s.transcript.Sync(ctx)
}
