package hostexec

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPythonEnv: once a sandbox has set keel's bytecode cache, what keel runs outside gets it
// as PYTHONPYCACHEPREFIX — Command's environment too — in place of a prefix a sandboxed
// command can write or a relative one (Python would read and write .pyc files where commands
// plant them), while a prefix of the user's elsewhere stays; before, nothing changes.
func TestPythonEnv(t *testing.T) {
	reset(t)
	t.Cleanup(func() {
		mu.Lock()
		pycache = ""
		mu.Unlock()
	})
	ws, own, mine := t.TempDir(), t.TempDir(), t.TempDir()
	if got := PythonEnv([]string{"A=1"}); !slices.Equal(got, []string{"A=1"}) {
		t.Errorf("before any sandbox: %q", got)
	}
	Guard(func(p string) bool { return p == ws || strings.HasPrefix(p, ws+"/") })
	cache := filepath.Join(own, "pycache")
	PythonCache(cache)
	want := "PYTHONPYCACHEPREFIX=" + cache
	for _, tc := range []struct {
		name string
		env  []string
		want []string
	}{
		{"unset", []string{"A=1"}, []string{"A=1", want}},
		{"in the workspace", []string{"PYTHONPYCACHEPREFIX=" + ws + "/c", "A=1"}, []string{"A=1", want}},
		{"absent below the workspace", []string{"PYTHONPYCACHEPREFIX=" + ws + "/no/such"}, []string{want}},
		{"relative", []string{"PYTHONPYCACHEPREFIX=.pyc"}, []string{want}},
		{"empty", []string{"PYTHONPYCACHEPREFIX="}, []string{want}},
		{"the last one counts", []string{"PYTHONPYCACHEPREFIX=" + mine, "PYTHONPYCACHEPREFIX=" + ws}, []string{want}},
		{"the user's elsewhere", []string{"PYTHONPYCACHEPREFIX=" + mine}, []string{"PYTHONPYCACHEPREFIX=" + mine}},
	} {
		if got := PythonEnv(tc.env); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if env := Command(context.Background(), "sh").Env; !slices.Contains(env, want) {
		t.Errorf("Command's environment lacks %s", want)
	}
	if env, _ := Environ([]string{"PATH=/usr/bin"}); !slices.Contains(env, want) {
		t.Errorf("Environ lacks %s: %q", want, env)
	}
}
