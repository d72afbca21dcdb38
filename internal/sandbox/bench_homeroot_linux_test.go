package sandbox_test

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/egress"
	"github.com/keel-dev/keel/internal/sandbox"
)

// BenchmarkEchoHiHomeRoot measures what keeping a home directory's dot-entries read-only
// costs ([homeRootProtected]): `bash -c 'echo hi'` in the sandbox with a home of 60
// dot-entries (and the caches), run in a project below it (home-below: home is not a
// writable root) and in home itself (home-root: a read-only mount per dot-entry), under each
// launcher. The difference of the two ns/op is the cost per command.
func BenchmarkEchoHiHomeRoot(b *testing.B) {
	home := filepath.Join(b.TempDir(), "home")
	for i := range 50 {
		if err := os.MkdirAll(filepath.Join(home, fmt.Sprintf(".tool%d", i)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for _, f := range []string{".bashrc", ".profile", ".gitconfig", ".tmux.conf", ".inputrc", ".wezterm.lua", ".bash_history", ".viminfo", ".lesshst", ".python_history"} {
		if err := os.WriteFile(filepath.Join(home, f), nil, 0o644); err != nil {
			b.Fatal(err)
		}
	}
	for _, d := range []string{".cache/go-build", ".config/git", ".local/bin", ".local/lib", ".npm", ".cargo/registry", "go/pkg/mod", "go/bin", "proj"} {
		if err := os.MkdirAll(filepath.Join(home, d), 0o755); err != nil {
			b.Fatal(err)
		}
	}
	b.Setenv("XDG_CONFIG_HOME", "")
	for _, k := range []string{"GOBIN", "GOPATH", "GOCACHE", "GOMODCACHE", "XDG_CACHE_HOME", "CARGO_HOME", "PNPM_HOME", "npm_config_cache"} {
		b.Setenv(k, "")
	}
	for _, launcher := range []string{"helper", "bwrap"} {
		for _, c := range []struct{ name, dir string }{{"home-below", filepath.Join(home, "proj")}, {"home-root", home}} {
			b.Run(launcher+"/"+c.name, func(b *testing.B) {
				sandbox.ForceLauncher(b, launcher)
				in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{c.dir}, Home: home,
					KeelHome: filepath.Join(home, ".keel"), Caches: sandbox.Caches(home, os.Getenv)}
				s := sandbox.New(sandbox.NewPolicy(in), sandbox.Options{Proxy: egress.New(egress.Rules{})})
				if err := s.Available(); err != nil {
					b.Skipf("no %s launcher here: %v", launcher, err)
				}
				var cpu time.Duration
				for b.Loop() {
					cmd := exec.Command("bash", "-c", "echo hi")
					cmd.Dir = c.dir
					run, err := s.Confine(cmd)
					if err != nil {
						b.Fatal(err)
					}
					out, err := cmd.Output()
					run.Release()
					if err != nil || string(out) != "hi\n" {
						b.Fatalf("%q %v", out, err)
					}
					cpu += cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
				}
				b.ReportMetric(float64(cpu.Microseconds())/1000/float64(b.N), "cpu-ms/op")
				b.ReportMetric(float64(len(s.Policy().Complete().ReadOnly)), "read-only-paths")
			})
		}
	}
}
