package session

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/provider"
)

// sdkState is the state of the Send in progress that the SDK's options and requests reach:
// its prompt and turn id, its cancel, its thinking setting and its structured answer.
type sdkState struct {
	// mu guards thinking, cancel and the structured answer of the run in progress.
	mu         sync.Mutex
	thinking   *provider.Thinking
	structured json.RawMessage
	reminders  int
	// cancel interrupts the Send in progress (an answer that denies and interrupts).
	cancel context.CancelCauseFunc
	// prompt is the prompt of the Send in progress, for auto mode's classifier; turn names
	// it for hooks.
	prompt, turn string
}

func (st *sdkState) setCancel(c context.CancelCauseFunc) {
	st.mu.Lock()
	defer st.mu.Unlock()
	st.cancel = c
}

// interrupt ends the Send in progress, as Esc would.
func (st *sdkState) interrupt() {
	st.mu.Lock()
	c := st.cancel
	st.mu.Unlock()
	if c != nil {
		c(loop.ErrInterrupted)
	}
}

// beginRun clears the state of the previous run's SDK options.
func (s *Session) beginRun(prompt string) {
	s.sdk.mu.Lock()
	s.sdk.structured, s.sdk.reminders, s.sdk.prompt, s.sdk.turn = nil, 0, prompt, uuid.NewString()
	s.sdk.mu.Unlock()
}

// currentTurn names the Send in progress.
func (s *Session) currentTurn() string {
	s.sdk.mu.Lock()
	defer s.sdk.mu.Unlock()
	return s.sdk.turn
}

// currentPrompt is the prompt of the Send in progress.
func (s *Session) currentPrompt() string {
	s.sdk.mu.Lock()
	defer s.sdk.mu.Unlock()
	return s.sdk.prompt
}
