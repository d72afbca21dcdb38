package cron_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/waittest"
)

// The test in this file runs schedulers as real processes — the test binary re-executed in
// the CRON_CHILD role — and kills one with SIGKILL.

func TestMain(m *testing.M) {
	if role := os.Getenv("CRON_CHILD"); role != "" {
		os.Exit(child(role, os.Getenv("CRON_DIR")))
	}
	os.Exit(m.Run())
}

// lineRunner prints "running <run id>" for every RunJob, then hangs (hang) or answers.
type lineRunner struct{ hang bool }

func (r lineRunner) RunJob(ctx context.Context, j cron.Job, run cron.Run) (string, error) {
	fmt.Println("running", run.ID)
	if r.hang {
		select {}
	}
	return "answered by pid " + fmt.Sprint(os.Getpid()), nil
}

// child runs a scheduler on the records in dir until its stdin closes.
func child(role, dir string) int {
	b, err := fscoord.Open(dir, fscoord.Options{})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer b.Close()
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		_, _ = io.Copy(io.Discard, os.Stdin)
		cancel()
	}()
	s := cron.NewScheduler(cron.SchedulerConfig{Store: cron.NewStore(b.Records(), nil), Runner: lineRunner{hang: role == "hang"}})
	if err := s.Run(ctx); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

type proc struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines chan string
}

func startChild(t *testing.T, role, dir string) *proc {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), "CRON_CHILD="+role, "CRON_DIR="+dir)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	p := &proc{cmd: cmd, stdin: stdin, lines: make(chan string, 16)}
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return p
}

// TestSchedulerKilledMidRun: a supervisor's scheduler is SIGKILLed while a job's run goes; the
// next one finishes that run — the same run id, so the supervisor's runner attaches instead of
// starting another — and the session gets one report.
func TestSchedulerKilledMidRun(t *testing.T) {
	dir, o := t.TempDir(), origin(t)
	st, _ := openStore(t, dir, nil)
	at := time.Now().Add(2 * time.Second).Truncate(time.Second)
	j, err := st.Create(waittest.Context(t), cron.Spec{Cron: at.Format(time.RFC3339), Prompt: "once", Durable: true, Origin: o})
	if err != nil {
		t.Fatal(err)
	}
	want := "running " + runIDs(j.ID, at)[0]

	first := startChild(t, "hang", dir)
	if got := waittest.Recv(t, "the first scheduler's run", first.lines); got != want {
		t.Fatalf("first scheduler: %q, want %q", got, want)
	}
	if err := first.cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	var exit *exec.ExitError
	if err := first.cmd.Wait(); !errors.As(err, &exit) {
		t.Fatalf("killed scheduler: %v", err)
	}
	if ns := delivered(t, o.NotifyDir); len(ns) != 0 {
		t.Fatalf("reports before the run finished: %+v", ns)
	}

	second := startChild(t, "answer", dir)
	if got := waittest.Recv(t, "the second scheduler's run", second.lines); got != want {
		t.Fatalf("second scheduler: %q, want %q", got, want)
	}
	waittest.Until(t, "the job to be deleted after its run", func() bool {
		_, err := st.Get(t.Context(), j.ID)
		return errors.Is(err, cron.ErrNotFound)
	})
	_ = second.stdin.Close()
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("second scheduler: %v", err)
	}
	for line := range second.lines {
		t.Errorf("second scheduler ran more: %q", line)
	}
	ns := delivered(t, o.NotifyDir)
	if len(ns) != 1 || ns[0].TaskID != runIDs(j.ID, at)[0] || !strings.HasPrefix(ns[0].Result, "answered by pid ") {
		t.Fatalf("reports: %+v, want one of run %s", ns, runIDs(j.ID, at)[0])
	}
}
