package shell

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
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
	for timeout := 300 * time.Millisecond; ; timeout *= 2 { //keel:duration doubled until the machine keeps up
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

// heldOpen prepares a script that starts a process in a session of its own (outside the
// command's process group, so no kill of the group reaches it) keeping the output pipe open,
// waits until that process left the group, prints "done" and runs rest. The process records
// its own pid; the test kills it at the end, as nothing else would. pidFile exists once it
// left the group.
func heldOpen(t *testing.T, rest string) (script, pidFile string) {
	t.Helper()
	dir := t.TempDir()
	pidFile, ready := filepath.Join(dir, "pid"), filepath.Join(dir, "ready")
	if err := mkfifo(ready); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if data, err := os.ReadFile(pidFile); err == nil {
			if pid, err := strconv.Atoi(strings.TrimSpace(string(data))); err == nil && pid > 0 {
				syscall.Kill(pid, syscall.SIGKILL)
			}
		}
	})
	daemon := "echo $$ > " + quote(pidFile+".tmp") + " && mv " + quote(pidFile+".tmp") + " " + quote(pidFile) +
		"; echo > " + quote(ready) + "; exec sleep 600"
	return "setsid sh -c " + quote(daemon) + " & read x < " + quote(ready) + "; echo done; " + rest, pidFile
}

// TestRunOutputHeldOpen: a process that left the command's process group and keeps stdout
// open does not hold the call, whether the shell ends by itself, by the timeout or by an
// interrupt: Run returns with the output read so far and says the output was held open.
func TestRunOutputHeldOpen(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	tests := []struct {
		name, rest string
		timeout    time.Duration
		cancel     bool
		want       Result
	}{
		{"shell exits", "", 0, false, Result{Output: "done\n", OutputHeldOpen: true}},
		{"timeout", "sleep 600", 200 * time.Millisecond, false, Result{Output: "done\n", OutputHeldOpen: true, TimedOut: true, ExitCode: -1}},
		{"interrupt", "sleep 600", 0, true, Result{Output: "done\n", OutputHeldOpen: true, Interrupted: true, ExitCode: -1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := t.Context()
			c := Command{Dir: t.TempDir(), Timeout: tt.timeout}
			if tt.cancel {
				// The interrupt comes once the command printed "done".
				cctx, cancel := context.WithCancel(ctx)
				defer cancel()
				ctx = cctx
				c.OnLine = func(line string) {
					if line == "done" {
						cancel()
					}
				}
			}
			for {
				var pidFile string
				c.Script, pidFile = heldOpen(t, tt.rest)
				done := make(chan Result, 1)
				go func() {
					got, err := Run(ctx, c)
					if err != nil {
						t.Error(err)
					}
					done <- got
				}()
				got := waittest.Recv(t, "Run to return while the output is held open", done)
				if !strings.Contains(got.Output, "done") && tt.timeout > 0 && c.Timeout < waittest.Timeout() {
					// The timeout fired before the script got going, which proves nothing.
					t.Logf("the timeout of %v fired too early; again with twice that", c.Timeout)
					c.Timeout *= 2
					continue
				}
				got.Cwd = ""
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("mismatch (-want +got):\n%s", diff)
				}
				if pid := readPID(t, pidFile); !alive(pid) {
					t.Errorf("the process holding the output (%d) is gone: the case proves nothing", pid)
				}
				return
			}
		})
	}
}

// TestJobsKillOutputHeldOpen: KillShell returns although a process outside the job's group
// keeps its output open.
func TestJobsKillOutputHeldOpen(t *testing.T) {
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("no setsid")
	}
	script, _ := heldOpen(t, "sleep 600")
	jobs := NewJobs()
	id, err := jobs.Start(Command{Script: script, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	waitOutput(t, jobs, id, "done\n")
	killed := make(chan Snapshot, 1)
	go func() {
		s, err := jobs.Kill(id)
		if err != nil {
			t.Error(err)
		}
		killed <- s
	}()
	if s := waittest.Recv(t, "Kill to return while the output is held open", killed); s.Status != StatusKilled {
		t.Errorf("status = %s", s.Status)
	}
	jobs.Close()
}

// TestCwdFileBounded: the command can write the file it reports its directory in; one far
// larger than a path, or a FIFO in its place, fails the call with a message and leaves the
// directory unchanged, without keel reading it whole or waiting on it.
func TestCwdFileBounded(t *testing.T) {
	for name, forge := range map[string]string{
		"large": `head -c 1000000 /dev/zero > "$f"`,
		"fifo":  `rm -f "$f" && mkfifo "$f"`,
	} {
		t.Run(name, func(t *testing.T) {
			tmp := t.TempDir()
			res, err := Run(t.Context(), Command{Script: "trap - EXIT; f=$(ls -d " + tmp + "/" + cwdFilePrefix + "*); " + forge, Dir: t.TempDir(), TempDir: tmp})
			if err != nil {
				t.Fatal(err)
			}
			if res.Cwd != "" || res.ExitCode != -1 || !strings.Contains(res.Output, "reports its directory in") {
				t.Errorf("a forged cwd file was not refused: exit %d, cwd %d bytes, output %q", res.ExitCode, len(res.Cwd), res.Output)
			}
		})
	}
}
