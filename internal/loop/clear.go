package loop

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"

	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/tool"
)

// clearStale lets the agent's clearer replace old tool results with stubs before the next
// request is assembled. A clearing is declared to the cache watcher (it rewrites the prefix
// from the first stub on), and the Read results it removed are forgotten, so the next Read of
// such a file shows its content instead of the unchanged-file stub. It returns the block the
// request marks besides its newest: after a clearing the last block before the first stub, so
// the provider finds the cache entry of the unchanged prefix, which lies further back than its
// lookback from the newest message reaches; otherwise the newest stub, so that entry exists
// when the next clearing starts right after it. Nil when nothing was ever cleared.
func (a *Agent) clearStale(ctx context.Context, out *Outcome, pool *tool.Pool) *provider.BlockRef {
	if a.Clear == nil {
		return nil
	}
	readOnly := func(name string, input json.RawMessage) bool {
		t, ok := pool.Lookup(name)
		return ok && t.ReadOnly(input)
	}
	msgs, rep := a.Clear.Clear(out.Messages, a.Model, readOnly)
	if len(rep.Results) == 0 {
		if m, b, ok := a.Clear.Mark(out.Messages); ok {
			return sentBlock(out.Messages, m, b)
		}
		return nil
	}
	out.Messages = msgs
	a.recordCleared(ctx, rep.Results)
	reason := fmt.Sprintf("%d old tool results cleared (%s)", len(rep.Results), rep.Reason)
	if d, ok := a.Watch.(BreakDeclarer); ok {
		d.Declare(mergedIndex(msgs, rep.From), reason)
	}
	for _, c := range rep.Results {
		if c.Tool == "Read" {
			a.forgetView(c.Input)
		}
	}
	a.Logger.Info("tool results cleared", "results", len(rep.Results), "freed_tokens", rep.Freed,
		"rewritten_tokens", rep.Rewritten, "reason", rep.Reason)
	first := rep.Results[0]
	return blockBefore(msgs, first.Message, first.Block)
}

// ClearRecorder is implemented by a [Sink] that persists the conversation: it records which
// tool results a clearing replaced, and with what, before the request carrying the stubs is
// sent. The messages it persisted keep the full results; a resume replays the record to
// rebuild the context the agent's requests were built from, so their cached prefix still
// matches (and the results cleared stay stubs).
type ClearRecorder interface {
	RecordCleared(ctx context.Context, results []clearing.Cleared) error
}

// recordCleared hands a clearing to the sink. A clearing that cannot be recorded still
// applies: only a later resume loses the cache from the first stub on.
func (a *Agent) recordCleared(ctx context.Context, results []clearing.Cleared) {
	rec, ok := a.Sink.(ClearRecorder)
	if !ok {
		return
	}
	if err := rec.RecordCleared(context.WithoutCancel(ctx), results); err != nil {
		a.Logger.Warn("record cleared tool results", "err", err)
	}
}

// sentBlock locates block b of history[m] among the messages as sent ([Merge]).
func sentBlock(history []message.Message, m, b int) *provider.BlockRef {
	offset := 0
	for j := m - 1; j >= 0 && history[j].Role == history[m].Role; j-- {
		offset += len(history[j].Content)
	}
	return &provider.BlockRef{Message: mergedIndex(history, m), Block: offset + b}
}

// blockBefore locates, among the messages as sent ([Merge]), the block right before block b
// of history[m]; nil when there is none.
func blockBefore(history []message.Message, m, b int) *provider.BlockRef {
	mi := mergedIndex(history, m)
	offset := 0
	for j := m - 1; j >= 0 && history[j].Role == history[m].Role; j-- {
		offset += len(history[j].Content)
	}
	if offset+b > 0 {
		return &provider.BlockRef{Message: mi, Block: offset + b - 1}
	}
	if mi == 0 {
		return nil
	}
	prev := 0
	for j := m - 1; j >= 0 && history[j].Role == history[m-1].Role; j-- {
		prev += len(history[j].Content)
	}
	return &provider.BlockRef{Message: mi - 1, Block: prev - 1}
}

// forgetView marks the file a cleared Read showed as no longer in the context.
func (a *Agent) forgetView(input json.RawMessage) {
	if a.Files == nil {
		return
	}
	var in struct {
		FilePath string `json:"file_path"`
	}
	if json.Unmarshal(input, &in) != nil || !filepath.IsAbs(in.FilePath) {
		a.Files.ForgetViews()
		return
	}
	p := filepath.Clean(in.FilePath)
	if real, err := filepath.EvalSymlinks(p); err == nil {
		p = real
	}
	a.Files.ForgetView(p)
}

// mergedIndex is the index, among the messages as sent ([Merge]), of history[i].
func mergedIndex(history []message.Message, i int) int {
	n := 0
	for j := 1; j <= i && j < len(history); j++ {
		if history[j].Role != history[j-1].Role {
			n++
		}
	}
	return n
}

// providerMark locates, among msgs (as sent), the last block before the result of the oldest
// tool use the provider's own clearing keeps (the keep newest are kept), or nil when there is
// none. The provider applies its clearing to every request anew, so everything up to that
// block is the same in the next request, which clears one result more — that result — and a
// breakpoint there leaves a cache entry the next request reads up to. Without it the next
// request would find no entry of the edited prefix within the provider's lookback and write
// the whole conversation again. Before the provider starts clearing the mark costs nothing:
// it splits the write, it adds none.
func providerMark(msgs []message.Message, keep int) *provider.BlockRef {
	var results []provider.BlockRef
	for i, m := range msgs {
		if m.Role != message.RoleUser {
			continue
		}
		for j, b := range m.Content {
			if b.Type == message.TypeToolResult {
				results = append(results, provider.BlockRef{Message: i, Block: j})
			}
		}
	}
	if keep <= 0 || len(results) < keep {
		return nil
	}
	at := results[len(results)-keep]
	for {
		at.Block--
		for at.Block < 0 {
			if at.Message--; at.Message < 0 {
				return nil
			}
			at.Block = len(msgs[at.Message].Content) - 1
		}
		if provider.LastMarkable(msgs[at.Message].Content[at.Block:at.Block+1]) == 0 {
			return &at
		}
	}
}
