package render

import (
	"fmt"
	"io"
	"slices"

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
	prices      unpricedModels
}

func (r *noticeRenderer) Render(e event.Event) error {
	var lines []string
	switch e := e.(type) {
	case event.Retry:
		lines = append(lines, RetryLine(e))
	case event.Notice:
		if !r.retriesOnly {
			lines = append(lines, NoticeLine(e))
		}
	case event.PermissionDenied:
		if !r.retriesOnly {
			lines = append(lines, DenialLine(e))
		}
	}
	if !r.retriesOnly { // stream-json names unpriced models in its own system line
		for _, n := range r.prices.notices(e) {
			lines = append(lines, NoticeLine(n))
		}
	}
	for _, line := range lines {
		if _, err := fmt.Fprintln(r.w, line); err != nil {
			return err
		}
	}
	return r.Renderer.Render(e)
}

// unpricedModels says, once per model, that a model a run used has no known price — where
// the cost is said, so a person or a program summing total_cost_usd knows the figure leaves
// it out. The zero value is ready.
type unpricedModels struct {
	// warned holds the models already named.
	warned map[string]bool
}

// notices returns the notices the main agent's result e calls for (none for other events).
func (u *unpricedModels) notices(e event.Event) []event.Notice {
	res, ok := e.(event.Result)
	if !ok || res.Origin.AgentID != "" {
		return nil
	}
	var out []event.Notice
	for _, m := range unpriced(res) {
		if u.warned[m] {
			continue
		}
		if u.warned == nil {
			u.warned = map[string]bool{}
		}
		u.warned[m] = true
		out = append(out, event.Notice{Level: "warn",
			Text: fmt.Sprintf("no price is known for model %s: its tokens are not in the cost (total_cost_usd counts priced models only)", m)})
	}
	return out
}

// unpriced lists the models of a result that have no known price, sorted.
func unpriced(res event.Result) []string {
	var models []string
	for m, mu := range res.ModelUsage {
		if !mu.PriceKnown {
			models = append(models, m)
		}
	}
	slices.Sort(models)
	return models
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
