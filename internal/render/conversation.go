package render

import (
	"fmt"
	"io"
	"strings"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
)

// Conversation prints a run as a person reads it: streamed text, one line per tool call with
// its outcome, and a summary of turns, tokens and cache use at the end.
type Conversation struct {
	w       io.Writer
	summary bool
	midLine bool
	turns   int
	usage   message.Usage
	costUSD float64
	// unpriced and priced: some model used has no known price; some has one.
	unpriced, priced bool
	lastAgent        string
}

// NewConversation returns a conversation renderer; summary adds the closing summary block.
func NewConversation(w io.Writer, summary bool) *Conversation {
	return &Conversation{w: w, summary: summary}
}

func (c *Conversation) prefix(o event.Origin) string {
	if o.AgentName != "" {
		return "[" + o.AgentName + "] "
	}
	if o.AgentID != "" {
		return "[" + o.AgentID + "] "
	}
	return ""
}

func (c *Conversation) newline() {
	if c.midLine {
		fmt.Fprintln(c.w)
		c.midLine = false
	}
}

// Render prints one event.
func (c *Conversation) Render(e event.Event) error {
	o := e.From()
	switch e := e.(type) {
	case event.UserMessage:
		for _, b := range e.Message.Content {
			// System reminders are what keel told the model beside the prompt, not the user's
			// words; background reports and teammates' messages read as words, not tags.
			if text := Readable(b.Text); b.Type == message.TypeText && o.AgentID == "" && text != "" {
				c.newline()
				fmt.Fprintf(c.w, "\n> %s\n\n", oneLine(text, 200))
			}
		}
	case event.TextDelta:
		if !c.midLine || c.lastAgent != o.AgentID {
			c.newline()
			fmt.Fprint(c.w, c.prefix(o))
		}
		fmt.Fprint(c.w, e.Text)
		c.midLine = !strings.HasSuffix(e.Text, "\n")
		c.lastAgent = o.AgentID
	case event.ToolStart:
		c.newline()
		fmt.Fprintf(c.w, "%s● %s\n", c.prefix(o), oneLine(CallLabel(e.Name, e.Input, ""), 120))
	case event.ToolEnd:
		status := "ok"
		if e.IsError {
			status = "error"
		}
		text := message.Message{Content: e.Result}.TextOf()
		c.newline()
		fmt.Fprintf(c.w, "%s  ⎿ %s %s (%s): %s\n", c.prefix(o), e.Name, status, e.Duration.Round(1e6), oneLine(text, 120))
	case event.Retry:
		c.newline()
		fmt.Fprintf(c.w, "  ↻ %s\n", strings.TrimPrefix(RetryLine(e), "keel: "))
	case event.PermissionDenied:
		c.newline()
		fmt.Fprintf(c.w, "  ✗ %s\n", strings.TrimPrefix(DenialLine(e), "keel: "))
	case event.CacheBreak:
		c.newline()
		fmt.Fprintf(c.w, "  ⚠ cache break in %s: %s\n", e.Segment, e.Reason)
	case event.Notice:
		c.newline()
		fmt.Fprintf(c.w, "  [%s] %s\n", e.Level, e.Text)
	case event.TaskStarted:
		c.newline()
		kind := "task"
		if e.TaskType != "" {
			kind = strings.ReplaceAll(e.TaskType, "_", " ")
		}
		fmt.Fprintf(c.w, "  ⧗ %s %s started: %s\n", kind, e.TaskID, e.Description)
	case event.TaskNotification:
		c.newline()
		line := fmt.Sprintf("  ✓ task %s %s", e.TaskID, e.Status)
		if e.Summary != "" {
			line += ": " + oneLine(e.Summary, 120)
		}
		fmt.Fprintln(c.w, line)
	case event.TeammateState:
		c.newline()
		task := ""
		if e.Task != "" {
			task = ", task #" + e.Task
		}
		fmt.Fprintf(c.w, "  ◆ teammate %s is %s%s\n", e.Name, e.State, task)
	case event.TeamMessage:
		c.newline()
		what := e.Summary
		if what == "" {
			what = oneLine(MessageText(e.Text, nil), 120)
		}
		fmt.Fprintf(c.w, "  ✉ %s → %s: %s\n", e.Sender, e.Recipient, what)
	case event.AssistantMessage:
		if o.AgentID == "" {
			c.turns++
		}
	case event.Result:
		if o.AgentID != "" {
			return nil
		}
		c.newline()
		c.usage = c.usage.Add(e.Usage)
		c.costUSD += e.CostUSD
		for _, mu := range e.ModelUsage {
			c.unpriced = c.unpriced || !mu.PriceKnown
			c.priced = c.priced || mu.PriceKnown
		}
		if e.IsError {
			fmt.Fprintf(c.w, "\n✗ %s\n", ResultMessage(e))
		}
	}
	return nil
}

// Finish prints the summary.
func (c *Conversation) Finish() error {
	c.newline()
	if !c.summary {
		return nil
	}
	u := c.usage
	share := 0.0
	if total := u.TotalInput(); total > 0 {
		share = float64(u.CacheReadInputTokens) / float64(total) * 100
	}
	_, err := fmt.Fprintf(c.w, "\n── summary ──\nturns: %d\ntokens: %d in (%d cache read, %d cache write, %d uncached), %d out\ncache read share: %.1f%%\ncost: %s\n",
		c.turns, u.TotalInput(), u.CacheReadInputTokens, u.CacheCreationInputTokens, u.InputTokens, u.OutputTokens, share,
		cost.Format(c.costUSD, !c.unpriced, c.priced || !c.unpriced, 4))
	return err
}

func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		return string(r[:n]) + "…"
	}
	return s
}
