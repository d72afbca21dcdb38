// Package team runs agent teams: a lead session spawns named teammates that each run the
// same query loop in their own context, share a task board, talk through a mailbox and ask
// the lead for permissions. All shared state lives in a [coord.Backend], so a teammate may
// run in the lead's process (the default) or as a separate keel process (optionally in a
// tmux pane) that outlives the lead.
//
// # Model-facing surface (Claude Code's current shape)
//
// The Agent tool with a name spawns a teammate ([Team.Spawn]); SendMessage reaches members
// by name, "*" for everyone, "team-lead" for the lead, and carries the structured shutdown,
// plan-approval and permission messages ([Team.Route]); ListAgents, TaskCreate, TaskGet,
// TaskList and TaskUpdate are this package's ([Team.Tools]).
//
// # A teammate's life
//
// A member runs its loop until the model ends its turn, then runs the TeammateIdle hooks
// (exit 2 keeps it working), tells the lead it is idle and waits for work: a message, or a
// task it claims from the board — atomically, under a lease its heartbeat renews. Messages
// join the next request and are acked after the transcript holding it is synced. A
// shutdown request is answered by the member's model, or at once by the runtime when the
// member is idle with nothing held; an unanswered one ends in an abort after a timeout.
//
// # Liveness
//
// Every member's record carries its state (working, idle, stopped), pid, host and a
// heartbeat. A member is dead only on evidence, judged by what can be known: one run in the
// observer's own process by whether its loop's goroutine runs, one run by another process of
// this host by whether that process lives, and only one on another host by its heartbeat (not
// moved for its lease and a margin, timed by the observer's own clock) — and
// the claims it held lapse with their leases, so another member takes its task over. A
// headless lead settles only on a team it could read whole; work left with every member dead
// wakes the lead once instead of ending the run quietly.
package team

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/cost"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
)

// Defaults for [Config]'s durations.
const (
	DefaultLease             = 30 * time.Second
	DefaultShutdownTimeout   = 30 * time.Second
	DefaultPermissionTimeout = 10 * time.Minute
)

// Colors are given to teammates in order, as in Claude Code.
var Colors = []string{"blue", "green", "yellow", "purple", "orange", "pink", "cyan", "red"}

// Config is what a [Team] needs from the session that hosts it.
type Config struct {
	// Name is the team's name; Backend its coordination store.
	Name    string
	Backend coord.Backend
	// Lead says this process hosts the lead (it serves permission requests and may spawn);
	// LeadName is the lead's own name besides [LeadAlias].
	Lead     bool
	LeadName string
	// Host builds the loops of teammates run in this process.
	Host Host
	// Launcher starts teammates as separate processes; nil runs every teammate in process.
	Launcher Launcher
	// LeadTranscript is the lead session's transcript, which out-of-process teammates keep
	// theirs beside.
	LeadTranscript string
	// Mode is teammateMode: in-process (default), process, tmux or auto (tmux when the lead
	// runs inside tmux, else in-process).
	Mode string
	// LeadAsker is the lead's UI (terminal prompt, SDK can_use_tool); nil when nobody is there
	// to ask, and teammates' questions then go to the lead's model by mail.
	LeadAsker permission.Asker
	Hooks     hooks.EventRunner
	HookInput func(hooks.Input) hooks.Input
	// Lease is how long a claim holds without renewal; the heartbeat runs at a fifth of it.
	Lease             time.Duration
	ShutdownTimeout   time.Duration
	PermissionTimeout time.Duration
	// Peers lists the agents ListAgents shows besides the team: the session's subagents and
	// other keel sessions on this machine, one line each; nil shows none.
	Peers func(ctx context.Context) []string
	// Emit receives team events (member states, messages) and in-process teammates' events.
	Emit   func(event.Event)
	Logger *slog.Logger
	Now    func() time.Time
}

// Team is one process's handle on a team: the lead's, or a worker process's. It is safe for
// concurrent use.
type Team struct {
	cfg    Config
	be     coord.Backend
	logger *slog.Logger
	host   string
	pid    int
	// instance tells this handle's records from those of another handle in the same process
	// (a library that runs a lead and a worker side by side): only its own members' loops
	// are known to it.
	instance string
	// procStart is this process's start time (Record.ProcStart).
	procStart uint64
	// leadInbox is the lead's mailbox view (nil outside the lead's process).
	leadInbox *Inbox
	ctx       context.Context
	cancel    context.CancelCauseFunc
	wg        sync.WaitGroup
	// spawnMu serialises spawns.
	spawnMu sync.Mutex
	// seenMu guards seen, the heartbeats this handle saw, by member ([Team.silence]).
	seenMu sync.Mutex
	seen   map[string]sighting

	// mu guards members, ended, used, stopping, closed, trouble, stalledKey and pub.
	mu      sync.Mutex
	members map[string]*Member // run by this process, by name
	// ended holds how the loops of members this handle ran ended (their last state), so a
	// record read just before a member stopped is not judged after its loop is gone.
	ended map[string]State
	used  cost.Ledger
	// stopping is set while Shutdown runs.
	stopping bool
	closed   bool
	// trouble is why the lead's last look could not read the team ("" when it could);
	// stalledKey names the stall the lead was last told of.
	trouble    string
	stalledKey string
	// pub publishes a worker's events to its member's log (nil in a lead's handle).
	pub *publisher
	// opened is when the handle was opened; a lead shows no member's events from before.
	opened time.Time
}

// ErrNotMember is returned for a name that is no member of the team.
var ErrNotMember = errors.New("not a member of the team")

// Open joins the team in cfg.Backend; the lead's handle registers the lead and starts
// serving its teammates' permission requests.
func Open(ctx context.Context, cfg Config) (*Team, error) {
	if cfg.Backend == nil || cfg.Name == "" {
		panic("team.Open: Name and Backend are required")
	}
	if cfg.LeadName == "" {
		cfg.LeadName = LeadAlias
	}
	if cfg.Lease <= 0 {
		cfg.Lease = DefaultLease
	}
	if cfg.ShutdownTimeout <= 0 {
		cfg.ShutdownTimeout = DefaultShutdownTimeout
	}
	if cfg.PermissionTimeout <= 0 {
		cfg.PermissionTimeout = DefaultPermissionTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	host, _ := os.Hostname()
	runCtx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	t := &Team{cfg: cfg, be: cfg.Backend, logger: cfg.Logger.With("team", cfg.Name), host: host, pid: os.Getpid(), instance: newID(), procStart: procStart(os.Getpid()),
		ctx: runCtx, cancel: cancel, members: map[string]*Member{}, opened: cfg.Now()}
	if cfg.Lead {
		t.leadInbox = newInbox(t.be.Mailbox(), LeadAlias, t.logger, t.colorOf)
		t.leadInbox.consume = t.consumeLead
		t.leadInbox.read = func(msg coord.Message) { t.emitRead(event.Origin{}, msg) }
		if err := t.registerLead(ctx); err != nil {
			cancel(nil)
			return nil, err
		}
		t.wg.Go(t.leadHeartbeat)
		t.wg.Go(t.serveRequests)
		from := t.followFrom(ctx)
		t.wg.Go(func() { t.follow(from) })
	}
	return t, nil
}

// Name returns the team's name.
func (t *Team) Name() string { return t.cfg.Name }

// Backend returns the team's coordination store.
func (t *Team) Backend() coord.Backend { return t.be }

func (t *Team) heartbeatEvery() time.Duration { return max(t.cfg.Lease/5, 10*time.Millisecond) }

func (t *Team) emit(e event.Event) {
	if t.cfg.Emit != nil {
		t.cfg.Emit(e)
	}
}

// emitRead reports that a member (origin names it; the lead's is zero) read msg.
func (t *Team) emitRead(o event.Origin, msg coord.Message) {
	t.emit(event.TeamMessageRead{Origin: o, ID: msg.ID, Sender: msg.From, Recipient: msg.To, Type: msg.Type, Sent: msg.Sent})
}

// SetEmit points the team's events somewhere else (the session's current Send).
func (t *Team) SetEmit(emit func(event.Event)) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cfg.Emit = emit
}

// canonical maps the names a member may be called by to its record name: the lead's own
// name to team-lead.
func (t *Team) canonical(name string) string {
	if name == t.cfg.LeadName || strings.EqualFold(name, LeadAlias) {
		return LeadAlias
	}
	return name
}

// records returns every member record, the lead's included.
func (t *Team) records(ctx context.Context) ([]Record, error) {
	recs, err := t.be.Records().List(ctx, "members/")
	var out []Record
	for _, r := range recs {
		var m Record
		if json.Unmarshal(r.Value, &m) == nil && m.Name != "" {
			m.rev = r.Revision
			out = append(out, m)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Started.Before(out[j].Started) })
	return out, err
}

func (t *Team) record(ctx context.Context, name string) (Record, error) {
	r, err := t.be.Records().Get(ctx, "members/"+name)
	if err != nil {
		return Record{}, err
	}
	var m Record
	if err := json.Unmarshal(r.Value, &m); err != nil {
		return Record{}, fmt.Errorf("member %s: %w: %w", name, err, coord.ErrCorrupt)
	}
	m.rev = r.Revision
	return m, nil
}

func (t *Team) putRecord(ctx context.Context, m Record) error {
	b, err := json.Marshal(m)
	if err != nil {
		return fmt.Errorf("encode member %s: %w", m.Name, err)
	}
	if _, err := t.be.Records().Put(context.WithoutCancel(ctx), "members/"+m.Name, b); err != nil {
		return fmt.Errorf("record member %s: %w", m.Name, err)
	}
	return nil
}

// updateRecord changes a member's record with fn, compare-and-set, so two writers (a
// worker's heartbeat, its lead noting the tmux pane) never lose each other's fields. A
// missing record starts from the zero value.
func (t *Team) updateRecord(ctx context.Context, name string, fn func(*Record)) error {
	ctx = context.WithoutCancel(ctx)
	for range 100 {
		rec, err := t.record(ctx, name)
		missing := errors.Is(err, coord.ErrNotFound)
		if err != nil && !missing {
			return err
		}
		fn(&rec)
		b, err := json.Marshal(rec)
		if err != nil {
			return fmt.Errorf("encode member %s: %w", name, err)
		}
		if missing {
			_, err = t.be.Records().Create(ctx, "members/"+name, b)
		} else {
			_, err = t.be.Records().Update(ctx, "members/"+name, b, rec.rev)
		}
		if errors.Is(err, coord.ErrConflict) || errors.Is(err, coord.ErrExists) {
			continue
		}
		if err != nil {
			return fmt.Errorf("record member %s: %w", name, err)
		}
		return nil
	}
	return fmt.Errorf("record member %s: too many concurrent writers", name)
}

// colorOf returns a member's colour, for message tags and prompts.
func (t *Team) colorOf(name string) string {
	t.mu.Lock()
	m := t.members[name]
	t.mu.Unlock()
	if m != nil {
		return m.color
	}
	if rec, err := t.record(context.Background(), t.canonical(name)); err == nil {
		return rec.Color
	}
	return ""
}

func (t *Team) registerLead(ctx context.Context) error {
	now := t.cfg.Now()
	rec := Record{ID: "lead", Name: LeadAlias, Alias: t.cfg.LeadName, AgentType: "lead", Runner: RunnerLead, State: StateWorking,
		PID: t.pid, Host: t.host, Instance: t.instance, ProcStart: t.procStart, Heartbeat: now, Started: now}
	if old, err := t.record(ctx, LeadAlias); err == nil {
		rec.Started = old.Started
	}
	return t.putRecord(ctx, rec)
}

// SetLeadState records whether the lead is working (a turn in progress) or idle.
func (t *Team) SetLeadState(ctx context.Context, s State) {
	if !t.cfg.Lead {
		return
	}
	rec, err := t.record(ctx, LeadAlias)
	if err != nil {
		return
	}
	rec.State, rec.Heartbeat = s, t.cfg.Now()
	rec.PID, rec.Host, rec.Instance, rec.ProcStart = t.pid, t.host, t.instance, t.procStart
	if err := t.putRecord(ctx, rec); err != nil {
		t.logger.Warn("record lead state", "err", err)
	}
}

func (t *Team) leadHeartbeat() {
	tick := time.NewTicker(t.heartbeatEvery())
	defer tick.Stop()
	for {
		select {
		case <-t.ctx.Done():
			return
		case <-tick.C:
		}
		if rec, err := t.record(t.ctx, LeadAlias); err == nil {
			rec.Heartbeat, rec.PID, rec.Host, rec.Instance, rec.ProcStart = t.cfg.Now(), t.pid, t.host, t.instance, t.procStart
			_ = t.putRecord(t.ctx, rec)
		}
	}
}

// LeadInbox is the lead's mailbox view, a loop observer of the lead's loop (nil outside the
// lead's process).
func (t *Team) LeadInbox() *Inbox { return t.leadInbox }

// memberByAgent finds the member of this process running as agent id.
func (t *Team) memberByAgent(id string) *Member {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, m := range t.members {
		if m.id == id {
			return m
		}
	}
	return nil
}

// sender is the member name a tool call from agentID speaks for: the lead for the main
// thread of the lead's process.
func (t *Team) sender(agentID string) (string, error) {
	if m := t.memberByAgent(agentID); m != nil {
		return m.name, nil
	}
	if agentID == "" && t.cfg.Lead {
		return LeadAlias, nil
	}
	return "", fmt.Errorf("agent %s is not a member of team %s", agentID, t.cfg.Name)
}

// knownNames lists the names messages can go to, for errors.
func (t *Team) knownNames(ctx context.Context) string {
	recs, _ := t.records(ctx)
	var names []string
	for _, r := range recs {
		state := t.liveness(r)
		if r.Name == LeadAlias {
			names = append(names, LeadAlias)
			continue
		}
		names = append(names, fmt.Sprintf("%s (%s)", r.Name, state))
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

// Ledger returns what the teammates run in this process used, by model.
func (t *Team) Ledger() cost.Ledger {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.used.Clone()
}

func (t *Team) addUsage(l cost.Ledger) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.used.Merge(l)
}

// Close stops this process's members (their records say stopped only if they were shut
// down; an abrupt end leaves them resumable) and the lead's services.
func (t *Team) Close() error {
	t.mu.Lock()
	if t.closed {
		t.mu.Unlock()
		return nil
	}
	t.closed = true
	t.mu.Unlock()
	t.cancel(errors.New("the team's session ended"))
	t.wg.Wait()
	if t.cfg.Lead {
		t.failPending(context.Background(), "the team lead's session ended before answering")
		if rec, err := t.record(context.Background(), LeadAlias); err == nil {
			rec.State = StateStopped
			_ = t.putRecord(context.Background(), rec)
		}
	}
	return nil
}

// nextColor picks the first colour no member has, cycling when all are taken.
func nextColor(recs []Record) string {
	used := map[string]int{}
	for _, r := range recs {
		used[r.Color]++
	}
	for round := 0; ; round++ {
		for _, c := range Colors {
			if used[c] <= round {
				return c
			}
		}
	}
}

func validName(name string) error {
	if err := coord.CheckName(name); err != nil {
		return err
	}
	if strings.EqualFold(name, LeadAlias) || slices.Contains([]string{"lead", "all", "everyone", RuntimeName, UserName}, strings.ToLower(name)) {
		return fmt.Errorf("the name %q is reserved; choose another", name)
	}
	return nil
}
