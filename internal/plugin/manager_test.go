package plugin

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/settings"
)

// marketRepo is a git repository holding a marketplace with two plugins: "tools" (a hook and
// an MCP server: it runs code) and "docs" (a command only).
func marketRepo(t *testing.T) *gittest.Repo {
	t.Helper()
	r := gittest.New(t)
	r.Write(".claude-plugin/marketplace.json", `{
  "name": "team",
  "owner": {"name": "Team", "email": "team@example.com"},
  "plugins": [
    {"name": "tools", "source": "./plugins/tools", "description": "Tools."},
    {"name": "docs", "source": "./plugins/docs", "version": "1.0.0"},
    {"name": "from-npm", "source": {"source": "npm", "package": "@acme/plugin"}}
  ]
}`)
	r.Write("plugins/tools/.claude-plugin/plugin.json", `{"name": "tools", "version": "1.0.0"}`)
	r.Write("plugins/tools/hooks/hooks.json", `{"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "echo hi"}]}]}}`)
	r.Write("plugins/tools/.mcp.json", `{"mcpServers": {"srv": {"command": "srv"}}}`)
	r.Write("plugins/docs/commands/readme.md", "---\ndescription: Writes a README.\n---\nWrite it.")
	r.Commit("marketplace")
	return r
}

// manager is a Manager over a fresh keel home whose git never reads the user's config.
func manager(t *testing.T, confirm func(ConsentRequest) (bool, error)) *Manager {
	t.Helper()
	return &Manager{Home: t.TempDir(), Cwd: t.TempDir(), Confirm: confirm, GitEnv: gittest.Env()}
}

func yes(asked *[]ConsentRequest) func(ConsentRequest) (bool, error) {
	return func(r ConsentRequest) (bool, error) {
		*asked = append(*asked, r)
		return true, nil
	}
}

func enabledIn(t *testing.T, m *Manager) map[string]bool {
	t.Helper()
	st, err := settings.Load(settings.Options{Env: settings.Env{Home: m.Home}, ManagedPath: filepath.Join(m.Home, "none.json")})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for k, v := range st.Plugins.Enabled {
		out[k] = v.V
	}
	return out
}

func TestMarketplaceFromGitAndInstall(t *testing.T) {
	repo := marketRepo(t)
	var asked []ConsentRequest
	m := manager(t, yes(&asked))
	cat, err := m.AddMarketplace(t.Context(), repo.Dir+"/.git")
	if err == nil {
		t.Fatalf("a .git folder is no marketplace, but it was added as %s", cat.Name)
	}
	// A local git repository is added by URL (file://), as a remote one would be.
	cat, err = m.AddMarketplace(t.Context(), "file://"+repo.Dir)
	if err != nil {
		t.Fatal(err)
	}
	if cat.Name != "team" || len(cat.Entries) != 3 {
		t.Fatalf("marketplace %s with %d entries", cat.Name, len(cat.Entries))
	}
	infos, err := m.Marketplaces()
	if err != nil || len(infos) != 1 || infos[0].Commit != repo.Head() || infos[0].Plugins != 3 || infos[0].Source.Source != MarketGit {
		t.Fatalf("marketplaces = %+v, %v", infos, err)
	}

	rec, err := m.Install(t.Context(), "tools@team")
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]ConsentRequest{{Plugin: "tools@team", Runs: []string{"1 hook", "1 MCP server"}}}, asked); diff != "" {
		t.Errorf("consent asked mismatch (-want +got):\n%s", diff)
	}
	if rec.Version != "1.0.0" || rec.Consent == nil || !isFile(filepath.Join(rec.InstallPath, "hooks", "hooks.json")) {
		t.Errorf("install record %+v", rec)
	}
	if !strings.HasPrefix(rec.InstallPath, filepath.Join(m.Home, "plugins", "cache", "team", "tools")) {
		t.Errorf("installed at %s, want below the cache", rec.InstallPath)
	}
	// A command-only plugin runs no code and asks nothing; a bare name finds its marketplace.
	if _, err := m.Install(t.Context(), "docs"); err != nil {
		t.Fatal(err)
	}
	if len(asked) != 1 {
		t.Errorf("installing a plugin that runs no code asked: %+v", asked)
	}
	if diff := cmp.Diff(map[string]bool{"tools@team": true, "docs@team": true}, enabledIn(t, m)); diff != "" {
		t.Errorf("enabledPlugins mismatch (-want +got):\n%s", diff)
	}
	if _, err := m.Install(t.Context(), "from-npm@team"); err == nil || !strings.Contains(err.Error(), `source type "npm" is not supported by keel yet`) {
		t.Errorf("npm source: %v", err)
	}
	if _, err := m.Install(t.Context(), "nope@team"); err == nil || !strings.Contains(err.Error(), "it has: tools, docs, from-npm") {
		t.Errorf("unknown plugin: %v", err)
	}

	// The session's set: both enabled plugins load from the cache, with their entries.
	set := LoadSet(t.Context(), SetOptions{Home: m.Home, Settings: settings.Plugins{Enabled: map[string]settings.Value[bool]{}}})
	var ids []string
	for _, p := range set.Plugins {
		ids = append(ids, p.ID)
	}
	if diff := cmp.Diff([]string{"docs@team", "tools@team"}, ids); diff != "" {
		t.Errorf("set mismatch (-want +got):\n%s", diff)
	}
	if len(set.Hooks()) != 1 || len(set.MCPServers()) != 1 || set.MCPServers()[0].Name != "plugin_tools_srv" {
		t.Errorf("set hooks %d, mcp %+v", len(set.Hooks()), set.MCPServers())
	}
	if !isDir(filepath.Join(m.Home, "plugins", "data", "tools-team")) {
		t.Error("the data folder of a plugin that runs code was not created")
	}

	// Disable, enable, then uninstall.
	if err := m.Disable("tools@team"); err != nil {
		t.Fatal(err)
	}
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: m.Home}, ManagedPath: filepath.Join(m.Home, "none.json")})
	set = LoadSet(t.Context(), SetOptions{Home: m.Home, Settings: st.Plugins})
	if len(set.Plugins) != 1 || set.Plugins[0].ID != "docs@team" || len(set.Hooks()) != 0 {
		t.Errorf("a disabled plugin still loads: %+v", set.Infos())
	}
	if err := m.Enable("tools@team"); err != nil || !enabledIn(t, m)["tools@team"] {
		t.Errorf("enable: %v", err)
	}
	if err := m.Uninstall("tools@team"); err != nil {
		t.Fatal(err)
	}
	if isDir(rec.InstallPath) || isDir(filepath.Join(m.Home, "plugins", "data", "tools-team")) {
		t.Error("uninstall left the copy or the data folder")
	}
	if diff := cmp.Diff(map[string]bool{"docs@team": true}, enabledIn(t, m)); diff != "" {
		t.Errorf("enabledPlugins after uninstall (-want +got):\n%s", diff)
	}
	if err := m.Disable("tools@team"); err == nil || !strings.Contains(err.Error(), "not installed (installed: docs@team)") {
		t.Errorf("disable an uninstalled plugin: %v", err)
	}
	removed, err := m.RemoveMarketplace("team")
	if err != nil || !slices.Equal(removed, []string{"docs@team"}) || isDir(filepath.Join(m.Home, "plugins", "marketplaces", "team")) {
		t.Errorf("remove marketplace: %v %v", removed, err)
	}
}

func TestInstallDeclinedAndConsentKept(t *testing.T) {
	repo := marketRepo(t)
	m := manager(t, func(ConsentRequest) (bool, error) { return false, nil })
	if _, err := m.AddMarketplace(t.Context(), repo.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Install(t.Context(), "tools@team"); !errors.Is(err, ErrDeclined) {
		t.Fatalf("declined install: %v", err)
	}
	if list, _ := m.List(); len(list) != 0 {
		t.Errorf("a declined plugin was recorded: %+v", list)
	}
	var asked []ConsentRequest
	m.Confirm = yes(&asked)
	if _, err := m.Install(t.Context(), "tools@team"); err != nil {
		t.Fatal(err)
	}
	// An update of a plugin that runs nothing new keeps the answer; running more asks again.
	if _, err := m.Update(t.Context(), "tools@team"); err != nil || len(asked) != 1 {
		t.Fatalf("update asked again (%d) or failed: %v", len(asked), err)
	}
	repo.Write("plugins/tools/.claude-plugin/plugin.json", `{"name": "tools", "version": "1.1.0"}`)
	repo.Write("plugins/tools/.lsp.json", `{"go": {"command": "gopls", "extensionToLanguage": {".go": "go"}}}`)
	repo.Commit("v1.1.0 with a language server")
	rec, err := m.Update(t.Context(), "tools@team")
	if err != nil || rec.Version != "1.1.0" || len(asked) != 2 || !slices.Contains(asked[1].Runs, "1 language server") {
		t.Errorf("update to 1.1.0: %+v, asked %+v, %v", rec, asked, err)
	}
	if isDir(filepath.Join(m.Home, "plugins", "cache", "team", "tools", "1.0.0")) {
		t.Error("the old version's copy was kept")
	}
}

func TestMarketplaceRefPinsAndGitHubSources(t *testing.T) {
	repo := marketRepo(t)
	first := repo.Head()
	repo.Git("tag", "v1")
	repo.Write("plugins/docs/commands/later.md", "---\ndescription: later\n---\n")
	repo.Commit("later")
	// owner/repo resolves through GitHubURL; here a folder stands in for github.com.
	hub := filepath.Dir(repo.Dir)
	m := manager(t, nil)
	m.GitHubURL = func(r string) string { return "file://" + filepath.Join(hub, filepath.Base(r)) }
	name := filepath.Base(repo.Dir)
	for _, tc := range []struct{ arg, commit string }{
		{"acme/" + name + "@" + first, first},
		{"acme/" + name + "#v1", first},
		{"acme/" + name, repo.Head()},
	} {
		if _, err := m.AddMarketplace(t.Context(), tc.arg); err != nil {
			t.Fatalf("%s: %v", tc.arg, err)
		}
		infos, _ := m.Marketplaces()
		if infos[0].Commit != tc.commit || infos[0].Source.Source != MarketGitHub {
			t.Errorf("%s: at %s (%s), want %s", tc.arg, infos[0].Commit, infos[0].Source.Source, tc.commit)
		}
	}
	// A pinned marketplace stays pinned on update.
	if _, err := m.AddMarketplace(t.Context(), "acme/"+name+"@"+first); err != nil {
		t.Fatal(err)
	}
	if _, err := m.UpdateMarketplace(t.Context(), "team"); err != nil {
		t.Fatal(err)
	}
	if infos, _ := m.Marketplaces(); infos[0].Commit != first {
		t.Errorf("a sha pin moved on update: %s", infos[0].Commit)
	}
	// A plugin entry with a github source and a sha, and one with git-subdir.
	plug := gittest.New(t)
	plug.Write("nested/p/commands/hi.md", "---\ndescription: hi\n---\nhi")
	plug.Write("commands/top.md", "---\ndescription: top\n---\ntop")
	plug.Commit("plugin")
	pinned := plug.Head()
	plug.Write("commands/newer.md", "---\ndescription: newer\n---\n")
	plug.Commit("newer")
	dir := writeTree(t, t.TempDir(), map[string]string{".claude-plugin/marketplace.json": `{"name": "remote", "owner": {"name": "o"}, "plugins": [
  {"name": "gh", "source": {"source": "github", "repo": "acme/` + filepath.Base(plug.Dir) + `", "sha": "` + pinned + `"}},
  {"name": "sub", "source": {"source": "git-subdir", "url": "file://` + plug.Dir + `", "path": "nested/p"}}]}`})
	m.GitHubURL = func(r string) string { return "file://" + filepath.Join(filepath.Dir(plug.Dir), filepath.Base(r)) }
	if _, err := m.AddMarketplace(t.Context(), dir); err != nil {
		t.Fatal(err)
	}
	gh, err := m.Install(t.Context(), "gh@remote")
	if err != nil {
		t.Fatal(err)
	}
	if gh.Commit != pinned || !isFile(filepath.Join(gh.InstallPath, "commands", "top.md")) || isFile(filepath.Join(gh.InstallPath, "commands", "newer.md")) || isDir(filepath.Join(gh.InstallPath, ".git")) {
		t.Errorf("github source pinned at %s: %+v", pinned, gh)
	}
	sub, err := m.Install(t.Context(), "sub@remote")
	if err != nil || !isFile(filepath.Join(sub.InstallPath, "commands", "hi.md")) || isDir(filepath.Join(sub.InstallPath, "nested")) {
		t.Errorf("git-subdir source: %+v %v", sub, err)
	}
}

func TestMarketplaceFromURLAndSettings(t *testing.T) {
	catalogue := `{"name": "hosted", "owner": {"name": "o"}, "plugins": [{"name": "rel", "source": "./rel"}]}`
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { _, _ = w.Write([]byte(catalogue)) }))
	defer srv.Close()
	m := manager(t, nil)
	cat, err := m.AddMarketplace(t.Context(), srv.URL+"/marketplace.json")
	if err != nil || cat.Name != "hosted" {
		t.Fatalf("url marketplace: %v", err)
	}
	if _, err := m.Install(t.Context(), "rel@hosted"); err == nil || !strings.Contains(err.Error(), "has no folder to resolve it in") {
		t.Errorf("a relative source in a fetched catalogue: %v", err)
	}
	// extraKnownMarketplaces makes a marketplace known; it is fetched on first use, its
	// relative path taken from the settings file's project.
	project := t.TempDir()
	writeTree(t, project, map[string]string{
		"market/.claude-plugin/marketplace.json": `{"name": "proj", "owner": {"name": "o"}, "plugins": [{"name": "p", "source": "./p"}]}`,
		"market/p/commands/c.md":                 "---\ndescription: c\n---\n",
	})
	m.Settings.ExtraMarketplaces = map[string]settings.Value[settings.KnownMarketplace]{
		"proj": {V: settings.KnownMarketplace{Source: settings.MarketplaceSource{Source: "directory", Path: "./market"}},
			From: settings.Origin{Scope: settings.ScopeProject, Path: filepath.Join(project, ".claude", "settings.json")}},
	}
	infos, _ := m.Marketplaces()
	if len(infos) != 2 || !infos[1].FromSettings {
		t.Errorf("marketplaces = %+v", infos)
	}
	if _, err := m.Install(t.Context(), "p@proj"); err != nil {
		t.Fatal(err)
	}
	known, _ := m.layout().Marketplaces()
	if known["proj"].InstallLocation != filepath.Join(project, "market") {
		t.Errorf("proj at %q", known["proj"].InstallLocation)
	}
}

func TestMarketplacePolicy(t *testing.T) {
	repo := marketRepo(t)
	m := manager(t, nil)
	m.Settings.StrictMarketplaces = settings.Value[[]settings.MarketplaceSource]{V: []settings.MarketplaceSource{{Source: "github", Repo: "acme/*"}},
		From: settings.Origin{Scope: settings.ScopeManaged, Path: "/etc/keel/managed-settings.json"}}
	_, err := m.AddMarketplace(t.Context(), repo.Dir)
	if err == nil || !strings.Contains(err.Error(), "only the marketplaces strictKnownMarketplaces names") {
		t.Fatalf("strict policy: %v", err)
	}
	m.Settings.StrictMarketplaces.V = append(m.Settings.StrictMarketplaces.V, settings.MarketplaceSource{Source: "pathPattern", PathPattern: "^" + filepath.Dir(repo.Dir)})
	if _, err := m.AddMarketplace(t.Context(), repo.Dir); err != nil {
		t.Fatalf("a pathPattern that matches: %v", err)
	}
	if _, err := m.Install(t.Context(), "docs@team"); err != nil {
		t.Fatal(err)
	}
	m.Settings.BlockedMarketplaces = settings.Value[[]settings.MarketplaceSource]{V: []settings.MarketplaceSource{{Source: "directory", Path: repo.Dir}}}
	if _, err := m.Install(t.Context(), "tools@team"); err == nil || !strings.Contains(err.Error(), "blocked by managed settings") {
		t.Errorf("blocked: %v", err)
	}
	set := LoadSet(t.Context(), SetOptions{Home: m.Home, Settings: m.Settings})
	if len(set.Plugins) != 0 || len(set.Errors()) != 1 || set.Errors()[0].Type != ErrMarketplacePolicy {
		t.Errorf("a blocked marketplace's installed plugin loaded: %+v %v", set.Infos(), set.Errors())
	}
	for _, tc := range []struct {
		rule settings.MarketplaceSource
		src  settings.MarketplaceSource
		want bool
	}{
		{settings.MarketplaceSource{Source: "github", Repo: "Acme/X"}, settings.MarketplaceSource{Source: "github", Repo: "acme/x"}, true},
		{settings.MarketplaceSource{Source: "github", Repo: "acme/x", Ref: "v1"}, settings.MarketplaceSource{Source: "github", Repo: "acme/x", Ref: "v2"}, false},
		{settings.MarketplaceSource{Source: "git", URL: "https://h/x.git"}, settings.MarketplaceSource{Source: "git", URL: "https://h/x"}, true},
		{settings.MarketplaceSource{Source: "hostPattern", HostPattern: `^git\.acme\.com$`}, settings.MarketplaceSource{Source: "git", URL: "git@git.acme.com:t/m.git"}, true},
		{settings.MarketplaceSource{Source: "hostPattern", HostPattern: `^github\.com$`}, settings.MarketplaceSource{Source: "github", Repo: "a/b"}, true},
		{settings.MarketplaceSource{Source: "hostPattern", HostPattern: `^github\.com$`}, settings.MarketplaceSource{Source: "directory", Path: "/x"}, false},
	} {
		if got := matchesPolicy(tc.rule, tc.src); got != tc.want {
			t.Errorf("%+v matches %+v = %v, want %v", tc.rule, tc.src, got, tc.want)
		}
	}
}

func TestParseMarketplaceSource(t *testing.T) {
	dir := writeTree(t, t.TempDir(), map[string]string{"m/.claude-plugin/marketplace.json": "{}"})
	tests := []struct {
		arg  string
		want settings.MarketplaceSource
	}{
		{"m", settings.MarketplaceSource{Source: "directory", Path: filepath.Join(dir, "m")}},
		{"m/.claude-plugin/marketplace.json", settings.MarketplaceSource{Source: "file", Path: filepath.Join(dir, "m/.claude-plugin/marketplace.json")}},
		{"acme/tools", settings.MarketplaceSource{Source: "github", Repo: "acme/tools"}},
		{"acme/tools@v2", settings.MarketplaceSource{Source: "github", Repo: "acme/tools", Ref: "v2"}},
		{"acme/tools#main", settings.MarketplaceSource{Source: "github", Repo: "acme/tools", Ref: "main"}},
		{"https://gitlab.com/t/m.git#v1.0.0", settings.MarketplaceSource{Source: "git", URL: "https://gitlab.com/t/m.git", Ref: "v1.0.0"}},
		{"git@github.com:acme/m.git", settings.MarketplaceSource{Source: "git", URL: "git@github.com:acme/m.git"}},
		{"https://example.com/marketplace.json", settings.MarketplaceSource{Source: "url", URL: "https://example.com/marketplace.json"}},
	}
	for _, tt := range tests {
		got, err := ParseMarketplaceSource(tt.arg, dir)
		if err != nil {
			t.Errorf("%s: %v", tt.arg, err)
			continue
		}
		if diff := cmp.Diff(tt.want, got); diff != "" {
			t.Errorf("%s mismatch (-want +got):\n%s", tt.arg, diff)
		}
	}
	if _, err := ParseMarketplaceSource("not a source", dir); err == nil {
		t.Error("a phrase was taken for a source")
	}
}

func TestZipPluginDir(t *testing.T) {
	src := writeTree(t, filepath.Join(t.TempDir(), "zipped"), map[string]string{
		".claude-plugin/plugin.json": `{"name": "zipped", "version": "3.0.0"}`,
		"commands/z.md":              "---\ndescription: z\n---\n",
	})
	archive := filepath.Join(t.TempDir(), "zipped.zip")
	writeZip(t, archive, filepath.Dir(src), "zipped/") // wrapped in one folder
	home := t.TempDir()
	set := LoadSet(t.Context(), SetOptions{Home: home, Dirs: []DirSpec{{Path: archive}, {Path: filepath.Join(home, "missing")}}})
	if len(set.Plugins) != 1 || set.Plugins[0].ID != "zipped@inline" || len(set.Plugins[0].Commands) != 1 || set.Plugins[0].Origin.Path != archive {
		t.Fatalf("zip plugin: %+v %v", set.Infos(), set.Errors())
	}
	errs := set.Errors()
	if len(errs) != 1 || errs[0].Plugin != "inline[1]" || errs[0].Path != filepath.Join(home, "missing") || errs[0].Type != ErrPathNotFound {
		t.Errorf("errors = %+v", errs)
	}
	data, _ := json.Marshal(errs[0])
	if !strings.Contains(string(data), `"plugin":"inline[1]"`) || strings.Contains(string(data), "Severity") {
		t.Errorf("plugin_errors JSON = %s", data)
	}
	if infos := set.Infos(); infos[0].Version != "3.0.0" || infos[0].Source != "zipped@inline" {
		t.Errorf("init.plugins = %+v", infos)
	}
}

func TestSetDirWinsOverInstalled(t *testing.T) {
	repo := marketRepo(t)
	m := manager(t, nil)
	if _, err := m.AddMarketplace(t.Context(), repo.Dir); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Install(t.Context(), "docs@team"); err != nil {
		t.Fatal(err)
	}
	local := writeTree(t, filepath.Join(t.TempDir(), "docs"), map[string]string{"commands/local.md": "---\ndescription: l\n---\n"})
	enabled := map[string]settings.Value[bool]{"ghost@team": {V: true, From: settings.Origin{Path: "/s.json", Line: 3}}}
	set := LoadSet(t.Context(), SetOptions{Home: m.Home, Dirs: []DirSpec{{Path: local, Kind: OriginSDK}}, Settings: settings.Plugins{Enabled: enabled}})
	if len(set.Plugins) != 1 || set.Plugins[0].Origin.Kind != OriginSDK {
		t.Errorf("plugins = %+v", set.Infos())
	}
	var msgs []string
	for _, e := range set.Errors() {
		msgs = append(msgs, e.Type+": "+e.Error())
	}
	want := []string{
		"generic-error: docs@team is not loaded: docs@inline (" + local + ") has the same name and wins",
		"plugin-not-installed: /s.json:3: ghost@team is enabled but not installed; install it with: keel plugin install ghost@team",
	}
	if diff := cmp.Diff(want, msgs); diff != "" {
		t.Errorf("errors mismatch (-want +got):\n%s", diff)
	}
	if set.Key() == (&Set{}).Key() {
		t.Error("Key does not tell a set from an empty one")
	}
	_ = os.RemoveAll(local)
}
