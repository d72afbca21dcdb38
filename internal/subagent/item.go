package subagent

import (
	"context"
	"slices"

	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// itemAfterListings reorders a fan-out item's first message. A child's first message is its
// preloaded skills and its prompt; the listings (agent types, skills, deferred tools) would
// follow as the observers announce them at the first turn, after the prompt, so siblings
// that differ only in their item would share nothing past the system prompt. For an item,
// the listings are announced here, before the prompt, and a cache breakpoint is placed on
// their last block: the first sibling writes everything up to the item, the others read it.
// Other agents' first messages are left as they were, byte for byte.
func itemAfterListings(ctx context.Context, c *child, observers []loop.Observer, prepare func(*provider.Request)) func(*provider.Request) {
	if len(c.history) != 1 || len(c.history[0].Content) == 0 {
		return prepare
	}
	var listed []message.Block
	for _, o := range observers {
		listed = append(listed, o.Observe(ctx)...)
	}
	if len(listed) == 0 {
		return prepare
	}
	first := c.history[0].Content
	n := len(first)
	content := append(slices.Clone(first[:n-1]), listed...)
	prompt, k := first[n-1], c.spec.itemShared
	if prompt.Type == message.TypeText && k > 0 && k < len(prompt.Text) {
		// The prompt's part every item shares goes before the breakpoint as well.
		content = append(content, message.Text(prompt.Text[:k]))
		prompt = message.Text(prompt.Text[k:])
	}
	content = append(content, prompt)
	c.history[0] = message.User(content...)
	if len(c.initial) == 1 {
		c.initial[0] = c.history[0]
	}
	return withSharedPrefix(prepare, provider.BlockRef{Message: 0, Block: len(content) - 2})
}
