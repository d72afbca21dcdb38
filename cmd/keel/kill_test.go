package main

import (
	"bytes"
	"errors"
	"os/exec"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/waittest"
)

// killWhen starts cmd, waits until ready says the moment has come (failing if keel ends on
// its own before), SIGKILLs it and checks that the kill is what ended it.
func killWhen(t *testing.T, cmd *exec.Cmd, what string, ready func() bool) {
	t.Helper()
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	waittest.Until(t, what, func() bool {
		select {
		case err := <-exited:
			t.Fatalf("keel ended before it was killed: %v\n%s", err, out.String())
		default:
		}
		return ready()
	})
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	err := waittest.Recv(t, "the killed keel to exit", exited)
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("keel's end: %v, want killed by SIGKILL", err)
	}
}
