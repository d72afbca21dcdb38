package plugin

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/settings"
)

// Files and folders below $KEEL_HOME/plugins.
const (
	knownMarketplacesFile = "known_marketplaces.json"
	installedPluginsFile  = "installed_plugins.json"
	marketplacesDir       = "marketplaces"
	cacheDir              = "cache"
	dataDir               = "data"
	zipsDir               = "zips"
)

// Layout names the places a keel home keeps plugins.
type Layout struct{ Dir string }

// LayoutOf is the layout of a keel home ($KEEL_HOME).
func LayoutOf(home string) Layout { return Layout{Dir: filepath.Join(home, "plugins")} }

// Data is the folder of every plugin's data folder.
func (l Layout) Data() string { return filepath.Join(l.Dir, dataDir) }

// Zips is where --plugin-dir archives are unpacked.
func (l Layout) Zips() string { return filepath.Join(l.Dir, zipsDir) }

// KnownMarketplace is a marketplace keel knows: added with `keel plugin marketplace add`, or
// recorded when an extraKnownMarketplaces entry was first used.
type KnownMarketplace struct {
	Source settings.MarketplaceSource `json:"source"`
	// InstallLocation is the marketplace's root on disk: a clone below
	// plugins/marketplaces/, or the folder itself for a directory source.
	InstallLocation string    `json:"installLocation"`
	LastUpdated     time.Time `json:"lastUpdated"`
	// Commit is the commit a git marketplace was checked out at.
	Commit string `json:"commit,omitempty"`
}

// Install is the record of one installed plugin.
type Install struct {
	Plugin      string `json:"plugin"`
	Marketplace string `json:"marketplace"`
	// InstallPath is the plugin's root: a copy below plugins/cache/.
	InstallPath string       `json:"installPath"`
	Version     string       `json:"version,omitempty"`
	Source      PluginSource `json:"source"`
	// Commit is the commit a git source was installed from.
	Commit      string    `json:"gitCommitSha,omitempty"`
	InstalledAt time.Time `json:"installedAt"`
	LastUpdated time.Time `json:"lastUpdated"`
	// Consent records the user's answer to "this plugin runs code": what it runs, and when
	// they agreed. Installing asks once; updates keep the answer.
	Consent *Consent `json:"consent,omitempty"`
}

// ID is name@marketplace.
func (i Install) ID() string { return i.Plugin + "@" + i.Marketplace }

// Consent is the recorded agreement to install a plugin that runs code.
type Consent struct {
	Runs []string  `json:"runs"`
	At   time.Time `json:"at"`
}

type installedDoc struct {
	Version int                `json:"version"`
	Plugins map[string]Install `json:"plugins"`
}

// readJSON reads a record file; a missing one is empty.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	return nil
}

func writeJSON(path string, v any) error {
	data, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return fmt.Errorf("encode %s: %w", path, err)
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return fmt.Errorf("create %s: %w", filepath.Dir(path), err)
	}
	return atomicfile.WriteFile(path, append(data, '\n'), 0o644)
}

// Marketplaces reads the known marketplaces.
func (l Layout) Marketplaces() (map[string]KnownMarketplace, error) {
	out := map[string]KnownMarketplace{}
	err := readJSON(filepath.Join(l.Dir, knownMarketplacesFile), &out)
	return out, err
}

func (l Layout) writeMarketplaces(m map[string]KnownMarketplace) error {
	return writeJSON(filepath.Join(l.Dir, knownMarketplacesFile), m)
}

// Installed reads the install records by plugin id.
func (l Layout) Installed() (map[string]Install, error) {
	doc := installedDoc{Plugins: map[string]Install{}}
	err := readJSON(filepath.Join(l.Dir, installedPluginsFile), &doc)
	if doc.Plugins == nil {
		doc.Plugins = map[string]Install{}
	}
	return doc.Plugins, err
}

func (l Layout) writeInstalled(m map[string]Install) error {
	return writeJSON(filepath.Join(l.Dir, installedPluginsFile), installedDoc{Version: 1, Plugins: m})
}

// Records are the files a session's plugin set is made from, for noticing that it changed.
func (l Layout) Records() []string {
	return []string{filepath.Join(l.Dir, knownMarketplacesFile), filepath.Join(l.Dir, installedPluginsFile)}
}
