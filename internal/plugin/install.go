package plugin

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/settings"
)

// Installed is one installed plugin for `keel plugin list`.
type Installed struct {
	Install
	Enabled bool `json:"enabled"`
	// EnabledFrom is the settings file that decides Enabled ("" when none names the plugin:
	// an installed plugin is enabled by default).
	EnabledFrom string `json:"enabledFrom,omitempty"`
}

// List returns the installed plugins.
func (m *Manager) List() ([]Installed, error) {
	installed, err := m.layout().Installed()
	if err != nil {
		return nil, err
	}
	var out []Installed
	for _, id := range sortedKeys(installed) {
		in := Installed{Install: installed[id], Enabled: true}
		if v, ok := m.Settings.Enabled[id]; ok {
			in.Enabled, in.EnabledFrom = v.V, v.From.String()
		}
		out = append(out, in)
	}
	return out, nil
}

// resolveID turns NAME or NAME@MARKETPLACE into both halves; a bare name is looked up in the
// known marketplaces and must be in exactly one.
func (m *Manager) resolveID(ctx context.Context, id string) (name, market string, err error) {
	if name, market, ok := strings.Cut(id, "@"); ok {
		if name == "" || market == "" {
			return "", "", fmt.Errorf("%q is not NAME@MARKETPLACE", id)
		}
		return name, market, nil
	}
	known, err := m.layout().Marketplaces()
	if err != nil {
		return "", "", err
	}
	var found []string
	for _, mk := range sortedKeys(known) {
		if cat, err := ReadMarketplace(known[mk].InstallLocation); err == nil {
			if _, ok := cat.Entry(id); ok {
				found = append(found, mk)
			}
		}
	}
	switch len(found) {
	case 0:
		return "", "", fmt.Errorf("no known marketplace has a plugin named %s (marketplaces: %s)", id, listOr(sortedKeys(known), "none"))
	case 1:
		return id, found[0], nil
	}
	return "", "", fmt.Errorf("%s is in several marketplaces (%s); say which: %s@%s", id, strings.Join(found, ", "), id, found[0])
}

// Install installs plugin id (NAME@MARKETPLACE, or NAME when one marketplace has it) and
// enables it. A plugin that runs code (hooks, MCP or language servers, bin/) is installed only
// when Confirm agrees; the answer is recorded.
func (m *Manager) Install(ctx context.Context, id string) (Install, error) {
	name, market, err := m.resolveID(ctx, id)
	if err != nil {
		return Install{}, err
	}
	id = name + "@" + market
	installed, err := m.layout().Installed()
	if err != nil {
		return Install{}, err
	}
	rec, err := m.fetchPlugin(ctx, name, market, installed[id].Consent)
	if err != nil {
		return Install{}, err
	}
	if old, ok := installed[id]; ok {
		rec.InstalledAt = old.InstalledAt
		if old.InstallPath != rec.InstallPath {
			os.RemoveAll(old.InstallPath)
		}
	}
	installed[id] = rec
	if err := m.layout().writeInstalled(installed); err != nil {
		return Install{}, err
	}
	return rec, m.setEnabled(id, true)
}

// fetchPlugin copies the plugin of a marketplace entry into the cache, loads it and asks for
// consent when it runs code and consent (the recorded one) does not cover what it runs.
func (m *Manager) fetchPlugin(ctx context.Context, name, market string, consent *Consent) (Install, error) {
	cat, known, err := m.marketplace(ctx, market)
	if err != nil {
		return Install{}, err
	}
	e, ok := cat.Entry(name)
	if !ok {
		var names []string
		for _, e := range cat.Entries {
			names = append(names, e.Name)
		}
		return Install{}, fmt.Errorf("marketplace %s has no plugin %s (it has: %s)", market, name, listOr(names, "none"))
	}
	root, cleanup, commit, err := m.stagePlugin(ctx, cat, known, e)
	if cleanup != "" {
		defer os.RemoveAll(cleanup)
	}
	if err != nil {
		return Install{}, fmt.Errorf("install %s@%s: %w", name, market, err)
	}
	p := Load(Spec{Root: root, Name: name, Marketplace: market, Entry: e})
	version := cmpOr(p.Version, cmpOr(commitShort(commit), cmpOr(commitShort(known.Commit), "unversioned")))
	dest := filepath.Join(m.layout().Dir, cacheDir, market, name, safeSegment(version))
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return Install{}, fmt.Errorf("create %s: %w", filepath.Dir(dest), err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(dest), ".install-")
	if err != nil {
		return Install{}, fmt.Errorf("install %s@%s: %w", name, market, err)
	}
	defer os.RemoveAll(tmp)
	if err := copyTree(root, tmp); err != nil {
		return Install{}, fmt.Errorf("install %s@%s: %w", name, market, err)
	}
	runs := codeRuns(p)
	if len(runs) > 0 && !covers(consent, runs) {
		agreed := false
		if m.Confirm != nil {
			if agreed, err = m.Confirm(ConsentRequest{Plugin: name + "@" + market, Runs: runs}); err != nil {
				return Install{}, err
			}
		}
		if !agreed {
			return Install{}, ErrDeclined
		}
		consent = &Consent{Runs: runs, At: m.now().UTC()}
	}
	if err := replaceDir(tmp, dest); err != nil {
		return Install{}, err
	}
	now := m.now().UTC()
	return Install{Plugin: name, Marketplace: market, InstallPath: dest, Version: p.Version, Source: e.Source,
		Commit: commit, InstalledAt: now, LastUpdated: now, Consent: consent}, nil
}

// stagePlugin brings an entry's plugin to disk and returns its root: a path inside the
// marketplace is used in place, a repository is cloned into a folder (cleanup) the caller
// removes.
func (m *Manager) stagePlugin(ctx context.Context, cat *Marketplace, known KnownMarketplace, e *Entry) (root, cleanup, commit string, err error) {
	src := e.Source
	switch src.Type {
	case SourcePath:
		if known.Source.Source == MarketURL {
			return "", "", "", fmt.Errorf("source %q is relative, but marketplace %s has no folder to resolve it in (it was fetched as a file)", src.Path, cat.Name)
		}
		root := filepath.Join(cat.Root, filepath.FromSlash(src.Path))
		switch {
		case !isInside(cat.Root, root):
			return "", "", "", fmt.Errorf("source %q leaves the marketplace's folder", src.Path)
		case !isDir(root):
			return "", "", "", fmt.Errorf("source %q: no such folder in marketplace %s (%s)", src.Path, cat.Name, root)
		}
		return root, "", "", nil
	case SourceGitHub, SourceURL, SourceGitSubdir:
		url := src.URL
		if src.Type == SourceGitHub || (src.Type == SourceGitSubdir && ownerRepo.Get().MatchString(url)) {
			url = m.githubURL(cmpOr(src.Repo, src.URL))
		}
		cleanup, err := os.MkdirTemp("", "keel-plugin-")
		if err != nil {
			return "", "", "", err
		}
		clone := filepath.Join(cleanup, "src")
		if commit, err = m.git().clone(ctx, url, clone, cmpOr(src.SHA, src.Ref)); err != nil {
			return "", cleanup, "", err
		}
		root := clone
		if src.Type == SourceGitSubdir {
			root = filepath.Join(clone, filepath.FromSlash(src.Path))
			if !isInside(clone, root) || !isDir(root) {
				return "", cleanup, "", fmt.Errorf("path %q: no such folder in %s", src.Path, url)
			}
		}
		return root, cleanup, commit, nil
	case SourceNPM, SourceArchive, SourceCommand:
		return "", "", "", fmt.Errorf("source type %q is not supported by keel yet (supported: a relative path, github, url, git-subdir)", src.Type)
	}
	return "", "", "", fmt.Errorf("source type %q is not one Claude Code defines (%s)", src.Type, strings.Join(sourceTypes, ", "))
}

// codeRuns lists what a plugin runs, for the consent question.
func codeRuns(p *Plugin) []string {
	var runs []string
	count := func(n int, one, many string) {
		switch {
		case n == 1:
			runs = append(runs, one)
		case n > 1:
			runs = append(runs, fmt.Sprintf(many, n))
		}
	}
	hooks := 0
	for _, g := range p.Hooks {
		hooks += len(g.Hooks)
	}
	count(hooks, "1 hook", "%d hooks")
	mcp, _ := p.MCPServers(nil)
	count(len(mcp), "1 MCP server", "%d MCP servers")
	count(len(p.LSP), "1 language server", "%d language servers")
	if p.BinDir != "" {
		runs = append(runs, "programs in bin/ (on the Bash tool's PATH)")
	}
	return runs
}

// covers says an earlier consent agreed to at least everything runs lists.
func covers(c *Consent, runs []string) bool {
	if c == nil {
		return false
	}
	for _, r := range runs {
		if !strings.Contains(strings.Join(c.Runs, "\n"), r) {
			return false
		}
	}
	return true
}

func commitShort(c string) string {
	if len(c) >= 12 {
		return c[:12]
	}
	return c
}

func safeSegment(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '-'
		}
		return r
	}, s)
	if s == "." || s == ".." || s == "" {
		return "unversioned"
	}
	return s
}

// Update installs the newest version of an installed plugin: its marketplace is fetched again,
// then the plugin. Consent given before holds unless the plugin now runs more.
func (m *Manager) Update(ctx context.Context, id string) (Install, error) {
	installed, err := m.layout().Installed()
	if err != nil {
		return Install{}, err
	}
	old, ok := installed[id]
	if !ok {
		return Install{}, m.notInstalled(id, installed)
	}
	if _, err := m.UpdateMarketplace(ctx, old.Marketplace); err != nil {
		return Install{}, err
	}
	rec, err := m.fetchPlugin(ctx, old.Plugin, old.Marketplace, old.Consent)
	if err != nil {
		return Install{}, err
	}
	rec.InstalledAt = old.InstalledAt
	if old.InstallPath != rec.InstallPath {
		os.RemoveAll(old.InstallPath)
	}
	installed[id] = rec
	return rec, m.layout().writeInstalled(installed)
}

// Uninstall removes an installed plugin, its data folder and its enabledPlugins entry in the
// user's settings.
func (m *Manager) Uninstall(id string) error {
	lay := m.layout()
	installed, err := lay.Installed()
	if err != nil {
		return err
	}
	rec, ok := installed[id]
	if !ok {
		return m.notInstalled(id, installed)
	}
	delete(installed, id)
	if err := lay.writeInstalled(installed); err != nil {
		return err
	}
	if isInside(filepath.Join(lay.Dir, cacheDir), rec.InstallPath) {
		if err := os.RemoveAll(rec.InstallPath); err != nil {
			return fmt.Errorf("remove %s: %w", rec.InstallPath, err)
		}
	}
	if err := os.RemoveAll(filepath.Join(lay.Data(), dataID(id))); err != nil {
		return fmt.Errorf("remove the data folder of %s: %w", id, err)
	}
	return settings.UpdateFile(m.settingsFile(), func(doc map[string]any) error {
		if en, ok := doc["enabledPlugins"].(map[string]any); ok {
			delete(en, id)
			if len(en) == 0 {
				delete(doc, "enabledPlugins")
			}
		}
		return nil
	})
}

// Enable and Disable switch an installed plugin on or off in the user's settings; a session
// running with it applies the change at its next request.
func (m *Manager) Enable(id string) error  { return m.switchPlugin(id, true) }
func (m *Manager) Disable(id string) error { return m.switchPlugin(id, false) }

func (m *Manager) switchPlugin(id string, on bool) error {
	installed, err := m.layout().Installed()
	if err != nil {
		return err
	}
	if _, ok := installed[id]; !ok {
		return m.notInstalled(id, installed)
	}
	return m.setEnabled(id, on)
}

func (m *Manager) setEnabled(id string, on bool) error {
	return settings.UpdateFile(m.settingsFile(), func(doc map[string]any) error {
		en, ok := doc["enabledPlugins"].(map[string]any)
		if !ok {
			if doc["enabledPlugins"] != nil {
				return errors.New("enabledPlugins in " + m.settingsFile() + " is not an object; fix it first")
			}
			en = map[string]any{}
			doc["enabledPlugins"] = en
		}
		en[id] = on
		return nil
	})
}

func (m *Manager) notInstalled(id string, installed map[string]Install) error {
	return fmt.Errorf("%s is not installed (installed: %s)", id, listOr(sortedKeys(installed), "none"))
}
