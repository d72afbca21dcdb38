package natscoord_test

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
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/waittest"
)

// The benchmarks in this file measure both backends in one run, with real processes on both
// sides (the test binary re-executed as a child): mailbox latency between two processes and
// claims per second with 64 contending processes.
//
//	go test -run '^$' -bench Backends -benchtime 1x ./internal/coord/natscoord/
//
// (-benchtime 1x: each iteration of the latency benchmarks is already 500 round trips and
// each iteration of the claims benchmarks a whole 64-process race.)

// backendEnv says how a child reaches the store: the fs backend's directory or NATS.
type backendEnv struct {
	kind, dir, url, team string
}

func (e backendEnv) vars() []string {
	return []string{"NATSCOORD_BACKEND=" + e.kind, "NATSCOORD_DIR=" + e.dir, "NATSCOORD_URL=" + e.url, "NATSCOORD_TEAM=" + e.team}
}

func (e backendEnv) open(ctx context.Context) (coord.Backend, error) {
	if e.kind == "fs" {
		return fscoord.Open(e.dir, fscoord.Options{})
	}
	return natscoord.Open(ctx, natscoord.Options{URL: e.url, Team: e.team})
}

// openChild opens the store a child process was pointed at.
func openChild(ctx context.Context) (coord.Backend, error) {
	e := backendEnv{kind: os.Getenv("NATSCOORD_BACKEND"), dir: os.Getenv("NATSCOORD_DIR"), url: os.Getenv("NATSCOORD_URL"), team: os.Getenv("NATSCOORD_TEAM")}
	if e.kind == "" {
		e.kind = "nats"
	}
	return e.open(ctx)
}

// benchChild runs the benchmark roles; ok is false for other roles.
func benchChild(ctx context.Context, role, name string, b coord.Backend) (int, bool) {
	switch role {
	case "bench-claim":
		// Say the handle is open, wait for the start line, then drain the board, printing
		// each claim.
		fmt.Println("ready")
		_, _ = bufio.NewReader(os.Stdin).ReadString('\n')
		w := bufio.NewWriter(os.Stdout)
		defer w.Flush()
		for {
			t, err := b.Board().ClaimNext(ctx, name, time.Minute)
			if errors.Is(err, coord.ErrNoTask) {
				return 0, true
			}
			if err == nil {
				done := coord.StatusCompleted
				_, err = b.Board().Update(ctx, t.ID, coord.TaskChange{Status: &done, IfOwner: &name})
			}
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1, true
			}
			fmt.Fprintln(w, "claimed", t.ID)
		}
	case "bench-echo":
		// Answer every message with one carrying its one-way latency, until "stop".
		ch, err := b.Mailbox().Watch(ctx, "echo")
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1, true
		}
		fmt.Println("ready")
		for range ch {
			msgs, err := b.Mailbox().Fetch(ctx, "echo", 0)
			if err != nil {
				fmt.Fprintln(os.Stderr, err)
				return 1, true
			}
			for _, m := range msgs {
				if m.Text == "stop" {
					return 0, true
				}
				lat := time.Since(m.Sent)
				reply := coord.Message{ID: "re-" + m.ID, From: "echo", To: m.From, Text: strconv.FormatInt(int64(lat), 10), Sent: time.Now()}
				if err := b.Mailbox().Send(ctx, reply); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1, true
				}
				if err := b.Mailbox().Ack(ctx, "echo", m.ID); err != nil {
					fmt.Fprintln(os.Stderr, err)
					return 1, true
				}
			}
		}
		return 0, true
	}
	return 0, false
}

func startChild(tb testing.TB, e backendEnv, role, name string) (*exec.Cmd, io.WriteCloser, <-chan string) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), append(e.vars(), "NATSCOORD_CHILD="+role, "NATSCOORD_NAME="+name)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	lines := make(chan string, 4096)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	tb.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return cmd, in, lines
}

// backends makes a fresh store of each kind for one run of a benchmark.
func backends(b *testing.B) []backendEnv {
	srv := natstest.Start(b)
	return []backendEnv{{kind: "fs", dir: b.TempDir()}, {kind: "nats", url: srv.URL(), team: "bench"}}
}

func BenchmarkBackends(b *testing.B) {
	for i, kind := range []string{"fs", "nats"} {
		b.Run("mailbox-latency/"+kind, func(b *testing.B) { benchLatency(b, backends(b)[i]) })
	}
	for i, kind := range []string{"fs", "nats"} {
		b.Run("claims-64/"+kind, func(b *testing.B) { benchClaims(b, backends(b)[i]) })
	}
}

// benchLatency measures one message's delivery between two processes: each of 500 round
// trips per iteration times both one-way trips, from just before Send to just after the
// receiver's Fetch.
func benchLatency(b *testing.B, e backendEnv) {
	ctx := waittest.Context(b)
	be, err := e.open(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	_, _, lines := startChild(b, e, "bench-echo", "echo")
	if got := waittest.Recv(b, "the echo child", lines); got != "ready" {
		b.Fatalf("child said %q", got)
	}
	mb := be.Mailbox()
	ch, err := mb.Watch(ctx, "bench")
	if err != nil {
		b.Fatal(err)
	}
	var lat []time.Duration
	for b.Loop() {
		for i := range 500 {
			if err := mb.Send(ctx, coord.Message{ID: coord.NewID(), From: "bench", To: "echo", Text: strconv.Itoa(i), Sent: time.Now()}); err != nil {
				b.Fatal(err)
			}
			for got := false; !got; {
				select {
				case <-ch:
				case <-ctx.Done():
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
	}
	_ = mb.Send(ctx, coord.Message{ID: coord.NewID(), From: "bench", To: "echo", Text: "stop"})
	slices.Sort(lat)
	b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
	b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
}

// benchClaims measures claims per second with 64 processes draining a board of 256 tasks
// (each claim followed by its completion) and counts double claims, which must be 0.
func benchClaims(b *testing.B, e backendEnv) {
	const procs, tasks = 64, 256
	var claimed, double int
	var elapsed time.Duration
	round := 0
	for b.Loop() {
		round++
		e := e
		e.team = fmt.Sprintf("%s-r%d", e.team, round)
		if e.kind == "fs" {
			e.dir = b.TempDir()
		}
		c, d, el := claimRace(b, e, procs, tasks)
		claimed, double, elapsed = claimed+c, double+d, elapsed+el
	}
	b.ReportMetric(float64(claimed)/elapsed.Seconds(), "claims/s")
	b.ReportMetric(float64(double), "double-claims")
}

func claimRace(b *testing.B, e backendEnv, procs, tasks int) (claimed, double int, elapsed time.Duration) {
	ctx := waittest.Context(b)
	be, err := e.open(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer be.Close()
	for i := range tasks {
		if _, err := be.Board().Create(ctx, coord.Task{Subject: fmt.Sprint("task ", i)}); err != nil {
			b.Fatal(err)
		}
	}
	type proc struct {
		cmd   *exec.Cmd
		in    io.WriteCloser
		lines <-chan string
	}
	var ps []proc
	for i := range procs {
		cmd, in, lines := startChild(b, e, "bench-claim", fmt.Sprint("m", i))
		ps = append(ps, proc{cmd, in, lines})
	}
	// Start them together once every one has its handle open: the race is the claims, not
	// the processes' start.
	for _, p := range ps {
		if got := waittest.Recv(b, "a claimer to open its handle", p.lines); got != "ready" {
			b.Fatalf("claimer said %q", got)
		}
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
				if id, ok := strings.CutPrefix(line, "claimed "); ok {
					mu.Lock()
					counts[id]++
					mu.Unlock()
				}
			}
			if err := p.cmd.Wait(); err != nil {
				b.Errorf("claimer: %v", err)
			}
		})
	}
	wg.Wait()
	elapsed = time.Since(began)
	for _, n := range counts {
		double += n - 1
	}
	if len(counts) != tasks {
		b.Errorf("%s: %d of %d tasks claimed", e.kind, len(counts), tasks)
	}
	return len(counts), double, elapsed
}
