package sandbox_test

import (
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/sandbox"
)

// snapshot is every file below dir, by relative path: its type and mode, and a hash of its
// content (or a link's target).
func snapshot(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := e.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		var content []byte
		switch {
		case fi.Mode().IsRegular():
			content, err = os.ReadFile(path)
		case fi.Mode()&fs.ModeSymlink != 0:
			var target string
			target, err = os.Readlink(path)
			content = []byte(target)
		}
		out[rel] = fmt.Sprintf("%v %x", fi.Mode(), sha256.Sum256(content))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// sameTree reports how after differs from before.
func sameTree(t *testing.T, before, after map[string]string) {
	t.Helper()
	for k, v := range before {
		if after[k] != v {
			t.Errorf("the real cache changed: %s was %s, is %q", k, v, after[k])
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			t.Errorf("the real cache has a new file: %s", k)
		}
	}
}

// TestEscapeCachePoisoning: a command that rewrites a toolchain cache — a compiled object, a
// dependency's read-only source (chmod first), a new file — sees its own versions, and so do
// later commands, of the same session and of the next; the real cache, which the user's
// builds outside read, is byte for byte as it was.
func TestEscapeCachePoisoning(t *testing.T) { forEachLauncher(t, testEscapeCachePoisoning) }

func testEscapeCachePoisoning(t *testing.T) {
	base := sandbox.VisibleDir(t)
	cache, keelHome := filepath.Join(base, "cache"), filepath.Join(base, "keel")
	write(t, filepath.Join(cache, "ab", "obj-d"), "compiled\n")
	write(t, filepath.Join(cache, "mod", "dep@v1", "dep.go"), "package dep\n")
	for _, f := range []string{"ab/obj-d", "mod/dep@v1/dep.go"} {
		if err := os.Chmod(filepath.Join(cache, f), 0o444); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(filepath.Join(cache, "mod", "dep@v1"), 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(filepath.Join(cache, "mod", "dep@v1"), 0o755) })
	// What is always read-only or masked inside a cache stays so over its overlay.
	write(t, filepath.Join(cache, "bin", "tool"), "#!/bin/sh\n")
	write(t, filepath.Join(cache, "secret"), "TOPSECRET-cache\n")
	before := snapshot(t, cache)
	input := func(in *sandbox.Input) {
		in.Caches, in.KeelHome = []string{cache}, keelHome
		in.Protect = append(in.Protect, filepath.Join(cache, "bin"))
		in.Settings.Filesystem.DenyRead = append(in.Settings.Filesystem.DenyRead, vals(filepath.Join(cache, "secret"))...)
	}
	w := newWorld(t, input)
	if out := w.run(t, fmt.Sprintf("cat %s/secret; echo pwned > %s/bin/tool && echo ESCAPED", cache, cache)); strings.Contains(out, "TOPSECRET") || strings.Contains(out, "ESCAPED") {
		t.Errorf("a masked or always-read-only path inside a cache is not so over its overlay:\n%s", out)
	}
	poison := fmt.Sprintf(`set -e; cd %s
chmod u+w ab/obj-d && echo poisoned > ab/obj-d
chmod u+w mod/dep@v1 mod/dep@v1/dep.go && echo 'package dep; func init() { panic("pwned") }' > mod/dep@v1/dep.go
echo added > ab/new-d
cat ab/obj-d mod/dep@v1/dep.go ab/new-d`, cache)
	out := w.run(t, poison)
	for _, want := range []string{"poisoned", "pwned", "added"} {
		if !strings.Contains(out, want) {
			t.Fatalf("the command did not see its own write (%s) inside the cache:\n%s", want, out)
		}
	}
	sameTree(t, before, snapshot(t, cache))
	if _, err := os.Lstat(filepath.Join(cache, "ab", "new-d")); err == nil {
		t.Error("the file the command added is in the real cache")
	}
	read := fmt.Sprintf("cat %s/ab/obj-d %s/ab/new-d %s/mod/dep@v1/dep.go", cache, cache, cache)
	if out := w.run(t, read); !strings.Contains(out, "poisoned") || !strings.Contains(out, "added") || !strings.Contains(out, "pwned") {
		t.Errorf("a later command does not see what the first wrote in the cache:\n%s", out)
	}
	// The next session's sandbox keeps them too; its commands cannot write the upper layer but
	// through the overlay.
	next := newWorld(t, input)
	if out := next.run(t, read); !strings.Contains(out, "poisoned") || !strings.Contains(out, "added") {
		t.Errorf("the next session's command does not see what the first wrote in the cache:\n%s", out)
	}
	direct := fmt.Sprintf("for d in %s/sandbox/caches/*/upper; do echo x > $d/direct && echo ESCAPED; done", keelHome)
	if out := next.run(t, direct); strings.Contains(out, "ESCAPED") {
		t.Errorf("a command wrote keel's upper layer directly:\n%s", out)
	}
	sameTree(t, before, snapshot(t, cache))
}

// TestCacheGoBuild is the positive control: go build with its build and module caches the
// sandbox's overlays works inside, and leaves the real caches as they were.
func TestCacheGoBuild(t *testing.T) { forEachLauncher(t, testCacheGoBuild) }

func testCacheGoBuild(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go on PATH")
	}
	base := sandbox.VisibleDir(t)
	gocache, modcache := filepath.Join(base, "gocache"), filepath.Join(base, "gomodcache")
	env := []string{"GOCACHE=" + gocache, "GOMODCACHE=" + modcache, "GOFLAGS=-mod=mod", "GOPROXY=off", "GOTOOLCHAIN=local"}
	w := newWorld(t, func(in *sandbox.Input) {
		in.Caches, in.KeelHome = []string{gocache, modcache}, filepath.Join(base, "keel")
	})
	write(t, filepath.Join(w.ws, "go.mod"), "module example.com/x\n\ngo 1.22\n")
	write(t, filepath.Join(w.ws, "main.go"), "package main\n\nfunc main() { println(\"built\") }\n")
	// The caches are warm from a build outside, as a user's are.
	warm := exec.Command(goTool, "build", "-o", filepath.Join(base, "x-outside"), ".")
	warm.Dir, warm.Env = w.ws, append(os.Environ(), env...)
	if out, err := warm.CombinedOutput(); err != nil {
		t.Fatalf("go build outside: %v\n%s", err, out)
	}
	if err := os.MkdirAll(modcache, 0o755); err != nil {
		t.Fatal(err)
	}
	beforeBuild, beforeMod := snapshot(t, gocache), snapshot(t, modcache)
	write(t, filepath.Join(w.ws, "main.go"), "package main\n\nfunc main() { println(\"built inside\") }\n")
	out := w.run(t, "go build -o bin/x . && ./bin/x", env...)
	if !strings.Contains(out, "built inside") {
		t.Fatalf("go build did not work inside:\n%s", out)
	}
	sameTree(t, beforeBuild, snapshot(t, gocache))
	sameTree(t, beforeMod, snapshot(t, modcache))
}

// TestCacheOverlayDoctor: keel doctor lists each cache as an overlay, the real cache under
// keel's upper layer; where there can be none (here: no directory of keel's to keep them in)
// the caches stay writable as they were, the command still runs, and both the session's
// notice and doctor say so.
func TestCacheOverlayDoctor(t *testing.T) { forEachLauncher(t, testCacheOverlayDoctor) }

func testCacheOverlayDoctor(t *testing.T) {
	base := sandbox.VisibleDir(t)
	cache := filepath.Join(base, "cache")
	if err := os.Mkdir(cache, 0o755); err != nil {
		t.Fatal(err)
	}
	// keel's directory in /tmp, which is private inside, is reached all the same.
	for _, keelHome := range []string{filepath.Join(t.TempDir(), "keel"), ""} {
		var notice error
		p := sandbox.NewPolicy(sandbox.Input{Mode: sandbox.ModeWorkspaceWrite, Dirs: []string{t.TempDir()}, Caches: []string{cache}, KeelHome: keelHome})
		s := sandbox.New(p, sandbox.Options{Unavailable: func(err error) { notice = err }})
		skipWithoutSandbox(t, s)
		var line sandbox.Finding
		for _, f := range sandbox.Doctor(t.Context(), s) {
			if f.Name == "toolchain caches" {
				line = f
			}
		}
		if keelHome != "" {
			if line.Status != "ok" || !strings.Contains(line.Detail, cache+" → "+filepath.Join(keelHome, "sandbox", "caches")) || notice != nil {
				t.Errorf("with a directory for them, the caches are not listed as overlays: %+v (notice %v)", line, notice)
			}
			continue
		}
		if line.Status != "warn" || !strings.Contains(line.Detail, "not overlays") {
			t.Errorf("doctor does not say the caches are not overlays: %+v", line)
		}
		if !errors.Is(notice, sandbox.ErrLimited) || !strings.Contains(notice.Error(), cache) {
			t.Errorf("the notice does not say the caches are not overlays: %v", notice)
		}
		cmd := exec.Command("bash", "-c", "echo landed > "+filepath.Join(cache, "f"))
		cmd.Dir = base
		run, err := s.Confine(cmd)
		if err != nil {
			t.Fatal(err)
		}
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("a command writing the cache failed: %v\n%s", err, out)
		}
		run.Release()
		if b, _ := os.ReadFile(filepath.Join(cache, "f")); string(b) != "landed\n" {
			t.Errorf("the cache bound writable did not take the write: %q", b)
		}
	}
}

// TestCacheConcurrent: two commands running at once write the same cache, each through its
// own overlay (the second with a work directory of its own), and each sees what the other
// wrote before it looked; the real cache stays as it was.
func TestCacheConcurrent(t *testing.T) { forEachLauncher(t, testCacheConcurrent) }

func testCacheConcurrent(t *testing.T) {
	base := sandbox.VisibleDir(t)
	cache := filepath.Join(base, "cache")
	write(t, filepath.Join(cache, "existing"), "original\n")
	before := snapshot(t, cache)
	w := newWorld(t, func(in *sandbox.Input) { in.Caches, in.KeelHome = []string{cache}, filepath.Join(base, "keel") })
	first := exec.Command("bash", "-c", fmt.Sprintf("echo one > %s/a && echo READY && read line && cat %s/b", cache, cache))
	first.Dir = w.ws
	stdin, err := first.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := first.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	run, err := w.s.Confine(first)
	if err != nil {
		t.Fatal(err)
	}
	if err := first.Start(); err != nil {
		t.Fatal(err)
	}
	ready := make([]byte, len("READY\n"))
	if _, err := io.ReadFull(stdout, ready); err != nil || string(ready) != "READY\n" {
		t.Fatalf("the first command did not start: %q %v", ready, err)
	}
	if out := w.run(t, fmt.Sprintf("echo two > %s/b && cat %s/a", cache, cache)); !strings.Contains(out, "one") {
		t.Errorf("the second command does not see what the first wrote:\n%s", out)
	}
	stdin.Write([]byte("go\n"))
	stdin.Close()
	rest, _ := io.ReadAll(stdout)
	if err := first.Wait(); err != nil || !strings.Contains(string(rest), "two") {
		t.Errorf("the first command does not see what the second wrote: %v\n%s", err, rest)
	}
	run.Release()
	sameTree(t, before, snapshot(t, cache))
}

// TestCacheFailsClosed: where a cache's overlay cannot be set up for one command — keel
// cannot make its directories (a command can fill the disk), or the kernel refuses the mount
// (here: the real cache inside what would be its upper layer) — the cache is read-only for
// that command, never the real cache bound writable: the command still runs and reads it,
// its writes fail, its output says why, and the real cache is as it was. The next command
// whose overlay can be made has it again.
func TestCacheFailsClosed(t *testing.T) { forEachLauncher(t, testCacheFailsClosed) }

func testCacheFailsClosed(t *testing.T) {
	for name, sabotage := range map[string]func(t *testing.T, dir, base string){
		"no directories": func(t *testing.T, dir, _ string) {
			write(t, dir, "a file where keel's directory for the cache's layers goes\n")
		},
		"mount refused": func(t *testing.T, dir, base string) {
			if err := os.Symlink(base, dir); err != nil { // its upper layer: base/upper, holding the cache
				t.Fatal(err)
			}
		},
	} {
		t.Run(name, func(t *testing.T) {
			base := sandbox.VisibleDir(t)
			cache, keelHome := filepath.Join(base, "upper", "cache"), filepath.Join(base, "keel")
			write(t, filepath.Join(cache, "existing"), "original\n")
			w := newWorld(t, func(in *sandbox.Input) { in.Caches, in.KeelHome = []string{cache}, keelHome })
			dir := sandbox.CacheDir(keelHome, cache)
			if err := os.MkdirAll(filepath.Dir(dir), 0o755); err != nil {
				t.Fatal(err)
			}
			sabotage(t, dir, base)
			before := snapshot(t, cache)
			script := fmt.Sprintf("cat %s/existing; echo poisoned > %s/existing && echo WROTE; echo added > %s/new && echo WROTE", cache, cache, cache)
			out := w.run(t, script)
			if !strings.Contains(out, "original") {
				t.Errorf("the cache is not readable when its overlay fails:\n%s", out)
			}
			if strings.Contains(out, "WROTE") {
				t.Errorf("a command wrote the cache whose overlay failed:\n%s", out)
			}
			if !strings.Contains(out, cache+" is read-only for this command") {
				t.Errorf("the command's output does not say the cache is read-only for it:\n%s", out)
			}
			sameTree(t, before, snapshot(t, cache))
			if err := os.Remove(dir); err != nil {
				t.Fatal(err)
			}
			if out := w.run(t, fmt.Sprintf("echo over > %s/existing && cat %s/existing", cache, cache)); !strings.Contains(out, "over") || strings.Contains(out, "read-only") {
				t.Errorf("once its directories can be made, the cache is not an overlay again:\n%s", out)
			}
			if b, _ := os.ReadFile(filepath.Join(cache, "existing")); string(b) != "original\n" {
				t.Errorf("the real cache changed: %q", b)
			}
		})
	}
}
