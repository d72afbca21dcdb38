package permission

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
)

// Asker decides calls the rules and the mode leave open. The terminal UI, a
// parent agent (bubble mode), a team leader, an MCP permission-prompt tool
// and the stream-json control protocol each implement it. Ask may be called
// from several goroutines at once.
type Asker interface {
	Ask(ctx context.Context, req AskRequest) (Answer, error)
}

// AskerFunc adapts a function to [Asker].
type AskerFunc func(ctx context.Context, req AskRequest) (Answer, error)

// Ask calls f.
func (f AskerFunc) Ask(ctx context.Context, req AskRequest) (Answer, error) { return f(ctx, req) }

// AgentInfo names the agent a request comes from, so a prompt in the
// parent's or leader's UI can show which worker is asking.
type AgentInfo struct {
	// Name is empty for the main thread.
	Name  string
	Color string
	// ID is the agent's id (a subagent's or teammate's), empty for the main thread.
	ID string
}

// AskRequest is one question for an [Asker].
type AskRequest struct {
	Request Request
	// Reason says why the call needs approval.
	Reason string
	// Rule is the ask rule that matched, if one did.
	Rule *Rule
	// ReasonType is the [Decision.ReasonType] of the ask ("mode", "hook" or empty).
	ReasonType string
	// Suggestions are allow rules that would have let this call through,
	// for an "always allow" choice.
	Suggestions []Rule
	Agent       AgentInfo
}

// Answer is an [Asker]'s decision: allow once, allow always (with the rules
// to add), or deny with a reason that goes back to the model.
type Answer struct {
	Behavior Behavior
	// Updates are rules the checker adds for the rest of the session when
	// the answer is "always". Persisting them to a settings file is the
	// asker's business.
	Updates []Rule
	Reason  string
	// Permissions are further changes an allow asks for (the Agent SDK's
	// updatedPermissions: rules of any behavior, a mode, directories); the
	// checker applies them like Updates.
	Permissions []Update
	// UpdatedInput, when set on an allow, replaces the call's input.
	UpdatedInput json.RawMessage
	// Interrupt, on a deny, asks to stop the whole turn, not only this call.
	Interrupt bool
}

// AllowOnce allows this call only.
func AllowOnce() Answer { return Answer{Behavior: Allow} }

// AllowAlways allows this call and adds the given rules.
func AllowAlways(updates ...Rule) Answer { return Answer{Behavior: Allow, Updates: updates} }

// DenyAnswer denies the call; reason reaches the model.
func DenyAnswer(reason string) Answer { return Answer{Behavior: Deny, Reason: reason} }

// DenyAlways denies the call and adds the given rules as deny rules for the rest of the
// session (an editor's "reject always"), so calls they match are refused without asking.
func DenyAlways(reason string, rules ...Rule) Answer {
	updates := make([]Rule, len(rules))
	for i, r := range rules {
		r.Behavior = Deny
		updates[i] = r
	}
	return Answer{Behavior: Deny, Reason: reason, Updates: updates}
}

// Headless is the asker for runs with nobody to ask: it denies, naming the
// rule that would allow the call next time.
type Headless struct{}

// Ask denies with [HeadlessMessage].
func (Headless) Ask(_ context.Context, req AskRequest) (Answer, error) {
	return DenyAnswer(HeadlessMessage(req)), nil
}

// HeadlessMessage explains a denial in a headless run and names the rule to
// add, e.g. add "Bash(go test:*)" to permissions.allow.
func HeadlessMessage(req AskRequest) string {
	var b strings.Builder
	fmt.Fprintf(&b, "permission to use %s was not granted: %s, and there is no one to ask in a headless run", describe(req.Request), req.Reason)
	switch {
	case req.Rule != nil:
		fmt.Fprintf(&b, "; the ask rule %q from %s applies", req.Rule.String(), req.Rule.Source)
	case len(req.Suggestions) > 0:
		names := make([]string, len(req.Suggestions))
		for i, r := range req.Suggestions {
			names[i] = fmt.Sprintf("%q", r.String())
		}
		fmt.Fprintf(&b, "; to allow it, add %s to permissions.allow in settings (or --allowedTools)", strings.Join(names, " and "))
	}
	return b.String()
}

func describe(r Request) string {
	switch {
	case r.Command != "":
		return fmt.Sprintf("%s with command %q", r.Tool, r.Command)
	case len(r.Paths) > 0:
		return fmt.Sprintf("%s on %s", r.Tool, strings.Join(r.Paths, ", "))
	case r.URL != "":
		return fmt.Sprintf("%s for %s", r.Tool, r.URL)
	}
	return r.Tool
}

// Denials counts denied calls, so a loop can notice a model stuck asking
// for what it will not get. Each agent has its own; a child starts fresh.
// Safe for concurrent use.
type Denials struct {
	// mu guards consecutive and total.
	mu          sync.Mutex
	consecutive int
	total       int
}

// DenialCounts is a snapshot of [Denials].
type DenialCounts struct {
	// Consecutive counts denials since the last allowed call.
	Consecutive int
	Total       int
}

// Record notes a decision: a deny counts, an allow resets the run.
func (d *Denials) Record(b Behavior) {
	d.mu.Lock()
	defer d.mu.Unlock()
	switch b {
	case Deny:
		d.consecutive++
		d.total++
	case Allow:
		d.consecutive = 0
	}
}

// Counts returns the current counts.
func (d *Denials) Counts() DenialCounts {
	d.mu.Lock()
	defer d.mu.Unlock()
	return DenialCounts{Consecutive: d.consecutive, Total: d.total}
}
