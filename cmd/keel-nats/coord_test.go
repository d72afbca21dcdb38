package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/coordpipe"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/waittest"
)

// coordConn runs `keel-nats coord` in-process with open as its first line; it returns the
// client's ends of its pipes and the channel its exit code arrives on.
func coordConn(t *testing.T, open coordpipe.NATS) (coordpipe.Conn, <-chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		code := run([]string{"coord"}, inR, outW, io.Discard)
		_ = outW.Close()
		_, _ = io.Copy(io.Discard, inR)
		exit <- code
	}()
	go func() {
		b, _ := json.Marshal(open)
		_, _ = inW.Write(append(b, '\n'))
	}()
	return coordpipe.Conn{R: outR, W: inW}, exit
}

// keel-nats coord serves a team on a NATS server: operations, the errors' identity and the
// watches cross, and closing the client ends it.
func TestCoordServesATeam(t *testing.T) {
	srv := natstest.Start(t)
	ctx := waittest.Context(t)
	conn, exit := coordConn(t, coordpipe.NATS{URL: srv.URL(), Team: "crew"})
	c, err := coordpipe.Dial(ctx, conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	watch, err := c.Board().Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	task, err := c.Board().Create(ctx, coord.Task{Subject: "port the parser"})
	if err != nil {
		t.Fatal(err)
	}
	waittest.Recv(t, "the board's watch after a create", watch)
	if _, err := c.Board().Claim(ctx, task.ID, "alice", time.Minute); err != nil {
		t.Fatal(err)
	}
	_, err = c.Board().Claim(ctx, task.ID, "bob", time.Minute)
	if !errors.Is(err, coord.ErrClaimed) || !strings.Contains(err.Error(), "alice") {
		t.Errorf("bob's claim of alice's task: %v; want coord.ErrClaimed naming alice", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if code := waittest.Recv(t, "keel-nats coord's exit", exit); code != 0 {
		t.Errorf("keel-nats coord exited %d after its client closed; want 0", code)
	}
	closed := make(chan struct{})
	go func() {
		for range watch {
		}
		close(closed)
	}()
	waittest.Recv(t, "the watch's channel closed with the client", closed)
}

// keel-nats coord lists the teams of a server, and says why it cannot open a team.
func TestCoordListsAndFails(t *testing.T) {
	srv := natstest.Start(t)
	ctx := waittest.Context(t)
	conn, _ := coordConn(t, coordpipe.NATS{URL: srv.URL(), Team: "blue"})
	c, err := coordpipe.Dial(ctx, conn, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Records().Put(ctx, "members/team-lead", json.RawMessage(`{"pid":7}`)); err != nil {
		t.Fatal(err)
	}
	_ = c.Close()

	conn, exit := coordConn(t, coordpipe.NATS{URL: srv.URL(), List: true, ListKey: "members/team-lead"})
	var teams []coord.TeamInfo
	if err := coordpipe.Ask(ctx, conn, &teams); err != nil {
		t.Fatal(err)
	}
	if len(teams) != 1 || teams[0].Name != "blue" || string(teams[0].Record.Value) != `{"pid":7}` {
		t.Errorf("listing %+v; want team blue with its lead's record", teams)
	}
	if code := waittest.Recv(t, "the listing's exit", exit); code != 0 {
		t.Errorf("listing exited %d", code)
	}

	conn, _ = coordConn(t, coordpipe.NATS{URL: srv.URL(), Team: "no such name!"})
	if _, err := coordpipe.Dial(ctx, conn, nil); !errors.Is(err, coord.ErrInvalid) || !strings.Contains(err.Error(), "no such name!") {
		t.Errorf("opening an invalid team: %v; want coord.ErrInvalid naming it", err)
	}
	var stderr bytes.Buffer
	if code := run([]string{"coord", "extra"}, strings.NewReader(""), io.Discard, &stderr); code != 2 || !strings.Contains(stderr.String(), `unexpected argument "extra"`) {
		t.Errorf("keel-nats coord extra: exit %d, %q", code, stderr.String())
	}
}

// The connection's state crosses the pipe: keel shows a lost connection and its return.
func TestCoordTellsConnectionState(t *testing.T) {
	srv := natstest.StartRestartable(t)
	conn, _ := coordConn(t, coordpipe.NATS{URL: srv.URL(), Team: "crew"})
	states := make(chan coordpipe.State, 64)
	c, err := coordpipe.Dial(waittest.Context(t), conn, func(st coordpipe.State) { states <- st })
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	srv.Stop()
	if st := waittest.Recv(t, "the lost connection", states); st.Connected || st.Err == nil {
		t.Errorf("first state after the server stopped: %+v; want disconnected, and why", st)
	}
	srv.Start()
	for {
		if st := waittest.Recv(t, "the connection back", states); st.Connected {
			break
		}
	}
}
