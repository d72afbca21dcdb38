package control

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/toolpath"

	"github.com/keel-dev/keel/internal/permission"
)

// asker puts permission questions to the SDK as can_use_tool requests: the SDK's canUseTool
// callback answers, and may rewrite the input, add permission updates ("always allow"), or
// deny and interrupt the turn.
type asker struct{ c *controller }

var _ permission.Asker = asker{}

// dirser is a session that knows its working directories (for the suggestions offered).
type dirser interface{ WorkingDirs() []string }

// persister is a session that writes permission updates meant for a settings file there.
type persister interface {
	PersistPermissions(updates []permission.Update) error
}

// canUseTool is the SDK's SDKControlPermissionRequest.
type canUseTool struct {
	Subtype     string              `json:"subtype"`
	ToolName    string              `json:"tool_name"`
	DisplayName string              `json:"display_name"`
	Input       json.RawMessage     `json:"input"`
	Description string              `json:"description,omitempty"`
	Suggestions []permission.Update `json:"permission_suggestions"`
	BlockedPath string              `json:"blocked_path,omitempty"`
	Reason      string              `json:"decision_reason,omitempty"`
	ReasonType  string              `json:"decision_reason_type,omitempty"`
	ToolUseID   string              `json:"tool_use_id,omitempty"`
	AgentID     string              `json:"agent_id,omitempty"`
}

// permissionResult is the SDK's PermissionResult.
type permissionResult struct {
	Behavior           string          `json:"behavior"`
	UpdatedInput       json.RawMessage `json:"updatedInput"`
	UpdatedPermissions json.RawMessage `json:"updatedPermissions"`
	Message            string          `json:"message"`
	Interrupt          bool            `json:"interrupt"`
}

func (a asker) Ask(ctx context.Context, r permission.AskRequest) (permission.Answer, error) {
	c := a.c
	input := r.Request.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	var dirs []string
	if d, ok := c.sess.(dirser); ok {
		dirs = d.WorkingDirs()
	}
	req := canUseTool{
		Subtype: "can_use_tool", ToolName: r.Request.Tool, DisplayName: r.Request.Tool, Input: input,
		Suggestions: permission.Suggest(r, dirs), Reason: r.Reason, ToolUseID: r.Request.ToolUseID, AgentID: cmp.Or(r.Agent.ID, r.Agent.Name),
	}
	if req.Suggestions == nil {
		req.Suggestions = []permission.Update{}
	}
	switch {
	case r.ReasonType != "":
		req.ReasonType = r.ReasonType
	case r.Rule != nil:
		req.ReasonType = "rule"
	}
	var in struct {
		Description string `json:"description"`
	}
	if json.Unmarshal(input, &in) == nil {
		req.Description = in.Description
	}
	if len(r.Request.Paths) > 0 {
		req.BlockedPath = toolpath.Resolve(r.Request.Paths[0], r.Request.Cwd, "").Abs
	}
	c.asked(1)
	raw, err := c.request(ctx, req)
	c.asked(-1)
	if err != nil {
		if errors.Is(err, errSDKGone) {
			return permission.DenyAnswer("the controlling program is gone, so nobody could approve this call"), nil
		}
		return permission.Answer{}, err
	}
	var res permissionResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return permission.DenyAnswer(fmt.Sprintf("the controlling program's answer is not a PermissionResult (%v)", err)), nil
	}
	switch res.Behavior {
	case "allow":
		ans := permission.AllowOnce()
		if len(res.UpdatedInput) > 0 && string(res.UpdatedInput) != "null" && !bytes.Equal(compact(res.UpdatedInput), compact(input)) {
			ans.UpdatedInput = res.UpdatedInput
		}
		ups, err := permission.ParseUpdates(res.UpdatedPermissions)
		if err != nil {
			c.notice("warn", "can_use_tool: "+err.Error()+"; the call is allowed without them")
			return ans, nil
		}
		ans.Permissions = ups
		a.persist(ups)
		if i := slices.IndexFunc(ups, func(u permission.Update) bool { return u.Type == permission.UpdateSetMode }); i >= 0 {
			// The checker applies the mode as this answer returns; the SDK hears of it now.
			c.renderStatus(ups[i].Mode)
		}
		return ans, nil
	case "deny":
		msg := res.Message
		if msg == "" {
			msg = "the controlling program denied this call"
		}
		ans := permission.DenyAnswer(msg)
		ans.Interrupt = res.Interrupt
		if res.Interrupt {
			c.interrupt(loop.ErrInterrupted)
		}
		return ans, nil
	}
	return permission.DenyAnswer(fmt.Sprintf("the controlling program answered behavior %q, which is not one of allow, deny", res.Behavior)), nil
}

// persist writes the updates meant for a settings file there.
func (a asker) persist(ups []permission.Update) {
	var toFile []permission.Update
	for _, u := range ups {
		switch u.Destination {
		case permission.DestinationLocalSettings, permission.DestinationProjectSettings, permission.DestinationUserSettings:
			toFile = append(toFile, u)
		}
	}
	if len(toFile) == 0 {
		return
	}
	p, ok := a.c.sess.(persister)
	if !ok {
		return
	}
	if err := p.PersistPermissions(toFile); err != nil {
		a.c.notice("warn", "permission updates apply to this session but were not saved: "+err.Error())
	}
}

func compact(b []byte) []byte {
	var buf bytes.Buffer
	if json.Compact(&buf, b) != nil {
		return b
	}
	return buf.Bytes()
}

// callHook runs one of the SDK's hook callbacks through a hook_callback request; the answer
// is the callback's HookJSONOutput.
//
// SessionEnd comes once stdin has ended — the SDK closes it when the query is done, and that
// is what ends the session — so its answer cannot come back. The request is sent all the
// same: the SDK reads stdout until keel exits and runs the callback as the line arrives (it
// drops the answer it cannot write). SessionEnd decides nothing, so nothing waits for it.
// Claude Code instead fails the callback with "Stream closed" and it never runs.
func (c *controller) callHook(ctx context.Context, id string, input json.RawMessage, toolUseID string) (json.RawMessage, error) {
	req := map[string]any{"subtype": "hook_callback", "callback_id": id, "input": input}
	if toolUseID != "" {
		req["tool_use_id"] = toolUseID
	}
	if c.out.isClosed() && hookEvent(input) == "SessionEnd" {
		return json.RawMessage(`{}`), c.out.post(req)
	}
	return c.request(ctx, req)
}

// hookEvent is the hook_event_name of a hook input.
func hookEvent(input json.RawMessage) string {
	var in struct {
		Event string `json:"hook_event_name"`
	}
	_ = json.Unmarshal(input, &in)
	return in.Event
}

// wire fills init's seams back to the SDK.
func (c *controller) wire(init *Init) {
	if c.cfg.PromptStdio {
		init.Asker = asker{c}
	}
	init.CallHook = c.callHook
	init.Elicit = c.elicit
	init.SDKServers = c.sdkTransports(init.sdkServers)
}
