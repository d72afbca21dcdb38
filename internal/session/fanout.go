package session

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/fanout"
	"github.com/keel-dev/keel/internal/subagent"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
)

// ItemPlaceholder in a fan-out's prompt is replaced by each item; a prompt without it gets
// the item appended.
const ItemPlaceholder = "{{item}}"

// FanOutSpec is one task run over many items, one agent per item.
type FanOutSpec struct {
	// Description names the fan-out; each item's agent is "<Description> (item N)".
	Description string
	// Prompt is the task; ItemPlaceholder marks where each item goes.
	Prompt string
	Items  []string
	// AgentType is the agent definition each item runs as; "" is general-purpose.
	AgentType string
	// Fork runs each item as a fork child of the main thread instead (AgentType unused):
	// the items inherit the conversation, and their requests read all of it from the cache,
	// only the item's directive being new.
	Fork bool
	// Concurrency caps the agents running at once; zero is the session's
	// (KEEL_MAX_CONCURRENT_SUBAGENTS), else fanout.DefaultConcurrency.
	Concurrency int
}

// sharedLen is how many bytes every item's prompt begins with (the prompt up to the first
// placeholder): they go before the item's cache breakpoint.
func (f FanOutSpec) sharedLen() int {
	if i := strings.Index(f.Prompt, ItemPlaceholder); i >= 0 {
		return i
	}
	return len(f.Prompt) + len("\n\nItem: ")
}

// itemPrompt puts item into prompt. The shared part comes first, so the siblings' requests
// share the longest prefix with the first item's.
func (f FanOutSpec) itemPrompt(item string) string {
	if strings.Contains(f.Prompt, ItemPlaceholder) {
		return strings.ReplaceAll(f.Prompt, ItemPlaceholder, item)
	}
	return f.Prompt + "\n\nItem: " + item
}

// ledgerKey names a fan-out by what it runs, so the same fan-out started again (after a
// crash, on resume) finds its ledger and runs only the items not finished.
func (f FanOutSpec) ledgerKey() string {
	h := sha256.New()
	kind := f.AgentType
	if f.Fork {
		kind = "fork"
	}
	for _, s := range append([]string{kind, f.Prompt}, f.Items...) {
		h.Write([]byte(s))
		h.Write([]byte{0})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// FanOuts runs the session's fan-outs: one task over many items, each item's state in a
// ledger beside the transcript, so an interrupted fan-out resumes where it stopped.
type FanOuts struct{ s *Session }

// FanOuts returns the session's fan-outs.
func (s *Session) FanOuts() *FanOuts { return &FanOuts{s: s} }

// Run runs spec's agent once per item through the session's agent runner (each item an
// agent built by subagent.Runner, transcript beside the session's), at most Concurrency at
// once, and returns the summary; every item's whole result is in the ledger
// (<session dir>/fanouts/<key>, read with fanout.Get). The first item runs alone until its
// agent answered, so the prompt prefix the items share is in the cache for the others. A
// fan-out cut off (a crash, a cancel) and started again with the same spec in the same
// session runs only the items without a result.
func (f *FanOuts) Run(ctx context.Context, spec FanOutSpec) (fanout.Summary, error) {
	s := f.s
	path := s.TranscriptPath()
	if path == "" {
		return fanout.Summary{}, errors.New("fan-out: the session keeps no transcript, so no ledger to resume from")
	}
	if strings.TrimSpace(spec.Prompt) == "" {
		return fanout.Summary{}, errors.New("fan-out: the prompt is empty")
	}
	dir := filepath.Join(transcript.SessionDir(path), "fanouts", spec.ledgerKey())
	b, err := fscoord.Open(dir, fscoord.Options{})
	if err != nil {
		return fanout.Summary{}, fmt.Errorf("fan-out ledger: %w", err)
	}
	defer b.Close()
	if err := fanout.Plan(ctx, b.Board(), spec.Items); err != nil {
		return fanout.Summary{}, err
	}
	if spec.Concurrency <= 0 {
		spec.Concurrency = s.opts.Run.MaxConcurrentSubagents
	}
	desc := spec.Description
	if desc == "" {
		desc = "fan-out"
	}
	run := func(ctx context.Context, it fanout.Item, warm func()) (string, error) {
		what := fmt.Sprintf("%s (item %d)", desc, it.Index)
		if spec.Fork {
			return s.agents.runner.RunForkChild(ctx, what, spec.itemPrompt(it.Input))
		}
		return s.agents.runner.RunDetached(ctx, subagent.DetachedAgent{AgentType: spec.AgentType, Description: what, Prompt: spec.itemPrompt(it.Input), Item: true, ItemShared: spec.sharedLen()})
	}
	return fanout.Run(ctx, fanout.Config{Board: b.Board(), Owner: "fanout-" + spec.ledgerKey(), Concurrency: spec.Concurrency, Logger: s.logger}, run)
}

// Item returns item index (from 1) of the fan-out spec describes, with its whole
// result: what the summary's line for it points to.
func (f *FanOuts) Item(ctx context.Context, spec FanOutSpec, index int) (fanout.Item, error) {
	it, err := f.itemByKey(ctx, spec.ledgerKey(), index)
	if err != nil {
		return it, fmt.Errorf("fan-out: %w", err)
	}
	return it, nil
}

// agent is the Agent tool's call with items: each item an agent of the type the call
// names, or a fork child of the main thread when it names none and forks are on (their
// requests then read the whole conversation from the cache). The result is the summary; an
// item's whole result is the fan-out's ledger's.
func (f *FanOuts) agent(ctx context.Context, in subagent.Input) tool.Result {
	s := f.s
	spec := FanOutSpec{Description: in.Description, Prompt: in.Prompt, Items: in.Items, AgentType: in.SubagentType,
		Fork: in.SubagentType == "" && (s.opts.ForkSubagents || s.settings.ForkSubagents.V)}
	sum, err := f.Run(ctx, spec)
	if err != nil && sum.Total == 0 {
		return tool.Errorf("fan-out: %v", err)
	}
	text := f.text(ctx, spec, sum)
	if err != nil {
		text += "\n(the ledger could not be fully written: " + err.Error() + ")"
	}
	return tool.Result{Content: tool.Text(text).Content, Output: sum}
}

// fullResultsLimit is how much of the items' whole results an Agent call with items returns;
// past it the summary's excerpts stand in.
const fullResultsLimit = 30000

// text is what the model reads of a fan-out: every item's whole result when they fit
// in fullResultsLimit, else the summary's one line per item.
func (f *FanOuts) text(ctx context.Context, spec FanOutSpec, sum fanout.Summary) string {
	s := f.s
	path := s.TranscriptPath()
	b, err := fscoord.Open(filepath.Join(transcript.SessionDir(path), "fanouts", spec.ledgerKey()), fscoord.Options{})
	if err != nil {
		return sum.Text()
	}
	defer b.Close()
	items, err := fanout.Items(ctx, b.Board())
	if err != nil {
		return sum.Text()
	}
	var out strings.Builder
	fmt.Fprintf(&out, "Fan-out of %d items: %d done, %d failed", sum.Total, sum.Done, sum.Failed)
	if sum.Pending > 0 {
		fmt.Fprintf(&out, ", %d not finished (the same call again resumes it)", sum.Pending)
	}
	out.WriteString(". Each item's result:\n")
	for _, it := range items {
		switch it.State {
		case fanout.StateDone:
			fmt.Fprintf(&out, "\n## %d. %s\n%s\n", it.Index, it.Input, strings.TrimSpace(it.Result))
		case fanout.StateFailed:
			fmt.Fprintf(&out, "\n## %d. %s\nfailed: %s\n", it.Index, it.Input, it.Error)
		default:
			fmt.Fprintf(&out, "\n## %d. %s\n(%s)\n", it.Index, it.Input, it.State)
		}
		if out.Len() > fullResultsLimit {
			return sum.Text() + fmt.Sprintf("\n(the items' whole results are longer than this answer may be: these are their first lines. "+
				"TaskOutput with task_id %q returns item N's whole result)", "fanout-"+spec.ledgerKey()+"/N")
		}
	}
	return strings.TrimRight(out.String(), "\n")
}

// itemByKey reads item index of the fan-out whose ledger key is key.
func (f *FanOuts) itemByKey(ctx context.Context, key string, index int) (fanout.Item, error) {
	s := f.s
	path := s.TranscriptPath()
	if path == "" {
		return fanout.Item{}, fmt.Errorf("the session keeps no transcript")
	}
	dir := filepath.Join(transcript.SessionDir(path), "fanouts", key)
	if _, err := os.Stat(dir); err != nil {
		return fanout.Item{}, fmt.Errorf("no fan-out with that id in this session")
	}
	b, err := fscoord.Open(dir, fscoord.Options{})
	if err != nil {
		return fanout.Item{}, fmt.Errorf("no fan-out with that id in this session (%w)", err)
	}
	defer b.Close()
	return fanout.Get(ctx, b.Board(), index)
}
