package mcphost

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestParsePython: a command line reads as Python reads it — options with a value of their
// own (-W, -X, joined or not, clustered after flags), -c and -m ending the options, the first
// other word the script — through env's options and assignments and `uv run`.
func TestParsePython(t *testing.T) {
	type got struct {
		At           int
		Dir, Module  string
		Script, Safe bool
		IgnoresEnv   bool
		Cleared, Set bool
	}
	for _, tc := range []struct {
		argv []string
		want got
	}{
		{[]string{"python3", "-m", "calendar"}, got{Dir: "/w", Module: "calendar"}},
		{[]string{"python3", "-W", "ignore", "-m", "calendar"}, got{Dir: "/w", Module: "calendar"}},
		{[]string{"python3", "-X", "utf8", "-m", "calendar"}, got{Dir: "/w", Module: "calendar"}},
		{[]string{"python3", "-Wignore", "-bb", "-uX", "dev", "-mcalendar"}, got{Dir: "/w", Module: "calendar"}},
		{[]string{"python3", "--check-hash-based-pycs", "never", "-m", "calendar"}, got{Dir: "/w", Module: "calendar"}},
		{[]string{"/usr/bin/python3.12", "-u", "-m", "pkg.mod", "--flag"}, got{Dir: "/w", Module: "pkg.mod"}},
		{[]string{"python3", "-W", "ignore", "server.py"}, got{Dir: "/w", Script: true}},
		{[]string{"python3", "--", "server.py"}, got{Dir: "/w", Script: true}},
		{[]string{"python3", "-c", "import x"}, got{Dir: "/w"}},
		{[]string{"python3", "-"}, got{Dir: "/w"}},
		{[]string{"python3"}, got{Dir: "/w"}},
		{[]string{"python3", "-P", "-m", "calendar"}, got{Dir: "/w", Module: "calendar", Safe: true}},
		{[]string{"python3", "-I", "-m", "calendar"}, got{Dir: "/w", Module: "calendar", Safe: true}},
		{[]string{"python3", "-Es", "-m", "calendar"}, got{Dir: "/w", Module: "calendar", IgnoresEnv: true}},
		{[]string{"env", "python3", "-m", "calendar"}, got{At: 1, Dir: "/w", Module: "calendar"}},
		{[]string{"/usr/bin/env", "PYTHONUNBUFFERED=1", "python3", "-m", "calendar"}, got{At: 2, Dir: "/w", Module: "calendar"}},
		{[]string{"env", "-i", "PATH=/usr/bin", "python3", "-m", "calendar"}, got{At: 3, Dir: "/w", Module: "calendar", Cleared: true}},
		{[]string{"env", "-u", "PYTHONSAFEPATH", "python3", "-m", "calendar"}, got{At: 3, Dir: "/w", Module: "calendar", Cleared: true}},
		{[]string{"env", "-u", "HOME", "--", "A=1", "python3", "-m", "calendar"}, got{At: 5, Dir: "/w", Module: "calendar"}},
		{[]string{"env", "-C", "sub", "python3", "-m", "calendar"}, got{At: 3, Dir: "/w/sub", Module: "calendar"}},
		{[]string{"env", "--chdir=/o", "python3", "-m", "calendar"}, got{At: 2, Dir: "/o", Module: "calendar"}},
		{[]string{"env", "PYTHONSAFEPATH=", "python3", "-m", "calendar"}, got{At: 2, Dir: "/w", Module: "calendar", Set: true}},
		{[]string{"uv", "run", "python", "-m", "calendar"}, got{At: 2, Dir: "/w", Module: "calendar"}},
	} {
		run, ok := parsePython(tc.argv, "/w")
		if !ok {
			t.Errorf("%v: not read as Python", tc.argv)
			continue
		}
		g := got{run.at, filepath.ToSlash(run.dir), run.module, run.script, run.safe, run.ignoresEnv, run.cleared, run.assigned}
		if diff := cmp.Diff(tc.want, g); diff != "" {
			t.Errorf("%v: mismatch (-want +got):\n%s", tc.argv, diff)
		}
	}
	for _, argv := range [][]string{
		{"node", "-m", "x"}, {"python-lsp-server", "-m", "x"}, {"env", "-S", "python3 -m calendar"}, {"env", "A=1"},
		{"uv", "run", "--with", "x", "python", "-m", "calendar"}, {"sh", "-c", "python3 -m calendar"},
	} {
		if run, ok := parsePython(argv, "/w"); ok {
			t.Errorf("%v read as Python: %+v", argv, run)
		}
	}
}

// TestSafePath: a stdio server Python runs with the working directory first on sys.path —
// -m with any options before it, behind env or uv run, -c — starts with PYTHONSAFEPATH=1
// (as env's assignment where env clears the environment, with -P where -E ignores it); a
// script, a module the directory holds, -P or -I, and a value the configuration sets stay as
// they are, and so does the configuration Apply is given.
func TestSafePath(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "local_server"), 0o755); err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "sub", "local_mod.py"), "")
	type want struct {
		Env  string
		Args []string
	}
	for _, tc := range []struct {
		argv []string
		env  map[string]string
		want want
	}{
		{[]string{"/usr/bin/python3", "-u", "-m", "mcp_server_fetch"}, nil, want{"1", []string{"-u", "-m", "mcp_server_fetch"}}},
		{[]string{"python3", "-W", "ignore", "-m", "calendar"}, nil, want{"1", []string{"-W", "ignore", "-m", "calendar"}}},
		{[]string{"python3", "-X", "utf8", "-m", "calendar"}, nil, want{"1", []string{"-X", "utf8", "-m", "calendar"}}},
		{[]string{"env", "python3", "-m", "calendar"}, nil, want{"1", []string{"python3", "-m", "calendar"}}},
		{[]string{"/usr/bin/env", "PYTHONUNBUFFERED=1", "python3", "-m", "calendar"}, nil, want{"1", []string{"PYTHONUNBUFFERED=1", "python3", "-m", "calendar"}}},
		{[]string{"env", "-i", "python3", "-m", "calendar"}, nil, want{"1", []string{"-i", "PYTHONSAFEPATH=1", "python3", "-m", "calendar"}}},
		{[]string{"python3", "-E", "-m", "calendar"}, nil, want{"1", []string{"-P", "-E", "-m", "calendar"}}},
		{[]string{"uv", "run", "python", "-m", "calendar"}, nil, want{"1", []string{"run", "python", "-m", "calendar"}}},
		{[]string{"python3", "-c", "import calendar"}, nil, want{"1", []string{"-c", "import calendar"}}},
		{[]string{"python3", "-m", "local_server.main"}, nil, want{"", []string{"-m", "local_server.main"}}},
		{[]string{"python3", "-X", "utf8", "-m", "local_server"}, nil, want{"", []string{"-X", "utf8", "-m", "local_server"}}},
		{[]string{"env", "-C", "sub", "python3", "-m", "local_mod"}, nil, want{"", []string{"-C", "sub", "python3", "-m", "local_mod"}}},
		{[]string{"python3", "-W", "ignore", "server.py", "-m", "x"}, nil, want{"", []string{"-W", "ignore", "server.py", "-m", "x"}}},
		{[]string{"python3", "-P", "-m", "calendar"}, nil, want{"", []string{"-P", "-m", "calendar"}}},
		{[]string{"python3", "-m", "mcp_server_time"}, map[string]string{"PYTHONSAFEPATH": ""}, want{"", []string{"-m", "mcp_server_time"}}},
		{[]string{"env", "PYTHONSAFEPATH=", "python3", "-m", "calendar"}, nil, want{"", []string{"PYTHONSAFEPATH=", "python3", "-m", "calendar"}}},
		{[]string{"node", "-m", "x"}, nil, want{"", []string{"-m", "x"}}},
	} {
		s := ServerConfig{Name: "s", Command: tc.argv[0], Args: slices.Clone(tc.argv[1:]), Env: tc.env}
		out := (Policy{Trusted: true, Dir: dir}).Apply([]ServerConfig{s})[0]
		if diff := cmp.Diff(tc.want, want{out.Env["PYTHONSAFEPATH"], out.Args}); diff != "" {
			t.Errorf("%v: mismatch (-want +got):\n%s", tc.argv, diff)
		}
		if !slices.Equal(s.Args, tc.argv[1:]) || tc.env == nil && s.Env != nil {
			t.Errorf("%v: Apply changed the configuration it was given: %+v", tc.argv, s)
		}
	}
}
