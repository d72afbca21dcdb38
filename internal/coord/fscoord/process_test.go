package fscoord_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/waittest"
)

// The tests in this file run real processes: the test binary re-executed in a child role
// (FSCOORD_CHILD), talking to the parent through one team directory.

func TestMain(m *testing.M) {
	if role := os.Getenv("FSCOORD_CHILD"); role != "" {
		os.Exit(child(role, os.Getenv("FSCOORD_DIR"), os.Args))
	}
	os.Exit(m.Run())
}

func child(role, dir string, _ []string) int {
	poll, _ := time.ParseDuration(os.Getenv("FSCOORD_POLL"))
	b, err := fscoord.Open(dir, fscoord.Options{PollInterval: poll})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer b.Close()
	ctx := context.Background()
	name := os.Getenv("FSCOORD_NAME")
	switch role {
	case "hold":
		// Claim the first task, say so, then hang until killed.
		t, err := b.Board().ClaimNext(ctx, name, leaseOf())
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("claimed", t.ID)
		select {}
	case "claim":
		// Wait for the start line on stdin, then drain the board.
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		w := bufio.NewWriter(os.Stdout)
		defer w.Flush()
		for {
			t, err := b.Board().ClaimNext(ctx, name, time.Minute)
			if errors.Is(err, coord.ErrNoTask) {
				return 0
			}
			if err == nil {
				done := coord.StatusCompleted
				_, err = b.Board().Update(ctx, t.ID, coord.TaskChange{Status: &done, IfOwner: &name})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			fmt.Fprintln(w, "claimed", t.ID)
		}
	case "echo":
		// Answer every message to echo with one to the sender, until "stop".
		ch, err := b.Mailbox().Watch(ctx, "echo")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		fmt.Println("ready")
		for range ch {
			msgs, err := b.Mailbox().Fetch(ctx, "echo", 0)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1
			}
			for _, m := range msgs {
				if m.Text == "stop" {
					return 0
				}
				// The reply carries this trip's latency; its own is measured on arrival.
				lat := time.Since(m.Sent)
				reply := coord.Message{ID: "re-" + m.ID, From: "echo", To: m.From, Text: strconv.FormatInt(int64(lat), 10), Sent: time.Now()}
				if err := b.Mailbox().Send(ctx, reply); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1
				}
				if err := b.Mailbox().Ack(ctx, "echo", m.ID); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1
				}
			}
		}
	}
	fmt.Fprintln(os.Stderr, "unknown child role", role)
	return 2
}

func leaseOf() time.Duration {
	d, err := time.ParseDuration(os.Getenv("FSCOORD_LEASE"))
	if err != nil {
		return time.Minute
	}
	return d
}

// start runs the test binary as a child in role; its stdout is returned as lines.
func start(t testing.TB, dir, role, name string, env ...string) (*exec.Cmd, io.WriteCloser, <-chan string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append([]string{"FSCOORD_CHILD=" + role, "FSCOORD_DIR=" + dir, "FSCOORD_NAME=" + name}, env...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string, 1024)
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
	return cmd, in, lines
}

// A claimer killed with SIGKILL while holding a task: its lease lapses and another member
// takes the task over; the board is not wedged.
func TestKilledClaimerLosesTask(t *testing.T) {
	ctx := waittest.Context(t)
	dir := t.TempDir()
	b := open(t, dir)
	if _, err := b.Board().Create(ctx, coord.Task{Subject: "long"}); err != nil {
		t.Fatal(err)
	}
	lease := waittest.Scale(500 * time.Millisecond)
	cmd, _, lines := start(t, dir, "hold", "alice", "FSCOORD_LEASE="+lease.String())
	if got := waittest.Recv(t, "the child to claim", lines); got != "claimed 1" {
		t.Fatalf("child said %q", got)
	}
	// Each step has its own time limit: the child's start took one.
	if _, err := b.Board().Claim(waittest.Context(t), "1", "bob", time.Minute); !errors.Is(err, coord.ErrClaimed) {
		t.Fatalf("claim while alice lives: %v", err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	var got coord.Task
	ctx = waittest.Context(t)
	waittest.Until(t, "the lapsed task to be claimable", func() bool {
		tk, err := b.Board().ClaimNext(ctx, "bob", time.Minute)
		got = tk
		return err == nil
	})
	if got.ID != "1" || got.Owner != "bob" {
		t.Errorf("bob took over %+v", got)
	}
}

// Processes draining one board with ClaimNext never claim a task twice.
func TestProcessesClaimEachTaskOnce(t *testing.T) {
	res := claimRace(t, t.TempDir(), 8, 64)
	if res.double != 0 || res.claimed != 64 {
		t.Errorf("%d tasks claimed, %d double claims; want 64 and 0", res.claimed, res.double)
	}
}

type raceResult struct {
	claimed, double int
	elapsed         time.Duration
}

func claimRace(t testing.TB, dir string, procs, tasks int) raceResult {
	ctx := waittest.Context(t)
	b, err := fscoord.Open(dir, fscoord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	for i := range tasks {
		if _, err := b.Board().Create(ctx, coord.Task{Subject: fmt.Sprint("task ", i)}); err != nil {
			t.Fatal(err)
		}
	}
	type proc struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		lines <-chan string
	}
	var ps []proc
	for i := range procs {
		cmd, in, lines := start(t, dir, "claim", fmt.Sprint("m", i))
		ps = append(ps, proc{cmd, in, lines})
	}
	began := time.Now()
	for _, p := range ps {
		_, _ = io.WriteString(p.in, "go\n")
	}
	var (
		mu     sync.Mutex
		counts = map[string]int{}
		wg     sync.WaitGroup
	)
	for _, p := range ps {
		wg.Go(func() {
			for line := range p.lines {
				id, ok := strings.CutPrefix(line, "claimed ")
				if ok {
					mu.Lock()
					counts[id]++
					mu.Unlock()
				}
			}
			if err := p.cmd.Wait(); err != nil {
				t.Errorf("claimer: %v", err)
			}
		})
	}
	wg.Wait()
	res := raceResult{elapsed: time.Since(began), claimed: len(counts)}
	for _, n := range counts {
		res.double += n - 1
	}
	return res
}

// BenchmarkClaims64 measures claims per second with 64 processes contending for one board
// (each claim followed by its completion), and counts double claims, which must be 0.
//
//	go test -run '^$' -bench Claims64 -benchtime 3x ./internal/coord/fscoord/
func BenchmarkClaims64(b *testing.B) {
	const procs, tasks = 64, 256
	var total raceResult
	for b.Loop() {
		r := claimRace(b, b.TempDir(), procs, tasks)
		total.claimed += r.claimed
		total.double += r.double
		total.elapsed += r.elapsed
	}
	b.ReportMetric(float64(total.claimed)/total.elapsed.Seconds(), "claims/s")
	b.ReportMetric(float64(total.double), "double-claims")
}

// BenchmarkMailboxLatency measures the delivery latency of one message between two
// processes: each iteration sends a message to a child process that answers at once; both
// one-way trips are timed, from just before Send to just after the receiver's Fetch.
//
//	go test -run '^$' -bench MailboxLatency -benchtime 2000x ./internal/coord/fscoord/
func BenchmarkMailboxLatency(b *testing.B) {
	benchLatency(b, 0)
}

// BenchmarkMailboxLatencyPolling is the same with watches that poll every 100 ms (the
// fallback when fsnotify is unavailable).
func BenchmarkMailboxLatencyPolling(b *testing.B) {
	benchLatency(b, fscoord.DefaultPollInterval)
}

func benchLatency(b *testing.B, poll time.Duration) {
	ctx := b.Context()
	dir := b.TempDir()
	be, err := fscoord.Open(dir, fscoord.Options{PollInterval: poll})
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	env := []string{}
	if poll > 0 {
		env = append(env, "FSCOORD_POLL="+poll.String())
	}
	_, _, lines := start(b, dir, "echo", "echo", env...)
	if got := waittest.Recv(b, "the echo child", lines); got != "ready" {
		b.Fatalf("child said %q", got)
	}
	mb := be.Mailbox()
	ch, err := mb.Watch(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	i := 0
	for b.Loop() {
		i++
		if err := mb.Send(ctx, coord.Message{ID: coord.NewID(), From: "bench", To: "echo", Text: strconv.Itoa(i), Sent: time.Now()}); err != nil {
			b.Fatal(err)
		}
		for got := false; !got; {
			select {
			case <-ch:
			case <-time.After(waittest.Timeout()):
				b.Fatal("no answer from the echo child")
			}
			msgs, err := mb.Fetch(ctx, "bench", 0)
			if err != nil {
				b.Fatal(err)
			}
			for _, m := range msgs {
				there, err := strconv.ParseInt(m.Text, 10, 64)
				if err != nil {
					b.Fatalf("echo answered %q", m.Text)
				}
				lat = append(lat, time.Duration(there), time.Since(m.Sent))
				got = true
				if err := mb.Ack(ctx, "bench", m.ID); err != nil {
					b.Fatal(err)
				}
			}
		}
	}
	_ = mb.Send(ctx, coord.Message{ID: coord.NewID(), From: "bench", To: "echo", Text: "stop"})
	slices.Sort(lat)
	if len(lat) > 0 {
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
}
