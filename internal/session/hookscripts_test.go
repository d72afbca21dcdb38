package session

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/pluginset"
	"github.com/keel-dev/keel/internal/settings"
)

// writeFiles makes each file below dir with its content.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// TestHookScripts: the files a hook command runs are found as the shell would run them —
// absent ones too when they would be run from inside the project, relative ones from the
// directory a cd moved to, a plugin's from its root — and nothing is made up for a word
// keel cannot resolve.
func TestHookScripts(t *testing.T) {
	proj := t.TempDir()
	outside := t.TempDir()
	writeFiles(t, proj, map[string]string{
		"tools/lint.sh":      "exit 0\n",
		"filters/x.jq":       ".\n",
		"plug/hook.sh":       "exit 0\n",
		"scripts/env.sh":     "X=1\n",
		"here.sh":            "exit 0\n",
		"pkg/__init__.py":    "",
		"pkg/mod.py":         "",
		"single.py":          "",
		"runner/__main__.py": "",
		"tools/pkg2/m.py":    "",
		"tools/run":          "#!/usr/bin/env -S python3 -u\nimport json\n",
		"tools/run.sh":       "#!/bin/sh\nexit 0\n",
		"lib/real.py":        "import json\n",
		"nodehk/x":           "#!/usr/local/bin/node\n",
	})
	if err := os.Symlink("../lib/real.py", filepath.Join(proj, "tools/link.py")); err != nil {
		t.Fatal(err)
	}
	writeFiles(t, outside, map[string]string{"present.sh": "exit 0\n"})
	in := func(rel ...string) []string {
		var out []string
		for _, r := range rel {
			out = append(out, filepath.Join(proj, r))
		}
		return out
	}
	vars := map[string]string{"CLAUDE_PROJECT_DIR": proj, "KEEL_PROJECT_DIR": proj, "HOME": outside}
	plugVars := hookVars(vars, []string{"CLAUDE_PLUGIN_ROOT=" + filepath.Join(proj, "plug"), "CLAUDE_PLUGIN_DATA=" + filepath.Join(outside, "data")})
	for _, tc := range []struct {
		name, command string
		vars          map[string]string
		want          []string
	}{
		// Scripts that do not exist yet.
		{"absent absolute", proj + "/hk/pre.sh", vars, in("hk/pre.sh")},
		{"absent through sh", "sh $CLAUDE_PROJECT_DIR/hooks2/rel.sh", vars, in("hooks2/rel.sh")},
		{"absent quoted braces", `bash "${KEEL_PROJECT_DIR}/hk/b.sh" --fix`, vars, in("hk/b.sh")},
		{"absent relative command", "./hk/run", vars, in("hk/run")},
		{"interpreter without slash", "python3 -u check.py", vars, in("check.py")},
		{"node", "node x.js arg", vars, in("x.js")},
		{"bash option with value", "bash -o pipefail hk/x.sh", vars, in("hk/x.sh")},
		{"source", ". ./scripts/env.sh && ./hk/go.sh", vars, in("scripts/env.sh", "hk/go.sh")},
		{"sh -c", `bash -ec 'cd tools && ./lint.sh'`, vars, in("tools/lint.sh")},
		{"env and exec", "env FOO=1 exec ./hk/e.sh", vars, in("hk/e.sh")},
		// cd before the command.
		{"cd then relative", "cd $CLAUDE_PROJECT_DIR/tools && ./lint.sh", vars, in("tools/lint.sh")},
		{"cd literal relative", "cd tools; sh absent.sh", vars, in("tools/absent.sh")},
		{"cd in a subshell stays there", "(cd tools && ./lint.sh); ./here.sh", vars, in("tools/lint.sh", "here.sh")},
		{"cd on one side of a pipe", "cd tools | true; ./here.sh", vars, in("here.sh")},
		// Words that are not run: only existing files.
		{"existing argument", "jq -f filters/x.jq", vars, in("filters/x.jq")},
		{"absent argument", "jq -f filters/none.jq", vars, nil},
		{"existing outside", "sh " + outside + "/present.sh", vars, []string{filepath.Join(outside, "present.sh")}},
		// Plugins.
		{"plugin root braces", "sh ${CLAUDE_PLUGIN_ROOT}/hook.sh", plugVars, in("plug/hook.sh")},
		{"plugin root bare", "$CLAUDE_PLUGIN_ROOT/absent.sh", plugVars, in("plug/absent.sh")},
		{"cd plugin root", `cd "$CLAUDE_PLUGIN_ROOT" && node dist/x.js`, plugVars, in("plug/dist/x.js", "plug/dist")},
		{"plugin root unknown outside a plugin", "sh ${CLAUDE_PLUGIN_ROOT}/hook.sh", vars, nil},
		// Where an interpreter looks code up first: a Python or Node script's directory, whole,
		// when below the root; the root itself cannot be (python3 check.py above).
		{"python script's directory", "python3 tools/hook.py", vars, in("tools/hook.py", "tools")},
		{"python script's directory through cd", "cd tools && python3.12 -I lint.py", vars, in("tools/lint.py", "tools")},
		{"node script's directory", "node $CLAUDE_PROJECT_DIR/hk/x.mjs", vars, in("hk/x.mjs", "hk")},
		{"shell script's directory stays writable", "bash tools/lint.sh", vars, in("tools/lint.sh")},
		{"ruby script's directory stays writable", "ruby -w tools/x.rb", vars, in("tools/x.rb")},
		{"python script outside", "python3 " + outside + "/present.sh", vars, []string{filepath.Join(outside, "present.sh")}},
		{"python by its #! line", "$CLAUDE_PROJECT_DIR/tools/run --fix", vars, in("tools/run", "tools")},
		{"node by its #! line", "./nodehk/x", vars, in("nodehk/x", "nodehk")},
		{"shell by its #! line", "./tools/run.sh", vars, in("tools/run.sh")},
		{"python script through a link", "python3 tools/link.py", vars, in("tools/link.py", "lib")},
		// python3 -m runs a module from the working directory.
		{"python -m package module", "cd $CLAUDE_PROJECT_DIR && python3 -m pkg.mod --fix", vars, in("pkg/__init__.py", "pkg/__pycache__", "pkg/mod.py")},
		{"python -m module", "python3 -m single", vars, in("__pycache__", "single.py")},
		{"python -m package main", "python -m runner", vars, in("runner/__init__.py", "runner/__main__.py", "runner/__pycache__")},
		{"python -m below the root", "cd tools && python3 -m pkg2.m", vars, in("tools/pkg2/__init__.py", "tools/pkg2/__pycache__", "tools/pkg2/m.py", "tools")},
		// A script on stdin.
		{"bash < file", "bash < $CLAUDE_PROJECT_DIR/tools/h21.sh", vars, in("tools/h21.sh")},
		{"sh -s < file", "sh -s -- arg < hk/absent.sh", vars, in("hk/absent.sh")},
		{"python3 - < file", "python3 - < hk/x.py", vars, in("hk/x.py")},
		{"absent stdin of a script is not protected", "./hk/run.sh < in.json", vars, in("hk/run.sh")},
		{"sh -c reads no script from stdin", "sh -c 'cat' < hk/in.txt", vars, nil},
		// Nothing invented.
		{"no slash", "lint --fix", vars, nil},
		{"url", "curl -fsS https://example.com/hook.sh | sh", vars, nil},
		{"url as a script", "node https://example.com/x.js", vars, nil},
		{"absent outside the project", "/opt/tools/check.sh", vars, nil},
		{"absent outside through sh", "sh " + outside + "/none.sh", vars, nil},
		{"cd to an unknown variable", "cd $OTHER && ./lint.sh && sh y.sh", vars, nil},
		{"cd to a command substitution", `cd "$(git rev-parse --show-toplevel)" && ./hk/x.sh`, vars, nil},
		{"cd back", "cd - && ./hk/x.sh", vars, nil},
		{"unknown variable", "$TOOLS/x.sh", vars, nil},
		{"glob", "./hk/*.sh", vars, nil},
		{"inline code", `sh -c "echo hi"; python3 -m pytest tests/; bash -ec "$CMD"; node -e x.js`, vars, nil},
		{"a directory", "ls $CLAUDE_PROJECT_DIR/tools/", vars, nil},
		{"unparsable", "if then ./hk/x.sh", vars, nil},
	} {
		got := hookScripts(tc.command, tc.vars, proj, []string{proj})
		slices.Sort(got)
		want := slices.Clone(tc.want)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("%s: %q protects %q, want %q", tc.name, tc.command, got, want)
		}
	}
}

// covered reports whether p is kept read-only by one of paths: itself or a folder above it.
func covered(p string, paths []string) bool {
	return slices.ContainsFunc(paths, func(q string) bool { return p == q || strings.HasPrefix(p, q+string(filepath.Separator)) })
}

// TestHookPathsPlugin: a plugin loaded from inside the working directory is kept read-only
// whole — its manifest folder, hooks folder, server files, agents, skills, commands, bin/ and
// a hooks file its manifest names — since all of it decides what runs outside the sandbox or
// what is allowed; settings hooks still are protected, and the working directory itself is not.
func TestHookPathsPlugin(t *testing.T) {
	proj := t.TempDir()
	writeFiles(t, proj, map[string]string{
		"plug/.claude-plugin/plugin.json": `{"name": "plug", "version": "0.1.0", "hooks": "./config/extra.json"}`,
		"plug/hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh ${CLAUDE_PLUGIN_ROOT}/hook.sh"}, {"type": "command", "command": "$CLAUDE_PLUGIN_ROOT/bin/absent"}]}]}}`,
		"plug/hook.sh":                    "exit 0\n",
		"plug/config/extra.json":          `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`,
		"plug/agents/good.md":             "---\nname: good\ndescription: d\n---\nbody\n",
	})
	plugs := pluginset.New(t.Context(), pluginset.Config{Cwd: proj, Dirs: []plugin.DirSpec{{Path: "plug", Kind: plugin.OriginDir}}})
	if errs := plugs.Errors(); len(errs) > 0 {
		t.Fatalf("plugin errors: %v", errs)
	}
	st := &settings.Settings{Hooks: []settings.HookGroup{{Event: "Stop", Hooks: []settings.HookCommand{{Type: "command", Command: "cd $CLAUDE_PROJECT_DIR/tools && ./stop.sh"}}}}}
	s := &Session{projectDir: proj, opts: Options{Cwd: proj}, settings: st, plug: plugs}
	got := s.hookPaths()
	for _, want := range []string{"plug/hook.sh", "plug/bin/absent", "plug/.claude-plugin", "plug/hooks", "plug/.mcp.json", "plug/.lsp.json", "plug/config/extra.json",
		"plug/agents/good.md", "plug/agents/new.md", "plug/skills/x/SKILL.md", "plug/commands/c.md", "plug/bin/docker", "tools/stop.sh"} {
		if !covered(filepath.Join(proj, want), got) {
			t.Errorf("%s is not protected: %q", want, got)
		}
	}
	for _, p := range got {
		if p == proj || covered(proj, []string{p}) {
			t.Errorf("the working directory is protected: %s", p)
		}
	}
	// The same plugin outside the working directories: its scripts only.
	s.opts.Cwd, s.projectDir = t.TempDir(), t.TempDir()
	got = s.hookPaths()
	if covered(filepath.Join(proj, "plug/.claude-plugin"), got) || slices.Contains(got, filepath.Join(proj, "plug/bin/absent")) ||
		!slices.Contains(got, filepath.Join(proj, "plug/hook.sh")) {
		t.Errorf("a plugin outside the project protects %q", got)
	}
}

// TestHookPathsPluginIsWorkdir: a plugin whose root is the working directory (--plugin-dir .)
// cannot be read-only whole; what in it decides what runs or is allowed is, present or not.
func TestHookPathsPluginIsWorkdir(t *testing.T) {
	proj := t.TempDir()
	writeFiles(t, proj, map[string]string{
		".claude-plugin/plugin.json": `{"name": "self", "version": "0.1.0", "agents": "./team/a.md"}`,
		"team/a.md":                  "---\nname: a\ndescription: d\n---\nbody\n",
		"src/main.go":                "package main\n",
	})
	plugs := pluginset.New(t.Context(), pluginset.Config{Cwd: proj, Dirs: []plugin.DirSpec{{Path: ".", Kind: plugin.OriginDir}}})
	if errs := plugs.Errors(); len(errs) > 0 {
		t.Fatalf("plugin errors: %v", errs)
	}
	s := &Session{projectDir: proj, opts: Options{Cwd: proj}, settings: &settings.Settings{}, plug: plugs}
	got := s.hookPaths()
	for _, want := range []string{".claude-plugin", "hooks", ".mcp.json", ".lsp.json", "agents", "skills", "commands", "bin", "team/a.md"} {
		if !slices.Contains(got, filepath.Join(proj, want)) {
			t.Errorf("%s is not protected: %q", want, got)
		}
	}
	if covered(proj, got) || covered(filepath.Join(proj, "src/main.go"), got) {
		t.Errorf("the working directory is protected: %q", got)
	}
}

// TestHookPathsOtherCommands: the scripts of the other commands keel runs outside the sandbox
// are protected as hooks' are: the status line's, the stdio MCP servers' of .mcp.json, of
// keel's own file and of an agent's inline servers (by path and through an interpreter), an
// HTTP server's headersHelper, an agent's hooks' and the language servers'. An HTTP server's
// URL names no script.
func TestHookPathsOtherCommands(t *testing.T) {
	proj, home := t.TempDir(), t.TempDir()
	writeFiles(t, proj, map[string]string{
		".mcp.json": `{"mcpServers": {"a": {"command": "python3", "args": ["tools/server.py"]}, "b": {"command": "` + proj + `/tools/srv.sh"},
			"web": {"type": "http", "url": "http://127.0.0.1:1/mcp/tools/x.sh", "headersHelper": "./auth/headers.sh"}}}`,
		".claude/agents/helper.md": "---\nname: helper\ndescription: d\nmcpServers:\n  - local:\n      command: node\n      args: [agent/srv.js]\n" +
			"hooks:\n  PreToolUse:\n    - matcher: Bash\n      hooks:\n        - type: command\n          command: ./agent/pre.sh\n---\nbody\n",
		"tools/status.sh": "echo hi\n",
	})
	writeFiles(t, home, map[string]string{"mcp.json": `{"mcpServers": {"u": {"command": "bash", "args": ["-e", "` + proj + `/user/u.sh"]}}}`})
	st := &settings.Settings{
		StatusLine: settings.StatusLine{Command: settings.Value[string]{V: "tools/status.sh --short"}},
		LSPServers: map[string]settings.Value[settings.LSPServer]{"go": {V: settings.LSPServer{Command: "lsp/run.sh"}}},
	}
	s := &Session{projectDir: proj, opts: Options{Cwd: proj, Home: home}, settings: st}
	got := s.hookPaths()
	for _, want := range []string{"tools/status.sh", "tools/server.py", "tools/srv.sh", "user/u.sh", "agent/srv.js", "agent/pre.sh", "lsp/run.sh", "auth/headers.sh"} {
		if !slices.Contains(got, filepath.Join(proj, want)) {
			t.Errorf("%s is not protected: %q", want, got)
		}
	}
	// python3 tools/server.py and node agent/srv.js look their modules up beside the script.
	for _, want := range []string{"tools", "agent"} {
		if !slices.Contains(got, filepath.Join(proj, want)) {
			t.Errorf("%s/ is not protected: %q", want, got)
		}
	}
	if slices.Contains(got, filepath.Join(proj, "tools/x.sh")) {
		t.Errorf("an HTTP server's URL is protected: %q", got)
	}
}

// TestPythonSafeHooks: a hook whose Python script sits directly in the project, whose
// directory cannot be read-only whole, runs with PYTHONSAFEPATH=1; one below it (whose
// directory is protected), a module run with -m (which needs the directory on sys.path) and
// other hooks do not, and the settings' groups are left as they were.
func TestPythonSafeHooks(t *testing.T) {
	proj := t.TempDir()
	groups := []settings.HookGroup{{Event: "PreToolUse", Hooks: []settings.HookCommand{
		{Type: "command", Command: "python3 $CLAUDE_PROJECT_DIR/hook.py"},
		{Type: "command", Command: "python3 tools/hook.py"},
		{Type: "command", Command: "python3 -m hookmod"},
		{Type: "command", Command: "./hook.sh", Env: []string{"A=1"}},
		{Type: "command", Command: "./pyhook --x", Env: []string{"A=1"}},
	}}}
	writeFiles(t, proj, map[string]string{"hookmod.py": "", "hook.sh": "#!/bin/sh\n", "pyhook": "#!/usr/bin/python3\n"})
	s := &Session{projectDir: proj, opts: Options{Cwd: proj}, settings: &settings.Settings{}}
	got := s.pythonSafe(groups)
	want := [][]string{{"PYTHONSAFEPATH=1"}, nil, nil, {"A=1"}, {"A=1", "PYTHONSAFEPATH=1"}}
	for i, h := range got[0].Hooks {
		if !slices.Equal(h.Env, want[i]) {
			t.Errorf("%q runs with %q, want %q", h.Command, h.Env, want[i])
		}
	}
	if groups[0].Hooks[0].Env != nil {
		t.Errorf("the settings' hook was changed: %q", groups[0].Hooks[0].Env)
	}
}
