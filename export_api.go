package keel

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/keel-dev/keel/internal/transcript"
)

// Export writes the session's conversation as Markdown to w, as `keel sessions export` does:
// prompts, replies, tool calls and their results.
func (s *Session) Export(ctx context.Context, w io.Writer) error {
	path := s.TranscriptPath()
	if path == "" {
		return errors.New("export: this session keeps no transcript")
	}
	st, err := transcript.Load(ctx, path)
	if err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return transcript.ExportMarkdown(w, st)
}
