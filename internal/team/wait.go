package team

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
)

// Lifecycle of a headless lead: after its prompt, `keel -p` waits for its team as it waits
// for background agents. WaitLead returns when something should wake the lead's model (a
// message that is not a mere idle notice), or when the team is done — every member idle or
// stopped with nothing left it could claim — at which point the caller shuts the team down.

// settleKind is what the lead's wait makes of the team at one look.
type settleKind int

const (
	// busy: someone works, or could take a task now or once a lease lapses.
	busy settleKind = iota
	// settled: every member is idle or stopped and nothing is left anyone could take.
	settled
	// stalled: work is left but no member runs to do it — every one is dead.
	stalled
	// unreadable: the members or the board could not be read; nothing can be concluded.
	unreadable
)

// settlement is one look at the team: its kind, why, and for a stall what identifies it
// (so the lead is told of one stall once).
type settlement struct {
	kind settleKind
	why  string
	key  string
}

// Settled says whether the team has finished: no member working, no task anyone could take
// now or once a lease lapses, and nothing unread for the lead. A team whose members or board
// cannot be read has not settled.
func (t *Team) Settled(ctx context.Context) (bool, string) {
	s := t.settle(ctx)
	return s.kind == settled, s.why
}

func (t *Team) settle(ctx context.Context) settlement {
	recs, err := t.records(ctx)
	if err != nil {
		return settlement{kind: unreadable, why: fmt.Sprintf("the team's member records could not be read: %v", err)}
	}
	var live []string
	var dead []Record
	for _, r := range recs {
		if r.Name == LeadAlias {
			continue
		}
		switch t.liveness(r) {
		case StateWorking:
			return settlement{kind: busy, why: r.Name + " is working"}
		case StateIdle:
			live = append(live, r.Name)
		case StateDead:
			dead = append(dead, r)
		}
	}
	if t.leadInbox != nil && t.leadInbox.Unread(ctx) > 0 {
		return settlement{kind: busy, why: "the lead has unread messages"}
	}
	tasks, err := t.be.Board().List(ctx)
	if err != nil {
		return settlement{kind: unreadable, why: fmt.Sprintf("the task board could not be read: %v", err)}
	}
	all := map[string]coord.Task{}
	var open []coord.Task
	for _, tk := range tasks {
		all[tk.ID] = tk
		if tk.Status != coord.StatusCompleted {
			open = append(open, tk)
		}
	}
	if len(live) == 0 {
		if len(dead) == 0 || len(open) == 0 {
			return settlement{kind: settled, why: "no member is running"}
		}
		return t.stall(dead, open)
	}
	now := t.cfg.Now()
	for _, tk := range tasks {
		if tk.Status == coord.StatusInProgress && !tk.LeaseUntil.IsZero() && tk.LeaseUntil.After(now) {
			if owner, err := t.record(ctx, tk.Owner); err != nil || t.liveness(owner) == StateDead {
				return settlement{kind: busy, why: fmt.Sprintf("task %s waits for its dead owner's lease to lapse", tk.ID)}
			}
		}
	}
	for _, name := range live {
		if tk, ok := coord.NextClaim(all, name, now); ok {
			return settlement{kind: busy, why: fmt.Sprintf("task %s is claimable by %s", tk.ID, name)}
		}
		for _, tk := range tasks {
			if coord.BackingOff(tk, name, now) && !coord.Contested(tk) {
				return settlement{kind: busy, why: fmt.Sprintf("task %s is claimable by %s once its backoff ends", tk.ID, name)}
			}
		}
	}
	return settlement{kind: settled, why: "every member is idle and nothing is claimable"}
}

// stall describes work left with no member alive to do it.
func (t *Team) stall(dead []Record, open []coord.Task) settlement {
	var who, tasks, key []string
	for _, r := range dead {
		who = append(who, fmt.Sprintf("%s (%s)", r.Name, t.deathOf(r)))
		key = append(key, r.Name)
	}
	for _, tk := range open {
		s := fmt.Sprintf("#%s %s (%s", tk.ID, tk.Subject, tk.Status)
		if tk.Owner != "" {
			s += ", " + tk.Owner
		}
		tasks = append(tasks, s+")")
		key = append(key, "#"+tk.ID)
	}
	return settlement{kind: stalled, key: strings.Join(key, " "),
		why: fmt.Sprintf("no teammate is running — %s — and tasks are not done: %s", strings.Join(who, ", "), strings.Join(tasks, "; "))}
}

// deathOf says why a dead member counts as dead.
func (t *Team) deathOf(r Record) string {
	if r.Host == t.host && r.PID > 0 && !pidAlive(r.PID) {
		return fmt.Sprintf("its process %d is gone", r.PID)
	}
	return fmt.Sprintf("no heartbeat for %s", t.silence(r).Round(time.Second))
}

// RuntimeName is the sender of the messages keel's team runtime itself writes to the lead.
const RuntimeName = "keel"

// WaitLead blocks until the lead has messages to read (it returns how many) or the team has
// settled (0). A look that cannot read the team is no conclusion: it is shown (a notice, once
// per problem) and the wait goes on. Work left with every member dead wakes the lead once
// with a message saying so; if the lead leaves it at that, the team counts as settled and a
// notice names what was left undone.
func (t *Team) WaitLead(ctx context.Context) (int, error) {
	if t.leadInbox == nil {
		return 0, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	mail, err1 := t.be.Mailbox().Watch(ctx, LeadAlias)
	members, err2 := t.be.Records().Watch(ctx, "members/")
	board, err3 := t.be.Board().Watch(ctx)
	if err := errors.Join(err1, err2, err3); err != nil {
		return 0, err
	}
	// Liveness changes without a write (a dead member's heartbeat just stops), so look
	// again at the heartbeat's pace too.
	tick := time.NewTicker(t.heartbeatEvery())
	defer tick.Stop()
	for {
		if n := t.leadInbox.Unread(ctx); n > 0 {
			return n, nil
		}
		if t.chaseUnanswered(ctx) {
			continue
		}
		s := t.settle(ctx)
		t.noteTrouble(s)
		switch s.kind {
		case settled:
			t.logger.Debug("team settled", "why", s.why)
			return 0, nil
		case stalled:
			if t.stallTold() == s.key {
				text := fmt.Sprintf("team %s: stopping with work left undone: %s", t.cfg.Name, s.why)
				t.logger.Warn("team stalled", "why", s.why)
				t.emit(event.Notice{Level: "warn", Text: text})
				return 0, nil
			}
			if err := t.tellStall(ctx, s); err != nil {
				return 0, err
			}
			continue
		case busy:
			t.mu.Lock()
			t.stalledKey = "" // work resumed: a later stall is news again
			t.mu.Unlock()
		}
		select {
		case <-ctx.Done():
			return 0, context.Cause(ctx)
		case <-mail:
		case <-members:
		case <-board:
		case <-tick.C:
		}
	}
}

// noteTrouble shows a look that could not read the team, once per problem, and that it
// can again once it can.
func (t *Team) noteTrouble(s settlement) {
	t.mu.Lock()
	prev := t.trouble
	if s.kind == unreadable {
		t.trouble = s.why
	} else {
		t.trouble = ""
	}
	t.mu.Unlock()
	switch {
	case s.kind == unreadable && s.why != prev:
		t.logger.Warn("team unreadable", "why", s.why)
		t.emit(event.Notice{Level: "warn", Text: fmt.Sprintf("team %s: %s; waiting for the team until it can be read", t.cfg.Name, s.why)})
	case s.kind != unreadable && prev != "":
		t.emit(event.Notice{Level: "info", Text: fmt.Sprintf("team %s: readable again", t.cfg.Name)})
	}
}

func (t *Team) stallTold() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stalledKey
}

// tellStall writes the lead that work is left with no member alive to do it.
func (t *Team) tellStall(ctx context.Context, s settlement) error {
	text := s.why + ". Spawn a teammate again with the Agent tool and its name to bring it back with its history, " +
		"take the tasks on yourself, or end your turn to stop the team with them undone."
	msg := coord.Message{ID: newID(), From: RuntimeName, To: LeadAlias, Text: text, Summary: "no teammate is running"}
	if err := t.be.Mailbox().Send(ctx, msg); err != nil {
		return fmt.Errorf("tell the lead its team stalled: %w", err)
	}
	t.mu.Lock()
	t.stalledKey = s.key
	t.mu.Unlock()
	return nil
}

// shuttingDown says Shutdown is in progress: the members' answers and idle notices are the
// runtime's, not the lead model's.
func (t *Team) shuttingDown() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopping
}

// Shutdown stops every running member gracefully: a shutdown request each, answered by the
// member (or by its runtime when it is idle). Members still running after the timeout are
// aborted — their loops cancelled in this process, their processes ended when this process's
// team started them on this host — and the tasks they held go back to the board; members
// that joined by themselves or run on other hosts are left to their leases.
func (t *Team) Shutdown(ctx context.Context, reason string) error {
	t.mu.Lock()
	t.stopping = true
	t.mu.Unlock()
	defer func() {
		t.mu.Lock()
		t.stopping = false
		t.mu.Unlock()
	}()
	recs, err := t.records(ctx)
	if err != nil && len(recs) == 0 {
		return err
	}
	if reason == "" {
		reason = "the team's work is done"
	}
	var waiting []string
	for _, r := range recs {
		if r.Name == LeadAlias {
			continue
		}
		if s := t.liveness(r); s == StateStopped || s == StateDead {
			continue
		}
		t.markStopping(ctx, r.Name)
		data, _ := jsonOf(Structured{Type: TypeShutdownRequest, Reason: reason})
		msg := coord.Message{ID: newID(), From: LeadAlias, To: r.Name, Type: TypeShutdownRequest, Data: data, Summary: "shutdown request"}
		if err := t.be.Mailbox().Send(ctx, msg); err != nil {
			t.logger.Warn("send shutdown request", "member", r.Name, "err", err)
		}
		t.wakeLocal(r.Name)
		waiting = append(waiting, r.Name)
	}
	if len(waiting) == 0 {
		return nil
	}
	wctx, cancel := context.WithTimeout(ctx, t.cfg.ShutdownTimeout)
	defer cancel()
	watch, err := t.be.Records().Watch(wctx, "members/")
	if err != nil {
		return err
	}
	tick := time.NewTicker(t.heartbeatEvery())
	defer tick.Stop()
	for {
		var left []string
		for _, name := range waiting {
			if r, err := t.record(ctx, name); err == nil {
				if s := t.liveness(r); s != StateStopped && s != StateDead {
					left = append(left, name)
				}
			}
		}
		if len(left) == 0 {
			return nil
		}
		select {
		case <-wctx.Done():
			aborted, elsewhere := t.abort(ctx, left)
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			var errs []error
			if len(aborted) > 0 {
				errs = append(errs, fmt.Errorf("%v did not stop within %v and were aborted", aborted, t.cfg.ShutdownTimeout))
			}
			if len(elsewhere) > 0 {
				errs = append(errs, fmt.Errorf("%v did not stop within %v and run where the lead cannot abort them; their tasks go back to the board when their leases lapse",
					elsewhere, t.cfg.ShutdownTimeout))
			}
			return fmt.Errorf("shut down team %s: %w", t.cfg.Name, errors.Join(errs...))
		case <-watch:
		case <-tick.C:
		}
	}
}

// abort ends the named members: the loops of those this process runs, the processes of those
// this team started on this host (their tasks released and their records stopped here, since
// they cannot). It returns whom it aborted and whom it could not reach.
func (t *Team) abort(ctx context.Context, names []string) (aborted, elsewhere []string) {
	ctx = context.WithoutCancel(ctx)
	for _, name := range names {
		t.mu.Lock()
		m := t.members[name]
		t.mu.Unlock()
		if m != nil {
			m.mu.Lock()
			m.stopping = true
			m.mu.Unlock()
			m.cancel(errors.New("shutdown timed out"))
			<-m.done
			m.stop()
			aborted = append(aborted, name)
			continue
		}
		r, err := t.record(ctx, name)
		if err != nil || r.Host != t.host || r.PID <= 0 || (r.Runner != RunnerProcess && r.Runner != RunnerTmux) {
			elsewhere = append(elsewhere, name)
			continue
		}
		if !killTeammate(r.PID, max(t.heartbeatEvery(), time.Second)) {
			t.logger.Warn("teammate process does not end", "member", name, "pid", r.PID)
			elsewhere = append(elsewhere, name)
			continue
		}
		if task := t.heldBy(ctx, name); task != "" {
			if _, err := t.be.Board().Release(ctx, task, name); err != nil {
				t.logger.Warn("release aborted teammate's task", "member", name, "task", task, "err", err)
			}
		}
		if err := t.updateRecord(ctx, name, func(r *Record) { r.State, r.Task = StateStopped, "" }); err != nil {
			t.logger.Warn("record aborted teammate", "member", name, "err", err)
		}
		t.emit(event.TeammateState{Origin: event.Origin{AgentID: r.ID, AgentName: name}, Name: name, Color: r.Color, State: string(StateStopped)})
		aborted = append(aborted, name)
	}
	return aborted, elsewhere
}
