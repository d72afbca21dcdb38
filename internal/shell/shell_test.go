package shell

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/waittest"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "sub")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	realDir, _ := filepath.EvalSymlinks(dir)
	tests := []struct {
		name   string
		script string
		want   Result
	}{
		{"echo", "echo hi", Result{Output: "hi\n", Cwd: realDir}},
		{"interleaved", "echo a; echo b >&2; echo c", Result{Output: "a\nb\nc\n", Cwd: realDir}},
		{"exit code", "echo x; exit 3", Result{Output: "x\n", ExitCode: 3, Cwd: realDir}},
		{"cd persists", "cd sub", Result{Cwd: filepath.Join(realDir, "sub")}},
		{"cd then exit", "cd sub && exit 1", Result{ExitCode: 1, Cwd: filepath.Join(realDir, "sub")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Run(t.Context(), Command{Script: tt.script, Dir: dir})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRunOutputCap(t *testing.T) {
	got, err := Run(t.Context(), Command{Script: "seq 1 100000", Dir: t.TempDir(), OutputLimit: 100})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(got.Output, "1\n2\n3\n") || !strings.HasSuffix(got.Output, "99999\n100000\n") {
		t.Errorf("output does not keep head and tail: %q", got.Output)
	}
	if got.Truncated < 500000 || !strings.Contains(got.Output, "bytes of output cut from the middle") {
		t.Errorf("truncated = %d, output %q", got.Truncated, got.Output)
	}
}

func TestCappedBuffer(t *testing.T) {
	var want strings.Builder
	b := newCappedBuffer(10)
	for i := range 50 {
		s := strconv.Itoa(i)
		want.WriteString(s)
		b.Write([]byte(s))
	}
	full := want.String()
	got, cut := b.String()
	wantOut := full[:5] + "\n\n... [80 bytes of output cut from the middle] ...\n\n" + full[len(full)-5:]
	if diff := cmp.Diff(wantOut, got); diff != "" || cut != 80 {
		t.Errorf("cut %d; mismatch (-want +got):\n%s", cut, diff)
	}
}

// alive reports whether pid runs; a zombie awaiting its reaper has exited.
func alive(pid int) bool {
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// childScript starts `sleep 300` and records its pid in pidFile (whole or not at all).
func childScript(pidFile string) string {
	return "sleep 300 & echo $! > " + quote(pidFile+".tmp") + " && mv " + quote(pidFile+".tmp") + " " + quote(pidFile) + "; wait"
}

func readPID(t *testing.T, path string) int {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	return pid
}

func TestRunTimeoutKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// The timeout must fire after the script started its child, which a loaded machine may not
	// manage in time: such a run proves nothing and is repeated with twice the timeout.
	for timeout := 300 * time.Millisecond; ; timeout *= 2 {
		got, err := Run(t.Context(), Command{Script: childScript(pidFile), Dir: dir, Timeout: timeout})
		if err != nil {
			t.Fatal(err)
		}
		if !got.TimedOut || got.ExitCode != -1 {
			t.Errorf("got %+v, want a timeout", got)
		}
		if _, err := os.Stat(pidFile); errors.Is(err, os.ErrNotExist) && timeout < waittest.Timeout() {
			t.Logf("the script was killed after %v before it started its child; again", timeout)
			continue
		}
		if pid := readPID(t, pidFile); alive(pid) {
			t.Errorf("child %d survived the timeout", pid)
		}
		return
	}
}

func TestRunCancelKillsGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	ready := filepath.Join(dir, "ready")
	if err := mkfifo(ready); err != nil {
		t.Fatal(err)
	}
	script := "sleep 300 & echo $! > " + quote(pidFile) + "; echo > " + quote(ready) + "; wait"
	type out struct {
		r   Result
		err error
	}
	done := make(chan out, 1)
	cctx, cancelRun := context.WithCancel(t.Context())
	defer cancelRun()
	go func() {
		r, err := Run(cctx, Command{Script: script, Dir: dir})
		done <- out{r, err}
	}()
	waitFIFO(t, ready) // the child is started once the script writes to the fifo
	cancelRun()
	o := waittest.Recv(t, "Run to return after the cancel", done)
	if o.err != nil {
		t.Fatal(o.err)
	}
	if !o.r.Interrupted {
		t.Errorf("got %+v, want interrupted", o.r)
	}
	if pid := readPID(t, pidFile); alive(pid) {
		t.Errorf("child %d survived the interrupt", pid)
	}
}

func TestRunReapsLeftoverChildren(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	got, err := Run(t.Context(), Command{Script: "sleep 300 & echo $! > " + quote(pidFile) + "; echo done", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if got.Output != "done\n" || got.ExitCode != 0 {
		t.Errorf("got %+v", got)
	}
	if pid := readPID(t, pidFile); alive(pid) {
		t.Errorf("child %d outlived its command", pid)
	}
}

func waitOutput(t *testing.T, jobs *Jobs, id, s string) {
	t.Helper()
	if err := jobs.WaitOutput(t.Context(), id, s); err != nil {
		t.Fatal(err)
	}
}

func TestJobs(t *testing.T) {
	dir := t.TempDir()
	jobs := NewJobs()
	defer jobs.Close()
	gate := filepath.Join(dir, "gate")
	if err := mkfifo(gate); err != nil {
		t.Fatal(err)
	}
	// The job prints two lines, then blocks on the fifo until the test opens it.
	id, err := jobs.Start(Command{Script: "echo one; echo two; cat " + quote(gate) + "; echo three; exit 4", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	if id != "bash_1" {
		t.Errorf("id = %q", id)
	}
	waitOutput(t, jobs, id, "two\n")
	s, err := jobs.Read(id, regexp.MustCompile("^t"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(Snapshot{ID: id, Command: s.Command, Status: StatusRunning, Output: "two"}, s); diff != "" {
		t.Errorf("first read mismatch (-want +got):\n%s", diff)
	}
	f, err := os.OpenFile(gate, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	if err := jobs.Wait(t.Context(), id); err != nil {
		t.Fatal(err)
	}
	jb, _ := jobs.get(id)
	waittest.Recv(t, "the job's output to drain", jb.p.drained)
	s, _ = jobs.Read(id, nil)
	if diff := cmp.Diff(Snapshot{ID: id, Command: s.Command, Status: StatusFailed, ExitCode: 4, Output: "three\n"}, s); diff != "" {
		t.Errorf("second read mismatch (-want +got):\n%s", diff)
	}
	if _, err := jobs.Read("bash_9", nil); !errors.Is(err, ErrNoJob) {
		t.Errorf("reading an unknown job: err = %v", err)
	}
}

func TestJobsKill(t *testing.T) {
	dir := t.TempDir()
	jobs := NewJobs()
	pidFile := filepath.Join(dir, "pid")
	ready := filepath.Join(dir, "ready")
	if err := mkfifo(ready); err != nil {
		t.Fatal(err)
	}
	id, err := jobs.Start(Command{Script: "sleep 300 & echo $! > " + quote(pidFile) + "; echo > " + quote(ready) + "; wait", Dir: dir})
	if err != nil {
		t.Fatal(err)
	}
	waitFIFO(t, ready)
	s, err := jobs.Kill(id)
	if err != nil {
		t.Fatal(err)
	}
	if s.Status != StatusKilled {
		t.Errorf("status = %s", s.Status)
	}
	if pid := readPID(t, pidFile); alive(pid) {
		t.Errorf("child %d survived KillShell", pid)
	}
	// Close kills the rest and refuses new jobs.
	id2, _ := jobs.Start(Command{Script: "sleep 300", Dir: dir})
	jobs.Close()
	if s, _ := jobs.Read(id2, nil); s.Status != StatusKilled {
		t.Errorf("after Close, status = %s", s.Status)
	}
	if _, err := jobs.Start(Command{Script: "true", Dir: dir}); err == nil {
		t.Error("Start after Close succeeded")
	}
}

// TestCwdFileInTempDir: the file a command reports its directory in lives in Command.TempDir
// while it runs and is gone afterwards; SweepCwdFiles removes what a killed keel left.
func TestCwdFileInTempDir(t *testing.T) {
	tmp := t.TempDir()
	res, err := Run(t.Context(), Command{Script: "ls " + tmp, Dir: t.TempDir(), TempDir: tmp})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(strings.TrimSpace(res.Output), cwdFilePrefix) {
		t.Errorf("the running command's cwd file is not in TempDir: %q", res.Output)
	}
	if left, _ := os.ReadDir(tmp); len(left) != 0 {
		t.Errorf("left behind: %v", left)
	}
	old := filepath.Join(tmp, cwdFilePrefix+"old")
	fresh := filepath.Join(tmp, cwdFilePrefix+"fresh")
	other := filepath.Join(tmp, "unrelated")
	for _, p := range []string{old, fresh, other} {
		if err := os.WriteFile(p, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	long := time.Now().Add(-time.Hour)
	if err := os.Chtimes(old, long, long); err != nil {
		t.Fatal(err)
	}
	if n := SweepCwdFiles(tmp, StaleCwdFileAge); n != 1 {
		t.Errorf("swept %d stale files, want 1", n)
	}
	if _, err := os.Stat(fresh); err != nil {
		t.Error("a fresh cwd file (maybe of a running command) was removed")
	}
	if n := SweepCwdFiles(tmp, 0); n != 1 {
		t.Errorf("swept %d files with age 0, want 1", n)
	}
	if _, err := os.Stat(other); err != nil {
		t.Error("a file that is not a cwd file was removed")
	}
}
