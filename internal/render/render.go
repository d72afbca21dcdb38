// Package render writes a session's event stream for headless use: plain text, one JSON
// result object, or stream-json lines in the shapes tools written for Claude Code's
// `--output-format stream-json` read (see protocol/ in the design notes), plus a readable
// conversation view for `keel demo` and `--verbose`.
package render

import (
	"fmt"
	"io"

	"github.com/keel-dev/keel/internal/event"
)

// Renderer consumes the events of one run.
type Renderer interface {
	Render(e event.Event) error
	// Finish is called once after the last event.
	Finish() error
}

// Formats lists the output formats by name.
var Formats = []string{"text", "json", "stream-json"}

// New returns the renderer for format.
func New(format string, w io.Writer, verbose bool) (Renderer, error) {
	switch format {
	case "", "text":
		if verbose {
			return NewConversation(w, false), nil
		}
		return &textRenderer{w: w}, nil
	case "json":
		return &jsonRenderer{w: w}, nil
	case "stream-json":
		return NewStreamJSON(w, StreamOptions{}), nil
	}
	return nil, fmt.Errorf("output format %q is not one of text, json, stream-json", format)
}

// textRenderer prints only the final reply, like `keel -p` users expect in a pipe.
type textRenderer struct {
	w      io.Writer
	result *event.Result
}

func (r *textRenderer) Render(e event.Event) error {
	if res, ok := e.(event.Result); ok && res.Origin.AgentID == "" {
		r.result = &res
	}
	return nil
}

func (r *textRenderer) Finish() error {
	if r.result == nil || r.result.IsError {
		return nil
	}
	_, err := fmt.Fprintln(r.w, r.result.Text)
	return err
}
