package subagent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/compact"

	"github.com/keel-dev/keel/internal/agentdef"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/transcript"
)

// SendMessageName is the tool that continues a subagent (Claude Code's name).
const SendMessageName = "SendMessage"

type sendInput struct {
	To string `json:"to"`
	// Message is a string, or with teams a structured message object.
	Message json.RawMessage `json:"message"`
	Summary string          `json:"summary,omitempty"`
}

const sendSchema = `{"type":"object","properties":{` +
	`"to":{"type":"string","description":"The agentId to send to"},` +
	`"message":{"type":"string","description":"The message: a follow-up task or a correction"},` +
	`"summary":{"type":"string","description":"A 5-10 word recap for the UI"}},` +
	`"required":["to","message"],"additionalProperties":false}`

// sendTeamSchema is SendMessage's schema with teams: members by name, broadcast, and the
// structured messages of Claude Code's protocol.
const sendTeamSchema = `{"type":"object","properties":{` +
	`"to":{"type":"string","description":"Recipient: a teammate's name, \"team-lead\", \"*\" for every member (use sparingly), or a subagent's agentId"},` +
	`"message":{"description":"The message: plain text, or a structured protocol message",` +
	`"anyOf":[{"type":"string"},` +
	`{"type":"object","properties":{"type":{"const":"shutdown_request"},"reason":{"type":"string"}},"required":["type"]},` +
	`{"type":"object","properties":{"type":{"const":"shutdown_response"},"request_id":{"type":"string"},"approve":{"type":"boolean"},"reason":{"type":"string"}},"required":["type","request_id","approve"]},` +
	`{"type":"object","properties":{"type":{"const":"plan_approval_request"},"plan":{"type":"string"}},"required":["type","plan"]},` +
	`{"type":"object","properties":{"type":{"const":"plan_approval_response"},"request_id":{"type":"string"},"approve":{"type":"boolean"},"feedback":{"type":"string"}},"required":["type","approve"]},` +
	`{"type":"object","properties":{"type":{"const":"permission_response"},"request_id":{"type":"string","description":"optional when the teammate has one open request"},"approve":{"type":"boolean"},"reason":{"type":"string"},"always":{"type":"boolean"}},"required":["type","approve"]}]},` +
	`"summary":{"type":"string","description":"A 5-10 word preview shown in the UI"}},` +
	`"required":["to","message"],"additionalProperties":false}`

// SendMessageTool returns the SendMessage tool: a message to an agent id continues that
// agent — at its next request boundary when it is running, else from its transcript (also
// one written by an earlier process) — and returns its answer.
func (r *Runner) SendMessageTool() tool.Tool {
	desc := "Send a message to a subagent by its agentId (from an Agent result) to continue it with its context intact. " +
		"A finished agent resumes from its transcript and its reply is returned; a running one reads the message at its next step."
	schema := sendSchema
	if r.cfg.Teams {
		desc = "Send a message to a member of your team by name (\"team-lead\" reaches the lead, \"*\" everyone), or continue a subagent by its agentId. " +
			"Team members read messages at their next step; your plain text output is not seen by anyone else, so anything they must know goes through here. " +
			"Structured messages answer the team's protocol: shutdown_request/shutdown_response, plan_approval_request/plan_approval_response, and the lead's permission_response."
		schema = sendTeamSchema
	}
	return tool.New(tool.Spec[sendInput]{
		Name:              SendMessageName,
		Description:       desc,
		Schema:            json.RawMessage(schema),
		IsConcurrencySafe: tool.Always[sendInput],
		// Needed only to continue an agent; every Agent result names it.
		Deferred: true,
		Run: func(ctx context.Context, env *tool.Env, in sendInput) tool.Result {
			if tm := r.team(); tm != nil {
				if res, ok := tm.Route(ctx, env.AgentID, in.To, in.Message, in.Summary); ok {
					return res
				}
			}
			var text string
			if err := json.Unmarshal(in.Message, &text); err != nil {
				return tool.Errorf("message must be a string to continue subagent %s", in.To)
			}
			return r.Send(ctx, env.AgentID, env.ToolUseID, in.To, text)
		},
	})
}

// Send delivers message to the agent to on behalf of the agent from ("" is the main thread).
func (r *Runner) Send(ctx context.Context, from, toolUseID, to, msg string) tool.Result {
	r.mu.Lock()
	live := r.agents[to]
	if live != nil && to != "" {
		live.inbox.push(from, msg)
	}
	r.mu.Unlock()
	if live != nil && to != "" {
		return tool.Text(fmt.Sprintf("Message delivered to running agent %s; it reads it at its next step and reports when it finishes.", to))
	}
	if r.runningRemote(to) {
		return tool.Errorf("agent %s is running in the keel supervisor; its report arrives by itself when it finishes, and then SendMessage can continue it", to)
	}
	caller := r.node(from)
	if caller == nil {
		return tool.Errorf("agent %s cannot send messages here", from)
	}
	s, err := r.resumeSpec(ctx, caller, to)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	s.toolUseID = toolUseID
	s.foreground = true
	s.in = Input{Description: "continue " + to, Prompt: msg}
	return r.launch(ctx, s)
}

// Resume continues the agent id with message from the main thread and waits for its answer;
// `keel agents resume` and library callers use it.
func (r *Runner) Resume(ctx context.Context, id, msg string) (string, error) {
	res := r.Send(ctx, "", "", id, msg)
	var parts []string
	for _, b := range res.Content {
		parts = append(parts, b.Text)
	}
	text := strings.Join(parts, "\n\n")
	if res.IsError {
		return "", errors.New(text)
	}
	return text, nil
}

// resumeSpec finds a finished agent: in memory when it ran in this process, else from its
// transcript and meta file. Its transcript is reopened for appending.
func (r *Runner) resumeSpec(ctx context.Context, caller *node, id string) (spawn, error) {
	if err := transcript.CheckID(id); err != nil || id == "" {
		return spawn{}, fmt.Errorf("no agent with id %q", id)
	}
	s := spawn{parent: caller, id: id}
	r.mu.Lock()
	rec := r.done[id]
	r.mu.Unlock()
	if rec != nil {
		s.def, s.fork, s.history = rec.def, rec.fork, rec.history
	}
	if r.cfg.SessionPath != "" {
		path, metaPath := transcript.AgentPaths(r.cfg.SessionPath, id)
		if _, err := os.Stat(path); err == nil {
			w, st, err := transcript.Resume(ctx, path, transcript.Options{SessionID: r.cfg.SessionID, Version: r.cfg.Version})
			if err != nil {
				return spawn{}, fmt.Errorf("continue agent %s: %w", id, err)
			}
			s.writer = w
			if rec == nil {
				meta, err := transcript.ReadAgentMeta(metaPath)
				if err != nil {
					_ = w.Close()
					return spawn{}, fmt.Errorf("continue agent %s: %w", id, err)
				}
				s.history = answerCrashed(ctx, w, compact.History(st), st.Started)
				if meta.AgentType == ForkType {
					s.def, s.fork = forkDefinition(), true
				} else if def, ok := r.cfg.Defs.Get(meta.AgentType); ok {
					s.def = def
				} else {
					_ = w.Close()
					return spawn{}, fmt.Errorf("continue agent %s: its type %q is no longer defined", id, meta.AgentType)
				}
			}
		}
	}
	if s.def == nil {
		return spawn{}, fmt.Errorf("no agent with id %s in this session", id)
	}
	if len(s.history) == 0 {
		s.history = []message.Message{}
	}
	return s, nil
}

var _ skill.ForkRunner = (*Runner)(nil)

// RunFork runs a fork-context skill as a subagent of agentType (general-purpose when empty)
// started by the main thread, and returns its final text. allowedTools, when non-nil,
// replaces the agent's tool list; model "" inherits.
func (r *Runner) RunFork(ctx context.Context, agentType, prompt string, allowedTools []string, model string) (string, error) {
	main := r.node("")
	if main == nil {
		return "", errors.New("run skill: the session has not started")
	}
	if agentType == "" {
		agentType = "general-purpose"
	}
	def, ok := r.cfg.Defs.Get(agentType)
	if !ok {
		return "", fmt.Errorf("run skill: agent type %q not found; available agents: %s", agentType, r.available())
	}
	if allowedTools != nil {
		cp := *def
		cp.Tools = allowedTools
		def = &cp
	}
	res := r.launch(ctx, spawn{parent: main, def: def, in: Input{Description: "skill", Prompt: prompt, Model: model}, plain: true, foreground: true})
	if res.IsError {
		return "", errors.New(res.ResultText())
	}
	return res.ResultText(), nil
}

// Definitions returns the agent set the runner starts agents from.
func (r *Runner) Definitions() *agentdef.Set { return r.cfg.Defs }

// answerCrashed answers the calls of a history that ends in calls without results (the
// agent's process was killed while they ran), recording the answers in its transcript.
func answerCrashed(ctx context.Context, w *transcript.Writer, msgs []message.Message, started map[string]transcript.ToolStart) []message.Message {
	n := len(msgs)
	if n == 0 || msgs[n-1].Role != message.RoleAssistant || len(msgs[n-1].ToolUses()) == 0 {
		return msgs
	}
	m := loop.CrashAnswers(msgs[n-1].ToolUses(), func(id string) (time.Time, bool) {
		ts, ok := started[id]
		return ts.Started, ok
	})
	if _, err := w.Append(ctx, transcript.Entry{Type: transcript.TypeUser, Message: &m}); err == nil {
		_ = w.Sync(ctx) // a failed sync leaves the writer broken; the next append reports it
	}
	return append(msgs, m)
}
