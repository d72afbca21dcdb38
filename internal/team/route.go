package team

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/tool"
)

// agentIDRE is a subagent id ("a" and 16 hex digits): SendMessage to one continues that
// subagent, which is the subagent runner's business.
var agentIDRE = lazy.Regexp{Expr: `^a[0-9a-f]{16}$`}

// Route delivers a SendMessage call from agent agentID. It reports false when to is not a
// team recipient (a subagent id), leaving the call to the subagent runner.
func (t *Team) Route(ctx context.Context, agentID, to string, raw json.RawMessage, summary string) (tool.Result, bool) {
	to = strings.TrimSpace(to)
	if agentIDRE.Get().MatchString(to) {
		if name := t.memberByID(ctx, to); name != "" {
			to = name
		} else if _, err := t.record(ctx, to); err != nil {
			return tool.Result{}, false
		}
	}
	from, err := t.sender(agentID)
	if err != nil {
		return tool.Errorf("%v", err), true
	}
	msg := coord.Message{From: from, Summary: summary}
	var s Structured
	if trimmed := bytes.TrimSpace(raw); len(trimmed) > 0 && trimmed[0] == '{' {
		if err := json.Unmarshal(trimmed, &s); err != nil {
			return tool.Errorf("message is neither a string nor a structured message: %v", err), true
		}
		if err := s.check(); err != nil {
			return tool.Errorf("%v", err), true
		}
		msg.Type, msg.Data = s.Type, trimmed
	} else if err := json.Unmarshal(raw, &msg.Text); err != nil {
		return tool.Errorf("message must be a string or a structured message object"), true
	}
	if msg.Type == "" && strings.TrimSpace(msg.Text) == "" {
		return tool.Errorf("the message is empty"), true
	}
	if msg.Type == TypePermissionResponse {
		if from != LeadAlias {
			return tool.Errorf("only the team lead answers permission requests"), true
		}
		if err := t.answerPermission(ctx, to, s); err != nil {
			return tool.Errorf("%v", err), true
		}
		return tool.Text(fmt.Sprintf("Permission answer sent to %s.", to)), true
	}
	recipients, res, ok := t.recipients(ctx, from, to)
	if !ok {
		return res, true
	}
	if m := t.memberByAgent(agentID); m != nil && msg.Type == TypeShutdownResponse {
		m.mu.Lock()
		m.shutdown = nil
		m.stopping = *s.Approve
		m.clearStopping = !*s.Approve
		m.mu.Unlock()
		if err := m.writeRecord(ctx); err != nil {
			t.logger.Warn("record shutdown answer", "member", m.name, "err", err)
		}
	}
	if msg.Type == TypeShutdownRequest {
		for _, r := range recipients {
			t.markStopping(ctx, r)
		}
	}
	var sent, failed []string
	for _, r := range recipients {
		cp := msg
		cp.ID, cp.To = newID(), r
		if err := t.be.Mailbox().Send(ctx, cp); err != nil {
			if len(recipients) == 1 {
				return tool.Errorf("%v", sendError(err)), true
			}
			failed = append(failed, fmt.Sprintf("%s: %v", r, sendError(err)))
			continue
		}
		sent = append(sent, r)
		t.emit(event.TeamMessage{Origin: t.originOf(agentID), ID: cp.ID, Sender: from, Recipient: r, Type: cp.Type, Summary: summary, Text: cp.Text})
		t.wakeLocal(r)
	}
	text := fmt.Sprintf("Message sent to %s.", strings.Join(sent, ", "))
	if to == Broadcast {
		text = fmt.Sprintf("Message broadcast to %d members: %s.", len(sent), strings.Join(sent, ", "))
	}
	if len(failed) > 0 {
		text += " Not delivered to: " + strings.Join(failed, "; ")
	}
	if msg.Type == TypeShutdownResponse && *s.Approve {
		text += " You will stop when this turn ends."
	}
	return tool.Result{Content: tool.Text(text).Content, Output: map[string]any{"success": len(sent) > 0, "recipients": sent}}, true
}

func sendError(err error) error {
	switch {
	case errors.Is(err, coord.ErrTooLarge):
		return fmt.Errorf("message not sent: %w", err)
	case errors.Is(err, coord.ErrInboxFull):
		return fmt.Errorf("message not sent: %w", err)
	}
	return err
}

// recipients resolves to into member names, or an error result naming who exists.
func (t *Team) recipients(ctx context.Context, from, to string) ([]string, tool.Result, bool) {
	if to == "" {
		return nil, tool.Errorf("to is required: a member's name, %q or %q", LeadAlias, Broadcast), false
	}
	recs, err := t.records(ctx)
	if err != nil && len(recs) == 0 {
		return nil, tool.Errorf("read the team's members: %v", err), false
	}
	if to == Broadcast {
		var out []string
		for _, r := range recs {
			if r.Name != from && t.liveness(r) != StateStopped {
				out = append(out, r.Name)
			}
		}
		if len(out) == 0 {
			return nil, tool.Errorf("there is nobody to broadcast to: the team has no other running members (members: %s)", t.knownNames(ctx)), false
		}
		return out, tool.Result{}, true
	}
	name := t.canonical(to)
	if name == from {
		return nil, tool.Errorf("you cannot send a message to yourself"), false
	}
	for _, r := range recs {
		if r.Name != name && r.Alias != to {
			continue
		}
		if state := t.liveness(r); state == StateStopped {
			return nil, tool.Errorf("%s has stopped and reads no messages; spawn it again with the Agent tool and name %q to bring it back with its history. Members: %s", r.Name, r.Name, t.knownNames(ctx)), false
		}
		if r.Stopping {
			return nil, tool.Errorf("%s is shutting down (the lead asked it to stop) and reads no new messages; the message was not sent. Once it has stopped, spawn it again with the Agent tool and name %q to bring it back with its history. Members: %s", r.Name, r.Name, t.knownNames(ctx)), false
		}
		return []string{r.Name}, tool.Result{}, true
	}
	return nil, tool.Errorf("there is no member named %q in team %s. Members: %s", to, t.cfg.Name, t.knownNames(ctx)), false
}

// memberByID returns the name of the member whose agent id is id.
func (t *Team) memberByID(ctx context.Context, id string) string {
	recs, _ := t.records(ctx)
	for _, r := range recs {
		if r.ID == id {
			return r.Name
		}
	}
	return ""
}

func (t *Team) originOf(agentID string) event.Origin {
	if m := t.memberByAgent(agentID); m != nil {
		return m.origin()
	}
	return event.Origin{}
}

// wakeLocal nudges a member of this process that waits for work; fsnotify would too, this
// is only quicker.
func (t *Team) wakeLocal(name string) {
	t.mu.Lock()
	m := t.members[name]
	t.mu.Unlock()
	if m != nil {
		m.signal()
	}
}

// consumeLead handles messages to the lead that its model need not read.
func (t *Team) consumeLead(ctx context.Context, m coord.Message) bool {
	switch m.Type {
	case TypePermissionRequest:
		// Answered meanwhile (by a timeout, or the lead's UI): nothing left to decide.
		_, err := t.be.Requests().Resolution(ctx, requestOfMessage(m.ID))
		return err == nil
	case TypeShutdownResponse:
		return t.shuttingDown()
	case TypeIdle:
		return t.shuttingDown()
	}
	return false
}

// UserName is the sender of messages a person sends from the shell (`keel team send`).
const UserName = "user"

// SendFromUser delivers a message from the person at the terminal to a member, or "*".
func (t *Team) SendFromUser(ctx context.Context, to, text string) (string, error) {
	if strings.TrimSpace(text) == "" {
		return "", errors.New("the message is empty")
	}
	recipients, res, ok := t.recipients(ctx, UserName, to)
	if !ok {
		return "", errors.New(res.ResultText())
	}
	id := newID()
	for i, r := range recipients {
		msg := coord.Message{ID: id, From: UserName, To: r, Text: text, Summary: "from the user"}
		if i > 0 {
			msg.ID = newID()
		}
		if err := t.be.Mailbox().Send(ctx, msg); err != nil {
			return "", sendError(err)
		}
		t.emit(event.TeamMessage{ID: msg.ID, Sender: UserName, Recipient: r, Summary: msg.Summary, Text: text})
		t.wakeLocal(r)
	}
	return id, nil
}

// markStopping records that a shutdown is being asked of name, before the request is sent:
// from then on sends to it are refused instead of accepted and never read.
func (t *Team) markStopping(ctx context.Context, name string) {
	if _, err := t.record(ctx, name); err != nil {
		return
	}
	if err := t.updateRecord(ctx, name, func(r *Record) { r.Stopping = true }); err != nil {
		t.logger.Warn("record stopping member", "member", name, "err", err)
	}
}
