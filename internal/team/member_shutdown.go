package team

import (
	"context"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/event"
)

// A member's side of a shutdown: agreeing to it, answering the lead, and stopping.

func (m *Member) isStopping() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.stopping
}

// stop records that the member stopped on request, releasing the task it held.
func (m *Member) stop() {
	ctx := context.WithoutCancel(m.ctx)
	m.mu.Lock()
	task := m.task
	m.task = ""
	m.state = StateStopped
	m.mu.Unlock()
	if task != "" {
		_, _ = m.t.be.Board().Release(ctx, task, m.name)
	}
	// The event goes out before the record says stopped: a Shutdown waiting on the records
	// returns only after its members' last events were shown, never with them still to come.
	m.t.emit(event.TeammateState{Origin: m.origin(), Name: m.name, Color: m.color, State: string(StateStopped)})
	if err := m.writeRecord(ctx); err != nil {
		m.t.logger.Warn("record stopped teammate", "member", m.name, "err", err)
	}
}

// answerShutdown approves a shutdown request the model left unanswered now that the member
// is between turns.
func (m *Member) answerShutdown() {
	m.mu.Lock()
	req := m.shutdown
	m.shutdown = nil
	if req != nil {
		m.stopping = true
	}
	m.mu.Unlock()
	if req == nil {
		return
	}
	s, _ := structuredOf(*req)
	m.respondShutdown(*req, s, true, "")
	m.signal()
}

func (m *Member) respondShutdown(req coord.Message, s Structured, approve bool, reason string) {
	id := s.RequestID
	if id == "" {
		id = req.ID
	}
	data, _ := jsonOf(Structured{Type: TypeShutdownResponse, RequestID: id, Approve: &approve, Reason: reason})
	msg := coord.Message{ID: newID(), From: m.name, To: req.From, Type: TypeShutdownResponse, Data: data, Summary: "shutdown " + map[bool]string{true: "approved", false: "declined"}[approve]}
	if err := m.t.be.Mailbox().Send(context.WithoutCancel(m.ctx), msg); err != nil {
		m.t.logger.Warn("answer shutdown", "member", m.name, "err", err)
	}
}
