package keel

import (
	"context"

	"github.com/keel-dev/keel/internal/fanout"
	"github.com/keel-dev/keel/internal/session"
)

// FanOut is one task run over many items, one agent per item (see [Session.FanOut]).
type FanOut struct {
	// Description names the fan-out; each item's agent is "<Description> (item N)".
	Description string
	// Prompt is the task; "{{item}}" marks where each item goes (without it the item is
	// appended). Keep the shared part first: the items' requests then share its cache.
	Prompt string
	Items  []string
	// AgentType is the agent definition each item runs as; "" is general-purpose.
	AgentType string
	// Fork runs each item as a fork child of the main thread instead of as AgentType: the
	// items inherit the conversation and read all of it from the prompt cache (call FanOut
	// after a Send, which gives the forks a turn to branch off).
	Fork bool
	// Concurrency caps the agents running at once; zero is KEEL_MAX_CONCURRENT_SUBAGENTS,
	// else 20.
	Concurrency int
}

// FanOutItem is one item of a fan-out and what became of it: State is pending, running,
// done or failed; Attempts above 1 mean a run was cut off and started again.
type FanOutItem struct {
	Index         int
	Input, State  string
	Result, Error string
	Attempts      int
}

// FanOutSummary is a fan-out's outcome. Text is the one-line-per-item summary a model reads;
// Items carry the start of each result (the whole one: [Session.FanOutItem]).
type FanOutSummary struct {
	Total, Done, Failed, Pending int
	Items                        []FanOutItem
	Text                         string
}

// FanOut runs f's agent once per item, at most Concurrency at once, the first item alone
// until its agent answered (so the prompt prefix the items share is in the cache for the
// others), and returns the summary. Each item's state is kept in a ledger beside the
// session's transcript: a fan-out cut off by a crash or a cancel, started again with the same
// f in the same (resumed) session, runs only the items that have no result yet. It needs a
// session that keeps a transcript.
func (s *Session) FanOut(ctx context.Context, f FanOut) (FanOutSummary, error) {
	sum, err := s.s.FanOuts().Run(ctx, fanOutSpec(f))
	out := FanOutSummary{Total: sum.Total, Done: sum.Done, Failed: sum.Failed, Pending: sum.Pending}
	for _, it := range sum.Items {
		out.Items = append(out.Items, fanOutItem(it))
	}
	if sum.Total > 0 {
		out.Text = sum.Text()
	}
	return out, err
}

// FanOutItem returns item index (from 1) of fan-out f with its whole result.
func (s *Session) FanOutItem(ctx context.Context, f FanOut, index int) (FanOutItem, error) {
	it, err := s.s.FanOuts().Item(ctx, fanOutSpec(f), index)
	return fanOutItem(it), err
}

func fanOutSpec(f FanOut) session.FanOutSpec {
	return session.FanOutSpec{Description: f.Description, Prompt: f.Prompt, Items: f.Items, AgentType: f.AgentType, Fork: f.Fork, Concurrency: f.Concurrency}
}

func fanOutItem(it fanout.Item) FanOutItem {
	return FanOutItem{Index: it.Index, Input: it.Input, State: string(it.State), Result: it.Result, Error: it.Error, Attempts: it.Attempts}
}
