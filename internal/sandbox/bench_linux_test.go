package sandbox_test

import (
	"os/exec"
	"testing"

	"github.com/keel-dev/keel/internal/egress"
	"github.com/keel-dev/keel/internal/sandbox"
)

// BenchmarkEchoHi measures what the sandbox adds to one command: `bash -c 'echo hi'` run
// plainly and in the sandbox (workspace-write, with the proxy bridge), one after the other in
// one run. The difference of the two ns/op is the added wall time per Bash call.
func BenchmarkEchoHi(b *testing.B) {
	ws := b.TempDir()
	s := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}}),
		sandbox.Options{Proxy: egress.New(egress.Rules{})})
	if err := s.Available(); err != nil {
		b.Skipf("no sandbox on this machine: %v", err)
	}
	b.Run("plain", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("bash", "-c", "echo hi")
			cmd.Dir = ws
			if out, err := cmd.Output(); err != nil || string(out) != "hi\n" {
				b.Fatalf("%q %v", out, err)
			}
		}
	})
	b.Run("sandboxed", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("bash", "-c", "echo hi")
			cmd.Dir = ws
			run, err := s.Confine(cmd)
			if err != nil {
				b.Fatal(err)
			}
			out, err := cmd.Output()
			run.Release()
			if err != nil || string(out) != "hi\n" {
				b.Fatalf("%q %v", out, err)
			}
		}
	})
}
