package plugin

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/settings"
)

// Manager adds and removes marketplaces and installs, enables, updates and removes plugins,
// keeping the records under $KEEL_HOME/plugins and the enabledPlugins key of the user's
// settings file. A Manager is used by one command at a time; two processes changing the
// records at once may lose one change (each write replaces the file whole, never mixes them).
type Manager struct {
	// Home is $KEEL_HOME; required.
	Home string
	// Cwd resolves relative marketplace folders.
	Cwd string
	// Settings are the merged plugin settings: extraKnownMarketplaces are known without being
	// added, and the managed lists say which marketplaces may be used.
	Settings settings.Plugins
	// SettingsFile is where enable and disable write enabledPlugins; default
	// $KEEL_HOME/settings.json.
	SettingsFile string
	// Confirm asks the user to agree to install a plugin that runs code; nil refuses such a
	// plugin. It is asked once per plugin: the answer is recorded and updates keep it.
	Confirm func(ConsentRequest) (bool, error)
	// GitHubURL turns owner/repo into a clone URL; nil is https://github.com/owner/repo.git.
	GitHubURL func(repo string) string
	// GitEnv is git's environment; nil inherits keel's.
	GitEnv []string
	// HTTP fetches catalogues given by URL; nil is http.DefaultClient.
	HTTP *http.Client
	// Now is the clock; nil is time.Now.
	Now func() time.Time
}

// ConsentRequest is what installing a plugin that runs code asks.
type ConsentRequest struct {
	Plugin string
	// Runs lists what the plugin runs: "3 hooks", "2 MCP servers", "a language server", "bin/".
	Runs []string
}

// ErrDeclined is returned when the user does not agree to install a plugin that runs code.
var ErrDeclined = errors.New("not installed: the plugin runs code and installing it was not confirmed")

func (m *Manager) layout() Layout { return LayoutOf(m.Home) }

func (m *Manager) now() time.Time {
	if m.Now != nil {
		return m.Now()
	}
	return time.Now()
}

func (m *Manager) git() git { return git{env: m.GitEnv} }

func (m *Manager) githubURL(repo string) string {
	if m.GitHubURL != nil {
		return m.GitHubURL(repo)
	}
	return githubURL(repo)
}

func (m *Manager) settingsFile() string {
	if m.SettingsFile != "" {
		return m.SettingsFile
	}
	return filepath.Join(m.Home, "settings.json")
}

// MarketplaceInfo is one known marketplace for `keel plugin marketplace list`.
type MarketplaceInfo struct {
	Name     string                     `json:"name"`
	Source   settings.MarketplaceSource `json:"source"`
	Location string                     `json:"location,omitempty"`
	Plugins  int                        `json:"plugins"`
	Commit   string                     `json:"commit,omitempty"`
	Updated  time.Time                  `json:"updated,omitzero"`
	// FromSettings says the marketplace is only named by extraKnownMarketplaces (not added
	// yet: it is fetched the first time a plugin is installed from it).
	FromSettings bool   `json:"fromSettings,omitempty"`
	Problem      string `json:"problem,omitempty"`
}

// AddMarketplace makes the marketplace at arg known (see [ParseMarketplaceSource] for what
// arg may be). Adding one again from the same source updates it.
func (m *Manager) AddMarketplace(ctx context.Context, arg string) (*Marketplace, error) {
	src, err := ParseMarketplaceSource(arg, m.Cwd)
	if err != nil {
		return nil, err
	}
	return m.addSource(ctx, "", src)
}

// addSource fetches src, reads its catalogue and records it. want, when set, is the name the
// catalogue must have (an extraKnownMarketplaces key).
func (m *Manager) addSource(ctx context.Context, want string, src settings.MarketplaceSource) (*Marketplace, error) {
	if m.Home == "" {
		return nil, errors.New("no keel directory (KEEL_HOME) to keep marketplaces in")
	}
	lay := m.layout()
	staged, location, commit, err := m.fetchMarketplace(ctx, src)
	if staged != "" {
		defer os.RemoveAll(staged)
	}
	if err != nil {
		return nil, err
	}
	cat, err := ReadMarketplace(location)
	if err != nil {
		return nil, fmt.Errorf("%s is not a marketplace: %w (want %s)", SourceString(src), err, filepath.ToSlash(MarketplacePath))
	}
	if cat.Name == "" || validName(cat.Name) != "" {
		return nil, fmt.Errorf("the marketplace at %s has no usable name: %s", SourceString(src), errorList(cat.Errors))
	}
	if want != "" && cat.Name != want {
		return nil, fmt.Errorf("extraKnownMarketplaces names %s, but the catalogue at %s is called %s", want, SourceString(src), cat.Name)
	}
	if err := Allowed(cat.Name, src, m.Settings); err != nil {
		return nil, err
	}
	known, err := lay.Marketplaces()
	if err != nil {
		return nil, err
	}
	if old, ok := known[cat.Name]; ok && !sameMarketplaceSource(old.Source, src) {
		return nil, fmt.Errorf("a marketplace named %s is already added from %s; remove it first (keel plugin marketplace remove %s)", cat.Name, SourceString(old.Source), cat.Name)
	}
	if staged != "" {
		// A fetched copy moves to marketplaces/<name>, replacing the previous one.
		final := filepath.Join(lay.Dir, marketplacesDir, cat.Name)
		if err := replaceDir(staged, final); err != nil {
			return nil, err
		}
		location = final
		if src.Source == MarketURL {
			location = filepath.Join(final, MarketplacePath)
		}
		if cat, err = ReadMarketplace(location); err != nil {
			return nil, err
		}
	}
	known[cat.Name] = KnownMarketplace{Source: src, InstallLocation: location, LastUpdated: m.now().UTC(), Commit: commit}
	if err := lay.writeMarketplaces(known); err != nil {
		return nil, err
	}
	return cat, nil
}

func sameMarketplaceSource(a, b settings.MarketplaceSource) bool {
	a.Raw, b.Raw = nil, nil
	a.Ref, b.Ref = "", "" // a new ref of the same repository is an update
	return matchesPolicy(a, b)
}

// fetchMarketplace brings src's catalogue to disk. A folder or file is used in place
// (staged ""); a repository or URL is fetched into a staging folder the caller moves into
// place or removes.
func (m *Manager) fetchMarketplace(ctx context.Context, src settings.MarketplaceSource) (staged, location, commit string, err error) {
	switch src.Source {
	case MarketDirectory, MarketFile:
		if _, err := os.Stat(src.Path); err != nil {
			return "", "", "", fmt.Errorf("marketplace %s: %w", src.Path, err)
		}
		return "", src.Path, "", nil
	case MarketGitHub, MarketGit:
		url := src.URL
		if src.Source == MarketGitHub {
			url = m.githubURL(src.Repo)
		}
		staged, err = m.stagingDir()
		if err != nil {
			return "", "", "", err
		}
		commit, err = m.git().clone(ctx, url, staged, src.Ref)
		if err != nil {
			return staged, "", "", fmt.Errorf("fetch marketplace %s: %w", SourceString(src), err)
		}
		location = staged
		if src.Path != "" {
			location = filepath.Join(staged, filepath.FromSlash(src.Path))
		}
		return staged, location, commit, nil
	case MarketURL:
		staged, err = m.stagingDir()
		if err != nil {
			return "", "", "", err
		}
		file := filepath.Join(staged, MarketplacePath)
		if err := m.download(ctx, src.URL, file); err != nil {
			return staged, "", "", err
		}
		return staged, file, "", nil
	}
	return "", "", "", fmt.Errorf("marketplace source %q is not supported by keel (supported: github, git, directory, file, url)", src.Source)
}

func (m *Manager) stagingDir() (string, error) {
	dir := filepath.Join(m.layout().Dir, marketplacesDir)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", fmt.Errorf("create %s: %w", dir, err)
	}
	staged, err := os.MkdirTemp(dir, ".fetch-")
	if err != nil {
		return "", fmt.Errorf("create a staging folder: %w", err)
	}
	// git clone wants a destination that does not exist yet.
	return staged, os.Remove(staged)
}

// download fetches url into file.
func (m *Manager) download(ctx context.Context, url, file string) error {
	client := m.HTTP
	if client == nil {
		client = http.DefaultClient
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", url, err)
	}
	resp, err := client.Do(req)
	if err != nil {
		return fmt.Errorf("fetch %s: %w", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("fetch %s: %s", url, resp.Status)
	}
	data, err := io.ReadAll(io.LimitReader(resp.Body, 16<<20))
	if err != nil {
		return fmt.Errorf("fetch %s: %w", url, err)
	}
	if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(file), err)
	}
	return os.WriteFile(file, data, 0o644)
}

// replaceDir moves staged to final, removing what was at final.
func replaceDir(staged, final string) error {
	old := final + ".old"
	os.RemoveAll(old)
	if err := os.Rename(final, old); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("replace %s: %w", final, err)
	}
	if err := os.Rename(staged, final); err != nil {
		_ = os.Rename(old, final)
		return fmt.Errorf("move %s into place: %w", final, err)
	}
	return os.RemoveAll(old)
}

// Marketplaces lists the known marketplaces and those extraKnownMarketplaces names.
func (m *Manager) Marketplaces() ([]MarketplaceInfo, error) {
	known, err := m.layout().Marketplaces()
	if err != nil {
		return nil, err
	}
	var out []MarketplaceInfo
	for _, name := range sortedKeys(known) {
		k := known[name]
		info := MarketplaceInfo{Name: name, Source: k.Source, Location: k.InstallLocation, Commit: k.Commit, Updated: k.LastUpdated}
		if cat, err := ReadMarketplace(k.InstallLocation); err != nil {
			info.Problem = err.Error()
		} else {
			info.Plugins = len(cat.Entries)
		}
		out = append(out, info)
	}
	for _, name := range sortedKeys(m.Settings.ExtraMarketplaces) {
		if _, ok := known[name]; !ok {
			out = append(out, MarketplaceInfo{Name: name, Source: m.Settings.ExtraMarketplaces[name].V.Source, FromSettings: true})
		}
	}
	return out, nil
}

// RemoveMarketplace forgets a marketplace and uninstalls its plugins.
func (m *Manager) RemoveMarketplace(name string) ([]string, error) {
	lay := m.layout()
	known, err := lay.Marketplaces()
	if err != nil {
		return nil, err
	}
	k, ok := known[name]
	if !ok {
		return nil, fmt.Errorf("no marketplace named %s (known: %s)", name, listOr(sortedKeys(known), "none"))
	}
	installed, err := lay.Installed()
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, id := range sortedKeys(installed) {
		if installed[id].Marketplace == name {
			if err := m.Uninstall(id); err != nil {
				return removed, err
			}
			removed = append(removed, id)
		}
	}
	delete(known, name)
	if err := lay.writeMarketplaces(known); err != nil {
		return removed, err
	}
	if clone := filepath.Join(lay.Dir, marketplacesDir, name); k.InstallLocation != "" && isInside(clone, k.InstallLocation) {
		if err := os.RemoveAll(clone); err != nil {
			return removed, fmt.Errorf("remove %s: %w", clone, err)
		}
	}
	return removed, nil
}

// UpdateMarketplace fetches a marketplace again (a commit pin keeps it where it is).
func (m *Manager) UpdateMarketplace(ctx context.Context, name string) (*Marketplace, error) {
	known, err := m.layout().Marketplaces()
	if err != nil {
		return nil, err
	}
	k, ok := known[name]
	if !ok {
		return nil, fmt.Errorf("no marketplace named %s (known: %s)", name, listOr(sortedKeys(known), "none"))
	}
	return m.addSource(ctx, name, k.Source)
}

// marketplace returns a known marketplace's catalogue, adding it first when only
// extraKnownMarketplaces names it.
func (m *Manager) marketplace(ctx context.Context, name string) (*Marketplace, KnownMarketplace, error) {
	known, err := m.layout().Marketplaces()
	if err != nil {
		return nil, KnownMarketplace{}, err
	}
	k, ok := known[name]
	if !ok {
		extra, inSettings := m.Settings.ExtraMarketplaces[name]
		if !inSettings {
			return nil, KnownMarketplace{}, fmt.Errorf("no marketplace named %s (known: %s); add it with keel plugin marketplace add SOURCE", name, listOr(sortedKeys(known), "none"))
		}
		src := extra.V.Source
		if (src.Source == MarketDirectory || src.Source == MarketFile) && !filepath.IsAbs(src.Path) {
			src.Path = filepath.Join(settingsDir(extra.From.Path), src.Path)
		}
		if _, err := m.addSource(ctx, name, src); err != nil {
			return nil, KnownMarketplace{}, err
		}
		if known, err = m.layout().Marketplaces(); err != nil {
			return nil, KnownMarketplace{}, err
		}
		k = known[name]
	}
	if err := Allowed(name, k.Source, m.Settings); err != nil {
		return nil, k, err
	}
	cat, err := ReadMarketplace(k.InstallLocation)
	if err != nil {
		return nil, k, fmt.Errorf("marketplace %s: %w (update it: keel plugin marketplace update %s)", name, err, name)
	}
	return cat, k, nil
}

// settingsDir is the folder a settings file's relative paths start from: the project for a
// file in .keel/ or .claude/, else the file's own folder.
func settingsDir(file string) string {
	dir := filepath.Dir(file)
	if b := filepath.Base(dir); b == ".keel" || b == ".claude" {
		return filepath.Dir(dir)
	}
	return dir
}

func isInside(dir, p string) bool {
	r, err := filepath.Rel(dir, p)
	return err == nil && filepath.IsLocal(r) || filepath.Clean(dir) == filepath.Clean(p)
}

func listOr(items []string, none string) string {
	if len(items) == 0 {
		return none
	}
	return strings.Join(items, ", ")
}

func errorList(errs []Error) string {
	if len(errs) == 0 {
		return "no problems recorded"
	}
	var s string
	for i, e := range errs {
		if i > 0 {
			s += "; "
		}
		s += e.Error()
	}
	return s
}
