package keel

import (
	"context"
	"errors"
	"iter"
	"time"

	"github.com/keel-dev/keel/internal/event"
)

// TeamMember is one member of the session's agent team, as the team's records show it.
type TeamMember struct {
	Name      string
	Color     string
	AgentID   string
	AgentType string
	// State is working, idle, stopped or dead (a heartbeat that stopped, a process gone).
	State string
	// Task is the id of the board task the member holds, if any.
	Task string
	// Runner is lead, in-process, process or tmux.
	Runner    string
	Heartbeat time.Time
}

// TeamTask is one task of the team's board.
type TeamTask struct {
	ID, Subject, Description, Status, Owner string
	BlockedBy, Blocks                       []string
}

// ErrNoTeam is returned by the team methods of a session without agent teams.
var ErrNoTeam = errors.New("agent teams are off in this session")

// TeamName returns the session's team, or "" without one.
func (s *Session) TeamName() string {
	if t := s.s.Team().Current(); t != nil {
		return t.Name()
	}
	return ""
}

// TeamMembers lists the team: the lead first, then the teammates in the order they joined.
func (s *Session) TeamMembers(ctx context.Context) ([]TeamMember, error) {
	t := s.s.Team().Current()
	if t == nil {
		return nil, ErrNoTeam
	}
	ms, err := t.Members(ctx)
	out := make([]TeamMember, 0, len(ms))
	for _, m := range ms {
		out = append(out, TeamMember{Name: m.Name, Color: m.Color, AgentID: m.AgentID, AgentType: m.AgentType, State: string(m.State),
			Task: m.Task, Runner: m.Runner, Heartbeat: m.Heartbeat})
	}
	return out, err
}

// TeamTasks returns the team's task board in id order.
func (s *Session) TeamTasks(ctx context.Context) ([]TeamTask, error) {
	t := s.s.Team().Current()
	if t == nil {
		return nil, ErrNoTeam
	}
	tasks, err := t.Backend().Board().List(ctx)
	out := make([]TeamTask, 0, len(tasks))
	for _, tk := range tasks {
		out = append(out, TeamTask{ID: tk.ID, Subject: tk.Subject, Description: tk.Description, Status: string(tk.Status), Owner: tk.Owner,
			BlockedBy: tk.BlockedBy, Blocks: tk.Blocks})
	}
	return out, err
}

// MessageTeammate sends text to a member ("*" for every one) from the user; the member
// reads it at its next step.
func (s *Session) MessageTeammate(ctx context.Context, to, text string) error {
	t := s.s.Team().Current()
	if t == nil {
		return ErrNoTeam
	}
	_, err := t.SendFromUser(ctx, to, text)
	return err
}

// TeamUnread counts the messages from teammates that wait for the lead (the main agent).
func (s *Session) TeamUnread(ctx context.Context) int { return s.s.Team().LeadUnread(ctx) }

// PendingReports counts the background agents' reports that wait for the main agent's next
// turn ([Session.SendPending] gives it one).
func (s *Session) PendingReports() int { return s.s.Agents().Pending() }

// SendPending gives the main agent a turn for what waits for it: teammates' messages and
// background agents' reports. It yields nothing when nothing waits.
func (s *Session) SendPending(ctx context.Context) iter.Seq2[Event, error] {
	return events(s.s.Agents().SendPending(ctx))
}

// WaitBackground blocks until background agents reported or teammates wrote to the lead
// (it returns how many reports wait; give the agent a turn with [Session.SendPending]), or
// until nothing is left running — then a settled team has been shut down, and it returns 0.
func (s *Session) WaitBackground(ctx context.Context) (int, error) {
	return s.s.Agents().WaitBackground(ctx)
}

// OnIdleEvents makes events of work that goes on between Sends (teammates, background
// agents) reach fn as they happen; fn is called from other goroutines. Without it they are
// delivered with the next Send.
func (s *Session) OnIdleEvents(fn func(Event)) {
	if fn == nil {
		s.s.Agents().SetIdleEvents(nil)
		return
	}
	s.s.Agents().SetIdleEvents(func(e event.Event) {
		if pub := publicEvent(e); pub != nil {
			fn(pub)
		}
	})
}
