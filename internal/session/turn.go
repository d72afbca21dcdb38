package session

import (
	"context"

	"github.com/keel-dev/keel/internal/loop"
)

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
