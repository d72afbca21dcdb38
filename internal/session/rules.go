package session

import (
	"context"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/prompt"
)

// noteTouched records paths a tool read or changed, for path-scoped memory rules.
func (s *Session) noteTouched(paths []string) {
	if len(paths) == 0 || s.memory == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.touched = append(s.touched, paths...)
}

// rulesObserver hands path-scoped rules (.keel/rules/*.md with paths: frontmatter) to the
// model once a matching file was touched. They join the next request as a message: putting
// them in the system prompt would change its bytes and miss the cache.
type rulesObserver struct{ s *Session }

func (o rulesObserver) Observe(context.Context) []message.Block {
	s := o.s
	s.mu.Lock()
	paths := s.touched
	s.touched = nil
	s.mu.Unlock()
	if len(paths) == 0 || s.memory == nil {
		return nil
	}
	var blocks []message.Block
	for _, f := range s.memory.Touch(paths) {
		blocks = append(blocks, message.Text("<system-reminder>\nThese instructions apply to files you are working on:\n\n"+
			prompt.RenderMemoryFile(f)+"\n</system-reminder>"))
	}
	return blocks
}
