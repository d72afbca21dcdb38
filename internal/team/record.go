package team

import (
	"errors"
	"os"
	"syscall"
	"time"

	"github.com/keel-dev/keel/internal/message"
)

// State is what a member is doing, as ListAgents and the UI show it.
type State string

// The states. Dead is never recorded: it is what a working or idle member whose heartbeat
// stopped (or whose process is gone) is seen as.
const (
	StateWorking State = "working"
	StateIdle    State = "idle"
	StateStopped State = "stopped"
	StateDead    State = "dead"
)

// Runners: where a member's loop runs.
const (
	RunnerLead      = "lead"
	RunnerInProcess = "in-process"
	RunnerProcess   = "process"
	RunnerTmux      = "tmux"
)

// Record is a member as the team's records hold it (key members/<name>).
type Record struct {
	ID    string `json:"id"`
	Name  string `json:"name"`
	Alias string `json:"alias,omitempty"`
	Color string `json:"color,omitempty"`
	// AgentType is the agent definition the member runs.
	AgentType string `json:"agentType"`
	Model     string `json:"model,omitempty"`
	Runner    string `json:"runner"`
	State     State  `json:"state"`
	// Task is the board task the member holds, if any.
	Task string `json:"task,omitempty"`
	PID  int    `json:"pid"`
	Host string `json:"host"`
	// Instance names the team handle that writes the record (one process may hold several).
	Instance string `json:"instance,omitempty"`
	// ProcStart is when the process PID started (see procStart; 0 where unknown), so a pid
	// reused by another process is not taken for the member's.
	ProcStart uint64    `json:"procStart,omitempty"`
	Heartbeat time.Time `json:"heartbeat"`
	Started   time.Time `json:"started"`
	// Spec is what the member was spawned with, so it can be started again on resume.
	Spec       Spec          `json:"spec"`
	Transcript string        `json:"transcript,omitempty"`
	Pane       string        `json:"pane,omitempty"`
	Usage      message.Usage `json:"usage"`
	Turns      int           `json:"turns,omitempty"`
	// Stopping says a shutdown was asked of the member and not declined: it reads no new
	// messages, so a send to it is refused rather than accepted and left unread. The lead sets
	// it before sending the request; the member keeps it until it declines or starts again.
	Stopping bool `json:"stopping,omitempty"`

	rev uint64
}

// liveness is the state a member is seen in now, judged by what can be known rather than by
// a heartbeat's age wherever something better exists. A member run by this very handle is
// alive exactly while its loop's goroutine runs (the lead's own record in the lead's handle):
// a heartbeat late on a loaded machine says nothing about it. A member run by another process
// on this host is alive while that process is ([pidAlive], the pid's start time matching). Only a member on another host, or
// of another handle in this process, is judged by its heartbeat: dead once its record has gone unwritten for longer
// than its lease and a margin ([Team.deadAfter]), measured by this handle's own clock from
// when it saw the heartbeat change ([Team.silence]), so hosts need not agree on the time.
func (t *Team) liveness(r Record) State {
	if r.State == StateStopped {
		return StateStopped
	}
	if r.Host == t.host && r.PID > 0 && r.PID != t.pid {
		if !pidAlive(r.PID) || (r.ProcStart != 0 && procStart(r.PID) != r.ProcStart) {
			return StateDead
		}
		return r.State
	}
	if r.Host == t.host && r.PID == t.pid && r.Instance == t.instance {
		if t.runsHere(r.Name) || (r.Runner == RunnerLead && t.cfg.Lead) {
			return r.State
		}
		if t.endedAs(r.Name) == StateStopped {
			return StateStopped // r was read before the member recorded that it stopped
		}
		return StateDead // its loop ended here without recording that it stopped
	}
	if t.silence(r) > t.deadAfter() {
		return StateDead
	}
	return r.State
}

// deadAfter is how long a member's heartbeat may be silent before it counts as dead: its
// lease (a claim lapses then anyway) plus half as much again, at least a second. The
// heartbeat writes five times a lease, so a member seen dead missed at least seven.
func (t *Team) deadAfter() time.Duration { return t.cfg.Lease + max(t.cfg.Lease/2, time.Second) }

// sighting is what this handle last saw of a member's heartbeat: the record's revision, its
// heartbeat field, and when (by this handle's clock) that heartbeat was first seen.
type sighting struct {
	id  string
	rev uint64
	hb  time.Time
	at  time.Time
}

// silence is how long r's heartbeat has not moved. The first sight of a member (of this
// record id: a member spawned again is seen afresh) trusts the heartbeat's own time (never in
// the future); after that only a changed heartbeat in a newer revision counts, timed by this
// handle's clock.
func (t *Team) silence(r Record) time.Duration {
	now := t.cfg.Now()
	first := r.Heartbeat
	if first.After(now) {
		first = now
	}
	if r.rev == 0 || r.Name == "" {
		return now.Sub(first)
	}
	t.seenMu.Lock()
	defer t.seenMu.Unlock()
	s, ok := t.seen[r.Name]
	switch {
	case !ok || s.id != r.ID:
		s = sighting{id: r.ID, rev: r.rev, hb: r.Heartbeat, at: first}
	case r.rev > s.rev && !r.Heartbeat.Equal(s.hb):
		s = sighting{id: r.ID, rev: r.rev, hb: r.Heartbeat, at: now}
	case r.rev > s.rev:
		s.rev = r.rev
	}
	// A revision older than the one seen is a read that started before it (the lead's
	// loops read records concurrently): taken for a moved heartbeat, it would restart the
	// silence of a member that has stopped beating.
	if t.seen == nil {
		t.seen = map[string]sighting{}
	}
	t.seen[r.Name] = s
	return now.Sub(s.at)
}

// pidAlive reports whether a process with that id exists on this machine.
func pidAlive(pid int) bool {
	p, err := os.FindProcess(pid)
	if err != nil {
		return false
	}
	err = p.Signal(syscall.Signal(0))
	return err == nil || errors.Is(err, syscall.EPERM)
}

// endedAs is the last state of the member's loop this handle ran, "" when it ran none.
func (t *Team) endedAs(name string) State {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.ended[name]
}
