package team

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/keel-dev/keel/internal/coord"
)

// Lifecycle of a headless lead: after its prompt, `keel -p` waits for its team as it waits
// for background agents. WaitLead returns when something should wake the lead's model (a
// message that is not a mere idle notice), or when the team is done — every member idle or
// stopped with nothing left it could claim — at which point the caller shuts the team down.

// Settled says whether the team has finished: no member working, no task anyone could take
// now or once a lease lapses, and nothing unread for the lead.
func (t *Team) Settled(ctx context.Context) (bool, string) {
	recs, err := t.records(ctx)
	if err != nil && len(recs) == 0 {
		return false, fmt.Sprintf("members unreadable: %v", err)
	}
	var live []string
	for _, r := range recs {
		if r.Name == LeadAlias {
			continue
		}
		switch t.liveness(r) {
		case StateWorking:
			return false, r.Name + " is working"
		case StateIdle:
			live = append(live, r.Name)
		}
	}
	if t.leadInbox != nil && t.leadInbox.Unread(ctx) > 0 {
		return false, "the lead has unread messages"
	}
	if len(live) == 0 {
		return true, "no member is running"
	}
	tasks, _ := t.be.Board().List(ctx)
	all := map[string]coord.Task{}
	for _, tk := range tasks {
		all[tk.ID] = tk
	}
	now := t.cfg.Now()
	for _, tk := range tasks {
		if tk.Status == coord.StatusInProgress && !tk.LeaseUntil.IsZero() && tk.LeaseUntil.After(now) {
			if owner, err := t.record(ctx, tk.Owner); err != nil || t.liveness(owner) == StateDead {
				return false, fmt.Sprintf("task %s waits for its dead owner's lease to lapse", tk.ID)
			}
		}
	}
	for _, name := range live {
		if tk, ok := coord.NextClaim(all, name, now); ok {
			return false, fmt.Sprintf("task %s is claimable by %s", tk.ID, name)
		}
	}
	return true, "every member is idle and nothing is claimable"
}

// WaitLead blocks until the lead has messages to read (it returns how many) or the team has
// settled (0).
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
		if done, why := t.Settled(ctx); done {
			t.logger.Debug("team settled", "why", why)
			return 0, nil
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

// shuttingDown says Shutdown is in progress: the members' answers and idle notices are the
// runtime's, not the lead model's.
func (t *Team) shuttingDown() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.stopping
}

// Shutdown stops every running member gracefully: a shutdown request each, answered by the
// member (or by its runtime when it is idle); members still running after the timeout are
// aborted (in this process) or left to their leases (elsewhere).
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
			t.abort(left)
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return fmt.Errorf("shut down team %s: %v did not stop within %v and were aborted", t.cfg.Name, left, t.cfg.ShutdownTimeout)
		case <-watch:
		case <-tick.C:
		}
	}
}

// abort cancels the loops of the named members that run in this process.
func (t *Team) abort(names []string) {
	for _, name := range names {
		t.mu.Lock()
		m := t.members[name]
		t.mu.Unlock()
		if m == nil {
			continue
		}
		m.mu.Lock()
		m.stopping = true
		m.mu.Unlock()
		m.cancel(errors.New("shutdown timed out"))
		<-m.done
		m.stop()
	}
}
