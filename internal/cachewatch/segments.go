package cachewatch

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

type hash [sha256.Size]byte

type named struct {
	name string
	hash hash
}

// snapshot is the hashed prefix of one request. Cache markers are left out of every hash:
// they move forward each turn without changing what is cached.
type snapshot struct {
	model    string
	thinking string
	tools    []named
	system   []named
	messages []hash
	ttl      time.Duration
	at       time.Time
}

func sum(v any) hash {
	data, err := json.Marshal(v)
	if err != nil {
		// Request fields are plain data; a failure here is a programming error, and hashing
		// the error text still makes the segment compare unequal to a good one.
		data = []byte(err.Error())
	}
	return sha256.Sum256(data)
}

// toolHashed is what of a tool reaches the cache key.
type toolHashed struct {
	Name         string          `json:"name"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	DeferLoading bool            `json:"defer_loading"`
}

func take(req *provider.Request, sections []string) *snapshot {
	s := &snapshot{model: req.Model, ttl: 5 * time.Minute}
	if req.Thinking != nil {
		s.thinking = "budget " + strconv.FormatInt(req.Thinking.BudgetTokens, 10)
	}
	for _, t := range req.Tools {
		if t.DeferLoading {
			continue // not part of the cached prefix: the API loads it where the history references it
		}
		s.tools = append(s.tools, named{t.Name, sum(toolHashed{t.Name, t.Description, t.InputSchema, t.DeferLoading})})
		if t.CacheControl != nil && t.CacheControl.TTL == provider.TTL1h {
			s.ttl = time.Hour
		}
	}
	for i, b := range req.System {
		name := fmt.Sprintf("system[%d]", i)
		if i < len(sections) && sections[i] != "" {
			name = sections[i]
		}
		s.system = append(s.system, named{name, sha256.Sum256([]byte(b.Text))})
		if b.CacheControl != nil && b.CacheControl.TTL == provider.TTL1h {
			s.ttl = time.Hour
		}
	}
	for _, m := range req.Messages {
		if message.HasCacheControl(m.Content) {
			m = m.Clone()
			message.StripCacheControl(m.Content)
		}
		s.messages = append(s.messages, sum(m))
	}
	return s
}

// diff lists what changed from prev to next in the part that should be a shared prefix, in
// prefix order: model, tools, system, then the first changed message.
func diff(prev, next *snapshot) []Break {
	var out []Break
	if prev.model != next.model {
		out = append(out, Break{"model", fmt.Sprintf("changed from %q to %q", prev.model, next.model), KindModelChanged})
	}
	if prev.thinking != next.thinking {
		out = append(out, Break{"thinking", fmt.Sprintf("changed from %q to %q", prev.thinking, next.thinking), KindThinkingChanged})
	}
	out = append(out, diffNamed("tools", "", prev.tools, next.tools, KindToolAdded, KindToolRemoved, KindToolChanged, KindToolOrder)...)
	out = append(out, diffNamed("system", "section ", prev.system, next.system, KindSectionAdded, KindSectionRemoved, KindSectionChanged, KindSectionChanged)...)
	for i := range min(len(prev.messages), len(next.messages)) {
		if prev.messages[i] != next.messages[i] {
			return append(out, Break{fmt.Sprintf("messages[%d]", i), "content changed", KindMessageChanged})
		}
	}
	if len(next.messages) < len(prev.messages) {
		out = append(out, Break{"messages", fmt.Sprintf("history shortened from %d to %d messages",
			len(prev.messages), len(next.messages)), KindHistoryShortened})
	}
	return out
}

// diffNamed compares two named lists: additions, removals, changed content, and a changed
// order of the items both share.
func diffNamed(segment, prefix string, prev, next []named, added, removed, changed, order string) []Break {
	quote := func(n string) string {
		if prefix != "" {
			return prefix + strconv.Quote(n)
		}
		return n
	}
	index := func(list []named) map[string]hash {
		m := make(map[string]hash, len(list))
		for _, x := range list {
			m[x.name] = x.hash
		}
		return m
	}
	before, after := index(prev), index(next)
	var out []Break
	var commonNext []string
	for _, x := range next {
		h, ok := before[x.name]
		switch {
		case !ok:
			out = append(out, Break{segment, quote(x.name) + " added", added})
		case h != x.hash:
			out = append(out, Break{segment, quote(x.name) + " changed", changed})
			commonNext = append(commonNext, x.name)
		default:
			commonNext = append(commonNext, x.name)
		}
	}
	var commonPrev []string
	for _, x := range prev {
		if _, ok := after[x.name]; !ok {
			out = append(out, Break{segment, quote(x.name) + " removed", removed})
			continue
		}
		commonPrev = append(commonPrev, x.name)
	}
	if !slices.Equal(commonPrev, commonNext) {
		out = append(out, Break{segment, "order changed", order})
	}
	return out
}
