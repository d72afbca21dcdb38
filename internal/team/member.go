package team

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/permission"
)

// Spec is what a teammate is spawned with, kept in its record so it can start again.
type Spec struct {
	ID        string `json:"id"`
	Name      string `json:"name"`
	Color     string `json:"color,omitempty"`
	AgentType string `json:"agentType,omitempty"`
	Prompt    string `json:"prompt"`
	Model     string `json:"model,omitempty"`
	Isolation string `json:"isolation,omitempty"`
	// Mode is the teammate's permission mode; empty takes the lead's.
	Mode string `json:"mode,omitempty"`
	// SystemPromptMode is default, replace or append: replace sends only
	// SystemPrompt; append adds it after the default prompt and the team addendum. No
	// model-facing field sets them; library callers and tests do.
	SystemPromptMode string `json:"systemPromptMode,omitempty"`
	SystemPrompt     string `json:"systemPrompt,omitempty"`
	// Resume continues the teammate from its transcript instead of starting it.
	Resume bool `json:"-"`
}

// Host builds the loop of a teammate run in this process; the session implements it over
// the subagent runner (a child's context, permissions under the lead's ceiling).
type Host interface {
	PrepareTeammate(ctx context.Context, spec Spec, seams MemberSeams) (*Prepared, error)
}

// MemberSeams are what the team gives a teammate's agent when it is built: where its
// permission questions go, the addendum of its system prompt, its inbox and the runtime's
// notes (observers), and what follows each turn's transcript sync.
type MemberSeams struct {
	Asker     permission.Asker
	Addendum  string
	Observers []loop.Observer
	// Synced runs after each turn's transcript sync with the sync's error: the inbox is
	// acked after a sync, and what it delivered is requeued after a failed one.
	Synced func(ctx context.Context, err error) error
}

// Prepared is a teammate's loop, ready to run.
type Prepared struct {
	Agent *loop.Agent
	// History is what the next Run starts from; it ends with a user message.
	History []message.Message
	// Initial are the messages of History not yet in the transcript.
	Initial    []message.Message
	Transcript string
	// LeavePlan ends the teammate's plan mode (its lead approved the plan): it takes its
	// lead's mode.
	LeavePlan func()
	// Close releases what preparing took (transcript, MCP servers, a worktree note).
	Close func()
}

// Member is a teammate whose loop runs in this process.
type Member struct {
	t      *Team
	id     string
	name   string
	color  string
	runner string
	spec   Spec
	prep   *Prepared
	inbox  *Inbox
	ctx    context.Context
	cancel context.CancelCauseFunc
	done   chan struct{}
	// wake interrupts an idle wait (a message sent from this process, a shutdown).
	wake chan struct{}

	// mu guards the fields below.
	mu    sync.Mutex
	state State
	task  string
	// shutdown is the shutdown request not answered yet; stopping says the member agreed
	// to stop.
	shutdown *coord.Message
	stopping bool
	// clearStopping makes the next record written say the member is not stopping (it
	// started again, or declined a shutdown).
	clearStopping bool
	nudged        map[string]int
	notes         []string
	usage         message.Usage
	turns         int
}

// addendum is the part of a teammate's system prompt that makes it one.
func (t *Team) addendum(spec Spec) string {
	return fmt.Sprintf(`# Team
You are %q, a teammate in team %q, working alongside other agents under a team lead. You run in your own context: the others do not see your output, so everything they must know goes through SendMessage (to %q for the lead, to a teammate's name, or "*" for everyone — use broadcast sparingly). Messages from others arrive as <teammate-message> blocks.
The team shares a task board: TaskList shows it, TaskGet a task, TaskUpdate changes one. When you finish a task, set its status to "completed" with TaskUpdate before anything else; when you are idle, you are given the next task nobody holds. Claim a task yourself by setting its status to "in_progress" with your name as owner; a refusal says who holds it or what it waits for.
When the lead sends a shutdown_request, answer it with SendMessage and a message of type "shutdown_response" carrying its request_id and approve: true (or false with a reason, if you are in the middle of something that must not be cut off).`,
		spec.Name, t.cfg.Name, LeadAlias)
}

// start prepares a teammate and starts its loop in this process.
func (t *Team) start(ctx context.Context, spec Spec, runner string) (*Member, error) {
	if t.cfg.Host == nil {
		return nil, errors.New("this session cannot run teammates")
	}
	m := &Member{t: t, id: spec.ID, name: spec.Name, color: spec.Color, runner: runner, spec: spec, done: make(chan struct{}),
		wake: make(chan struct{}, 1), state: StateWorking, nudged: map[string]int{}, clearStopping: true}
	m.inbox = newInbox(t.be.Mailbox(), spec.Name, t.logger, t.colorOf)
	m.inbox.consume = m.consume
	m.inbox.read = func(msg coord.Message) { t.emitRead(m.origin(), msg) }
	prep, err := t.cfg.Host.PrepareTeammate(ctx, spec, MemberSeams{Asker: memberAsker{t: t, m: m}, Addendum: t.addendum(spec),
		Observers: []loop.Observer{m.inbox, notesObserver{m}}, Synced: m.synced})
	if err != nil {
		return nil, err
	}
	m.prep = prep
	if spec.Resume {
		m.inbox.Reconcile(ctx, prep.History)
	}
	if held := t.heldBy(ctx, spec.Name); held != "" {
		m.task = held
	}
	m.ctx, m.cancel = context.WithCancelCause(t.ctx)
	t.mu.Lock()
	if old := t.members[spec.Name]; old != nil {
		t.mu.Unlock()
		prep.Close()
		return nil, fmt.Errorf("teammate %s is already running in this process", spec.Name)
	}
	t.members[spec.Name] = m
	delete(t.ended, spec.Name)
	t.mu.Unlock()
	if err := m.writeRecord(ctx); err != nil {
		t.logger.Warn("record teammate", "member", spec.Name, "err", err)
	}
	t.startPublishing(spec.Name)
	t.emit(event.TeammateState{Origin: m.origin(), Name: m.name, Color: m.color, State: string(StateWorking), Task: m.task})
	t.wg.Go(m.run)
	t.wg.Go(m.heartbeat)
	return m, nil
}

// heldBy returns the task name holds on the board, if any.
func (t *Team) heldBy(ctx context.Context, name string) string {
	tasks, _ := t.be.Board().List(ctx)
	for _, tk := range tasks {
		if tk.Status == coord.StatusInProgress && tk.Owner == name {
			return tk.ID
		}
	}
	return ""
}

func (m *Member) origin() event.Origin { return event.Origin{AgentID: m.id, AgentName: m.name} }

func (m *Member) setState(s State) {
	m.mu.Lock()
	changed := m.state != s
	m.state = s
	task := m.task
	m.mu.Unlock()
	if changed {
		if err := m.writeRecord(m.ctx); err != nil {
			m.t.logger.Warn("record teammate state", "member", m.name, "err", err)
		}
		m.t.emit(event.TeammateState{Origin: m.origin(), Name: m.name, Color: m.color, State: string(s), Task: task})
	}
}

func (m *Member) snapshot() (State, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.state, m.task
}

func (m *Member) writeRecord(ctx context.Context) error {
	m.mu.Lock()
	rec := Record{ID: m.id, Name: m.name, Color: m.color, AgentType: m.spec.AgentType, Model: m.prep.Agent.Model, Runner: m.runner,
		State: m.state, Task: m.task, PID: m.t.pid, Host: m.t.host, Instance: m.t.instance, ProcStart: m.t.procStart, Heartbeat: m.t.cfg.Now(), Spec: m.spec,
		Transcript: m.prep.Transcript, Usage: m.usage, Turns: m.turns, Stopping: m.stopping || m.shutdown != nil}
	clear := m.clearStopping
	m.clearStopping = false
	m.mu.Unlock()
	return m.t.updateRecord(ctx, m.name, func(old *Record) {
		rec.Stopping = rec.Stopping || (old.Stopping && !clear) // the lead's mark stays
		rec.Started, rec.Pane, rec.rev = old.Started, old.Pane, old.rev
		if rec.Started.IsZero() {
			rec.Started = rec.Heartbeat
		}
		*old = rec
	})
}

// heartbeat keeps the member's record fresh and renews the lease on the task it holds.
func (m *Member) heartbeat() {
	tick := time.NewTicker(m.t.heartbeatEvery())
	defer tick.Stop()
	for {
		select {
		case <-m.done:
			return
		case <-tick.C:
		}
		m.mu.Lock()
		task := m.task
		m.mu.Unlock()
		if task != "" {
			if _, err := m.t.be.Board().Renew(m.ctx, task, m.name, m.t.cfg.Lease); errors.Is(err, coord.ErrNotOwner) {
				m.mu.Lock()
				if m.task == task {
					m.task = ""
					m.notes = append(m.notes, fmt.Sprintf("Your claim on task #%s lapsed and another member holds it now; stop working on it.", task))
				}
				m.mu.Unlock()
			}
		}
		if err := m.writeRecord(m.ctx); err != nil && m.ctx.Err() == nil {
			m.t.logger.Warn("teammate heartbeat", "member", m.name, "err", err)
		}
	}
}

// run is the teammate's life, driven by the loop's driver: turns of the loop and, between
// them, the member's cycle (Next): idling until a message or a task comes, until it stops.
func (m *Member) run() {
	defer close(m.done)
	defer m.prep.Close()
	defer func() {
		state, _ := m.snapshot()
		m.t.mu.Lock()
		delete(m.t.members, m.name)
		if m.t.ended == nil {
			m.t.ended = map[string]State{}
		}
		m.t.ended[m.name] = state
		m.t.mu.Unlock()
	}()
	if _, err := loop.Drive(m.ctx, m.prep.Agent, m.prep.History, m.prep.Initial, m); err != nil && m.ctx.Err() == nil {
		m.t.logger.Error("teammate stopped", "member", m.name, "err", err)
	}
}

// Next is the teammate's part between runs (loop.Cycle): it accounts the run, runs the
// TeammateIdle hooks, tells the lead it is idle and waits for work; false means it stops.
func (m *Member) Next(_ context.Context, ran loop.Ran) (message.Message, bool) {
	if ran.Out == nil {
		// Resumed after its turn had ended: it waits for work before running.
		return m.working(m.idle(""))
	}
	m.mu.Lock()
	m.usage = m.usage.Add(ran.Out.Usage)
	m.turns += ran.Out.Turns
	m.mu.Unlock()
	m.t.addUsage(ran.Out.Ledger)
	if m.ctx.Err() != nil {
		return message.Message{}, false
	}
	switch {
	case ran.Err != nil:
		m.t.logger.Warn("teammate turn failed", "member", m.name, "err", ran.Err)
		m.tellLead(TypeMessage, fmt.Sprintf("%s's turn failed: %v", m.name, ran.Err), "turn failed")
	case ran.Out.Subtype == loop.SubtypeMaxBudget:
		// The session's budget ended the turn: no TeammateIdle hook can keep it going.
	default:
		if reason := m.idleHook(); reason != "" {
			return m.working(message.User(message.Text(reason)), true)
		}
	}
	return m.working(m.idle(m.idleText(ran.Out)))
}

// working marks the member working when it has something to run.
func (m *Member) working(next message.Message, ok bool) (message.Message, bool) {
	if ok {
		m.setState(StateWorking)
	}
	return next, ok
}

// synced acks the member's inbox once a turn's transcript is synced, and requeues what it
// delivered when the sync failed.
func (m *Member) synced(ctx context.Context, err error) error {
	if err != nil {
		m.inbox.Requeue()
		return err
	}
	return m.inbox.Ack(ctx)
}

// idle answers a pending shutdown, tells the lead (when notice is set) and waits for work;
// false means the member stops.
func (m *Member) idle(notice string) (message.Message, bool) {
	m.answerShutdown()
	if m.isStopping() {
		// What was accepted for the member before it agreed to stop is read before it
		// stops (sends after that are refused: Record.Stopping).
		if blocks := m.inbox.Observe(m.ctx); len(blocks) > 0 {
			return m.working(message.User(blocks...), true)
		}
		m.stop()
		return message.Message{}, false
	}
	m.setState(StateIdle)
	if notice != "" {
		m.tellLead(TypeIdle, notice, "idle")
	}
	next, ok := m.waitForWork()
	if !ok && m.isStopping() {
		m.stop()
	}
	return next, ok
}

func (m *Member) idleText(out *loop.Outcome) string {
	text := fmt.Sprintf("%s is idle.", m.name)
	if _, task := m.snapshot(); task != "" {
		text += fmt.Sprintf(" It still holds task #%s.", task)
	}
	if last := strings.TrimSpace(out.Text); last != "" {
		if len(last) > 400 {
			last = last[:400] + "…"
		}
		text += " Its last words: " + last
	}
	return text
}

// idleHook runs the TeammateIdle hooks; a non-empty reason (exit 2) keeps the member going.
func (m *Member) idleHook() string {
	if m.t.cfg.Hooks == nil {
		return ""
	}
	in := hooks.Input{TeammateName: m.name, TeamName: m.t.cfg.Name, AgentID: m.id, AgentType: m.spec.AgentType}
	if m.t.cfg.HookInput != nil {
		in = m.t.cfg.HookInput(in)
	}
	out := m.t.cfg.Hooks.Run(m.ctx, hooks.TeammateIdle, in)
	if out.Decision != hooks.DecisionBlock {
		return ""
	}
	if out.Reason == "" {
		return "A TeammateIdle hook asked you to keep working."
	}
	return out.Reason
}

// tellLead sends the lead a message from this member.
func (m *Member) tellLead(typ, text, summary string) {
	msg := coord.Message{ID: newID(), From: m.name, To: LeadAlias, Type: typ, Text: text, Summary: summary}
	if err := m.t.be.Mailbox().Send(context.WithoutCancel(m.ctx), msg); err != nil {
		m.t.logger.Warn("message the lead", "member", m.name, "err", err)
	}
}

// waitForWork blocks until the idle member has something to do: messages (returned as the
// next user message) or a task it claimed. It returns false when the member is to stop.
func (m *Member) waitForWork() (message.Message, bool) {
	ctx, cancel := context.WithCancel(m.ctx)
	defer cancel()
	mail, err1 := m.t.be.Mailbox().Watch(ctx, m.name)
	board, err2 := m.t.be.Board().Watch(ctx)
	if err := errors.Join(err1, err2); err != nil {
		m.t.logger.Warn("watch for work", "member", m.name, "err", err)
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	// A teammate in a process of its own outlives its lead to finish its work; idle with
	// the lead gone and nothing to claim, it stops after a grace period instead of waiting
	// forever.
	var orphan <-chan time.Time
	var orphanSince time.Time
	if m.runner != RunnerInProcess {
		tick := time.NewTicker(m.t.heartbeatEvery())
		defer tick.Stop()
		orphan = tick.C
	}
	for {
		if blocks := m.inbox.Observe(m.ctx); len(blocks) > 0 {
			return message.User(blocks...), true
		}
		if m.isStopping() || m.ctx.Err() != nil {
			return message.Message{}, false
		}
		if msg, ok := m.claim(); ok {
			return msg, true
		}
		var lapse <-chan time.Time
		if d, ok := m.nextLapse(); ok {
			if timer == nil {
				timer = time.NewTimer(d)
			} else {
				timer.Reset(d)
			}
			lapse = timer.C
		}
		select {
		case <-m.ctx.Done():
			return message.Message{}, false
		case <-mail:
		case <-board:
		case <-m.wake:
		case <-lapse:
		case <-orphan:
			lead, err := m.t.record(m.ctx, LeadAlias)
			gone := err != nil || m.t.liveness(lead) == StateStopped || m.t.liveness(lead) == StateDead
			switch {
			case !gone:
				orphanSince = time.Time{}
			case orphanSince.IsZero():
				orphanSince = m.t.cfg.Now()
			case m.t.cfg.Now().Sub(orphanSince) > orphanGrace*m.t.heartbeatEvery():
				m.t.logger.Info("the lead is gone and nothing is left to do; stopping", "member", m.name)
				m.mu.Lock()
				m.stopping = true
				m.mu.Unlock()
				return message.Message{}, false
			}
		}
	}
}

// orphanGrace is how many heartbeats an idle teammate process waits for a lead that is gone
// (it may be coming back: keel --continue) before it stops.
const orphanGrace = 15

// claim takes the next task the member may work on.
func (m *Member) claim() (message.Message, bool) {
	task, err := m.t.be.Board().ClaimNext(m.ctx, m.name, m.t.cfg.Lease)
	if err != nil {
		if !errors.Is(err, coord.ErrNoTask) && m.ctx.Err() == nil {
			m.t.logger.Warn("claim next task", "member", m.name, "err", err)
		}
		return message.Message{}, false
	}
	m.mu.Lock()
	held := m.task == task.ID
	m.task = task.ID
	m.nudged[task.ID]++
	nudges := m.nudged[task.ID]
	m.mu.Unlock()
	if held && nudges > 2 {
		// Reminded already and idle again: give the task back so someone finishes it. The
		// board keeps this member off it for a backoff, and a task given back again and
		// again becomes contested and goes to the lead, once (Team.reportContested).
		if rel, err := m.t.be.Board().Release(m.ctx, task.ID, m.name); err == nil {
			m.mu.Lock()
			m.task = ""
			m.mu.Unlock()
			m.t.reportContested(m.ctx, rel, fmt.Sprintf("%s went idle twice without completing it", m.name))
		}
		return message.Message{}, false
	}
	m.setState(StateWorking)
	if held {
		return message.User(message.Text(fmt.Sprintf("<task-reminder id=%q>\nYou still hold task #%s (%s), which is in progress. Finish it and mark it completed with TaskUpdate, or set it back to pending if you cannot.\n</task-reminder>", task.ID, task.ID, task.Subject))), true
	}
	return message.User(message.Text(taskPrompt(task))), true
}

func taskPrompt(t coord.Task) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<task-assignment id=%q>\nYou claimed task #%s from the team's board: %s\n", t.ID, t.ID, t.Subject)
	if t.Description != "" {
		fmt.Fprintf(&b, "\n%s\n", t.Description)
	}
	fmt.Fprintf(&b, "\nWork on it now. When it is done, mark it completed with TaskUpdate (taskId %q, status \"completed\"), and message the team lead if others need to know the result.\n</task-assignment>", t.ID)
	return b.String()
}

// nextLapse is how long until the earliest lease on the board lapses (a dead member's task
// becomes claimable then) or this member's backoff on a task it gave back ends.
func (m *Member) nextLapse() (time.Duration, bool) {
	tasks, _ := m.t.be.Board().List(m.ctx)
	now := m.t.cfg.Now()
	var best time.Duration
	found := false
	for _, tk := range tasks {
		var at time.Time
		switch {
		case coord.BackingOff(tk, m.name, now) && !coord.Contested(tk):
			at = tk.RetryAfter // this member gave it back; it may take it again then
		case tk.Status != coord.StatusInProgress || tk.LeaseUntil.IsZero() || tk.Owner == m.name:
			continue
		default:
			at = tk.LeaseUntil
		}
		d := max(at.Sub(now), time.Millisecond) + time.Millisecond
		if !found || d < best {
			best, found = d, true
		}
	}
	return best, found
}

// consume handles the messages the runtime answers itself.
func (m *Member) consume(ctx context.Context, msg coord.Message) bool {
	s, ok := structuredOf(msg)
	if !ok {
		return false
	}
	switch s.Type {
	case TypePermissionResponse:
		return true // the waiting ask reads the request's resolution
	case TypeShutdownRequest:
		m.mu.Lock()
		cp := msg
		m.shutdown = &cp
		idle := m.state == StateIdle && m.task == ""
		m.mu.Unlock()
		if idle {
			m.answerShutdown()
			return true
		}
	case TypePlanApprovalResponse:
		if s.Approve != nil && *s.Approve && m.prep.LeavePlan != nil {
			m.prep.LeavePlan()
		}
	}
	return false
}

func (m *Member) signal() {
	select {
	case m.wake <- struct{}{}:
	default:
	}
}

// notesObserver adds the runtime's notes for the member (a lapsed claim) to its next request.
type notesObserver struct{ m *Member }

func (o notesObserver) Observe(context.Context) []message.Block {
	o.m.mu.Lock()
	notes := o.m.notes
	o.m.notes = nil
	o.m.mu.Unlock()
	var out []message.Block
	for _, n := range notes {
		out = append(out, message.Text(n))
	}
	return out
}
