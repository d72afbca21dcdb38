package tui

import (
	"context"

	"github.com/keel-dev/keel"
)

// Asker carries permission questions from tool goroutines to the UI. Pass its Ask method as
// keel.Options.Ask before the session exists, then give the Asker to [Run].
type Asker struct {
	reqs chan askMsg
}

// askMsg is a pending question; the UI answers on reply exactly once.
type askMsg struct {
	req   keel.PermissionRequest
	reply chan keel.PermissionAnswer
}

// NewAsker returns an Asker with no UI attached yet; asks block until one reads them.
func NewAsker() *Asker { return &Asker{reqs: make(chan askMsg)} }

// Ask blocks until the user answers or ctx ends (then the call is denied).
func (a *Asker) Ask(ctx context.Context, req keel.PermissionRequest) keel.PermissionAnswer {
	m := askMsg{req: req, reply: make(chan keel.PermissionAnswer, 1)}
	select {
	case a.reqs <- m:
	case <-ctx.Done():
		return keel.PermissionAnswer{Reason: "interrupted by the user"}
	}
	select {
	case ans := <-m.reply:
		return ans
	case <-ctx.Done():
		return keel.PermissionAnswer{Reason: "interrupted by the user"}
	}
}
