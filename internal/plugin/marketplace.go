package plugin

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// MarketplacePath is where a marketplace's catalogue lives, relative to its root.
const MarketplacePath = ".claude-plugin" + string(filepath.Separator) + "marketplace.json"

// Marketplace is a parsed .claude-plugin/marketplace.json. It is not modified after parsing.
type Marketplace struct {
	Name        string
	Description string
	Version     string
	Owner       Author
	// PluginRoot is metadata.pluginRoot: where bare source names ("formatter") resolve.
	PluginRoot string
	Entries    []*Entry
	// File is the catalogue's path; Root the marketplace's root, the folder holding
	// .claude-plugin/ (relative plugin sources resolve against it).
	File, Root string
	// Errors are the problems found in the catalogue; an entry with a bad source is still
	// listed (installing it says why it cannot be).
	Errors []Error

	data []byte
	ix   lineIndex
}

// Entry is one plugin of a marketplace.
type Entry struct {
	Name        string
	Description string
	Version     string
	Category    string
	Source      PluginSource
	// Strict is false when the entry itself is the plugin's manifest (Claude Code's
	// "strict": false); true (the default) wants the plugin's own plugin.json.
	Strict bool

	m     *Marketplace
	index int
	raw   json.RawMessage
}

// Marketplace returns the catalogue the entry belongs to.
func (e *Entry) Marketplace() *Marketplace { return e.m }

// doc is the entry as a document, for the loader to read its manifest and component keys.
func (e *Entry) doc(pr *problems) *doc {
	return readDoc(pr, e.m.File, e.m.data, e.m.ix, pointer("plugins", e.index), e.raw)
}

// Plugin source types of a marketplace entry ("path" is a relative path string).
const (
	SourcePath      = "path"
	SourceGitHub    = "github"
	SourceURL       = "url"
	SourceGitSubdir = "git-subdir"
	SourceNPM       = "npm"
	SourceArchive   = "archive"
	SourceCommand   = "command"
)

// sourceTypes are the object source types Claude Code defines, for messages.
var sourceTypes = []string{SourceGitHub, SourceURL, SourceGitSubdir, SourceNPM, SourceArchive, SourceCommand}

// PluginSource is where an entry's plugin comes from.
type PluginSource struct {
	Type string `json:"source"`
	// Path is the relative path of a path source, or the folder of a git-subdir source.
	Path     string `json:"path,omitempty"`
	Repo     string `json:"repo,omitempty"`
	URL      string `json:"url,omitempty"`
	Ref      string `json:"ref,omitempty"`
	SHA      string `json:"sha,omitempty"`
	Package  string `json:"package,omitempty"`
	Version  string `json:"version,omitempty"`
	Registry string `json:"registry,omitempty"`
	SHA256   string `json:"sha256,omitempty"`
	Command  string `json:"command,omitempty"`
}

// String renders the source for messages and `keel plugin list`.
func (s PluginSource) String() string {
	switch s.Type {
	case SourcePath:
		return s.Path
	case SourceGitHub:
		return "github:" + s.Repo + refSuffix(s.Ref, s.SHA)
	case SourceURL, SourceArchive:
		return s.URL + refSuffix(s.Ref, s.SHA)
	case SourceGitSubdir:
		return s.URL + "//" + s.Path + refSuffix(s.Ref, s.SHA)
	case SourceNPM:
		return "npm:" + s.Package
	}
	return s.Type
}

func refSuffix(ref, sha string) string {
	switch {
	case sha != "":
		return "@" + sha[:min(len(sha), 12)]
	case ref != "":
		return "#" + ref
	}
	return ""
}

// reservedMarketplaceNames are names Claude Code keeps for plugins that come from no
// marketplace.
var reservedMarketplaceNames = []string{"inline", "builtin", "skills-dir", "synced", "claude-plugin-test"}

var fullSHA = lazy.Regexp{Expr: `^[0-9a-f]{40}$`}

// ReadMarketplace reads the catalogue of the marketplace whose root is dir (or the
// marketplace.json file itself).
func ReadMarketplace(path string) (*Marketplace, error) {
	file := path
	if isDir(path) {
		file = filepath.Join(path, MarketplacePath)
	}
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, fmt.Errorf("read marketplace: %w", err)
	}
	return ParseMarketplace(file, data), nil
}

// ParseMarketplace parses a catalogue read from file. Problems are in its Errors; only a
// document that is not a JSON object leaves it without entries.
func ParseMarketplace(file string, data []byte) *Marketplace {
	m := &Marketplace{File: file, Root: marketplaceRoot(file), data: data, ix: indexLines(data)}
	pr := &problems{plugin: "marketplace " + file}
	d := readDoc(pr, file, data, m.ix, "", data)
	if d == nil {
		m.Errors = pr.list
		return m
	}
	if raw, ok := d.members["name"]; !ok || json.Unmarshal(raw, &m.Name) != nil || m.Name == "" {
		pr.errorf(ErrManifest, file, d.line("name"), "name", "the marketplace has no name (a string)")
	} else {
		pr.plugin = "marketplace " + m.Name
		if why := validName(m.Name); why != "" {
			pr.errorf(ErrManifest, file, d.line("name"), "name", "marketplace name %q %s", m.Name, why)
		} else if slices.Contains(reservedMarketplaceNames, strings.ToLower(m.Name)) {
			pr.errorf(ErrManifest, file, d.line("name"), "name", "marketplace name %q is reserved (%s)", m.Name, strings.Join(reservedMarketplaceNames, ", "))
		}
	}
	_ = json.Unmarshal(d.members["description"], &m.Description)
	_ = json.Unmarshal(d.members["version"], &m.Version)
	if raw, ok := d.members["owner"]; !ok {
		pr.errorf(ErrManifest, file, 0, "owner", `the marketplace has no owner (want {"name": "…", "email": "…"})`)
	} else if json.Unmarshal(raw, &m.Owner) != nil || m.Owner.Name == "" {
		pr.errorf(ErrManifest, file, d.line("owner"), "owner", `owner is %s without a name, want {"name": "…", "email": "…"}`, kindOf(raw))
	}
	if raw, ok := d.members["metadata"]; ok {
		var meta struct {
			PluginRoot  string `json:"pluginRoot"`
			Version     string `json:"version"`
			Description string `json:"description"`
		}
		if json.Unmarshal(raw, &meta) != nil {
			pr.errorf(ErrManifest, file, d.line("metadata"), "metadata", "metadata is %s, want an object", kindOf(raw))
		}
		m.PluginRoot = meta.PluginRoot
		m.Version, m.Description = cmpOr(m.Version, meta.Version), cmpOr(m.Description, meta.Description)
	}
	known := []string{"$schema", "name", "version", "description", "owner", "plugins", "metadata", "renames",
		"forceRemoveDeletedPlugins", "allowCrossMarketplaceDependenciesOn"}
	for _, k := range d.keys() {
		if !slices.Contains(known, k) {
			pr.warnf(ErrManifest, file, d.line(k), k, "unknown key %s (ignored; the keys are %s)", k, strings.Join(known, ", "))
		}
	}
	var entries []json.RawMessage
	if raw, ok := d.members["plugins"]; !ok || json.Unmarshal(raw, &entries) != nil {
		pr.errorf(ErrManifest, file, d.line("plugins"), "plugins", "the marketplace has no plugins array")
	}
	for i, raw := range entries {
		if e := m.parseEntry(pr, i, raw); e != nil {
			if slices.ContainsFunc(m.Entries, func(o *Entry) bool { return o.Name == e.Name }) {
				pr.errorf(ErrManifest, file, m.ix.line(pointer("plugins", i)), "name", "plugins[%d]: a second plugin named %q (ignored)", i, e.Name)
				continue
			}
			m.Entries = append(m.Entries, e)
		}
	}
	m.Errors = pr.list
	return m
}

// marketplaceRoot is the folder holding .claude-plugin/ of a catalogue at file.
func marketplaceRoot(file string) string {
	dir := filepath.Dir(file)
	if filepath.Base(dir) == ".claude-plugin" {
		return filepath.Dir(dir)
	}
	return dir
}

func (m *Marketplace) parseEntry(pr *problems, i int, raw json.RawMessage) *Entry {
	at := pointer("plugins", i)
	line := func(key ...any) int { return m.ix.line(at + pointer(key...)) }
	var f struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Version     string          `json:"version"`
		Category    string          `json:"category"`
		Source      json.RawMessage `json:"source"`
		Strict      *bool           `json:"strict"`
	}
	if err := json.Unmarshal(raw, &f); err != nil {
		pr.errorf(ErrManifest, m.File, line(), "", "plugins[%d] is not a plugin entry: %v", i, err)
		return nil
	}
	if why := validName(f.Name); why != "" {
		pr.errorf(ErrManifest, m.File, line("name"), "name", "plugins[%d]: plugin name %q %s (entry ignored)", i, f.Name, why)
		return nil
	}
	e := &Entry{Name: f.Name, Description: f.Description, Version: f.Version, Category: f.Category,
		Strict: f.Strict == nil || *f.Strict, m: m, index: i, raw: raw}
	e.Source = m.parseSource(pr, f.Name, f.Source, line("source"))
	return e
}

// parseSource reads an entry's source; a source keel cannot use keeps its type, and
// installing it says why.
func (m *Marketplace) parseSource(pr *problems, name string, raw json.RawMessage, line int) PluginSource {
	var path string
	if json.Unmarshal(raw, &path) == nil {
		switch {
		case path == "." || path == "./":
			return PluginSource{Type: SourcePath, Path: "./"}
		case strings.HasPrefix(path, "./"):
			return PluginSource{Type: SourcePath, Path: path}
		case m.PluginRoot != "" && !strings.ContainsAny(path, `/\:`) && !strings.Contains(path, ".."):
			return PluginSource{Type: SourcePath, Path: "./" + filepath.ToSlash(filepath.Join(m.PluginRoot, path))}
		}
		pr.errorf(ErrManifest, m.File, line, "source", "plugin %s: source %q must be a path starting with ./ (or a bare name with metadata.pluginRoot set)", name, path)
		return PluginSource{Type: SourcePath, Path: path}
	}
	var s PluginSource
	if len(raw) == 0 {
		pr.errorf(ErrManifest, m.File, line, "source", "plugin %s has no source", name)
		return s
	}
	if err := json.Unmarshal(raw, &s); err != nil {
		pr.errorf(ErrManifest, m.File, line, "source", "plugin %s: source is %s, want a path or an object {\"source\": \"github\", \"repo\": \"owner/repo\"}", name, kindOf(raw))
		return s
	}
	need := map[string][]string{SourceGitHub: {s.Repo}, SourceURL: {s.URL}, SourceGitSubdir: {s.URL, s.Path},
		SourceNPM: {s.Package}, SourceArchive: {s.URL}, SourceCommand: {s.Command}}
	fields, known := need[s.Type]
	switch {
	case !known:
		pr.errorf(ErrManifest, m.File, line, "source", "plugin %s: source type %q is not one of %s", name, s.Type, strings.Join(sourceTypes, ", "))
	case slices.Contains(fields, ""):
		pr.errorf(ErrManifest, m.File, line, "source", "plugin %s: a %s source is missing a field it needs", name, s.Type)
	case s.SHA != "" && !fullSHA.Get().MatchString(s.SHA):
		pr.errorf(ErrManifest, m.File, line, "source", "plugin %s: sha %q must be a full 40-character lowercase commit id", name, s.SHA)
	}
	return s
}

// Entry returns the entry called name.
func (m *Marketplace) Entry(name string) (*Entry, bool) {
	i := slices.IndexFunc(m.Entries, func(e *Entry) bool { return e.Name == name })
	if i < 0 {
		return nil, false
	}
	return m.Entries[i], true
}
