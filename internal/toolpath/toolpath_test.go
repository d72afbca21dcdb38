package toolpath

import (
	"os"
	"os/user"
	"path/filepath"
	"testing"
)

// fixture: base/proj (the cwd), base/outside, base/home, with symlinks that lead out.
type fixture struct{ base, proj, outside, home string }

func newFixture(t *testing.T) fixture {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	f := fixture{base: base, proj: filepath.Join(base, "proj"), outside: filepath.Join(base, "outside"), home: filepath.Join(base, "home")}
	for _, d := range []string{"proj/src", "outside", "home/.ssh"} {
		if err := os.MkdirAll(filepath.Join(base, d), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	links := map[string]string{
		"proj/link-out": f.outside,
		"proj/src/up":   "../../outside",
		"proj/dangling": filepath.Join(f.outside, "new.txt"),
		"proj/loop":     "loop",
		"proj/homelink": f.home,
	}
	for link, target := range links {
		if err := os.Symlink(target, filepath.Join(base, link)); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

func TestResolve(t *testing.T) {
	f := newFixture(t)
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	realCwd, _ := filepath.EvalSymlinks(cwd)
	tests := []struct{ in, abs, real string }{
		{"src/a.go", f.proj + "/src/a.go", f.proj + "/src/a.go"},
		{"", f.proj, f.proj},
		{".", f.proj, f.proj},
		{"~", f.home, f.home},
		{"~/.ssh/id_rsa", f.home + "/.ssh/id_rsa", f.home + "/.ssh/id_rsa"},
		{"$HOME/.ssh/id_rsa", f.home + "/.ssh/id_rsa", f.home + "/.ssh/id_rsa"},
		{"${HOME}/x", f.home + "/x", f.home + "/x"},
		{"$HOMEX/x", f.proj + "/$HOMEX/x", f.proj + "/$HOMEX/x"},
		{"$X/y", f.proj + "/$X/y", f.proj + "/$X/y"},
		{"~nosuchuser-keel/x", f.proj + "/~nosuchuser-keel/x", f.proj + "/~nosuchuser-keel/x"},
		{"a/~/b", f.proj + "/a/~/b", f.proj + "/a/~/b"},
		{"link-out/secret", f.proj + "/link-out/secret", f.outside + "/secret"},
		{"link-out/../proj/src", f.proj + "/proj/src", f.proj + "/src"},
		{"src/up/../proj", f.proj + "/src/proj", f.proj},
		{"dangling", f.proj + "/dangling", f.outside + "/new.txt"},
		{"missing/../x", f.proj + "/x", f.proj + "/x"},
		{"homelink/.ssh/id_rsa", f.proj + "/homelink/.ssh/id_rsa", f.home + "/.ssh/id_rsa"},
		{f.outside + "/../proj/src", f.proj + "/src", f.proj + "/src"},
		{"//" + f.outside[1:] + "//x", f.outside + "/x", f.outside + "/x"},
		{"/proc/self/cwd/x", "/proc/self/cwd/x", realCwd + "/x"},
	}
	for _, tt := range tests {
		got := Resolve(tt.in, f.proj, f.home)
		if got.Abs != filepath.FromSlash(tt.abs) || got.Real != filepath.FromSlash(tt.real) || got.Given != tt.in {
			t.Errorf("Resolve(%q) = %+v; want abs %s, real %s", tt.in, got, tt.abs, tt.real)
		}
	}
	// A symlink loop stops at the kernel's limit instead of running forever.
	if got := Resolve("loop/x", f.proj, f.home); got.Real == "" {
		t.Errorf("loop resolved to nothing")
	}
}

func TestResolveOtherUsersHome(t *testing.T) {
	u, err := user.Current()
	if err != nil || u.HomeDir == "" {
		t.Skipf("no current user to look up: %v", err)
	}
	got := Resolve("~"+u.Username+"/x", "/tmp", "/elsewhere")
	if want := filepath.Join(u.HomeDir, "x"); got.Abs != want {
		t.Errorf("~%s/x resolved to %s; want %s", u.Username, got.Abs, want)
	}
}

func TestResolveDefaultHome(t *testing.T) {
	home := t.TempDir()
	t.Setenv("HOME", home)
	if got := Resolve("~/x", "/tmp", ""); got.Abs != filepath.Join(home, "x") {
		t.Errorf("~/x with the default home = %s; want below %s", got.Abs, home)
	}
}

func TestGlobRoot(t *testing.T) {
	f := newFixture(t)
	tests := []struct{ pattern, path, root, rest string }{
		{"**/*.go", "", f.proj, "**/*.go"},
		{"src/**/*.go", "", f.proj + "/src", "**/*.go"},
		{"*.go", "src", f.proj + "/src", "*.go"},
		{"../outside/*", "", f.outside, "*"},
		{f.outside + "/**", "", f.outside, "**"},
		{f.outside + "/**", "src", f.outside, "**"},
		{"~/.ssh/*", "", f.home + "/.ssh", "*"},
		{"*", "~", f.home, "*"},
		{"*", "link-out", f.outside, "*"},
		{"src/a.go", "", f.proj + "/src", "a.go"},
		{`a\[1\]/*`, "", f.proj + "/a[1]", "*"},
	}
	for _, tt := range tests {
		root, rest := GlobRoot(tt.pattern, tt.path, f.proj, f.home)
		if root.Real != filepath.FromSlash(tt.root) || rest != tt.rest {
			t.Errorf("GlobRoot(%q, %q) = %s, %q; want %s, %q", tt.pattern, tt.path, root.Real, rest, tt.root, tt.rest)
		}
	}
}
