package provider

import (
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/message"
)

// Cache TTLs as the API spells them. TTL5m is also the API's default.
const (
	TTL5m = "5m"
	TTL1h = "1h"
)

// MaxBreakpoints is the API's limit of cache_control markers per request.
const MaxBreakpoints = 4

// SourceCompact is the query source of compaction requests. Their own prefix is never
// reused, so they write nothing to the cache (see [Request.SkipCacheWrite]).
const SourceCompact = "compact"

// knownSources are the query-source kinds keel sends; a TTL pattern naming anything else is
// probably a typo and draws a warning (it is kept, in case a newer keel knows the source).
var knownSources = []string{"main", "sdk", "agent", "fork", "teammate", "compact", "hook", "title", "summary"}

// TTLPolicy decides the cache TTL of a request from its query source: sources matching one of
// its patterns get one hour, the rest five minutes. Build it once per session with
// [NewTTLPolicy] and keep it: a settings reload mid-session must not mix TTLs, because
// switching a prefix's TTL rewrites it in the cache.
type TTLPolicy struct {
	patterns []string
}

// NewTTLPolicy reads an allow-list of query sources that get the one-hour TTL. A pattern is a
// source ("main"), or a prefix ending in "*" ("agent:*"). Invalid patterns are dropped and
// unknown ones kept, each with a warning naming it; the caller adds the settings file.
func NewTTLPolicy(patterns []string) (TTLPolicy, []string) {
	var p TTLPolicy
	var warnings []string
	for _, pat := range patterns {
		if msg := validatePattern(pat); msg != "" {
			warnings = append(warnings, fmt.Sprintf("cache TTL pattern %q %s; ignored", pat, msg))
			continue
		}
		if !knownPattern(pat) {
			warnings = append(warnings, fmt.Sprintf("cache TTL pattern %q names no known query source (%s)",
				pat, strings.Join(knownSources, ", ")))
		}
		p.patterns = append(p.patterns, pat)
	}
	return p, warnings
}

// knownPattern reports whether a valid pattern can match a source keel sends.
func knownPattern(pat string) bool {
	prefix, wild := strings.CutSuffix(pat, "*")
	kind, _, hasColon := strings.Cut(prefix, ":")
	for _, k := range knownSources {
		if k == kind || wild && !hasColon && strings.HasPrefix(k, kind) {
			return true
		}
	}
	return false
}

func validatePattern(pat string) string {
	if pat == "" {
		return "is empty"
	}
	if i := strings.IndexByte(pat, '*'); i >= 0 && i != len(pat)-1 {
		return "has a * that is not at the end"
	}
	for _, r := range strings.TrimSuffix(pat, "*") {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune(":_-.", r)) {
			return fmt.Sprintf("has the character %q", r)
		}
	}
	return ""
}

// TTL returns the cache TTL for a query source.
func (p TTLPolicy) TTL(source string) string {
	for _, pat := range p.patterns {
		if prefix, ok := strings.CutSuffix(pat, "*"); ok {
			if strings.HasPrefix(source, prefix) {
				return TTL1h
			}
		} else if source == pat {
			return TTL1h
		}
	}
	return TTL5m
}

// PlaceBreakpoints sets req's cache_control markers: on the first system block (the static
// prompt), on the last tool, and on the last block of the newest message, so each request
// reads the previous one's prefix and writes its own; and on req.SharedPrefix, the end of a
// prefix several requests share (fork children), so the first writes it and the rest read it.
// That is at most [MaxBreakpoints]. A request with SkipCacheWrite (a compaction) is marked
// only where the conversation it repeats already wrote entries — the tools, the static
// prompt, SharedPrefix — never on its own newest message: it reads and writes nothing. All
// markers of one request share the TTL of its CacheSource, else of its Source.
//
// req's System, Tools and Messages slices are replaced by copies before anything is marked, so
// the caller's tool pool and history are never written to; markers already present (for
// example in messages copied from an earlier request) are removed.
func PlaceBreakpoints(req *Request, policy TTLPolicy) {
	req.System = clearSystem(req.System)
	req.Tools = clearTools(req.Tools)
	req.Messages = clearMessages(req.Messages)
	source := req.Source
	if req.CacheSource != "" {
		source = req.CacheSource
	}
	ttl := policy.TTL(source)
	mark := func() *message.CacheControl {
		cc := &message.CacheControl{Type: "ephemeral"}
		if ttl != TTL5m {
			cc.TTL = ttl // five minutes is the default: leave it out, as an unmarked request would
		}
		return cc
	}
	if len(req.System) > 0 && req.System[0].Text != "" {
		req.System[0].CacheControl = mark()
	}
	if n := len(req.Tools); n > 0 {
		req.Tools[n-1].CacheControl = mark()
	}
	markBlock := func(ref BlockRef) {
		if ref.Message < 0 || ref.Message >= len(req.Messages) {
			return
		}
		m := req.Messages[ref.Message]
		if ref.Block < 0 || ref.Block >= len(m.Content) || !markable(m.Content[ref.Block]) {
			return
		}
		if m.Content[ref.Block].CacheControl != nil {
			return
		}
		m = m.Clone()
		m.Content[ref.Block].CacheControl = mark()
		req.Messages[ref.Message] = m
	}
	if req.SharedPrefix != nil {
		markBlock(*req.SharedPrefix)
	}
	if req.SkipCacheWrite {
		return
	}
	if n := len(req.Messages); n > 0 {
		if i := LastMarkable(req.Messages[n-1].Content); i >= 0 {
			markBlock(BlockRef{Message: n - 1, Block: i})
		}
	}
}

// LastMarkable returns the index of the last block that may carry cache_control (thinking
// blocks and empty text blocks may not), or -1.
func LastMarkable(blocks []message.Block) int {
	for i := len(blocks) - 1; i >= 0; i-- {
		if markable(blocks[i]) {
			return i
		}
	}
	return -1
}

func markable(b message.Block) bool {
	switch b.Type {
	case message.TypeThinking, message.TypeRedactedThinking:
		return false
	case message.TypeText:
		return b.Text != ""
	}
	return true
}

func clearSystem(in []SystemBlock) []SystemBlock {
	if in == nil {
		return nil
	}
	out := make([]SystemBlock, len(in))
	for i, b := range in {
		b.CacheControl = nil
		out[i] = b
	}
	return out
}

func clearTools(in []ToolSpec) []ToolSpec {
	if in == nil {
		return nil
	}
	out := make([]ToolSpec, len(in))
	for i, t := range in {
		t.CacheControl = nil
		out[i] = t
	}
	return out
}

// clearMessages copies the message list; messages holding a marker are cloned and cleared,
// the rest share their blocks with the caller (they are not written to).
func clearMessages(in []message.Message) []message.Message {
	if in == nil {
		return nil
	}
	out := make([]message.Message, len(in))
	for i, m := range in {
		if message.HasCacheControl(m.Content) {
			m = m.Clone()
			message.StripCacheControl(m.Content)
		}
		out[i] = m
	}
	return out
}
