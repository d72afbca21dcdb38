package sandbox

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/egress"
	"github.com/keel-dev/keel/internal/settings"
)

// landlockOnlyWorld is a workspace, a directory outside it, and a sandbox forced into the
// Landlock-only fallback as on a machine whose user namespaces are blocked.
type landlockOnlyWorld struct {
	ws, outside string
	s           *Sandbox
	notice      error
}

func newLandlockOnlyWorld(t *testing.T, proxy Proxy) *landlockOnlyWorld {
	t.Helper()
	if LandlockABI() < 1 {
		t.Skip("this kernel has no Landlock: the Landlock-only fallback cannot run here")
	}
	testNoUserNamespaces.Store(true)
	t.Cleanup(func() { testNoUserNamespaces.Store(false) })
	w := &landlockOnlyWorld{ws: t.TempDir(), outside: t.TempDir()}
	p := NewPolicy(Input{Mode: ModeWorkspaceWrite, Settings: &settings.Sandbox{}, Dirs: []string{w.ws}})
	w.s = New(p, Options{Proxy: proxy, Unavailable: func(err error) { w.notice = err }})
	if err := w.s.Available(); err != nil {
		t.Fatalf("the Landlock-only fallback did not start: %v", err)
	}
	if !w.s.landlockOnly {
		t.Fatal("with user namespaces blocked, the sandbox is not in its Landlock-only form")
	}
	if !errors.Is(w.notice, ErrLimited) || !strings.Contains(w.notice.Error(), ".git/config") {
		t.Fatalf("the notice does not say what the fallback leaves open: %v", w.notice)
	}
	return w
}

// run runs script with bash under the sandbox, in the workspace, and returns its output
// and the run's private TMPDIR.
func (w *landlockOnlyWorld) run(t *testing.T, script string) string {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = w.ws
	run, err := w.s.Confine(cmd)
	if err != nil {
		t.Fatal(err)
	}
	out, _ := cmd.CombinedOutput()
	tmp := run.tmp
	run.Release()
	if _, err := os.Lstat(tmp); err == nil {
		t.Errorf("the private TMPDIR %s outlived the run", tmp)
	}
	return string(out)
}

// TestLandlockOnlyFiles: in the fallback, a write outside the writable roots fails, one
// inside lands, and the private TMPDIR is writable and the command's own.
func TestLandlockOnlyFiles(t *testing.T) {
	w := newLandlockOnlyWorld(t, nil)
	out := w.run(t, fmt.Sprintf(`echo pwned > %s/new && echo ESCAPED
echo pwned > /tmp/keel-landlock-only-probe-%d && echo ESCAPED
echo landed > in.txt
echo scratch > "$TMPDIR/t" && cat "$TMPDIR/t" && echo "tmpdir=$TMPDIR"`, w.outside, os.Getpid()))
	if strings.Contains(out, "ESCAPED") {
		t.Errorf("a write outside the writable roots succeeded:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(w.outside, "new")); err == nil {
		t.Error("a file was made outside the writable roots")
	}
	if b, _ := os.ReadFile(filepath.Join(w.ws, "in.txt")); string(b) != "landed\n" {
		t.Errorf("a write inside the workspace did not land: %q\n%s", b, out)
	}
	if !strings.Contains(out, "scratch\n") || !strings.Contains(out, "tmpdir=") || strings.Contains(out, "tmpdir=/tmp\n") {
		t.Errorf("the private TMPDIR does not work:\n%s", out)
	}
}

// TestLandlockOnlyNetwork: from Landlock ABI 4 on, a loopback listener outside that is not
// the proxy cannot be reached, and an allowed domain answers through the proxy.
func TestLandlockOnlyNetwork(t *testing.T) {
	if LandlockABI() < 4 {
		t.Skipf("Landlock ABI %d has no network rules: the fallback does not contain the network here", LandlockABI())
	}
	if _, err := exec.LookPath("curl"); err != nil {
		t.Skip("the network is tried with curl, which this machine lacks")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ANSWERED") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	resolve := func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "allowed.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, errors.New("no such host")
	}
	proxy := egress.New(egress.Rules{Allowed: []string{"allowed.test", fmt.Sprintf("127.0.0.1:%d", port)}, Resolve: resolve})
	w := newLandlockOnlyWorld(t, proxy)
	for name, script := range map[string]string{
		"curl no proxy": fmt.Sprintf("curl -sS --noproxy '*' http://127.0.0.1:%d/", port),
		"dev tcp":       fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo ESCAPED", port),
		"listen":        "python3 -c \"import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print('ESCAPED')\" 2>&1 || true",
	} {
		t.Run(name, func(t *testing.T) {
			if out := w.run(t, script); strings.Contains(out, "ANSWERED") || strings.Contains(out, "ESCAPED") {
				t.Errorf("%q reached out:\n%s", script, out)
			}
		})
	}
	t.Run("allowed domain answers through the proxy", func(t *testing.T) {
		if out := w.run(t, fmt.Sprintf("curl -sS http://allowed.test:%d/", port)); !strings.Contains(out, "ANSWERED") {
			t.Errorf("an allowed domain did not answer through the proxy:\n%s", out)
		}
	})
}

// TestLandlockOnlyNotWhenNamespacesWork: where user namespaces work, the sandbox keeps its
// full form and gives no notice.
func TestLandlockOnlyNotWhenNamespacesWork(t *testing.T) {
	called := false
	s := New(NewPolicy(Input{Mode: ModeWorkspaceWrite, Settings: &settings.Sandbox{}, Dirs: []string{t.TempDir()}}),
		Options{Unavailable: func(error) { called = true }})
	if err := s.Available(); err != nil {
		t.Skipf("the full sandbox cannot run here: %v", err)
	}
	if s.landlockOnly || s.limited != "" || called {
		t.Errorf("with user namespaces working, the sandbox chose the fallback (limited %q, notice %v)", s.limited, called)
	}
}

// TestLandlockOnlyDoctor: `keel doctor` says the fallback is used and what it leaves open.
func TestLandlockOnlyDoctor(t *testing.T) {
	w := newLandlockOnlyWorld(t, nil)
	for _, f := range Doctor(context.Background(), w.s) {
		if f.Name == "keel uses" {
			if f.Status != "warn" || !strings.Contains(f.Detail, "Landlock only") || !strings.Contains(f.Detail, "not protected") {
				t.Errorf("keel uses: %s %s", f.Status, f.Detail)
			}
			return
		}
	}
	t.Error("no \"keel uses\" line")
}

// TestLandlockOnlyRefusedWithFailIfUnavailable: sandbox.failIfUnavailable asks for the full
// sandbox or a refusal, so where only the Landlock-only form could start, the sandbox is
// unavailable, saying what is missing and what that form would leave open; a headless run in
// auto permission mode (which never runs commands unsandboxed) still takes that form.
func TestLandlockOnlyRefusedWithFailIfUnavailable(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("this kernel has no Landlock: the Landlock-only fallback cannot run here")
	}
	testNoUserNamespaces.Store(true)
	t.Cleanup(func() { testNoUserNamespaces.Store(false) })
	sb := &settings.Sandbox{}
	sb.FailIfUnavailable.V = true
	var notice error
	s := New(NewPolicy(Input{Mode: ModeWorkspaceWrite, Settings: sb, Dirs: []string{t.TempDir()}}),
		Options{Unavailable: func(err error) { notice = err }})
	err := s.Available()
	if !errors.Is(err, ErrUnavailable) || errors.Is(err, ErrLimited) || s.landlockOnly {
		t.Fatalf("with failIfUnavailable, the Landlock-only form was taken: %v (landlockOnly %v)", err, s.landlockOnly)
	}
	for _, want := range []string{"user namespaces", "Landlock-only", "refused", ".git/config"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the refusal does not say %q: %v", want, err)
		}
	}
	if notice != err {
		t.Errorf("the session was told %v, not the refusal", notice)
	}
	cmd := exec.Command("true")
	if _, cerr := s.Confine(cmd); cerr == nil {
		t.Error("a command was confined by a sandbox that refused its only form")
	}
	if d := Doctor(context.Background(), s); !slices.ContainsFunc(d, func(f Finding) bool {
		return f.Name == "keel uses" && f.Status == "fail" && strings.Contains(f.Detail, "Landlock-only")
	}) {
		t.Errorf("keel doctor does not say the sandbox is refused: %v", d)
	}

	headless := New(NewPolicy(Input{Mode: ModeWorkspaceWrite, Settings: &settings.Sandbox{}, Dirs: []string{t.TempDir()}, Unattended: true}), Options{})
	if err := headless.Available(); err != nil || !headless.landlockOnly {
		t.Errorf("a headless run in auto permission mode did not take the Landlock-only form: %v", err)
	}
}
