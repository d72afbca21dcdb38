package pluginset

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/plugin"
	"github.com/keel-dev/keel/internal/settings"
)

// writePlugin makes a plugin folder named name with a bin/ program and an MCP server running
// command.
func writePlugin(t *testing.T, dir, name, command string) {
	t.Helper()
	files := map[string]string{
		".claude-plugin/plugin.json": `{"name": "` + name + `", "version": "1.0.0"}`,
		"commands/c.md":              "---\ndescription: c\n---\nbody",
		".mcp.json":                  `{"srv": {"command": "` + command + `"}}`,
		"bin/tool":                   "#!/bin/sh\n",
	}
	for f, body := range files {
		p := filepath.Join(dir, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// servers records what a reload asked of the MCP servers.
type servers struct{ added, removed []string }

func (s *servers) Add(_ context.Context, cfg mcphost.ServerConfig) error {
	s.added = append(s.added, cfg.Name+" "+cfg.Command)
	return nil
}

func (s *servers) Remove(_ context.Context, name string) error {
	s.removed = append(s.removed, name)
	return nil
}

// fixture is a set over two plugin folders, a present and b absent, and a settings file whose
// change is what a reload notices; calls lists the steps a reload took.
type fixture struct {
	dir, settingsFile string
	srv               servers
	calls             []string
	set               *Set
}

func newFixture(t *testing.T) *fixture {
	f := &fixture{dir: t.TempDir()}
	f.settingsFile = filepath.Join(f.dir, "settings.json")
	if err := os.WriteFile(f.settingsFile, []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	writePlugin(t, filepath.Join(f.dir, "a"), "a", "run-a")
	note := func(step string) { f.calls = append(f.calls, step) }
	f.set = New(t.Context(), Config{
		Cwd: f.dir, Dirs: []plugin.DirSpec{{Path: "a"}, {Path: "b"}}, SettingsFiles: []string{f.settingsFile},
		Reread: func() settings.Plugins { note("reread"); return settings.Plugins{} },
		SetHooks: func([]settings.HookGroup) []settings.Problem {
			note("hooks")
			return nil
		},
		RefreshSkills: func() { note("skills") },
		ReloadAgents:  func(context.Context) { note("agents") },
		MCP:           func() Servers { return &f.srv },
		Admit: func(c []mcphost.ServerConfig) []mcphost.ServerConfig {
			note("admit")
			return c
		},
		Announce: func(reason string) { note("announce " + reason) },
	})
	return f
}

// touch changes the settings file, as enabling or disabling a plugin would.
func (f *fixture) touch(t *testing.T, body string) {
	t.Helper()
	if err := os.WriteFile(f.settingsFile, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
}

func texts(ns []event.Notice) string {
	var out []string
	for _, n := range ns {
		out = append(out, n.Level+": "+n.Text)
	}
	return strings.Join(out, "\n")
}

func TestOpenLoadsAndReportsErrors(t *testing.T) {
	f := newFixture(t)
	infos, errs := f.set.Init()
	if len(infos) != 1 || infos[0].Name != "a" || infos[0].Version != "1.0.0" {
		t.Errorf("plugins %+v", infos)
	}
	if len(errs) != 1 || errs[0].Plugin != "inline[1]" || errs[0].Type != "path-not-found" {
		t.Errorf("plugin errors %+v", errs)
	}
	if n := f.set.Notices(); len(n) != 1 || !strings.Contains(n[0].Text, "plugin inline[1]") {
		t.Errorf("notices %+v", n)
	}
	env := f.set.Environ()
	i := slices.IndexFunc(env, func(kv string) bool { return strings.HasPrefix(kv, "PATH=") })
	if i < 0 || !strings.HasPrefix(env[i], "PATH="+filepath.Join(f.dir, "a", "bin")+string(os.PathListSeparator)) {
		t.Errorf("the plugin's bin/ is not first on PATH: %v", env)
	}
	if len(f.calls) != 0 {
		t.Errorf("opening ran reload steps: %v", f.calls)
	}
}

// Nothing changed: nothing is re-read, nothing told.
func TestReloadUnchangedDoesNothing(t *testing.T) {
	f := newFixture(t)
	if n := f.set.Reload(t.Context()); n != nil || len(f.calls) != 0 {
		t.Errorf("reload with nothing changed: notices %v, steps %v", n, f.calls)
	}
}

// The settings changed but the plugins did not: they are read again, the error that stands
// is not told twice, and nothing is swapped.
func TestReloadSameSetSwapsNothing(t *testing.T) {
	f := newFixture(t)
	f.touch(t, `{"changed": true}`)
	if n := f.set.Reload(t.Context()); len(n) != 0 {
		t.Errorf("notices %s", texts(n))
	}
	if !slices.Equal(f.calls, []string{"reread"}) || len(f.srv.added)+len(f.srv.removed) != 0 {
		t.Errorf("steps %v, servers %+v", f.calls, f.srv)
	}
}

// A plugin came: every part is told, its server started, the old one's kept; one went: its
// server removed.
func TestReloadSwapsChangedSet(t *testing.T) {
	f := newFixture(t)
	writePlugin(t, filepath.Join(f.dir, "b"), "b", "run-b")
	f.touch(t, `{"b": 1}`)
	n := f.set.Reload(t.Context())
	want := []string{"reread", "hooks", "skills", "agents", "admit", "announce plugins changed"}
	if !slices.Equal(f.calls, want) {
		t.Errorf("steps %v, want %v", f.calls, want)
	}
	if !slices.Equal(f.srv.added, []string{"plugin_b_srv run-b"}) || len(f.srv.removed) != 0 {
		t.Errorf("servers %+v", f.srv)
	}
	if s := texts(n); !strings.Contains(s, "info: plugins changed: a@inline, b@inline") || strings.Contains(s, "inline[1]") {
		t.Errorf("notices %s", s)
	}
	if len(f.set.Errors()) != 0 || len(f.set.List()) != 2 {
		t.Errorf("after the reload: plugins %v, errors %v", f.set.List(), f.set.Errors())
	}

	if err := os.RemoveAll(filepath.Join(f.dir, "a")); err != nil {
		t.Fatal(err)
	}
	f.touch(t, `{"a": 0}`)
	n = f.set.Reload(t.Context())
	if !slices.Equal(f.srv.removed, []string{"plugin_a_srv"}) || len(f.srv.added) != 1 {
		t.Errorf("servers %+v", f.srv)
	}
	if s := texts(n); !strings.Contains(s, "plugin inline[0]") || !strings.Contains(s, "plugins changed: b@inline") {
		t.Errorf("notices %s", s)
	}
}

// With no MCP servers running the change waits for the next session, and says so.
func TestReloadWithoutServers(t *testing.T) {
	f := newFixture(t)
	f.set.c.MCP = func() Servers { return nil }
	writePlugin(t, filepath.Join(f.dir, "b"), "b", "run-b")
	f.touch(t, `{"b": 1}`)
	if s := texts(f.set.Reload(t.Context())); !strings.Contains(s, "they start with the next session") {
		t.Errorf("notices %s", s)
	}
}
