// Package cachewatch explains prompt-cache misses. For each agent it keeps a hash of every
// prefix segment of the previous request — each tool, each system block, each message, the
// model — and compares the next request against it: a change anywhere but the appended tail,
// or fewer cache-read tokens than the unchanged prefix predicts, is a [Break] naming the
// segment and the reason.
//
// Use one [Watcher] per agent: call Observe with each request before sending it and Report
// with the usage of its response. Compaction and /clear call Announce first, so the fresh
// prefix they create is not reported; clearing old tool results calls Declare, which excuses
// the changed messages only. When the provider clears old tool results itself, the history
// sent does not change but the prompt the provider caches does: ProviderCleared, told what
// each response says was cleared, excuses the short cache read of a response whose provider
// cleared a different number of results than the one before.
package cachewatch

import (
	"fmt"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// Break kinds, the keys of [Totals.ByKind].
const (
	KindModelChanged     = "model_changed"
	KindThinkingChanged  = "thinking_changed"
	KindToolAdded        = "tool_added"
	KindToolRemoved      = "tool_removed"
	KindToolChanged      = "tool_changed"
	KindToolOrder        = "tool_order_changed"
	KindSectionAdded     = "section_added"
	KindSectionRemoved   = "section_removed"
	KindSectionChanged   = "section_changed"
	KindMessageChanged   = "message_changed"
	KindHistoryShortened = "history_shortened"
	KindTTLExpired       = "ttl_expired"
	KindLowCacheRead     = "low_cache_read"
)

// Break is one explained cache miss.
type Break struct {
	// Segment names where the prefix changed: "model", "tools", "system", "messages[12]",
	// "cache" (the provider read less than predicted).
	Segment string
	// Reason says what happened, e.g. `mcp__github__create_issue added`, `section "env"
	// changed`, `content changed`.
	Reason string
	// Kind groups breaks for totals; one of the Kind constants.
	Kind string
}

// String gives the one-line form used in logs: "segment: reason".
func (b Break) String() string { return b.Segment + ": " + b.Reason }

// Totals count cache behaviour over the requests a Watcher saw.
type Totals struct {
	// Hits and Misses count responses that read some, or no, tokens from the cache.
	Hits, Misses int
	Breaks       int
	ByKind       map[string]int
	// Declared counts prefix changes made on purpose and declared first ([Watcher.Declare]).
	Declared int
	// ReadTokens and WriteTokens sum the cache-read and cache-creation tokens reported.
	ReadTokens, WriteTokens int64
}

// Add sums totals, for a result line covering several agents.
func (t Totals) Add(o Totals) Totals {
	sum := Totals{Hits: t.Hits + o.Hits, Misses: t.Misses + o.Misses, Breaks: t.Breaks + o.Breaks, Declared: t.Declared + o.Declared,
		ReadTokens: t.ReadTokens + o.ReadTokens, WriteTokens: t.WriteTokens + o.WriteTokens}
	for _, m := range []map[string]int{t.ByKind, o.ByKind} {
		for k, v := range m {
			if sum.ByKind == nil {
				sum.ByKind = map[string]int{}
			}
			sum.ByKind[k] += v
		}
	}
	return sum
}

// Defaults for [Options].
const (
	// DefaultMinCacheable is the smallest prompt, in tokens, the provider caches; below it a
	// miss is expected and not a break.
	DefaultMinCacheable = 1024
	// readTolerance is the share of the predicted prefix a read may fall short by before it is
	// a break (tokenisation at the boundary may differ by a few tokens).
	readTolerance = 0.01
)

// Options tune a Watcher. The zero value works.
type Options struct {
	// Now is the clock, for TTL-expiry suspicion; default time.Now.
	Now func() time.Time
	// MinCacheable is DefaultMinCacheable when zero.
	MinCacheable int64
}

// Watcher tracks one agent's requests. It is safe for concurrent use, though one agent sends
// one request at a time.
type Watcher struct {
	now          func() time.Time
	minCacheable int64

	// mu guards the fields below.
	mu        sync.Mutex
	prev      *snapshot
	announced string
	// declared, if set, is the first message (as sent, merged) the next request changes on
	// purpose.
	declared *declaration
	// lastInput is the total input of the last reported response: all of it was written to
	// the cache (the newest message carries a breakpoint), so the next request should read it.
	lastInput int64
	// expect is the cache read predicted for the request in flight; 0 for none.
	expect int64
	gap    time.Duration
	ttl    time.Duration
	totals Totals
	// providerCleared is the number of tool results the provider said it cleared from the
	// last response's prompt; providerChanged says the response being reported cleared a
	// different number.
	providerCleared int64
	providerChanged bool
}

// New returns a Watcher for one agent.
func New(opts Options) *Watcher {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.MinCacheable <= 0 {
		opts.MinCacheable = DefaultMinCacheable
	}
	return &Watcher{now: opts.Now, minCacheable: opts.MinCacheable, totals: Totals{ByKind: map[string]int{}}}
}

// Announce says the next request starts a new prefix on purpose (compaction, /clear, a model
// switch the user asked for): its changes are not breaks.
func (w *Watcher) Announce(reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if reason == "" {
		reason = "announced"
	}
	w.announced = reason
}

type declaration struct {
	from   int
	reason string
}

// Declare says the next request changes its messages from index from on (counted as sent:
// consecutive messages of one role merged) on purpose — old tool results replaced by stubs.
// Those changes are not breaks and the cache read is not held to the old prefix; a change
// anywhere else (tools, system, model, an earlier message) still is a break.
func (w *Watcher) Declare(from int, reason string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.declared = &declaration{from: from, reason: reason}
}

// ProviderCleared says, before [Watcher.Report] gets the usage of a response, how many tool
// results the provider cleared from that request's prompt itself (Anthropic's context
// editing). The provider keeps no state: it clears every request's whole history anew, so
// while the number stays the same the prompt it caches keeps its prefix, and when the number
// changes the prompt changed from the first newly cleared result on — on purpose, like a
// declared clearing: the response's short cache read is not a break.
func (w *Watcher) ProviderCleared(toolUses int64) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.providerChanged = toolUses != w.providerCleared
	w.providerCleared = toolUses
}

// Observe compares req, about to be sent, with the previous request and returns the breaks
// it explains. sections names req.System's blocks in order (prompt.Rendered.Names); blocks
// beyond it are named "system[i]". A compaction request is ignored: its prefix is never
// reused and it does not move the baseline.
func (w *Watcher) Observe(req *provider.Request, sections []string) []Break {
	if req.Source == provider.SourceCompact {
		return nil
	}
	snap := take(req, sections)
	w.mu.Lock()
	defer w.mu.Unlock()
	now := w.now()
	snap.at = now
	prev := w.prev
	w.prev = snap
	w.expect = 0
	declared := w.declared
	w.declared = nil
	if prev == nil || w.announced != "" {
		w.announced = ""
		w.lastInput = 0
		return nil
	}
	breaks := diff(prev, snap)
	if declared != nil {
		w.totals.Declared++
		breaks = excuse(breaks, declared.from)
		w.count(breaks)
		return breaks
	}
	if len(breaks) == 0 && w.lastInput >= w.minCacheable {
		w.expect = w.lastInput
		w.gap = now.Sub(prev.at)
		w.ttl = prev.ttl
	}
	w.count(breaks)
	return breaks
}

// excuse drops the message change a declaration covers: the first changed message at or
// after from.
func excuse(breaks []Break, from int) []Break {
	var out []Break
	for _, b := range breaks {
		var i int
		if b.Kind == KindMessageChanged {
			if _, err := fmt.Sscanf(b.Segment, "messages[%d]", &i); err == nil && i >= from {
				continue
			}
		}
		out = append(out, b)
	}
	return out
}

// Report records the usage of the response to the last observed request and returns a break
// when the provider read fewer cached tokens than the unchanged prefix predicts. A gap longer
// than the TTL since the previous request is named as the likely cause.
func (w *Watcher) Report(u message.Usage) []Break {
	w.mu.Lock()
	defer w.mu.Unlock()
	if u.CacheReadInputTokens > 0 {
		w.totals.Hits++
	} else {
		w.totals.Misses++
	}
	w.totals.ReadTokens += u.CacheReadInputTokens
	w.totals.WriteTokens += u.CacheCreationInputTokens
	expect := w.expect
	w.expect = 0
	w.lastInput = u.TotalInput()
	if w.providerChanged {
		w.providerChanged = false
		if expect != 0 {
			w.totals.Declared++
			return nil
		}
	}
	if expect == 0 || float64(u.CacheReadInputTokens) >= float64(expect)*(1-readTolerance) {
		return nil
	}
	b := Break{Segment: "cache", Kind: KindLowCacheRead,
		Reason: fmt.Sprintf("read %d cached tokens, expected %d from the unchanged prefix", u.CacheReadInputTokens, expect)}
	if w.gap > w.ttl {
		b.Kind = KindTTLExpired
		b.Reason = fmt.Sprintf("TTL expiry suspected: %s since the previous request, TTL %s (read %d of %d tokens)",
			w.gap.Round(time.Second), w.ttl, u.CacheReadInputTokens, expect)
	}
	breaks := []Break{b}
	w.count(breaks)
	return breaks
}

// Totals returns the counts so far.
func (w *Watcher) Totals() Totals {
	w.mu.Lock()
	defer w.mu.Unlock()
	t := w.totals
	t.ByKind = make(map[string]int, len(w.totals.ByKind))
	for k, v := range w.totals.ByKind {
		t.ByKind[k] = v
	}
	return t
}

// count adds breaks to the totals. w.mu is held.
func (w *Watcher) count(breaks []Break) {
	for _, b := range breaks {
		w.totals.Breaks++
		w.totals.ByKind[b.Kind]++
	}
}
