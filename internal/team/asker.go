package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/permission"
)

// Two-level permissions. A teammate's ask goes to the lead's UI when the
// teammate runs in the lead's process and the lead has one (level 1: the terminal prompt or
// the SDK's can_use_tool, labelled with the teammate's name and colour). Otherwise — a
// headless lead, or a teammate in another process — it becomes a request record in the
// coordination store (level 2), which the lead's process answers: through its UI when it has
// one, else by putting the question to the lead's model as a message, answered with a
// permission_response. "Always allow" answers carry their rules back; a denial, a lead that
// is gone or a timeout end the ask as a denial, never a hang.

// permissionQuestion is a permission request's Data.
type permissionQuestion struct {
	Request     permission.Request `json:"request"`
	Reason      string             `json:"reason"`
	Suggestions []string           `json:"suggestions,omitempty"`
	Color       string             `json:"color,omitempty"`
	AgentID     string             `json:"agentId,omitempty"`
}

// permissionAnswer is a permission resolution's Data.
type permissionAnswer struct {
	Behavior string   `json:"behavior"` // allow or deny
	Reason   string   `json:"reason,omitempty"`
	Updates  []string `json:"updates,omitempty"`
}

type memberAsker struct {
	t *Team
	m *Member
}

func (a memberAsker) Ask(ctx context.Context, req permission.AskRequest) (permission.Answer, error) {
	if a.t.cfg.Lead && a.t.cfg.LeadAsker != nil {
		return a.t.cfg.LeadAsker.Ask(ctx, req)
	}
	return a.t.askLead(ctx, a.m, req)
}

// askLead puts req to the lead as a request record and waits for its resolution.
func (t *Team) askLead(ctx context.Context, m *Member, req permission.AskRequest) (permission.Answer, error) {
	q := permissionQuestion{Request: req.Request, Reason: req.Reason, Color: m.color, AgentID: m.id}
	for _, s := range req.Suggestions {
		q.Suggestions = append(q.Suggestions, s.String())
	}
	data, err := json.Marshal(q)
	if err != nil {
		return permission.Answer{}, fmt.Errorf("encode permission request: %w", err)
	}
	id := newID()
	r := coord.Request{ID: id, From: m.name, To: LeadAlias, Type: TypePermissionRequest, Data: data}
	watch, err := t.be.Requests().Watch(ctx)
	if err != nil {
		return permission.Answer{}, err
	}
	if err := t.be.Requests().Submit(ctx, r); err != nil {
		return permission.Answer{}, err
	}
	deadline := time.NewTimer(t.cfg.PermissionTimeout)
	defer deadline.Stop()
	check := time.NewTicker(t.heartbeatEvery())
	defer check.Stop()
	for {
		res, err := t.be.Requests().Resolution(ctx, id)
		switch {
		case err == nil:
			return decodeAnswer(res)
		case !errors.Is(err, coord.ErrPending):
			return permission.Answer{}, err
		}
		select {
		case <-ctx.Done():
			return permission.Answer{}, context.Cause(ctx)
		case <-deadline.C:
			return t.giveUp(ctx, id, fmt.Sprintf("the team lead did not answer within %v", t.cfg.PermissionTimeout))
		case <-check.C:
			if lead, err := t.record(ctx, LeadAlias); err != nil || t.liveness(lead) == StateDead || t.liveness(lead) == StateStopped {
				return t.giveUp(ctx, id, "the team lead is not running, so nobody can approve it")
			}
		case <-watch:
		}
	}
}

// giveUp resolves a request as denied (unless an answer beat us to it).
func (t *Team) giveUp(ctx context.Context, id, reason string) (permission.Answer, error) {
	data, _ := json.Marshal(permissionAnswer{Behavior: "deny", Reason: reason})
	err := t.be.Requests().Resolve(context.WithoutCancel(ctx), id, coord.Resolution{By: "timeout", Data: data})
	if errors.Is(err, coord.ErrResolved) {
		if res, err := t.be.Requests().Resolution(ctx, id); err == nil {
			return decodeAnswer(res)
		}
	}
	return permission.DenyAnswer(reason), nil
}

func decodeAnswer(res coord.Resolution) (permission.Answer, error) {
	var a permissionAnswer
	if err := json.Unmarshal(res.Data, &a); err != nil {
		return permission.Answer{}, fmt.Errorf("read permission answer: %w", err)
	}
	if a.Behavior != "allow" {
		reason := a.Reason
		if reason == "" {
			reason = "the team lead denied this call"
		}
		return permission.DenyAnswer(reason), nil
	}
	rules, _ := permission.ParseRules(a.Updates, permission.Allow, permission.Source{Name: "team-lead"})
	return permission.Answer{Behavior: permission.Allow, Updates: rules}, nil
}

// serveRequests answers the lead's permission requests for as long as the team is open.
func (t *Team) serveRequests() {
	watch, err := t.be.Requests().Watch(t.ctx)
	if err != nil {
		t.logger.Warn("watch permission requests", "err", err)
		return
	}
	var (
		mu       sync.Mutex
		handling = map[string]bool{}
		wg       sync.WaitGroup
	)
	defer wg.Wait()
	for {
		pending, err := t.be.Requests().Pending(t.ctx, LeadAlias)
		if err != nil && t.ctx.Err() == nil {
			t.logger.Warn("list permission requests", "err", err)
		}
		for _, r := range pending {
			mu.Lock()
			busy := handling[r.ID]
			handling[r.ID] = true
			mu.Unlock()
			if busy {
				continue
			}
			wg.Go(func() {
				t.serve(r)
				mu.Lock()
				delete(handling, r.ID)
				mu.Unlock()
			})
		}
		select {
		case <-t.ctx.Done():
			return
		case <-watch:
		}
	}
}

// serve answers one request: through the lead's UI, or by asking the lead's model.
func (t *Team) serve(r coord.Request) {
	var q permissionQuestion
	if err := json.Unmarshal(r.Data, &q); err != nil {
		t.resolve(t.ctx, r, permissionAnswer{Behavior: "deny", Reason: "the request could not be read: " + err.Error()})
		return
	}
	if t.cfg.LeadAsker == nil {
		// The lead's model answers: the question joins its inbox (once: the id dedups).
		text := fmt.Sprintf("%s asks for permission to %s: %s.\nAnswer with SendMessage to %q and the message {\"type\": \"permission_response\", \"request_id\": %q, \"approve\": true or false, \"reason\": \"…\"}; add \"always\": true to allow %s for the rest of its session.",
			r.From, describeRequest(q.Request), q.Reason, r.From, r.ID, suggestionsText(q.Suggestions))
		msg := coord.Message{ID: askID(r.ID), From: r.From, To: LeadAlias, Type: TypePermissionRequest, Text: text, Summary: "permission request"}
		if err := t.be.Mailbox().Send(t.ctx, msg); err != nil {
			t.logger.Warn("forward permission request", "from", r.From, "err", err)
		}
		return
	}
	suggestions, _ := permission.ParseRules(q.Suggestions, permission.Allow, permission.Source{Name: "session"})
	ans, err := t.cfg.LeadAsker.Ask(t.ctx, permission.AskRequest{Request: q.Request, Reason: q.Reason, Suggestions: suggestions,
		Agent: permission.AgentInfo{Name: r.From, Color: q.Color, ID: q.AgentID}})
	a := permissionAnswer{Behavior: "deny", Reason: ans.Reason}
	switch {
	case err != nil:
		a.Reason = "asking the team lead: " + err.Error()
	case ans.Behavior == permission.Allow:
		a.Behavior = "allow"
		for _, u := range ans.Updates {
			a.Updates = append(a.Updates, u.String())
		}
	}
	t.resolve(t.ctx, r, a)
}

func (t *Team) resolve(ctx context.Context, r coord.Request, a permissionAnswer) error {
	data, _ := json.Marshal(a)
	if err := t.be.Requests().Resolve(context.WithoutCancel(ctx), r.ID, coord.Resolution{By: LeadAlias, Data: data}); err != nil && !errors.Is(err, coord.ErrResolved) {
		t.logger.Warn("resolve permission request", "id", r.ID, "err", err)
		return err
	}
	approve := a.Behavior == "allow"
	body, _ := jsonOf(Structured{Type: TypePermissionResponse, RequestID: r.ID, Approve: &approve, Reason: a.Reason})
	_ = t.be.Mailbox().Send(context.WithoutCancel(ctx), coord.Message{ID: "ans-" + r.ID, From: LeadAlias, To: r.From, Type: TypePermissionResponse, Data: body})
	return nil
}

// answerPermission is the lead's model answering a request of teammate to with a
// permission_response; without a request_id it answers that teammate's oldest open request.
func (t *Team) answerPermission(ctx context.Context, to string, s Structured) error {
	pending, _ := t.be.Requests().Pending(ctx, LeadAlias)
	for _, r := range pending {
		if r.ID != s.RequestID && (s.RequestID != "" || r.From != t.canonical(to)) {
			continue
		}
		a := permissionAnswer{Behavior: "deny", Reason: s.Reason}
		if *s.Approve {
			a.Behavior = "allow"
			if s.Always {
				var q permissionQuestion
				_ = json.Unmarshal(r.Data, &q)
				a.Updates = q.Suggestions
			}
		} else if a.Reason == "" {
			a.Reason = "the team lead denied this call"
		}
		t.resolve(ctx, r, a)
		_ = t.be.Mailbox().Ack(ctx, LeadAlias, askID(r.ID), remindID(r.ID))
		return nil
	}
	if s.RequestID == "" {
		return fmt.Errorf("%s has no open permission request", to)
	}
	if _, err := t.be.Requests().Resolution(ctx, s.RequestID); err == nil {
		return fmt.Errorf("permission request %s was already answered", s.RequestID)
	}
	return fmt.Errorf("there is no open permission request %s", s.RequestID)
}

// chaseUnanswered follows up the permission requests the lead's model was shown and ended
// its turn without answering — the asking teammate is blocked until someone does. The first
// time the question is put again, plainly marked as still open; a second turn without an
// answer denies it, with a notice, so a headless team never waits out the permission
// timeout on a question nobody is going to answer. It reports whether it wrote the lead.
func (t *Team) chaseUnanswered(ctx context.Context) bool {
	if t.cfg.LeadAsker != nil || t.leadInbox == nil {
		return false
	}
	pending, _ := t.be.Requests().Pending(ctx, LeadAlias)
	wrote := false
	for _, r := range pending {
		switch {
		case t.leadInbox.Delivered(remindID(r.ID)):
			reason := "the team lead ended its turn twice without answering this request"
			t.resolve(ctx, r, permissionAnswer{Behavior: "deny", Reason: reason})
			t.logger.Warn("permission request unanswered", "from", r.From, "id", r.ID)
			t.emit(event.Notice{Level: "warn", Text: fmt.Sprintf("team %s: denied %s's permission request %s: %s", t.cfg.Name, r.From, r.ID, reason)})
		case t.leadInbox.Delivered(askID(r.ID)) && !t.leadInbox.Delivered(remindID(r.ID)):
			var q permissionQuestion
			_ = json.Unmarshal(r.Data, &q)
			text := fmt.Sprintf("%s is still blocked waiting for your answer to permission request %s (to %s). Answer it now with SendMessage to %q and {\"type\": \"permission_response\", \"request_id\": %q, \"approve\": true or false}; if you end your turn again without answering, it is denied.",
				r.From, r.ID, describeRequest(q.Request), r.From, r.ID)
			msg := coord.Message{ID: remindID(r.ID), From: RuntimeName, To: LeadAlias, Type: TypePermissionRequest, Text: text, Summary: "permission request still open"}
			if err := t.be.Mailbox().Send(ctx, msg); err != nil {
				t.logger.Warn("remind the lead of a permission request", "id", r.ID, "err", err)
				continue
			}
			wrote = true
		}
	}
	return wrote
}

// The lead's inbox messages that carry a permission request: the question, and the reminder.
func askID(request string) string    { return "ask-" + request }
func remindID(request string) string { return "remind-" + request }

// requestOfMessage is the permission request an ask or reminder message carries.
func requestOfMessage(id string) string {
	if r, ok := strings.CutPrefix(id, "remind-"); ok {
		return r
	}
	return strings.TrimPrefix(id, "ask-")
}

// failPending denies every open request to the lead (the lead is going away).
func (t *Team) failPending(ctx context.Context, reason string) {
	pending, _ := t.be.Requests().Pending(ctx, LeadAlias)
	for _, r := range pending {
		t.resolve(ctx, r, permissionAnswer{Behavior: "deny", Reason: reason})
	}
}

func describeRequest(r permission.Request) string {
	switch {
	case r.Command != "":
		return fmt.Sprintf("run %s `%s`", r.Tool, r.Command)
	case len(r.Paths) > 0:
		return fmt.Sprintf("use %s on %s", r.Tool, strings.Join(r.Paths, ", "))
	case r.URL != "":
		return fmt.Sprintf("use %s for %s", r.Tool, r.URL)
	}
	return "use " + r.Tool
}

func suggestionsText(s []string) string {
	if len(s) == 0 {
		return "this kind of call"
	}
	return strings.Join(s, " and ")
}

func jsonOf(v any) (json.RawMessage, error) { return json.Marshal(v) }
