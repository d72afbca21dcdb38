package compact

import (
	"github.com/keel-dev/keel/internal/provider"
)

// Windows gives a model's context window, in tokens; *models.Catalog is one.
type Windows interface {
	ContextWindow(model string) int64
}

// Policy is a session's compaction policy, the same for each of its agents: when an agent's
// history is compacted, by the window of the agent's own model, and how a compaction
// request's cache breakpoints are placed. It is a value of the session's settings as they
// stand: build it again when they may have changed.
type Policy struct {
	// Window, when positive, is the context window of every model: an embedder's figure,
	// which wins over the models'.
	Window int64
	// Windows gives each model's own window otherwise.
	Windows Windows
	// Percent is the share of the window past which the history is compacted (the
	// autoCompactThreshold setting); 0 or less is [DefaultPercent].
	Percent float64
	// TTL is the cache lifetime of each query source: a compaction request's breakpoints
	// carry the one of the source whose entries it reads.
	TTL provider.TTLPolicy
}

// Threshold is the input size, in tokens, past which the history of an agent on model is
// compacted.
func (p Policy) Threshold(model string) int64 {
	window := p.Window
	if window <= 0 {
		window = p.Windows.ContextWindow(model)
	}
	return Threshold(window, p.Percent)
}

// Breakpoints places the cache breakpoints of a request as sent (a compaction's: it reads
// the prefix of the conversation it repeats and writes none of its own).
func (p Policy) Breakpoints(r *provider.Request) {
	provider.PlaceBreakpoints(r, p.TTL)
}
