package settings

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestPluginKeys(t *testing.T) {
	l := newLayout(t)
	f := l.files()
	l.write(t, f["user"], `{
  "enabledPlugins": {"fmt@team": true, "lint@team": true},
  "extraKnownMarketplaces": {"team": {"source": {"source": "github", "repo": "acme/plugins", "ref": "v2"}, "autoUpdate": true}}
}`)
	l.write(t, f["project"], `{"enabledPlugins": {"lint@team": false, "docs@local": true},
  "extraKnownMarketplaces": {"local": {"source": {"source": "directory", "path": "./market"}}}}`)
	l.write(t, f["managed"], `{"strictKnownMarketplaces": [{"source": "github", "repo": "acme/plugins"}, {"source": "hostPattern", "hostPattern": "^git\\.acme\\.com$"}],
  "blockedMarketplaces": []}`)
	s, err := Load(l.options())
	if err != nil {
		t.Fatal(err)
	}
	enabled := map[string]bool{}
	for k, v := range s.Plugins.Enabled {
		enabled[k] = v.V
	}
	if diff := cmp.Diff(map[string]bool{"fmt@team": true, "lint@team": false, "docs@local": true}, enabled); diff != "" {
		t.Errorf("enabledPlugins: the project must win per plugin; mismatch (-want +got):\n%s", diff)
	}
	if from := s.Plugins.Enabled["lint@team"].From; from.Scope != ScopeProject || from.Line != 1 {
		t.Errorf("lint@team from %v, want the project file, line 1", from)
	}
	team := s.Plugins.ExtraMarketplaces["team"].V
	if team.Source.Source != "github" || team.Source.Repo != "acme/plugins" || team.Source.Ref != "v2" || !team.AutoUpdate {
		t.Errorf("team marketplace = %+v", team)
	}
	if local := s.Plugins.ExtraMarketplaces["local"].V; local.Source.Path != "./market" {
		t.Errorf("local marketplace = %+v", local)
	}
	strict := s.Plugins.StrictMarketplaces
	if !strict.IsSet() || len(strict.V) != 2 || strict.V[1].HostPattern != `^git\.acme\.com$` {
		t.Errorf("strictKnownMarketplaces = %+v", strict)
	}
	if blocked := s.Plugins.BlockedMarketplaces; !blocked.IsSet() || len(blocked.V) != 0 {
		t.Errorf("blockedMarketplaces = %+v, want set and empty", blocked)
	}
}

func TestPluginKeysUntrustedAndManagedOnly(t *testing.T) {
	l := newLayout(t)
	f := l.files()
	l.write(t, f["project"], `{"enabledPlugins": {"x@m": true}, "extraKnownMarketplaces": {"m": {"source": {"source": "git", "url": "https://example.com/m.git"}}},
  "strictKnownMarketplaces": []}`)
	opts := l.options()
	opts.Trust = false
	s, _ := Load(opts)
	if len(s.Plugins.Enabled) != 0 || len(s.Plugins.ExtraMarketplaces) != 0 {
		t.Errorf("an untrusted project widened the plugins: %+v", s.Plugins)
	}
	var ignored []string
	for _, v := range s.Ignored {
		ignored = append(ignored, v.V)
	}
	if diff := cmp.Diff([]string{"enabledPlugins", "extraKnownMarketplaces"}, ignored); diff != "" {
		t.Errorf("ignored mismatch (-want +got):\n%s", diff)
	}
	if s.Plugins.StrictMarketplaces.IsSet() {
		t.Error("strictKnownMarketplaces outside managed settings was honoured")
	}
	s, _ = Load(l.options())
	if !s.Plugins.Enabled["x@m"].V || s.Plugins.ExtraMarketplaces["m"].V.Source.URL != "https://example.com/m.git" {
		t.Errorf("trusted: %+v", s.Plugins)
	}
}

func TestPluginKeysProblems(t *testing.T) {
	l := newLayout(t)
	f := l.files()
	l.write(t, f["user"], "{\"enabledPlugins\": {\n  \"noat\": true,\n  \"a@b\": \"yes\"\n},\n"+
		"\"extraKnownMarketplaces\": {\n  \"x\": {\"source\": {\"source\": \"svn\", \"url\": \"u\"}},\n  \"y\": {\"source\": {\"source\": \"github\"}},\n  \"z\": {\"autoUpdate\": true},\n  \"w\": {\"source\": {\"source\": \"hostPattern\", \"hostPattern\": \"x\"}}\n}}")
	s, _ := Load(l.options())
	var got []string
	for _, p := range s.Problems {
		got = append(got, strings.ReplaceAll(p.Error(), filepath.Dir(f["user"])+string(filepath.Separator), ""))
	}
	want := []string{
		`settings.json:2:11: enabledPlugins.noat: "noat" is not a plugin id of the form name@marketplace; it can match no installed plugin`,
		`settings.json:3:10: enabledPlugins.a@b is a string, want true or false`,
		`settings.json:6:19: extraKnownMarketplaces.x.source.source "svn" is not one of github, git, directory, file, url, npm, settings, hostPattern, pathPattern`,
		`settings.json:7:19: extraKnownMarketplaces.y.source: a github source needs "repo"`,
		`settings.json:8:8: extraKnownMarketplaces.z has no source (want {"source": {"source": "github", "repo": "owner/repo"}})`,
		`settings.json:9:19: extraKnownMarketplaces.w.source: hostPattern is only for strictKnownMarketplaces and blockedMarketplaces`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}

func TestPluginHooksAndLSP(t *testing.T) {
	doc := []byte("{\n  \"name\": \"p\",\n  \"hooks\": {\"PreToolUse\": [{\"matcher\": \"Bash\", \"hooks\": [{\"type\": \"command\", \"command\": \"x\", \"if\": \"Bash(git:*)\"}]}]},\n" +
		"  \"lspServers\": {\"go\": {\"command\": \"gopls\", \"extensionToLanguage\": {\".go\": \"go\"}}}\n}")
	groups, problems := PluginHooks("/p/plugin.json", doc, "hooks")
	if len(groups) != 1 || groups[0].Event != "PreToolUse" || groups[0].Hooks[0].Command != "x" || groups[0].From.Scope != ScopePlugin || groups[0].From.Line != 3 ||
		groups[0].Hooks[0].If != "Bash(git:*)" {
		t.Errorf("hooks = %+v", groups)
	}
	if len(problems) != 0 {
		t.Errorf("problems = %v", problems)
	}
	servers, problems := PluginLSPServers("/p/plugin.json", doc, "lspServers")
	if len(problems) != 0 || servers["go"].V.Command != "gopls" {
		t.Errorf("lsp = %+v, %v", servers, problems)
	}
	servers, problems = PluginLSPServers("/p/.lsp.json", []byte(`{"ts": {"command": "tsls"}}`), "")
	if len(servers) != 0 || len(problems) != 1 || !strings.Contains(problems[0].Msg, "extensionToLanguage") {
		t.Errorf("bare .lsp.json without extensions: %+v, %v", servers, problems)
	}
	_, problems = PluginHooks("/p/hooks.json", []byte("{\"hooks\": [\n1]}"), "hooks")
	if len(problems) != 1 || problems[0].Line != 1 || !strings.Contains(problems[0].Msg, "hooks is an array, want an object of events") {
		t.Errorf("array hooks: %v", problems)
	}
	_, problems = PluginHooks("/p/hooks.json", []byte("{\"hooks\": {,}}"), "hooks")
	if len(problems) != 1 || !strings.Contains(problems[0].Msg, "invalid JSON") {
		t.Errorf("broken JSON: %v", problems)
	}
}
