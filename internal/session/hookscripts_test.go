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
		"tools/lint.sh":  "exit 0\n",
		"filters/x.jq":   ".\n",
		"plug/hook.sh":   "exit 0\n",
		"scripts/env.sh": "X=1\n",
		"here.sh":        "exit 0\n",
	})
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
		{"cd plugin root", `cd "$CLAUDE_PLUGIN_ROOT" && node dist/x.js`, plugVars, in("plug/dist/x.js")},
		{"plugin root unknown outside a plugin", "sh ${CLAUDE_PLUGIN_ROOT}/hook.sh", vars, nil},
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

// TestHookPathsPlugin: a plugin loaded from inside the working directory has its hook
// scripts, its manifest folder, hooks folder, server files and a hooks file its manifest
// names protected; settings hooks still are.
func TestHookPathsPlugin(t *testing.T) {
	proj := t.TempDir()
	writeFiles(t, proj, map[string]string{
		"plug/.claude-plugin/plugin.json": `{"name": "plug", "version": "0.1.0", "hooks": "./config/extra.json"}`,
		"plug/hooks/hooks.json":           `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "sh ${CLAUDE_PLUGIN_ROOT}/hook.sh"}, {"type": "command", "command": "$CLAUDE_PLUGIN_ROOT/bin/absent"}]}]}}`,
		"plug/hook.sh":                    "exit 0\n",
		"plug/config/extra.json":          `{"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "true"}]}]}}`,
	})
	plugs := pluginset.New(t.Context(), pluginset.Config{Cwd: proj, Dirs: []plugin.DirSpec{{Path: "plug", Kind: plugin.OriginDir}}})
	if errs := plugs.Errors(); len(errs) > 0 {
		t.Fatalf("plugin errors: %v", errs)
	}
	st := &settings.Settings{Hooks: []settings.HookGroup{{Event: "Stop", Hooks: []settings.HookCommand{{Type: "command", Command: "cd $CLAUDE_PROJECT_DIR/tools && ./stop.sh"}}}}}
	s := &Session{projectDir: proj, opts: Options{Cwd: proj}, settings: st, plug: plugs}
	got := s.hookPaths()
	for _, want := range []string{"plug/hook.sh", "plug/bin/absent", "plug/.claude-plugin", "plug/hooks", "plug/.mcp.json", "plug/.lsp.json", "plug/config/extra.json", "tools/stop.sh"} {
		if !slices.Contains(got, filepath.Join(proj, want)) {
			t.Errorf("%s is not protected: %q", want, got)
		}
	}
	for _, p := range got {
		if p == proj || p == filepath.Join(proj, "plug") || strings.HasSuffix(p, "hook.sh/") {
			t.Errorf("a whole folder is protected: %s", p)
		}
	}
	// The same plugin outside the working directories: its scripts only.
	s.opts.Cwd, s.projectDir = t.TempDir(), t.TempDir()
	got = s.hookPaths()
	if slices.Contains(got, filepath.Join(proj, "plug/.claude-plugin")) || slices.Contains(got, filepath.Join(proj, "plug/bin/absent")) ||
		!slices.Contains(got, filepath.Join(proj, "plug/hook.sh")) {
		t.Errorf("a plugin outside the project protects %q", got)
	}
}
