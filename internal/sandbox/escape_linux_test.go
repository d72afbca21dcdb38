package sandbox_test

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
	"strings"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"

	"github.com/keel-dev/keel/internal/egress"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/settings"
)

const python = "/usr/bin/python3"

// world is one escape attempt's surroundings: a workspace that is a git repository, a
// directory outside every writable root, secrets masked two ways, a listener outside.
type world struct {
	ws, outside, secretDir, secretFile, ruleSecret string
	s                                              *sandbox.Sandbox
}

func newWorld(t *testing.T, mutate func(*sandbox.Input)) *world {
	t.Helper()
	w := &world{ws: t.TempDir(), outside: sandbox.VisibleDir(t)}
	git(t, w.ws, "init", "-q")
	write(t, filepath.Join(w.outside, "existing"), "original\n")
	// Secrets inside the writable workspace: the hardest place to keep them.
	w.secretDir = filepath.Join(w.ws, "creds")
	write(t, filepath.Join(w.secretDir, "key"), "TOPSECRET-dir\n")
	w.secretFile = filepath.Join(w.ws, "token.txt")
	write(t, w.secretFile, "TOPSECRET-file\n")
	w.ruleSecret = filepath.Join(w.ws, "private", "notes.md")
	write(t, w.ruleSecret, "TOPSECRET-rule\n")
	write(t, filepath.Join(w.ws, ".claude", "settings.json"), "{}\n")
	sb := &settings.Sandbox{}
	sb.Filesystem.DenyRead = vals(w.secretDir, w.secretFile)
	sb.Filesystem.DenyWrite = vals(filepath.Join(w.ws, "frozen"))
	in := sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Settings: sb, Dirs: []string{w.ws},
		ReadDeny: []sandbox.PathRule{{Spec: "./private/**"}}}
	if mutate != nil {
		mutate(&in)
	}
	w.s = sandbox.New(sandbox.NewPolicy(in), sandbox.Options{})
	skipWithoutSandbox(t, w.s)
	return w
}

// launchers are the programs that set up the namespaces, each of which the escape suite
// runs through: bubblewrap and keel's own helper.
var launchers = []string{"bwrap", "helper"}

// forcedLauncher is the launcher the running test forced ("": keel chooses).
var forcedLauncher string

// forEachLauncher runs test once for each launcher, forced, as a subtest named after it.
func forEachLauncher(t *testing.T, test func(t *testing.T)) {
	for _, l := range launchers {
		t.Run(l, func(t *testing.T) {
			sandbox.ForceLauncher(t, l)
			forcedLauncher = l
			t.Cleanup(func() { forcedLauncher = "" })
			test(t)
		})
	}
}

// skipWithoutSandbox skips the test, saying why, where the sandbox cannot start. Under a
// forced launcher the sandbox must use it; bubblewrap, when it is installed and recent
// enough and the kernel gives this user namespaces, must start.
func skipWithoutSandbox(t *testing.T, s *sandbox.Sandbox) {
	t.Helper()
	if err := s.Available(); err != nil {
		if errors.Is(err, sandbox.ErrUnavailable) {
			if forcedLauncher == "bwrap" {
				if path, version, ferr := sandbox.FindBwrap(); ferr != nil {
					t.Skipf("bubblewrap is not usable here (%v), so the escape suite does not run through it", ferr)
				} else if userNamespacesWork() {
					t.Fatalf("%s at %s is installed and user namespaces work, but the sandbox does not start under it: %v", version, path, err)
				}
			}
			t.Skipf("this machine cannot run the sandbox, so the escape suite does not run: %v", err)
		}
		t.Fatal(err)
	}
	if got := sandbox.Launcher(s); forcedLauncher != "" && got != forcedLauncher {
		t.Fatalf("the sandbox was forced to %s but uses %s", forcedLauncher, got)
	}
}

// userNamespacesWork reports whether this process can start a program in a new user
// namespace.
func userNamespacesWork() bool {
	cmd := exec.Command("true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWUSER}
	return cmd.Run() == nil
}

func vals(ss ...string) []settings.Value[string] {
	var out []settings.Value[string]
	for _, s := range ss {
		out = append(out, settings.Value[string]{V: s, From: settings.Origin{Scope: "user"}})
	}
	return out
}

func write(t *testing.T, path, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	gittest.Run(t, dir, args...)
}

// run runs script with bash in the sandbox, in the workspace, and returns its output.
func (w *world) run(t *testing.T, script string, env ...string) string {
	t.Helper()
	out, _ := w.say(t, script, env...)
	return out
}

// say is run that also returns what the sandbox said as it released the command: what it
// disarmed ([sandbox.Run.Planted]), one string.
func (w *world) say(t *testing.T, script string, env ...string) (out, said string) {
	t.Helper()
	cmd := exec.Command("bash", "-c", script)
	cmd.Dir = w.ws
	cmd.Env = append(os.Environ(), env...)
	run, err := w.s.Confine(cmd)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := cmd.CombinedOutput()
	run.Release()
	return string(b), strings.Join(run.Planted(), "\n")
}

// TestEscapeWrites: every way to write outside the writable roots, or to an always-read-only
// path inside them, fails; the host's files are unchanged afterwards.
func TestEscapeWrites(t *testing.T) { forEachLauncher(t, testEscapeWrites) }

func testEscapeWrites(t *testing.T) {
	w := newWorld(t, nil)
	o := w.outside
	attempts := map[string]string{
		"direct":          fmt.Sprintf("echo pwned > %s/new", o),
		"append existing": fmt.Sprintf("echo pwned >> %s/existing", o),
		"symlink":         fmt.Sprintf("ln -s %s/new link && echo pwned > link", o),
		"symlink dir":     fmt.Sprintf("ln -s %s dirlink && echo pwned > dirlink/new", o),
		"hard link":       fmt.Sprintf("ln %s/existing hl && echo pwned >> hl", o),
		"proc root":       fmt.Sprintf("echo pwned > /proc/self/root%s/new", o),
		"proc cwd":        fmt.Sprintf("cd %s && echo pwned > /proc/self/cwd/new", o),
		"git config":      "echo '[core]\n\tfsmonitor = touch /tmp/pwned' >> .git/config",
		"git hook":        "echo 'touch pwned' > .git/hooks/pre-commit && chmod +x .git/hooks/pre-commit",
		"rename .git":     "mv .git .git-old && mkdir -p .git/hooks && echo pwned > .git/hooks/pre-commit",
		"remove .git":     "rm -rf .git/hooks && mkdir .git/hooks && echo pwned > .git/hooks/post-checkout",
		"rename ws":       fmt.Sprintf("mv %s %s.moved", w.ws, w.ws),
		"mcp json":        "echo '{\"mcpServers\":{}}' > .mcp.json",
		"rename mcp json": "echo pwned > x && mv x .mcp.json",
		"claude settings": "echo pwned > .claude/settings.json",
		"replace .claude": "rm -rf .claude; mv .claude .c2; mkdir -p .claude && echo pwned > .claude/settings.json",
		"keel dir":        "mkdir -p .keel && echo pwned > .keel/settings.json",
		"placeholder out": "rmdir .mcp.json && echo pwned > .mcp.json",
		"placeholder mod": "chmod u+w .keel && echo pwned > .keel/settings.json",
		"gitmodules":      "echo pwned > .gitmodules",
		"denyWrite":       "mkdir -p frozen && echo pwned > frozen/x",
		"mount over":      fmt.Sprintf("mount -t tmpfs none %s && echo pwned > %s/new", o, o),
		"umount mask":     "umount .mcp.json && echo pwned > .mcp.json",
		"nested userns":   fmt.Sprintf("unshare -Urm sh -c 'mount -t tmpfs none %s; echo pwned > %s/new'", o, o),
		"python rename":   fmt.Sprintf("%s -c \"import os; os.rename('.git/config', 'c')\" && echo pwned > .git/config", python),
		"chmod outside":   fmt.Sprintf("chmod 777 %s/existing", o),
	}
	for name, script := range attempts {
		t.Run(name, func(t *testing.T) {
			out := w.run(t, script+" && echo ESCAPED")
			if strings.Contains(out, "ESCAPED") {
				t.Errorf("%q succeeded inside the sandbox:\n%s", script, out)
			}
		})
	}
	// Private scratch space is writable, and stays private.
	w.run(t, "echo pwned > /tmp/keel-escape-probe; echo pwned > /dev/shm/keel-escape-probe")
	checks := map[string]func() bool{
		"no new file outside": func() bool { _, err := os.Lstat(filepath.Join(o, "new")); return err != nil },
		"existing unchanged":  func() bool { b, _ := os.ReadFile(filepath.Join(o, "existing")); return string(b) == "original\n" },
		"existing mode":       func() bool { fi, _ := os.Stat(filepath.Join(o, "existing")); return fi.Mode().Perm() == 0o644 },
		"git config clean": func() bool {
			b, _ := os.ReadFile(filepath.Join(w.ws, ".git", "config"))
			return !strings.Contains(string(b), "fsmonitor")
		},
		"no hooks planted": func() bool {
			for _, h := range []string{"pre-commit", "post-checkout"} {
				if _, err := os.Lstat(filepath.Join(w.ws, ".git", "hooks", h)); err == nil {
					return false
				}
			}
			return true
		},
		".git in place":     func() bool { _, err := os.Stat(filepath.Join(w.ws, ".git", "HEAD")); return err == nil },
		"no .mcp.json left": func() bool { _, err := os.Lstat(filepath.Join(w.ws, ".mcp.json")); return err != nil },
		"no .keel left":     func() bool { _, err := os.Lstat(filepath.Join(w.ws, ".keel")); return err != nil },
		"claude settings intact": func() bool {
			b, _ := os.ReadFile(filepath.Join(w.ws, ".claude", "settings.json"))
			return string(b) == "{}\n"
		},
		"host /tmp untouched":     func() bool { _, err := os.Lstat("/tmp/keel-escape-probe"); return err != nil },
		"host /dev/shm untouched": func() bool { _, err := os.Lstat("/dev/shm/keel-escape-probe"); return err != nil },
	}
	for name, ok := range checks {
		if !ok() {
			t.Errorf("after the attempts: %s does not hold", name)
		}
	}
}

// TestEscapeReads: masked files (filesystem.denyRead, a Read deny rule) cannot be read by
// any spelling.
func TestEscapeReads(t *testing.T) { forEachLauncher(t, testEscapeReads) }

func testEscapeReads(t *testing.T) {
	w := newWorld(t, nil)
	for name, script := range map[string]string{
		"cat":           fmt.Sprintf("cat %s %s/key %s", w.secretFile, w.secretDir, w.ruleSecret),
		"grep -r":       fmt.Sprintf("grep -r TOPSECRET %s %s . 2>/dev/null", w.secretDir, filepath.Dir(w.ruleSecret)),
		"tar":           fmt.Sprintf("tar cf - %s %s %s 2>/dev/null | strings", w.secretDir, w.secretFile, w.ruleSecret),
		"proc root":     fmt.Sprintf("cat /proc/self/root%s /proc/self/root%s/key", w.secretFile, w.secretDir),
		"copy":          fmt.Sprintf("cp -r %s /tmp/c 2>/dev/null; cp %s /tmp/t; cat /tmp/c/* /tmp/t", w.secretDir, w.secretFile),
		"git show":      "git add -A 2>/dev/null; git -c user.name=x -c user.email=x@x commit -qm x 2>/dev/null; git show HEAD 2>/dev/null; git grep TOPSECRET",
		"dd":            fmt.Sprintf("dd if=%s 2>/dev/null", w.secretFile),
		"python":        fmt.Sprintf("%s -c \"print(open('%s').read())\"", python, w.ruleSecret),
		"hard link":     fmt.Sprintf("ln %s /tmp/l 2>/dev/null; ln %s h 2>/dev/null; cat /tmp/l h", w.secretFile, w.ruleSecret),
		"unmount":       fmt.Sprintf("umount %s; umount %s; cat %s %s/key", w.secretFile, w.secretDir, w.secretFile, w.secretDir),
		"find -exec":    fmt.Sprintf("find %s -type f -exec cat {} + 2>/dev/null", w.ws),
		"base64":        fmt.Sprintf("base64 %s | base64 -d", w.secretFile),
		"mmap via less": fmt.Sprintf("head -c 100 %s", w.ruleSecret),
	} {
		t.Run(name, func(t *testing.T) {
			if out := w.run(t, script); strings.Contains(out, "TOPSECRET") {
				t.Errorf("%q read a masked file:\n%s", script, out)
			}
		})
	}
}

// TestEscapeNetwork: no connection leaves the sandbox except through the proxy, and the
// proxy refuses what the lists do not allow — a loopback listener outside, a name that
// resolves to loopback, a Unix socket outside, /dev/tcp.
func TestEscapeNetwork(t *testing.T) { forEachLauncher(t, testEscapeNetwork) }

func testEscapeNetwork(t *testing.T) {
	for _, tool := range []string{"curl", python} {
		if _, err := exec.LookPath(tool); err != nil {
			t.Skipf("the network escapes are tried with %s, which this machine lacks", tool)
		}
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ANSWERED") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	sockDir := t.TempDir()
	sock := filepath.Join(sockDir, "outside.sock")
	ul, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	usrv := &http.Server{Handler: srv.Handler}
	go usrv.Serve(ul)
	t.Cleanup(func() { usrv.Close() })
	abstract, err := net.Listen("unix", "@keel-escape-"+filepath.Base(sockDir))
	if err != nil {
		t.Fatal(err)
	}
	asrv := &http.Server{Handler: srv.Handler}
	go asrv.Serve(abstract)
	t.Cleanup(func() { asrv.Close() })

	// rebind.test is allowed by name but leads to a loopback address nobody listed.
	l2, err := net.Listen("tcp", fmt.Sprintf("127.0.0.2:%d", port))
	if err != nil {
		t.Fatal(err)
	}
	srv2 := &http.Server{Handler: srv.Handler}
	go srv2.Serve(l2)
	t.Cleanup(func() { srv2.Close() })
	resolve := func(_ context.Context, host string) ([]netip.Addr, error) {
		switch host {
		case "allowed.test", "localhost":
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		case "rebind.test":
			return []netip.Addr{netip.MustParseAddr("127.0.0.2")}, nil
		}
		return nil, errors.New("no such host")
	}
	proxy := egress.New(egress.Rules{Allowed: []string{"allowed.test", "rebind.test", "127.0.0.1:" + fmt.Sprint(port)}, Resolve: resolve})
	w := newWorld(t, nil)
	w.s = sandbox.New(w.s.Policy(), sandbox.Options{Proxy: proxy})
	skipWithoutSandbox(t, w.s)

	for name, script := range map[string]string{
		"dev tcp loopback":   fmt.Sprintf("exec 3<>/dev/tcp/127.0.0.1/%d && echo ESCAPED", port),
		"curl no proxy":      fmt.Sprintf("curl -sf --noproxy '*' http://127.0.0.1:%d/", port),
		"proxy unlisted":     fmt.Sprintf("curl -sf http://unlisted.test:%d/", port),
		"proxy rebind":       fmt.Sprintf("curl -sf http://rebind.test:%d/", port),
		"proxy localhost":    fmt.Sprintf("curl -sf http://localhost:%d/", port),
		"socks rebind":       fmt.Sprintf("curl -sf --proxy $ALL_PROXY http://rebind.test:%d/", port),
		"unix socket":        fmt.Sprintf("curl -sf --unix-socket %s http://x/", sock),
		"unix socket python": fmt.Sprintf("%s -c \"import socket; s=socket.socket(socket.AF_UNIX); s.connect('%s'); print('ESCAPED')\"", python, sock),
		"abstract socket":    fmt.Sprintf("curl -sf --abstract-unix-socket keel-escape-%s http://x/", filepath.Base(sockDir)),
		"vsock":              fmt.Sprintf("%s -c \"import socket; socket.socket(socket.AF_VSOCK, socket.SOCK_STREAM); print('ESCAPED')\"", python),
		"io_uring":           fmt.Sprintf("%s -c \"import ctypes; p=ctypes.create_string_buffer(120); r=ctypes.CDLL(None).syscall(425, 4, p); print('ESCAPED' if r >= 0 else 'refused')\"", python),
		"ptrace":             fmt.Sprintf("sleep 5 & %s -c \"import ctypes; r=ctypes.CDLL(None).ptrace(16, $!, 0, 0); print('ESCAPED' if r == 0 else 'refused')\"; kill %%1", python),
		"strace":             "strace -f true 2>&1 && echo ESCAPED",
		"tiocsti":            fmt.Sprintf("%s -c \"import errno, fcntl, termios\ntry: fcntl.ioctl(0, termios.TIOCSTI, b'x')\nexcept OSError as e: print('refused' if e.errno == errno.EPERM else 'ESCAPED')\nelse: print('ESCAPED')\"", python),
		"outside pids":       "ps -e -o pid= | wc -l | { read n; [ \"$n\" -gt 10 ] && echo ESCAPED; true; }",
	} {
		t.Run(name, func(t *testing.T) {
			if out := w.run(t, script); strings.Contains(out, "ANSWERED") || strings.Contains(out, "ESCAPED") {
				t.Errorf("%q reached out:\n%s", script, out)
			}
		})
	}
	t.Run("allowed domain answers through the proxy", func(t *testing.T) {
		for _, proxyVar := range []string{"", "--proxy $ALL_PROXY"} {
			if out := w.run(t, fmt.Sprintf("curl -sS %s http://allowed.test:%d/", proxyVar, port)); !strings.Contains(out, "ANSWERED") {
				t.Errorf("an allowed domain did not answer through the proxy (%s):\n%s", proxyVar, out)
			}
		}
	})
}

// TestPositiveControls: what must keep working inside does: writes to the workspace and the
// caches land, git status works, go build works, a small npm command works.
func TestPositiveControls(t *testing.T) { forEachLauncher(t, testPositiveControls) }

func testPositiveControls(t *testing.T) {
	home, _ := os.UserHomeDir()
	caches := sandbox.Caches(home, os.Getenv)
	w := newWorld(t, func(in *sandbox.Input) { in.Caches = caches })
	write(t, filepath.Join(w.ws, "go.mod"), "module example.com/x\n\ngo 1.22\n")
	write(t, filepath.Join(w.ws, "main.go"), "package main\n\nfunc main() { println(\"built\") }\n")
	out := w.run(t, "echo landed > out.txt && mkdir -p sub/dir && echo deep > sub/dir/f && git status --short && go build -o bin/x . && ./bin/x && echo tmp > /tmp/t && cat /tmp/t")
	for _, want := range []string{"?? main.go", "built", "tmp"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	if b, _ := os.ReadFile(filepath.Join(w.ws, "sub", "dir", "f")); string(b) != "deep\n" {
		t.Errorf("an allowed write did not land: %q", b)
	}
	if _, err := os.Stat(filepath.Join(w.ws, "bin", "x")); err != nil {
		t.Errorf("go build's output did not land: %v", err)
	}
	if _, err := exec.LookPath("npm"); err == nil {
		if out := w.run(t, "npm --version && npm config get cache"); !strings.Contains(out, ".npm") {
			t.Errorf("npm did not run inside:\n%s", out)
		}
	}
}
