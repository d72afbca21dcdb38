// Package clearing keeps a long conversation's context small: once it passes a threshold, the
// oldest tool results are replaced by one-line stubs that name the tool, its input and how to
// get the content again. The calls stay; so do the results of the newest turns, which the
// model is still using.
//
// Clearing changes the request prefix from the first cleared block on, so everything after it
// is written to the prompt cache again. A [Clearer] therefore clears in batches and only when
// it pays: at a moment the cache is written anyway (the cache TTL lapsed, the model changed, a
// compaction), or when the tokens freed repay the extra write
// within [Policy.Payback] turns. An agent's first request is not taken for a free moment: its
// history may continue a conversation whose cache is still warm. The agent's loop declares each clearing to cache-break
// detection.
package clearing

import (
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// Defaults of [Policy].
const (
	// DefaultTrigger is the context size, in tokens, below which nothing is cleared: about
	// twice the first request, so a short task is never cleared.
	DefaultTrigger = 10_000
	// DefaultKeep is how many of the newest tool-result turns stay whole. The next call
	// almost always builds on the last one or two results; an older one is a call away, and
	// its stub says which. Anthropic's context-management edit keeps three tool uses, which
	// is fewer than two turns whenever the model calls tools in parallel. Measured on 20
	// turns of Reads, keeping three turns instead costs about 6% more (scripts/bench-cost.sh).
	DefaultKeep = 2
	// DefaultPayback is the number of requests within which a clearing that is not at a free
	// moment must repay its cache write with the cache reads it saves.
	DefaultPayback = 8
	// DefaultMinFree is the fewest tokens a clearing must free: a smaller one is not worth a
	// break in the cached prefix, even at a free moment.
	DefaultMinFree = 2_000
	// DefaultMinResult is the smallest result, in bytes, worth a stub.
	DefaultMinResult = 1_024
)

// Price ratios of the Anthropic prompt cache, relative to uncached input: a five-minute write
// costs 1.25, a read 0.1. Only their ratio matters to the payback arithmetic.
const (
	writeRate = 1.25
	readRate  = 0.1
)

// Policy tunes a Clearer; zero fields take the defaults.
type Policy struct {
	Trigger   int64
	Keep      int
	Payback   int
	MinFree   int64
	MinResult int
}

func (p Policy) withDefaults() Policy {
	if p.Trigger <= 0 {
		p.Trigger = DefaultTrigger
	}
	if p.Keep <= 0 {
		p.Keep = DefaultKeep
	}
	if p.Payback <= 0 {
		p.Payback = DefaultPayback
	}
	if p.MinFree <= 0 {
		p.MinFree = DefaultMinFree
	}
	if p.MinResult <= 0 {
		p.MinResult = DefaultMinResult
	}
	return p
}

// ProviderEdit is the provider's own clearing with the policy's thresholds, for a session
// that leaves clearing to the provider: the same trigger, as many tool uses kept as the
// policy keeps tool-result turns (the API counts uses, and keeps no turn structure), and
// MinFree as the fewest tokens a clearing must free. Payback and MinResult have no
// counterpart: the provider clears on every request past the trigger, results of any size.
func (p Policy) ProviderEdit() *provider.ToolResultClearing {
	p = p.withDefaults()
	return &provider.ToolResultClearing{Trigger: p.Trigger, Keep: p.Keep, ClearAtLeast: p.MinFree}
}

// StubPrefix opens every stub, so a result cleared once is never cleared again. A stub is
// read in every later request, so its fixed words are few: the call it replaces stands just
// before it with the same name and input.
const StubPrefix = "[Cleared to save context: "

// legacyStubPrefixes opened the stubs of earlier versions, which resumed transcripts still hold.
var legacyStubPrefixes = [...]string{"[Result cleared to save context: ", "[Old tool result cleared to keep the context small: "}

// Stub is the text that replaces a cleared result of the call name(input). readOnly says
// whether calling the tool again only reads; a call with effects (a Bash command, say) would
// have them again, and the stub says so.
func Stub(name string, input json.RawMessage, readOnly bool) string {
	again := fmt.Sprintf("Call %s again to see it.", name)
	if !readOnly {
		again = fmt.Sprintf("Calling %s again reruns it, effects included: only if needed and safe.", name)
	}
	return fmt.Sprintf("%s%s %s. %s]", StubPrefix, name, shorten(inputText(input), 300), again)
}

// mainFields name the input fields that identify a call: a stub shows that value bare (Read's
// path, not {"file_path":…}) and the other fields after it, without a Bash call's
// description, which only repeats the command in words.
var mainFields = [...]string{"file_path", "notebook_path", "path", "command", "pattern", "url", "query"}

// inputText is how a stub names a call's input.
func inputText(raw json.RawMessage) string {
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return string(raw)
	}
	for _, name := range mainFields {
		var v string
		if json.Unmarshal(fields[name], &v) != nil || v == "" {
			continue
		}
		delete(fields, name)
		delete(fields, "description")
		if len(fields) == 0 {
			return v
		}
		rest, err := json.Marshal(fields)
		if err != nil {
			break
		}
		return v + " " + string(rest)
	}
	return compactJSON(raw)
}

func compactJSON(raw json.RawMessage) string {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return string(raw)
	}
	b, err := json.Marshal(v)
	if err != nil {
		return string(raw)
	}
	return string(b)
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !utf8Start(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

// Cleared is one result a clearing replaced.
type Cleared struct {
	// Message and Block locate the tool_result in the history.
	Message, Block int
	// ToolUseID names the result; Stub is the text that replaced its content, which a
	// transcript records so a resumed agent rebuilds the same context.
	ToolUseID string
	Stub      string
	Tool      string
	Input     json.RawMessage
}

// Report says what a clearing did. A zero Report (no Results) changed nothing.
type Report struct {
	Results []Cleared
	// Freed estimates the tokens the stubs saved; Rewritten the tokens from the first cleared
	// block on, which the next request writes to the cache again.
	Freed, Rewritten int64
	// From is the index, in the history, of the first message that changed.
	From int
	// Reason is why now: "cache TTL lapsed", "model changed", "compaction",
	// or "repaid within N requests".
	Reason string
}

// Clearer decides, for one agent, when to clear and what. It remembers the agent's last
// request (its time, model, cache TTL and size) to know when the cache is written anyway. It
// is safe for concurrent use.
type Clearer struct {
	policy Policy
	now    func() time.Time

	mu   sync.Mutex
	last *sent
	// reset marks a free moment announced from outside (a compaction).
	reset string
}

type sent struct {
	at    time.Time
	model string
	ttl   time.Duration
	input int64
}

// New returns a Clearer; now is the clock (nil: time.Now).
func New(p Policy, now func() time.Time) *Clearer {
	if now == nil {
		now = time.Now
	}
	return &Clearer{policy: p.withDefaults(), now: now}
}

// Sent records a request the agent sent and the total input its response reported.
func (c *Clearer) Sent(req *provider.Request, input int64) {
	ttl := 5 * time.Minute
	if hasOneHour(req) {
		ttl = time.Hour
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.last = &sent{at: c.now(), model: req.Model, ttl: ttl, input: input}
	c.reset = ""
}

// Reset says the next request starts a new cached prefix anyway (a compaction, a /clear).
func (c *Clearer) Reset(reason string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.reset = reason
}

// Mark returns the place of the newest stub in history — message and block — if it has one.
// Requests keep a cache breakpoint on it: the next clearing changes the history right after
// it, and the provider finds a cache entry only so far back from a breakpoint. It is read
// from the history, not remembered, so an agent resumed with the stubs (or a new Clearer for
// the same history) marks the same block as the one that cleared.
func (c *Clearer) Mark(history []message.Message) (msg, block int, ok bool) {
	for i := len(history) - 1; i >= 0; i-- {
		if history[i].Role != message.RoleUser {
			continue
		}
		for j := len(history[i].Content) - 1; j >= 0; j-- {
			if b := history[i].Content[j]; b.Type == message.TypeToolResult && isStub(b) {
				return i, j, true
			}
		}
	}
	return 0, 0, false
}

func hasOneHour(req *provider.Request) bool {
	for _, t := range req.Tools {
		if t.CacheControl != nil && t.CacheControl.TTL == provider.TTL1h {
			return true
		}
	}
	for _, b := range req.System {
		if b.CacheControl != nil && b.CacheControl.TTL == provider.TTL1h {
			return true
		}
	}
	return false
}

// freeMoment names why the next request to model writes the cache anyway, or is "".
func (c *Clearer) freeMoment(model string) string {
	switch {
	case c.reset != "":
		return c.reset
	case c.last == nil:
		return ""
	case c.last.model != model:
		return "model changed"
	case c.now().Sub(c.last.at) >= c.last.ttl:
		return "cache TTL lapsed"
	}
	return ""
}

// Clear returns history with its stale tool results replaced by stubs, and what it did; when
// clearing does not pay it returns history itself and a zero Report. history is never
// modified: changed messages are copies. readOnly tells whether a call only reads (nil: none
// does).
func (c *Clearer) Clear(history []message.Message, model string, readOnly func(name string, input json.RawMessage) bool) ([]message.Message, Report) {
	c.mu.Lock()
	defer c.mu.Unlock()
	p := c.policy
	// The last response's input is exact; the estimate (which marshals the history) is only
	// needed below the trigger, where the history is small, or before the first response.
	var size int64
	if c.last != nil {
		size = c.last.input
	}
	if size < p.Trigger {
		size = max(size, estimate(history))
	}
	if size < p.Trigger {
		return history, Report{}
	}
	uses := toolUses(history)
	cands := candidates(history, p)
	if len(cands) == 0 {
		return history, Report{}
	}
	out := make([]message.Message, len(history))
	copy(out, history)
	var rep Report
	copied := map[int]bool{}
	for _, at := range cands {
		b := out[at.Message].Content[at.Block]
		use := uses[b.ToolUseID]
		ro := readOnly != nil && readOnly(use.Name, use.Input)
		stub := message.Block{Type: message.TypeText, Text: Stub(use.Name, use.Input, ro)}
		before := blockTokens(b)
		if !copied[at.Message] {
			out[at.Message] = message.Message{Role: out[at.Message].Role, Content: append([]message.Block(nil), out[at.Message].Content...)}
			copied[at.Message] = true
		}
		b.Content = []message.Block{stub}
		out[at.Message].Content[at.Block] = b
		rep.Freed += before - blockTokens(b)
		rep.Results = append(rep.Results, Cleared{Message: at.Message, Block: at.Block, ToolUseID: b.ToolUseID,
			Stub: stub.Text, Tool: use.Name, Input: use.Input})
	}
	rep.From = cands[0].Message
	rep.Rewritten = estimate(out[rep.From:])
	if rep.Freed < p.MinFree {
		return history, Report{}
	}
	if why := c.freeMoment(model); why != "" {
		rep.Reason = why
	} else if float64(rep.Freed)*readRate*float64(p.Payback) >= float64(rep.Rewritten)*(writeRate-readRate) {
		rep.Reason = fmt.Sprintf("repaid within %d requests", p.Payback)
	} else {
		return history, Report{}
	}
	return out, rep
}

type location struct{ Message, Block int }

// candidates are the tool results worth a stub, oldest first: outside the newest Keep user
// messages that carry tool results, not errors, not stubs already, at least MinResult bytes.
func candidates(history []message.Message, p Policy) []location {
	kept, cut := 0, len(history)
	for i := len(history) - 1; i >= 0 && kept < p.Keep; i-- {
		if hasToolResult(history[i]) {
			kept++
			cut = i
		}
	}
	if kept < p.Keep {
		return nil
	}
	var out []location
	for i, m := range history[:cut] {
		if m.Role != message.RoleUser {
			continue
		}
		for j, b := range m.Content {
			if b.Type != message.TypeToolResult || b.IsError || isStub(b) || resultBytes(b) < p.MinResult {
				continue
			}
			out = append(out, location{i, j})
		}
	}
	return out
}

func hasToolResult(m message.Message) bool {
	if m.Role != message.RoleUser {
		return false
	}
	for _, b := range m.Content {
		if b.Type == message.TypeToolResult {
			return true
		}
	}
	return false
}

func isStub(b message.Block) bool {
	return len(b.Content) == 1 && b.Content[0].Type == message.TypeText && isStubText(b.Content[0].Text)
}

func resultBytes(b message.Block) int {
	n := 0
	for _, c := range b.Content {
		n += len(c.Text) + len(c.Data)
		if c.Source != nil {
			n += len(c.Source.Data)
		}
	}
	return n
}

// toolUses indexes the history's tool calls by id.
func toolUses(history []message.Message) map[string]message.Block {
	out := map[string]message.Block{}
	for _, m := range history {
		if m.Role != message.RoleAssistant {
			continue
		}
		for _, b := range m.Content {
			if b.Type == message.TypeToolUse {
				out[b.ID] = b
			}
		}
	}
	return out
}

// estimate approximates the tokens of msgs: a quarter of their JSON bytes.
func estimate(msgs []message.Message) int64 {
	var n int64
	for _, m := range msgs {
		for _, b := range m.Content {
			n += blockTokens(b)
		}
	}
	return n
}

func blockTokens(b message.Block) int64 {
	data, err := json.Marshal(b)
	if err != nil {
		return 0
	}
	return int64(len(data)+3) / 4
}

func isStubText(text string) bool {
	if strings.HasPrefix(text, StubPrefix) {
		return true
	}
	for _, p := range legacyStubPrefixes {
		if strings.HasPrefix(text, p) {
			return true
		}
	}
	return false
}
