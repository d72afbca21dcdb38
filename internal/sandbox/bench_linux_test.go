package sandbox_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/egress"
	"github.com/keel-dev/keel/internal/sandbox"
)

// BenchmarkEchoHi measures what the sandbox adds to one command: `bash -c 'echo hi'` run
// plainly and in the sandbox (workspace-write, with the proxy bridge), one after the other in
// one run. The difference of the two ns/op is the added wall time per Bash call: with this
// test binary as the helper, and with keel-sandbox (built here), the helper keel installs —
// each through keel's own namespace set-up and through bubblewrap (the -bwrap cases) where
// it is usable. The user's toolchain caches are in the policy, as a session's are: overlays
// kept in a temporary keel directory.
func BenchmarkEchoHi(b *testing.B) {
	ws := b.TempDir()
	home, _ := os.UserHomeDir()
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}, Caches: sandbox.Caches(home, os.Getenv), KeelHome: b.TempDir()}
	s := sandbox.New(sandbox.NewPolicy(in),
		sandbox.Options{Proxy: egress.New(egress.Rules{})})
	if err := s.Available(); err != nil {
		b.Skipf("no sandbox on this machine: %v", err)
	}
	// cpu-ms/op is the CPU time of the command and everything it waited for (the helper,
	// bubblewrap, bash): a figure that a loaded machine inflates less than the wall time.
	cpu := func(cmd *exec.Cmd, total *time.Duration) {
		if ps := cmd.ProcessState; ps != nil {
			*total += ps.UserTime() + ps.SystemTime()
		}
	}
	report := func(b *testing.B, total time.Duration) {
		b.ReportMetric(float64(total.Microseconds())/1000/float64(b.N), "cpu-ms/op")
	}
	b.Run("plain", func(b *testing.B) {
		var total time.Duration
		for b.Loop() {
			cmd := exec.Command("bash", "-c", "echo hi")
			cmd.Dir = ws
			if out, err := cmd.Output(); err != nil || string(out) != "hi\n" {
				b.Fatalf("%q %v", out, err)
			}
			cpu(cmd, &total)
		}
		report(b, total)
	})
	sandboxed := func(s *sandbox.Sandbox) func(b *testing.B) {
		return func(b *testing.B) {
			var total time.Duration
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
				cpu(cmd, &total)
			}
			report(b, total)
		}
	}
	// launched is a new sandbox of s's policy with helper (empty: this binary), forced to a
	// launcher; nil where that launcher cannot start here.
	launched := func(b *testing.B, helper, launcher string) *sandbox.Sandbox {
		sandbox.ForceLauncher(b, launcher)
		ls := sandbox.New(s.Policy(), sandbox.Options{Executable: helper, Proxy: egress.New(egress.Rules{})})
		if err := ls.Available(); err != nil {
			b.Logf("no %s launcher here: %v", launcher, err)
			return nil
		}
		return ls
	}
	// As installed: keel starts keel-sandbox, the helper alone, rather than itself, built
	// without cgo as `make build` builds it (a dynamically linked helper starts slower).
	helper := filepath.Join(b.TempDir(), sandbox.HelperProgram)
	build := exec.Command("go", "build", "-o", helper, "github.com/keel-dev/keel/cmd/keel-sandbox")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		b.Logf("no keel-sandbox (%v): %s", err, out)
		helper = ""
	}
	for _, c := range []struct{ name, helper, launcher string }{
		{"sandboxed", "", "helper"},
		{"sandboxed-keel-sandbox", helper, "helper"},
		{"sandboxed-bwrap", "", "bwrap"},
		{"sandboxed-keel-sandbox-bwrap", helper, "bwrap"},
	} {
		if c.name != "sandboxed" && c.helper == "" && strings.Contains(c.name, "keel-sandbox") {
			continue
		}
		b.Run(c.name, func(b *testing.B) {
			ls := launched(b, c.helper, c.launcher)
			if ls == nil {
				b.Skip("launcher unavailable")
			}
			sandboxed(ls)(b)
		})
	}
}

// BenchmarkProxiedConnection measures what the proxy adds to one connection: 20 HTTP
// requests to a loopback server with curl, directly and from inside the sandbox through the
// proxy (the name given to the server by the proxy's resolver), each batch in one command.
// The difference of the two ns/op divided by 20 is the added time per proxied connection.
func BenchmarkProxiedConnection(b *testing.B) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })}
	go srv.Serve(l)
	b.Cleanup(func() { srv.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	resolve := func(context.Context, string) ([]netip.Addr, error) {
		return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
	}
	proxy := egress.New(egress.Rules{Allowed: []string{"bench.test", fmt.Sprintf("127.0.0.1:%d", port)}, Resolve: resolve})
	ws := b.TempDir()
	s := sandbox.New(sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{ws}}), sandbox.Options{Proxy: proxy})
	if err := s.Available(); err != nil {
		b.Skipf("no sandbox on this machine: %v", err)
	}
	loop := func(url string) string {
		return fmt.Sprintf("for i in $(seq 20); do curl -sf %s >/dev/null || exit 1; done", url)
	}
	b.Run("direct", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("bash", "-c", loop(fmt.Sprintf("--noproxy '*' http://127.0.0.1:%d/", port)))
			if out, err := cmd.CombinedOutput(); err != nil {
				b.Fatalf("%s %v", out, err)
			}
		}
	})
	b.Run("sandboxed", func(b *testing.B) {
		for b.Loop() {
			cmd := exec.Command("bash", "-c", loop(fmt.Sprintf("http://bench.test:%d/", port)))
			cmd.Dir = ws
			run, err := s.Confine(cmd)
			if err != nil {
				b.Fatal(err)
			}
			out, err := cmd.CombinedOutput()
			run.Release()
			if err != nil {
				b.Fatalf("%s %v", out, err)
			}
		}
	})
}
