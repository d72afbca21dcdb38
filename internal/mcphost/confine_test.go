package mcphost

import (
	"errors"
	"os/exec"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/keel-dev/keel/internal/procgroup"
)

// TestConfinedServers: with Options.Confine (sandbox.wrapMcpServers) every stdio server's
// command goes through it before it starts, and its release runs once the server has exited;
// a server that cannot be confined does not start, and its status says why — it is never run
// outside instead.
func TestConfinedServers(t *testing.T) {
	var confined, released atomic.Int32
	m := start(t, Options{
		Servers: []ServerConfig{stdioServer("t", "everything")},
		Confine: func(cmd *exec.Cmd) (Confined, error) {
			confined.Add(1)
			// What the sandbox does too: the program becomes another that runs the server.
			cmd.Args = append([]string{"env", "KEEL_CONFINED=1"}, cmd.Args...)
			cmd.Args[2] = cmd.Path
			path, err := exec.LookPath("env")
			if err != nil {
				return nil, err
			}
			cmd.Path = path
			return fakeConfined{released: &released}, nil
		},
	})
	if got := toolNames(m.Tools(t.Context())); !slices.Contains(got, "mcp__t__echo") {
		t.Fatalf("the confined server's tools: %v", got)
	}
	if confined.Load() != 1 {
		t.Errorf("Confine called %d times for one server", confined.Load())
	}
	m.Close()
	if released.Load() != 1 {
		t.Errorf("release called %d times after the server exited", released.Load())
	}

	refused := start(t, Options{
		Servers: []ServerConfig{stdioServer("t", "everything")},
		Confine: func(*exec.Cmd) (Confined, error) {
			return nil, errors.New("the sandbox is unavailable: no user namespaces")
		},
	})
	if got := toolNames(refused.Tools(t.Context())); len(got) != 0 {
		t.Errorf("a server that could not be confined ran anyway: tools %v", got)
	}
	st := refused.Status()
	if len(st) != 1 || st[0].Status == StatusConnected || !strings.Contains(st[0].Reason, "in the sandbox") || !strings.Contains(st[0].Reason, "no user namespaces") {
		t.Errorf("status of the server that could not be confined: %+v", st)
	}
}

// fakeConfined counts releases and kills the group as the sandbox does.
type fakeConfined struct{ released *atomic.Int32 }

func (f fakeConfined) Kill(pgid int) error { return procgroup.Kill(pgid) }

func (f fakeConfined) Release() []string {
	f.released.Add(1)
	return nil
}
