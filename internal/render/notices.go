package render

import (
	"fmt"
	"io"

	"github.com/keel-dev/keel/internal/event"
)

// WithNotices returns r for format, with notices (settings problems, hooks that timed out,
// MCP servers that failed, a torn transcript tail…) also written to errW as
// "keel: warning: …" lines where the format has no place for them: text and json print only
// the result on stdout. stream-json carries them as system lines, and the verbose
// conversation view prints them in place, so those are returned as they are.
func WithNotices(r Renderer, format string, verbose bool, errW io.Writer) Renderer {
	if format == "stream-json" || (format == "text" || format == "") && verbose {
		return r
	}
	return &noticeRenderer{Renderer: r, w: errW}
}

type noticeRenderer struct {
	Renderer
	w io.Writer
}

func (r *noticeRenderer) Render(e event.Event) error {
	if n, ok := e.(event.Notice); ok {
		if _, err := fmt.Fprintln(r.w, NoticeLine(n)); err != nil {
			return err
		}
	}
	return r.Renderer.Render(e)
}

// NoticeLine is how a notice reads on a terminal: "keel: warning: text", with the agent's
// name when a subagent raised it.
func NoticeLine(n event.Notice) string {
	prefix := "keel: "
	switch n.Level {
	case "warn", "warning":
		prefix += "warning: "
	case "error":
		prefix += "error: "
	}
	if who := n.Origin.AgentName; who != "" {
		prefix += "[" + who + "] "
	} else if n.Origin.AgentID != "" {
		prefix += "[agent " + n.Origin.AgentID + "] "
	}
	return prefix + n.Text
}
