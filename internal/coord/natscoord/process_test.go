package natscoord_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/waittest"
)

// The tests in this file run real processes: the test binary re-executed in a child role
// (NATSCOORD_CHILD), talking to the parent through a NATS server the parent runs.

func TestMain(m *testing.M) {
	if role := os.Getenv("NATSCOORD_CHILD"); role != "" {
		os.Exit(child(role))
	}
	os.Exit(m.Run())
}

func child(role string) int {
	ctx := context.Background()
	b, err := openChild(ctx)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer b.Close()
	name := os.Getenv("NATSCOORD_NAME")
	if code, ok := benchChild(ctx, role, name, b); ok {
		return code
	}
	msgs, err := b.Mailbox().Fetch(ctx, name, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	w := bufio.NewWriter(os.Stdout)
	for _, m := range msgs {
		fmt.Fprintln(w, "got", m.ID)
	}
	switch role {
	case "take":
		// Fetch, say what arrived, and die (killed) before acking: the crash between delivery
		// and ack.
		fmt.Fprintln(w, "holding")
		_ = w.Flush()
		select {}
	case "drain":
		for _, m := range msgs {
			if err := b.Mailbox().Ack(ctx, name, m.ID); err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
		}
		fmt.Fprintln(w, "acked")
		_ = w.Flush()
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown child role", role)
	return 2
}

// runChild starts the test binary in role and returns its output lines.
func runChild(t *testing.T, url, role string) (*exec.Cmd, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "NATSCOORD_CHILD="+role, "NATSCOORD_URL="+url, "NATSCOORD_TEAM=proc", "NATSCOORD_NAME=worker")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, lines
}

// readUntil collects the ids a child reports until its line end.
func readUntil(t *testing.T, lines <-chan string, end string) []string {
	t.Helper()
	var ids []string
	for {
		line := waittest.Recv(t, "the child to report", lines)
		if line == end {
			return ids
		}
		if id, ok := strings.CutPrefix(line, "got "); ok {
			ids = append(ids, id)
		}
	}
}

// A receiver process killed with SIGKILL after it fetched its mail but before it acked: the
// next process gets the same messages again (redelivery), acks them once, and a sender's late
// retry of one of them is dropped (dedup by id).
func TestKilledReceiverGetsMailAgain(t *testing.T) {
	ctx := waittest.Context(t)
	srv := natstest.Start(t)
	b := open(t, natscoord.Options{URL: srv.URL(), Team: "proc"})
	var sent []string
	var first coord.Message
	for i := range 3 {
		m := coord.Message{ID: coord.NewID(), From: "lead", To: "worker", Text: fmt.Sprint("job ", i)}
		if i == 0 {
			first = m
		}
		if err := b.Mailbox().Send(ctx, m); err != nil {
			t.Fatal(err)
		}
		sent = append(sent, m.ID)
	}
	cmd, lines := runChild(t, srv.URL(), "take")
	got := readUntil(t, lines, "holding")
	if diff := cmp.Diff(sent, got); diff != "" {
		t.Fatalf("first receiver mismatch (-want +got):\n%s", diff)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()

	cmd, lines = runChild(t, srv.URL(), "drain")
	again := readUntil(t, lines, "acked")
	if diff := cmp.Diff(sent, again); diff != "" {
		t.Errorf("redelivery after the kill mismatch (-want +got):\n%s", diff)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("drain: %v", err)
	}
	// The children's steps took their own time limits; what follows has one of its own.
	ctx = waittest.Context(t)
	if err := b.Mailbox().Send(ctx, first); err != nil { // the sender's late retry
		t.Fatal(err)
	}
	if left, err := b.Mailbox().Fetch(ctx, "worker", 0); err != nil || len(left) != 0 {
		t.Errorf("after the drain and a resend the inbox holds %v (%v); want nothing", left, err)
	}
	hist, err := b.Mailbox().(coord.MailLog).Delivered(ctx, "worker", 0)
	if err != nil || len(hist) != len(sent) {
		t.Errorf("delivered history: %d messages (%v); want each of the %d once", len(hist), err, len(sent))
	}
}
