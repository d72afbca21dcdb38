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

// SourceCompact is the query source of compaction requests. Their prefix is never reused, so
// they carry no breakpoints and write nothing to the cache.
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
// reads the previous one's prefix and writes its own. All markers of one request share the
// TTL its source gets. A compaction request gets none.
//
// req's System, Tools and Messages slices are replaced by copies before anything is marked, so
// the caller's tool pool and history are never written to; markers already present (for
// example in messages copied from an earlier request) are removed.
func PlaceBreakpoints(req *Request, policy TTLPolicy) {
	req.System = clearSystem(req.System)
	req.Tools = clearTools(req.Tools)
	req.Messages = clearMessages(req.Messages)
	if req.Source == SourceCompact {
		return
	}
	ttl := policy.TTL(req.Source)
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
	if n := len(req.Messages); n > 0 {
		m := req.Messages[n-1].Clone()
		if i := markableBlock(m.Content); i >= 0 {
			m.Content[i].CacheControl = mark()
			req.Messages[n-1] = m
		}
	}
}

// markableBlock returns the index of the last block that may carry cache_control: thinking
// blocks and empty text blocks may not.
func markableBlock(blocks []message.Block) int {
	for i := len(blocks) - 1; i >= 0; i-- {
		switch b := blocks[i]; b.Type {
		case message.TypeThinking, message.TypeRedactedThinking:
			continue
		case message.TypeText:
			if b.Text == "" {
				continue
			}
		}
		return i
	}
	return -1
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
