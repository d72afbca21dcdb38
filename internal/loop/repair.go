package loop

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// LostResultText answers a call whose result the history lost (found only when the API
// refused the request because of it): whether it ran is unknown.
const LostResultText = "keel has no result for this call; it may or may not have run — check before repeating it."

// repair handles a request the API refused as invalid (400): it repairs what the API's
// conversation rules require of the history and reports whether the request is worth
// sending again. Anything else, or a history with nothing to repair, is a permanent error.
func (a *Agent) repair(out *Outcome, err error) bool {
	se, ok := errors.AsType[*provider.StatusError](err)
	if !ok || se.StatusCode != http.StatusBadRequest {
		return false
	}
	fixed, notes := RepairHistory(out.Messages)
	if len(notes) == 0 {
		return false
	}
	out.Messages = fixed
	a.Logger.Warn("model request refused; history repaired", "err", err, "repairs", notes)
	a.emit(event.Notice{Origin: a.Origin, Level: "warn", Text: fmt.Sprintf(
		"the model API refused the conversation (%s); keel repaired it (%s) and is sending it again", se.Message, strings.Join(notes, "; "))})
	return true
}

// RepairHistory makes history satisfy the Messages API's conversation rules, as merged for a
// request (see [Merge]): the results of an assistant turn's tool calls open the next user
// turn, one for every call (a missing one is answered with [LostResultText]); a result
// answering no call of the turn before becomes text; empty and blank text blocks go. It
// changes messages in place, never their number or order, so entry ids stay aligned, and
// says what it changed; a valid history comes back unchanged with no notes.
func RepairHistory(history []message.Message) ([]message.Message, []string) {
	out := make([]message.Message, len(history))
	for i, m := range history {
		out[i] = m.Clone()
	}
	var notes []string
	notes = append(notes, dropBlankText(out)...)
	runs := roleRuns(out)
	for r, run := range runs {
		if out[run[0]].Role != message.RoleUser {
			continue
		}
		var uses []message.Block
		if r > 0 {
			for _, i := range runs[r-1] {
				uses = append(uses, out[i].ToolUses()...)
			}
		}
		notes = append(notes, pairResults(out, run, uses)...)
	}
	// A turn's calls with no user turn after them cannot be answered: they become text.
	if n := len(runs); n > 0 && out[runs[n-1][0]].Role == message.RoleAssistant {
		for _, i := range runs[n-1] {
			notes = append(notes, callsToText(&out[i])...)
		}
	}
	return out, notes
}

// roleRuns groups the indexes of consecutive messages of one role: the turns of a request.
func roleRuns(msgs []message.Message) [][]int {
	var runs [][]int
	for i, m := range msgs {
		if n := len(runs); n > 0 && msgs[runs[n-1][0]].Role == m.Role {
			runs[n-1] = append(runs[n-1], i)
			continue
		}
		runs = append(runs, []int{i})
	}
	return runs
}

// pairResults puts the results of uses first in the run's first message, answering missing
// ones, and turns results that answer nothing into text.
func pairResults(msgs []message.Message, run []int, uses []message.Block) []string {
	want := map[string]bool{}
	for _, u := range uses {
		want[u.ID] = true
	}
	if resultsInPlace(msgs, run, want) {
		return nil
	}
	var head []message.Block // the results found, in the order found
	seen := map[string]bool{}
	var notes []string
	moved := false
	pos := 0 // position in the merged turn
	for _, i := range run {
		var keep []message.Block
		for _, b := range msgs[i].Content {
			pos++
			switch {
			case b.Type != message.TypeToolResult:
				keep = append(keep, b)
			case want[b.ToolUseID] && !seen[b.ToolUseID]:
				seen[b.ToolUseID] = true
				if pos != len(head)+1 {
					moved = true
				}
				head = append(head, b)
			default:
				keep = append(keep, message.Text(fmt.Sprintf("[result of tool call %s, which is not part of the turn before]\n%s",
					b.ToolUseID, message.Message{Content: b.Content}.TextOf())))
				notes = append(notes, "a result without its call became text")
			}
		}
		msgs[i].Content = keep
	}
	for _, u := range uses {
		if !seen[u.ID] {
			head = append(head, message.ToolResult(u.ID, []message.Block{message.Text(LostResultText)}, true))
			notes = append(notes, "answered call "+u.ID+", which had no result")
		}
	}
	if moved {
		notes = append(notes, "moved tool results to the start of their turn")
	}
	first := &msgs[run[0]]
	first.Content = append(head, first.Content...)
	for _, i := range run {
		if len(msgs[i].Content) == 0 {
			msgs[i].Content = []message.Block{message.Text("(tool results moved to the start of this turn)")}
		}
	}
	return notes
}

// resultsInPlace reports whether the merged turn opens with one result for each wanted call
// and holds no other result.
func resultsInPlace(msgs []message.Message, run []int, want map[string]bool) bool {
	seen := map[string]bool{}
	leading := true
	for _, i := range run {
		for _, b := range msgs[i].Content {
			if b.Type != message.TypeToolResult {
				leading = false
				continue
			}
			if !leading || !want[b.ToolUseID] || seen[b.ToolUseID] {
				return false
			}
			seen[b.ToolUseID] = true
		}
	}
	return len(seen) == len(want)
}

// callsToText replaces the tool_use blocks of m with a text describing them.
func callsToText(m *message.Message) []string {
	var notes []string
	for j, b := range m.Content {
		if b.Type == message.TypeToolUse {
			m.Content[j] = message.Text(fmt.Sprintf("[tool call %s to %s, never answered]", b.ID, b.Name))
			notes = append(notes, "a call that could not be answered became text")
		}
	}
	return notes
}

// dropBlankText removes empty and whitespace-only text blocks; a message left empty says so.
func dropBlankText(msgs []message.Message) []string {
	n := 0
	for i := range msgs {
		before := len(msgs[i].Content)
		msgs[i].Content = slices.DeleteFunc(msgs[i].Content, func(b message.Block) bool {
			return b.Type == message.TypeText && strings.TrimSpace(b.Text) == ""
		})
		if len(msgs[i].Content) < before {
			n += before - len(msgs[i].Content)
			if len(msgs[i].Content) == 0 {
				msgs[i].Content = []message.Block{message.Text("(empty)")}
			}
		}
	}
	if n == 0 {
		return nil
	}
	return []string{fmt.Sprintf("removed %d empty text blocks", n)}
}
