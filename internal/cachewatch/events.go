package cachewatch

import (
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// Events adapts a Watcher to the query loop (loop.CacheWatcher): the breaks it explains come
// back as events, which the loop stamps with its agent's origin.
type Events struct{ *Watcher }

// BeforeSend observes a request about to be sent.
func (e Events) BeforeSend(req *provider.Request, sections []string) []event.CacheBreak {
	return toEvents(e.Observe(req, sections))
}

// AfterResponse reports the usage of its response.
func (e Events) AfterResponse(u message.Usage) []event.CacheBreak {
	return toEvents(e.Report(u))
}

func toEvents(bs []Break) []event.CacheBreak {
	var out []event.CacheBreak
	for _, b := range bs {
		out = append(out, event.CacheBreak{Segment: b.Segment, Reason: b.Reason})
	}
	return out
}
