package session

import (
	"context"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
)

// chanSink forwards a run's events to the Send iterator and records its messages.
type chanSink struct {
	s  *Session
	ch chan<- event.Event
}

func (k *chanSink) Emit(e event.Event) { k.ch <- e }

func (k *chanSink) Append(ctx context.Context, m message.Message) (string, error) {
	return uuid.NewString(), nil
}

func (k *chanSink) EndTurn(ctx context.Context) error { return nil }
