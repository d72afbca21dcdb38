package tui

import (
	"context"
	"fmt"
	"strings"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/render"
)

// Historian is a session that already holds a conversation when the UI starts or switches to
// it (a resumed one): the UI shows it as it would have shown it live.
type Historian interface {
	History() []keel.Event
}

// historyPage is how many transcript items a resumed conversation renders at first, and how
// many more each pgup at its top brings in: rendering Markdown is the costly part, so a long
// transcript costs the same to open as a short one.
const historyPage = 60

// summaryPrefix opens the message that stands for a conversation compacted before it.
const summaryPrefix = "This session continues from an earlier conversation that was summarised"

// loadHistory shows the backend's conversation, if it has one, in place of the transcript.
func (m *Model) loadHistory() {
	h, ok := m.b.(Historian)
	if !ok {
		return
	}
	m.items, m.tools, m.prompts, m.first = nil, map[string]*item{}, nil, 0
	m.replay(h.History())
}

// replay turns a stored conversation into transcript items: prompts, replies, tool calls with
// their results (collapsed, as after a live run), and what keel added to the conversation in
// words. Only the newest historyPage items are rendered until the user pages up.
func (m *Model) replay(evs []keel.Event) {
	calls := map[string]*item{}
	for _, ev := range evs {
		switch e := ev.(type) {
		case keel.UserMessage:
			for _, b := range e.Message.Content {
				if b.Type != message.TypeToolResult {
					continue
				}
				if it := calls[b.ToolUseID]; it != nil {
					it.done, it.isErr, it.result = true, b.IsError, resultText(b.Content)
				}
			}
			m.replayUser(e)
		case keel.AssistantMessage:
			for _, b := range e.Message.Content {
				switch b.Type {
				case keel.BlockText:
					if strings.TrimSpace(b.Text) != "" {
						m.items = append(m.items, &item{kind: kindAssistant, text: b.Text})
					}
				case message.TypeThinking:
					m.items = append(m.items, &item{kind: kindThinking, text: b.Thinking})
				case message.TypeToolUse:
					it := &item{kind: kindTool, id: b.ID, name: b.Name, input: b.Input, replayed: true}
					calls[b.ID] = it
					m.items = append(m.items, it)
				}
			}
		}
	}
	for _, it := range calls {
		if !it.done {
			it.done, it.isErr, it.result = true, true, "no result was recorded"
		}
	}
	m.first = max(len(m.items)-historyPage, 0)
	m.scroll = 0
}

// replayUser adds a stored user message: a prompt (a rewind point), or what keel or a
// teammate added, in words.
func (m *Model) replayUser(e keel.UserMessage) {
	text, ok := userPrompt(e)
	switch {
	case text == "":
	case strings.HasPrefix(text, summaryPrefix):
		m.items = append(m.items, &item{kind: kindNotice, text: "The conversation before this point was summarised to save context."})
	case !ok:
		m.items = append(m.items, &item{kind: kindNotice, text: render.Readable(text)})
	default:
		m.items = append(m.items, &item{kind: kindUser, text: render.Readable(text), uuid: e.UUID})
		m.prompts = append(m.prompts, rewindPoint{uuid: e.UUID, text: text})
	}
}

// userPrompt is the text of a user message without keel's reminders, and whether the user
// wrote it: tool results, background reports and teammates' messages are not prompts.
func userPrompt(e keel.UserMessage) (string, bool) {
	text := promptText(e)
	if text == "" || hasToolResult(e) {
		return text, false
	}
	t := strings.TrimSpace(text)
	if strings.HasPrefix(t, "<task-notification>") || strings.HasPrefix(t, "<teammate-message") {
		return text, false
	}
	return text, true
}

func resultText(blocks []keel.Block) string {
	var parts []string
	for _, b := range blocks {
		switch b.Type {
		case keel.BlockText:
			parts = append(parts, b.Text)
		case keel.BlockImage:
			parts = append(parts, "[image]")
		}
	}
	return strings.TrimRight(strings.Join(parts, "\n"), "\n")
}

// refreshContext measures the context a conversation shown without a live request fills,
// so a resumed one does not read 0%.
func (m *Model) refreshContext() {
	cr, ok := m.b.(ContextReporter)
	if !ok || len(m.items) == 0 {
		return
	}
	cu := cr.ContextUsage(context.Background())
	m.ctxUsed = cu.Used()
	if cu.Window > 0 {
		m.window = cu.Window
	}
}

// earlierLine is the line above a transcript whose start is not rendered yet.
func (m *Model) earlierLine() string {
	if m.quitting {
		return m.st.dim.Render(fmt.Sprintf("↑ %d earlier messages (keel --resume %s shows them)", m.first, m.b.ID()))
	}
	return m.st.dim.Render(fmt.Sprintf("↑ %d earlier messages · pgup to show them", m.first))
}

// pageEarlier renders historyPage more of the items above the shown ones.
func (m *Model) pageEarlier() {
	m.first = max(m.first-historyPage, 0)
}
