package team

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/tool"
)

// Tool names, as in Claude Code.
const (
	TaskCreateName = "TaskCreate"
	TaskGetName    = "TaskGet"
	TaskListName   = "TaskList"
	TaskUpdateName = "TaskUpdate"
	ListAgentsName = "ListAgents"
)

// deferred marks a team tool as rarely needed: the session defers its schema
// ([tool.Deferrable]).
type deferred struct{ tool.Tool }

func (deferred) DeferLoading() bool { return true }

// Tools returns the team's tools in their fixed order: TaskCreate, TaskGet, TaskList,
// TaskUpdate, ListAgents. One value serves every agent; the caller is found by env.AgentID.
func (t *Team) Tools() []tool.Tool {
	return []tool.Tool{deferred{t.taskCreateTool()}, deferred{t.taskGetTool()}, deferred{t.taskListTool()},
		deferred{t.taskUpdateTool()}, deferred{t.listAgentsTool()}}
}

type createInput struct {
	Subject     string                     `json:"subject"`
	Description string                     `json:"description,omitempty"`
	ActiveForm  string                     `json:"activeForm,omitempty"`
	Metadata    map[string]json.RawMessage `json:"metadata,omitempty"`
}

func (t *Team) taskCreateTool() tool.Tool {
	return tool.New(tool.Spec[createInput]{
		Name: TaskCreateName,
		Description: "Create a task on the team's shared task board. Teammates claim pending, unblocked tasks by themselves when they are idle. " +
			"Give a short imperative subject and a description complete enough for whoever takes it; set dependencies afterwards with TaskUpdate (addBlockedBy).",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"subject":{"type":"string","description":"A brief title for the task"},` +
			`"description":{"type":"string","description":"What needs to be done, and how to tell it is done"},` +
			`"activeForm":{"type":"string","description":"Present continuous form shown while the task is in progress, e.g. \"Running tests\""},` +
			`"metadata":{"type":"object","description":"Arbitrary metadata to attach to the task"}},` +
			`"required":["subject"],"additionalProperties":false}`),
		// Not concurrency-safe: tasks created in one reply get their ids in the model's order.
		Run: func(ctx context.Context, env *tool.Env, in createInput) tool.Result {
			who, err := t.sender(env.AgentID)
			if err != nil {
				return tool.Errorf("%v", err)
			}
			tk, err := t.be.Board().Create(ctx, coord.Task{Subject: in.Subject, Description: in.Description, ActiveForm: in.ActiveForm, Metadata: in.Metadata})
			if err != nil {
				return tool.Errorf("%v", err)
			}
			if reason, blocked := t.taskHook(ctx, hooks.TaskCreated, tk, who, env.State.Cwd); blocked {
				if err := t.be.Board().Delete(context.WithoutCancel(ctx), tk.ID); err != nil {
					return tool.Errorf("a TaskCreated hook refused the task (%s), and removing it failed: %v", reason, err)
				}
				return tool.Errorf("A TaskCreated hook refused the task: %s", reason)
			}
			return tool.Result{Content: tool.Text(fmt.Sprintf("Task #%s created successfully: %s", tk.ID, tk.Subject)).Content, Output: map[string]any{"task": taskOut(tk)}}
		},
	})
}

type getInput struct {
	TaskID string `json:"taskId"`
}

func (t *Team) taskGetTool() tool.Tool {
	return tool.New(tool.Spec[getInput]{
		Name:        TaskGetName,
		Description: "Get one task of the team's board by id: subject, description, status, owner, dependencies and metadata.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"taskId":{"type":"string","description":"The id of the task"}},"required":["taskId"],"additionalProperties":false}`),
		IsReadOnly:        tool.Always[getInput],
		IsConcurrencySafe: tool.Always[getInput],
		Run: func(ctx context.Context, env *tool.Env, in getInput) tool.Result {
			tk, err := t.be.Board().Get(ctx, strings.TrimPrefix(in.TaskID, "#"))
			if err != nil {
				return tool.Errorf("%v", err)
			}
			return tool.Result{Content: tool.Text(describeTask(tk, t.cfg.Now())).Content, Output: map[string]any{"task": taskOut(tk)}}
		},
	})
}

type listInput struct{}

func (t *Team) taskListTool() tool.Tool {
	return tool.New(tool.Spec[listInput]{
		Name:        TaskListName,
		Description: "List every task on the team's board with its status, owner and what blocks it.",
		Schema:      json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		IsReadOnly:  tool.Always[listInput], IsConcurrencySafe: tool.Always[listInput],
		Run: func(ctx context.Context, env *tool.Env, in listInput) tool.Result {
			tasks, err := t.be.Board().List(ctx)
			text := FormatBoard(tasks, t.cfg.Now())
			if err != nil {
				text += "\n(some tasks could not be read: " + err.Error() + ")"
			}
			return tool.Result{Content: tool.Text(text).Content, Output: map[string]any{"tasks": tasksOut(tasks)}}
		},
	})
}

type updateInput struct {
	TaskID       string                     `json:"taskId"`
	Subject      *string                    `json:"subject,omitempty"`
	Description  *string                    `json:"description,omitempty"`
	ActiveForm   *string                    `json:"activeForm,omitempty"`
	Status       string                     `json:"status,omitempty"`
	Owner        *string                    `json:"owner,omitempty"`
	AddBlocks    []string                   `json:"addBlocks,omitempty"`
	AddBlockedBy []string                   `json:"addBlockedBy,omitempty"`
	Metadata     map[string]json.RawMessage `json:"metadata,omitempty"`
}

func (t *Team) taskUpdateTool() tool.Tool {
	return tool.New(tool.Spec[updateInput]{
		Name: TaskUpdateName,
		Description: "Update a task on the team's board. Set status \"in_progress\" (with yourself as owner, or no owner) to claim it — the claim is atomic and " +
			"refused with the reason if someone holds it or it is blocked; \"completed\" when it is done (this unblocks the tasks waiting for it); " +
			"\"pending\" to give it back; \"deleted\" to remove it. addBlockedBy/addBlocks add dependencies (a loop is refused); owner assigns the task.",
		Schema: json.RawMessage(`{"type":"object","properties":{` +
			`"taskId":{"type":"string","description":"The id of the task"},` +
			`"subject":{"type":"string"},"description":{"type":"string"},"activeForm":{"type":"string"},` +
			`"status":{"type":"string","enum":["pending","in_progress","completed","deleted"]},` +
			`"owner":{"type":"string","description":"The member the task is assigned to (empty to unassign)"},` +
			`"addBlocks":{"type":"array","items":{"type":"string"},"description":"Task ids that cannot start until this one is completed"},` +
			`"addBlockedBy":{"type":"array","items":{"type":"string"},"description":"Task ids that must be completed before this one can start"},` +
			`"metadata":{"type":"object","description":"Metadata to merge in; a null value deletes a key"}},` +
			`"required":["taskId"],"additionalProperties":false}`),
		Run: func(ctx context.Context, env *tool.Env, in updateInput) tool.Result {
			return t.update(ctx, env, in)
		},
	})
}

func (t *Team) update(ctx context.Context, env *tool.Env, in updateInput) tool.Result {
	who, err := t.sender(env.AgentID)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	id := strings.TrimPrefix(in.TaskID, "#")
	bd := t.be.Board()
	cur, err := bd.Get(ctx, id)
	if err != nil {
		return tool.Errorf("%v", err)
	}
	var done []string
	if in.Status == "deleted" {
		if err := bd.Delete(ctx, id); err != nil {
			return tool.Errorf("%v", err)
		}
		return tool.Text(fmt.Sprintf("Deleted task #%s", id))
	}
	ch := coord.TaskChange{Subject: in.Subject, Description: in.Description, ActiveForm: in.ActiveForm, Owner: in.Owner,
		AddBlocks: trimIDs(in.AddBlocks), AddBlockedBy: trimIDs(in.AddBlockedBy), Metadata: in.Metadata}
	member := t.memberByAgent(env.AgentID)
	switch in.Status {
	case "":
	case string(coord.StatusInProgress):
		claimer := who
		if in.Owner != nil && *in.Owner != "" {
			claimer = t.canonical(*in.Owner)
		}
		if claimer == who || who != LeadAlias {
			if claimer != who {
				return tool.Errorf("you can only claim a task for yourself (%s); the lead assigns tasks to others with owner and status pending", who)
			}
			if _, err := bd.Claim(ctx, id, who, t.cfg.Lease); err != nil {
				return tool.Errorf("%v", err)
			}
			if member != nil {
				member.holding(id)
			}
			ch.Owner = nil
			done = append(done, "status", "owner")
		} else {
			ch.Status = ptr(coord.StatusInProgress)
		}
	case string(coord.StatusCompleted):
		if cur.Status == coord.StatusCompleted {
			return tool.Errorf("task %s is already completed", id)
		}
		if who != LeadAlias && cur.Owner != "" && cur.Owner != who && cur.Status == coord.StatusInProgress {
			return tool.Errorf("task %s is held by %s; only its holder or the team lead can complete it", id, cur.Owner)
		}
		if reason, blocked := t.taskHook(ctx, hooks.TaskCompleted, cur, who, env.State.Cwd); blocked {
			return tool.Errorf("A TaskCompleted hook kept task %s open: %s", id, reason)
		}
		ch.Status = ptr(coord.StatusCompleted)
		if who != LeadAlias && cur.Status == coord.StatusInProgress {
			ch.IfOwner = ptr(who)
		}
	case string(coord.StatusPending):
		if cur.Status == coord.StatusInProgress && cur.Owner == who {
			rel, err := bd.Release(ctx, id, who)
			if err != nil {
				return tool.Errorf("%v", err)
			}
			t.reportContested(ctx, rel, who+" set it back to pending")
			done = append(done, "status")
		} else {
			ch.Status = ptr(coord.StatusPending)
		}
	default:
		return tool.Errorf("status %q is not one of pending, in_progress, completed, deleted", in.Status)
	}
	if changes(ch) {
		tk, err := bd.Update(ctx, id, ch)
		if err != nil {
			return tool.Errorf("%v", err)
		}
		cur = tk
		done = append(done, fieldsOf(in)...)
	} else if len(done) > 0 {
		cur, _ = bd.Get(ctx, id)
	}
	if member != nil && in.Status == string(coord.StatusCompleted) {
		member.released(id)
	}
	if len(done) == 0 {
		return tool.Text(fmt.Sprintf("Task #%s unchanged", id))
	}
	text := fmt.Sprintf("Updated task #%s %s", id, strings.Join(dedup(done), ", "))
	if in.Status == string(coord.StatusCompleted) && len(cur.Blocks) > 0 {
		text += fmt.Sprintf(". Tasks waiting for it: %s", strings.Join(hashIDs(cur.Blocks), ", "))
	}
	return tool.Result{Content: tool.Text(text).Content, Output: map[string]any{"task": taskOut(cur)}}
}

func changes(ch coord.TaskChange) bool {
	return ch.Subject != nil || ch.Description != nil || ch.ActiveForm != nil || ch.Status != nil || ch.Owner != nil ||
		len(ch.AddBlocks) > 0 || len(ch.AddBlockedBy) > 0 || len(ch.Metadata) > 0
}

func fieldsOf(in updateInput) []string {
	var out []string
	add := func(ok bool, name string) {
		if ok {
			out = append(out, name)
		}
	}
	add(in.Subject != nil, "subject")
	add(in.Description != nil, "description")
	add(in.ActiveForm != nil, "activeForm")
	add(in.Status != "", "status")
	add(in.Owner != nil, "owner")
	add(len(in.AddBlocks) > 0, "blocks")
	add(len(in.AddBlockedBy) > 0, "blockedBy")
	add(len(in.Metadata) > 0, "metadata")
	return out
}

func dedup(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

func trimIDs(ids []string) []string {
	out := make([]string, 0, len(ids))
	for _, id := range ids {
		out = append(out, strings.TrimPrefix(strings.TrimSpace(id), "#"))
	}
	return out
}

func hashIDs(ids []string) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = "#" + id
	}
	return out
}

// taskHook runs TaskCreated or TaskCompleted; exit 2 blocks with the hook's reason.
func (t *Team) taskHook(ctx context.Context, ev hooks.Event, tk coord.Task, who, cwd string) (string, bool) {
	if t.cfg.Hooks == nil {
		return "", false
	}
	in := hooks.Input{TeamName: t.cfg.Name, Extra: map[string]any{"task_id": tk.ID, "task_subject": tk.Subject, "task_description": tk.Description}}
	if who != LeadAlias {
		in.TeammateName = who
	}
	if t.cfg.HookInput != nil {
		in = t.cfg.HookInput(in)
	}
	if cwd != "" {
		in.Cwd = cwd
	}
	out := t.cfg.Hooks.Run(ctx, ev, in)
	if out.Decision != hooks.DecisionBlock {
		return "", false
	}
	if out.Reason == "" {
		return fmt.Sprintf("a %s hook blocked it", ev), true
	}
	return out.Reason, true
}

// holding and released keep the member's idea of its task in step with the board, for its
// heartbeat's lease renewals.
func (m *Member) holding(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.task = id
}

func (m *Member) released(id string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.task == id {
		m.task = ""
	}
	delete(m.nudged, id)
}

type listAgentsInput struct{}

func (t *Team) listAgentsTool() tool.Tool {
	return tool.New(tool.Spec[listAgentsInput]{
		Name:        ListAgentsName,
		Description: "List the agents you can message with SendMessage: the team's lead and teammates (state: working, idle, stopped, dead; colour; current task), this session's subagents, and other keel sessions on this machine.",
		Schema:      json.RawMessage(`{"type":"object","properties":{},"additionalProperties":false}`),
		IsReadOnly:  tool.Always[listAgentsInput], IsConcurrencySafe: tool.Always[listAgentsInput],
		Run: func(ctx context.Context, env *tool.Env, in listAgentsInput) tool.Result {
			members, err := t.Members(ctx)
			if err != nil && len(members) == 0 {
				return tool.Errorf("list team members: %v", err)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "Team %s:\n", t.cfg.Name)
			now := t.cfg.Now()
			for _, m := range members {
				b.WriteString("- " + m.Line(now) + "\n")
			}
			if t.cfg.Peers != nil {
				if peers := t.cfg.Peers(ctx); len(peers) > 0 {
					b.WriteString("\nOther agents:\n")
					for _, p := range peers {
						b.WriteString("- " + p + "\n")
					}
				}
			}
			return tool.Result{Content: tool.Text(strings.TrimRight(b.String(), "\n")).Content, Output: map[string]any{"members": members}}
		},
	})
}

// MemberInfo is a member as ListAgents, `keel team list` and the UI show it.
type MemberInfo struct {
	Name      string        `json:"name"`
	Alias     string        `json:"alias,omitempty"`
	AgentID   string        `json:"agent_id"`
	Color     string        `json:"color,omitempty"`
	AgentType string        `json:"agent_type"`
	Runner    string        `json:"runner"`
	State     State         `json:"state"`
	Task      string        `json:"task,omitempty"`
	Heartbeat time.Time     `json:"heartbeat"`
	PID       int           `json:"pid,omitempty"`
	Pane      string        `json:"pane,omitempty"`
	Tokens    int64         `json:"tokens"`
	Record    *Record       `json:"-"`
	Since     time.Duration `json:"-"`
}

// Line renders the member on one line.
func (m MemberInfo) Line(now time.Time) string {
	var b strings.Builder
	b.WriteString(m.Name)
	if m.Alias != "" && m.Alias != m.Name {
		fmt.Fprintf(&b, " (also %s)", m.Alias)
	}
	if m.Color != "" {
		fmt.Fprintf(&b, " [%s]", m.Color)
	}
	fmt.Fprintf(&b, " — %s, %s", m.AgentType, m.State)
	if m.Task != "" {
		fmt.Fprintf(&b, ", task #%s", m.Task)
	}
	if m.Runner != RunnerLead {
		fmt.Fprintf(&b, ", %s", m.Runner)
	}
	if m.State != StateStopped && !m.Heartbeat.IsZero() {
		fmt.Fprintf(&b, ", heartbeat %s ago", now.Sub(m.Heartbeat).Round(time.Second))
	}
	return b.String()
}

// Members lists the team's members (the lead first) with their liveness.
func (t *Team) Members(ctx context.Context) ([]MemberInfo, error) {
	recs, err := t.records(ctx)
	var out []MemberInfo
	for i := range recs {
		r := recs[i]
		info := MemberInfo{Name: r.Name, Alias: r.Alias, AgentID: r.ID, Color: r.Color, AgentType: r.AgentType, Runner: r.Runner,
			State: t.liveness(r), Task: r.Task, Heartbeat: r.Heartbeat, PID: r.PID, Pane: r.Pane,
			Tokens: r.Usage.TotalInput() + r.Usage.OutputTokens, Record: &r}
		if r.Name == LeadAlias {
			out = append([]MemberInfo{info}, out...)
			continue
		}
		out = append(out, info)
	}
	return out, err
}

// FormatBoard renders the board one task a line, as TaskList and `keel team tasks` show it.
func FormatBoard(tasks []coord.Task, now time.Time) string {
	if len(tasks) == 0 {
		return "No tasks."
	}
	all := map[string]coord.Task{}
	for _, tk := range tasks {
		all[tk.ID] = tk
	}
	var b strings.Builder
	for _, tk := range tasks {
		fmt.Fprintf(&b, "#%s [%s] %s", tk.ID, tk.Status, tk.Subject)
		if tk.Owner != "" {
			fmt.Fprintf(&b, " (%s)", tk.Owner)
		}
		if open := coord.OpenBlockers(tk, all); len(open) > 0 && tk.Status != coord.StatusCompleted {
			fmt.Fprintf(&b, " [blocked by %s]", strings.Join(hashIDs(open), ", "))
		}
		if coord.LeaseLapsed(tk, now) {
			b.WriteString(" [claim lapsed: claimable]")
		}
		b.WriteString("\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func describeTask(tk coord.Task, now time.Time) string {
	var b strings.Builder
	fmt.Fprintf(&b, "Task #%s: %s\nStatus: %s\n", tk.ID, tk.Subject, tk.Status)
	if tk.Owner != "" {
		fmt.Fprintf(&b, "Owner: %s\n", tk.Owner)
	}
	if coord.LeaseLapsed(tk, now) {
		b.WriteString("Claim: lapsed (the holder stopped renewing it); claimable\n")
	}
	if tk.ActiveForm != "" {
		fmt.Fprintf(&b, "Active form: %s\n", tk.ActiveForm)
	}
	if tk.Description != "" {
		fmt.Fprintf(&b, "Description: %s\n", tk.Description)
	}
	if len(tk.BlockedBy) > 0 {
		fmt.Fprintf(&b, "Blocked by: %s\n", strings.Join(hashIDs(tk.BlockedBy), ", "))
	}
	if len(tk.Blocks) > 0 {
		fmt.Fprintf(&b, "Blocks: %s\n", strings.Join(hashIDs(tk.Blocks), ", "))
	}
	if len(tk.Metadata) > 0 {
		meta, _ := json.Marshal(tk.Metadata)
		fmt.Fprintf(&b, "Metadata: %s\n", meta)
	}
	return strings.TrimRight(b.String(), "\n")
}

// taskJSON is a task in the tools' structured output, with Claude Code's field names.
type taskJSON struct {
	ID          string                     `json:"id"`
	Subject     string                     `json:"subject"`
	Description string                     `json:"description,omitempty"`
	ActiveForm  string                     `json:"activeForm,omitempty"`
	Status      string                     `json:"status"`
	Owner       string                     `json:"owner,omitempty"`
	BlockedBy   []string                   `json:"blockedBy"`
	Blocks      []string                   `json:"blocks"`
	Metadata    map[string]json.RawMessage `json:"metadata,omitempty"`
}

func taskOut(tk coord.Task) taskJSON {
	return taskJSON{ID: tk.ID, Subject: tk.Subject, Description: tk.Description, ActiveForm: tk.ActiveForm, Status: string(tk.Status),
		Owner: tk.Owner, BlockedBy: nonNil(tk.BlockedBy), Blocks: nonNil(tk.Blocks), Metadata: tk.Metadata}
}

func tasksOut(ts []coord.Task) []taskJSON {
	out := make([]taskJSON, 0, len(ts))
	for _, tk := range ts {
		out = append(out, taskOut(tk))
	}
	return out
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
