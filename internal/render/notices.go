package render

import (
	"fmt"
	"io"

	"github.com/keel-dev/keel/internal/event"
)

// WithNotices returns r for format, with what a person running keel must hear of written to
// errW as lines where the format has no place for them: text and json print only the result
// on stdout, so notices (settings problems, hooks that timed out, MCP servers that failed, a
// torn transcript tail…) go there as "keel: warning: …", every denied tool call as "keel:
// denied Edit(calc.py): …" and every retried model request as "keel: retrying (attempt 2 of
// 10 in 1 s): …". stream-json carries notices and denials as system lines, so only its
// retries are written; the verbose conversation view prints everything in place.
func WithNotices(r Renderer, format string, verbose bool, errW io.Writer) Renderer {
	if (format == "text" || format == "") && verbose {
		return r
	}
	return &noticeRenderer{Renderer: r, w: errW, retriesOnly: format == "stream-json"}
}

type noticeRenderer struct {
	Renderer
	w           io.Writer
	retriesOnly bool
}

func (r *noticeRenderer) Render(e event.Event) error {
	line := ""
	switch e := e.(type) {
	case event.Retry:
		line = RetryLine(e)
	case event.Notice:
		if !r.retriesOnly {
			line = NoticeLine(e)
		}
	case event.PermissionDenied:
		if !r.retriesOnly {
			line = DenialLine(e)
		}
	}
	if line != "" {
		if _, err := fmt.Fprintln(r.w, line); err != nil {
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
	return prefix + agentPrefix(n.Origin) + n.Text
}
