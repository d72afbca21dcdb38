package subagent

import (
	"strings"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// ForkType is the agent type of fork children, in transcripts and events.
const ForkType = "fork"

// ForkTag wraps a fork child's directive. Its presence in an agent's history marks the agent
// as a fork, which may not fork again.
const ForkTag = "keel-fork-directive"

// ForkPlaceholder answers every tool_use of the copied turn. It is the same text for every
// child, so the children of one turn share their whole prefix up to the directive.
const ForkPlaceholder = "Forked: this call continues in a separate agent."

// forkDefinition is the definition a fork runs under: the parent's everything, 200 turns,
// permissions bubbling to the parent.
func forkDefinition() *agentdef.Definition {
	return &agentdef.Definition{Name: ForkType, Description: "a fork of the calling agent", Model: agentdef.ModelInherit,
		MaxTurns: DefaultMaxTurns, PermissionMode: agentdef.ModeBubble, Source: agentdef.SourceBuiltin}
}

// forkBriefing tells a fork child what it is. It is the same text for every child of every
// turn, so it belongs to the prefix the children share; only the directive after it differs.
const forkBriefing = "You are a fork of the agent whose conversation is above: you share its context, but not its future. " +
	"Do only the task in the " + ForkTag + " tag below, do not start other forks, and end with a concise report of what you found or did; " +
	"your final message is returned to the agent that forked you."

// directive wraps a fork child's task in the boilerplate tag.
func directive(prompt string) string {
	return "<" + ForkTag + ">\n" + prompt + "\n</" + ForkTag + ">"
}

// forked reports whether the agent is a fork child: it was started as one or its history
// carries the boilerplate tag (a fork continued in a new process).
func (n *node) forked() bool {
	if n.fork {
		return true
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.lastReq != nil && carriesTag(n.lastReq.Messages)
}

func carriesTag(msgs []message.Message) bool {
	for _, m := range msgs {
		if m.Role != message.RoleUser {
			continue
		}
		for _, b := range m.Content {
			if b.Type == message.TypeText && strings.Contains(b.Text, "<"+ForkTag+">") {
				return true
			}
		}
	}
	return false
}

// forkHistory builds a fork child's conversation from the parent's last request and the
// assistant turn it produced: the request's messages (incomplete tool calls dropped), the
// whole turn — text, thinking and every tool_use — and one user message with the same
// placeholder result for each tool_use, the briefing, then the directive. Everything before
// the directive is the same for every child of the turn; shared names its last block (the
// briefing), where a cache breakpoint lets the first child write it and the others read it.
// Cache markers are stripped: the child's own request places them.
func forkHistory(last *provider.Request, reply message.Message, prompt string) (msgs []message.Message, shared provider.BlockRef) {
	msgs = make([]message.Message, 0, len(last.Messages)+2)
	for _, m := range last.Messages {
		msgs = append(msgs, unmarked(m))
	}
	msgs = dropIncomplete(msgs)
	msgs = append(msgs, unmarked(reply))
	var blocks []message.Block
	for _, u := range reply.ToolUses() {
		blocks = append(blocks, message.ToolResult(u.ID, []message.Block{message.Text(ForkPlaceholder)}, false))
	}
	blocks = append(blocks, message.Text(forkBriefing))
	shared = provider.BlockRef{Message: len(msgs), Block: len(blocks) - 1}
	blocks = append(blocks, message.Text(directive(prompt)))
	return append(msgs, message.User(blocks...)), shared
}

func unmarked(m message.Message) message.Message {
	c := m.Clone()
	for i := range c.Content {
		c.Content[i].CacheControl = nil
		for j := range c.Content[i].Content {
			c.Content[i].Content[j].CacheControl = nil
		}
	}
	return c
}

// dropIncomplete removes tool_use blocks that no later message answers, and messages left
// empty by that; the API rejects a tool_use without its result.
func dropIncomplete(msgs []message.Message) []message.Message {
	answered := map[string]bool{}
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == message.TypeToolResult {
				answered[b.ToolUseID] = true
			}
		}
	}
	out := make([]message.Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == message.RoleAssistant {
			kept := m.Content[:0:0]
			for _, b := range m.Content {
				if b.Type != message.TypeToolUse || answered[b.ID] {
					kept = append(kept, b)
				}
			}
			if len(kept) == 0 {
				continue
			}
			m.Content = kept
		}
		out = append(out, m)
	}
	return out
}
