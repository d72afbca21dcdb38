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
	Task      string    `json:"task,omitempty"`
	PID       int       `json:"pid"`
	Host      string    `json:"host"`
	Heartbeat time.Time `json:"heartbeat"`
	Started   time.Time `json:"started"`
	// Spec is what the member was spawned with, so it can be started again on resume.
	Spec       Spec          `json:"spec"`
	Transcript string        `json:"transcript,omitempty"`
	Pane       string        `json:"pane,omitempty"`
	Usage      message.Usage `json:"usage"`
	Turns      int           `json:"turns,omitempty"`

	rev uint64
}

// liveness is the state a member is seen in now.
func (t *Team) liveness(r Record) State {
	if r.State == StateStopped {
		return StateStopped
	}
	stale := 3*t.heartbeatEvery() + time.Second
	if t.cfg.Now().Sub(r.Heartbeat) > stale {
		return StateDead
	}
	if r.Host == t.host && r.PID > 0 && !pidAlive(r.PID) {
		return StateDead
	}
	return r.State
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
