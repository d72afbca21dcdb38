package coordpipe_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/coordpipe"
	"github.com/keel-dev/keel/internal/waittest"
)

// stuck is a backend whose board's Get waits for its context and says when it ended.
type stuck struct {
	coord.Backend
	entered, cancelled chan struct{}
}

func (s *stuck) Board() coord.Board { return stuckBoard{Board: nil, s: s} }
func (s *stuck) Close() error       { return nil }

type stuckBoard struct {
	coord.Board
	s *stuck
}

func (b stuckBoard) Get(ctx context.Context, id string) (coord.Task, error) {
	close(b.s.entered)
	<-ctx.Done()
	close(b.s.cancelled)
	return coord.Task{}, ctx.Err()
}

// A caller's context that ends cancels the operation on the server's side too.
func TestCancelReachesTheServer(t *testing.T) {
	be := &stuck{entered: make(chan struct{}), cancelled: make(chan struct{})}
	c := piped(t, be)
	defer c.Close()
	ctx, cancel := context.WithCancel(waittest.Context(t))
	got := make(chan error, 1)
	go func() {
		_, err := c.Board().Get(ctx, "1")
		got <- err
	}()
	waittest.Recv(t, "the operation reaching the server", be.entered)
	cancel()
	if err := waittest.Recv(t, "the caller's error", got); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Get: %v; want context.Canceled", err)
	}
	waittest.Recv(t, "the server's operation cancelled", be.cancelled)
}

// A server that could not open its backend says why, with the error's identity.
func TestDialReportsOpenFailure(t *testing.T) {
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	go func() {
		srv := coordpipe.NewServer(toServer, fromServer)
		var open struct{ Team string }
		if err := srv.ReadOpen(&open); err != nil {
			srv.Fail(err)
		} else {
			srv.Fail(fmt.Errorf("open team %s: %w", open.Team, coord.ErrInvalid))
		}
		_ = fromServer.Close()
		_, _ = io.Copy(io.Discard, toServer)
	}()
	go func() { _, _ = fmt.Fprintln(fromClient, `{"Team":"red"}`) }()
	_, err := coordpipe.Dial(waittest.Context(t), coordpipe.Conn{R: toClient, W: fromClient}, nil)
	if !errors.Is(err, coord.ErrInvalid) || !strings.Contains(err.Error(), "open team red") {
		t.Errorf("Dial: %v; want the server's error, wrapping coord.ErrInvalid", err)
	}
}

// A server that goes away fails the calls that follow and closes the watches.
func TestServerGoneEndsWatchesAndCalls(t *testing.T) {
	toServer, fromClient := io.Pipe()
	toClient, fromServer := io.Pipe()
	go func() {
		srv := coordpipe.NewServer(toServer, fromServer)
		srv.State(coordpipe.State{Connected: false, URL: "nats://x", Err: errors.New("gone")})
		_ = srv.Reply(nil) // the ready line; then the server dies at once
		var req map[string]any
		_ = srv.ReadOpen(&req) // the watch's request
		_ = fromServer.Close()
	}()
	states := make(chan coordpipe.State, 1)
	c, err := coordpipe.Dial(waittest.Context(t), coordpipe.Conn{R: toClient, W: fromClient}, func(st coordpipe.State) { states <- st })
	if err != nil {
		t.Fatal(err)
	}
	if st := waittest.Recv(t, "the state line", states); st.Connected || st.URL != "nats://x" || st.Err == nil || st.Err.Error() != "gone" {
		t.Errorf("state %+v; want the lost connection the server told", st)
	}
	_, err = c.Board().Watch(waittest.Context(t))
	if err == nil || !strings.Contains(err.Error(), "the coordination server ended") {
		t.Errorf("watch on a server that died: %v; want an error saying it ended", err)
	}
	if _, err := c.Records().Get(waittest.Context(t), "k"); err == nil || !strings.Contains(err.Error(), "the coordination server ended") {
		t.Errorf("a call after the server died: %v", err)
	}
	_ = c.Close()
	if _, err := c.Records().Get(waittest.Context(t), "k"); !errors.Is(err, coord.ErrClosed) {
		t.Errorf("a call after Close: %v; want coord.ErrClosed", err)
	}
}
