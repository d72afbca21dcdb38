//go:build darwin

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/procgroup"
)

// sandboxExec is macOS's front end to Seatbelt.
const sandboxExec = "/usr/bin/sandbox-exec"

// Run is one confined command's link to keel: the proxy serving it and its temporary
// directory. Release it once the command has exited.
type Run struct {
	s      *Sandbox
	tmp    string
	l      net.Listener
	cancel context.CancelFunc
	wg     sync.WaitGroup

	refused refusals
	planted plantWatch
}

// ConfineAtTerminal is Confine for a command the user runs at their own terminal (`keel
// sandbox -- CMD`); sandbox-exec changes nothing about the terminal, so it is Confine.
func (s *Sandbox) ConfineAtTerminal(cmd *exec.Cmd) (*Run, error) { return s.Confine(cmd) }

// Confine rewrites cmd, not yet started, to run under sandbox-exec with the policy's
// Seatbelt profile ([SeatbeltProfile]): a temporary directory of its own (TMPDIR) and, with
// the proxy, a loopback port of keel's proxy as its only way out. extra are more paths the
// command may write.
func (s *Sandbox) Confine(cmd *exec.Cmd, extra ...string) (*Run, error) {
	if err := s.Available(); err != nil {
		return nil, err
	}
	if p := s.complete(); len(p.Problems) > 0 {
		return nil, fmt.Errorf("sandbox: the command is not run: %s", strings.Join(p.Problems, "; "))
	}
	r := &Run{s: s}
	tmp, err := os.MkdirTemp("", "keel-sandbox-")
	if err != nil {
		return nil, fmt.Errorf("sandbox: make its temporary directory: %w", err)
	}
	r.tmp = tmp
	env := cmd.Env
	if env == nil {
		env = os.Environ()
	}
	env = append(slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "TMPDIR=") }), "TMPDIR="+tmp)
	port := 0
	if s.policy.Network.Proxy {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			r.Release()
			return nil, fmt.Errorf("sandbox: listen for the proxy: %w", err)
		}
		r.l = l
		port = l.Addr().(*net.TCPAddr).Port
		env = proxyEnv(env, strconv.Itoa(port))
		ctx, cancel := context.WithCancel(context.Background())
		r.cancel = cancel
		r.wg.Go(func() {
			serveProxy(ctx, r.l, r.s.proxy, &r.refused, &connSlots{max: maxRunProxyConns}, &r.s.proxyConns)
		})
	}
	p := s.complete()
	r.planted.start(s, p)
	p.Writable = append(slices.Clone(p.Writable), extra...)
	profile := SeatbeltProfile(p, []string{tmp}, port)
	args := append([]string{sandboxExec, "-p", profile, cmd.Path}, cmd.Args[1:]...)
	cmd.Path, cmd.Args, cmd.Env = sandboxExec, args, env
	return r, nil
}

// Kill kills the process group led by pgid, as procgroup.Kill does: sandbox-exec becomes the
// command, so the group is all there is.
func (r *Run) Kill(pgid int) error { return procgroup.Kill(pgid) }

// Release ends the run's proxy and removes its temporary directory, and returns the
// connections the proxy refused, each as "host: why".
func (r *Run) Release() []string {
	if r == nil {
		return nil
	}
	if r.cancel != nil {
		r.cancel()
	}
	if r.l != nil {
		r.l.Close()
	}
	r.wg.Wait()
	if r.tmp != "" {
		os.RemoveAll(r.tmp)
	}
	r.planted.finish(r.s)
	return r.refused.all()
}

func (s *Sandbox) probe() error {
	if _, err := os.Stat(sandboxExec); err != nil {
		return fmt.Errorf("%w: %s is missing: %v", ErrUnavailable, sandboxExec, err)
	}
	cmd := exec.Command(sandboxExec, "-p", SeatbeltProfile(Policy{Mode: ModeReadOnly}, nil, 0), "/usr/bin/true")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: sandbox-exec fails: %v %s", ErrUnavailable, err, out)
	}
	return nil
}

func runHelper(string) error { return errors.New("the sandbox helper runs on Linux only") }

// LandlockABI is 0 outside Linux.
func LandlockABI() int { return 0 }
