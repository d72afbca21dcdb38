package procgroup

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/waittest"
)

// startGroup starts a shell in its own process group that starts two children and waits,
// returning the group id and the children's pids once both are running.
func startGroup(t *testing.T) (*exec.Cmd, []int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 300 & echo $!; sleep 300 & echo $!; wait")
	Own(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = Kill(cmd.Process.Pid)
		cmd.Wait()
	})
	var pids []int
	buf := make([]byte, 64)
	var got string
	for strings.Count(got, "\n") < 2 {
		n, err := out.Read(buf)
		if err != nil {
			t.Fatalf("reading the children's pids: %v (got %q)", err, got)
		}
		got += string(buf[:n])
	}
	for f := range strings.FieldsSeq(got) {
		pid, err := strconv.Atoi(f)
		if err != nil {
			t.Fatal(err)
		}
		pids = append(pids, pid)
	}
	return cmd, pids
}

// running reports whether pid is a process that has not exited (a zombie has).
func running(pid int) bool {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false // reaped
	}
	state, _, ok := parseStat(stat)
	return ok && state != 'Z' && state != 'X'
}

func hasProc() bool {
	_, err := os.Stat("/proc/self/stat")
	return err == nil
}

func TestWaitAfterKill(t *testing.T) {
	cmd, children := startGroup(t)
	pgid := cmd.Process.Pid
	if Gone(pgid) {
		t.Fatal("a running group is reported gone")
	}
	if err := syscall.Kill(-pgid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	cmd.Wait() // the leader: the children are orphans now, for init to reap
	if err := Wait(waittest.Context(t), pgid); err != nil {
		t.Fatal(err)
	}
	for _, pid := range children {
		if running(pid) {
			t.Errorf("child %d still running after Wait returned", pid)
		}
	}
}

func TestWaitGivesUpOnARunningGroup(t *testing.T) {
	cmd, _ := startGroup(t)
	ctx, cancel := context.WithCancelCause(t.Context())
	cancel(errors.New("the caller's limit"))
	err := Wait(ctx, cmd.Process.Pid)
	if err == nil || !strings.Contains(err.Error(), "still running: the caller's limit") {
		t.Errorf("err = %v, want the group still running, with the cause", err)
	}
}

// TestZombiesAreGone: a killed member its parent has not reaped yet still answers signal 0,
// but has exited.
func TestZombiesAreGone(t *testing.T) {
	if !hasProc() {
		t.Skip("no /proc: zombies cannot be told from running processes here")
	}
	cmd := exec.Command("sleep", "300")
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	pid := cmd.Process.Pid
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "the killed child to be a zombie", func() bool { return !running(pid) })
	if err := syscall.Kill(-pid, 0); err != nil {
		t.Fatalf("the zombie's group does not answer signal 0 (%v): the case is not exercised", err)
	}
	if !Gone(pid) {
		t.Error("a group of one zombie is reported running")
	}
	if Alive(pid) {
		t.Error("a zombie is reported alive")
	}
	if !Alive(os.Getpid()) {
		t.Error("this process is reported not alive")
	}
}

func TestParseStat(t *testing.T) {
	state, pgrp, ok := parseStat([]byte("4242 (we ird) (name)) S 1 4240 4240 0 -1 4194560\n"))
	if !ok || state != 'S' || string(pgrp) != "4240" {
		t.Errorf("got %c %q %v, want S 4240", state, pgrp, ok)
	}
	if _, _, ok := parseStat([]byte("garbage")); ok {
		t.Error("garbage parsed")
	}
}

// Kill reaches every member of a group Own made, and Wait sees them gone.
func TestOwnKill(t *testing.T) {
	cmd, pids := startGroup(t)
	if err := Kill(cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
	if err := Wait(waittest.Context(t), cmd.Process.Pid); err != nil {
		t.Fatal(err)
	}
	for _, pid := range pids {
		if running(pid) {
			t.Errorf("child %d of the killed group still runs", pid)
		}
	}
}

// TestWaitReaped: a killed process is not reaped while its parent has not collected it (a
// zombie still has its PID, where Gone would count it gone), and is once the parent has.
func TestWaitReaped(t *testing.T) {
	cmd := exec.Command("sleep", "300")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pid := cmd.Process.Pid
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	waittest.Until(t, "the killed child to be a zombie", func() bool { return zombie(pid) })
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	if WaitReaped(ctx, pid) {
		t.Fatal("WaitReaped reported a zombie its parent has not collected as reaped")
	}
	_ = cmd.Wait()
	if !WaitReaped(waittest.Context(t), pid) {
		t.Fatal("WaitReaped did not see the collected child gone")
	}
}
