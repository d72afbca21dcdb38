package plugin

import (
	"encoding/json"
	"net/url"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// ManifestPath is where a plugin's manifest lives, relative to its root.
const ManifestPath = ".claude-plugin" + string(filepath.Separator) + "plugin.json"

// Manifest is the metadata of .claude-plugin/plugin.json (or of a marketplace entry that
// stands in for it). Component keys are read by the loader from the document itself.
type Manifest struct {
	Name        string
	DisplayName string
	Version     string
	Description string
	Author      Author
	Homepage    string
	Repository  string
	License     string
	Keywords    []string
}

// Author is the manifest's author object.
type Author struct {
	Name  string `json:"name,omitempty"`
	Email string `json:"email,omitempty"`
	URL   string `json:"url,omitempty"`
}

// Component keys: each adds a kind of component; componentKeys lists them for messages.
const (
	keyCommands     = "commands"
	keyAgents       = "agents"
	keySkills       = "skills"
	keyHooks        = "hooks"
	keyMCPServers   = "mcpServers"
	keyLSPServers   = "lspServers"
	keyOutputStyles = "outputStyles"
)

var componentKeys = []string{keyCommands, keyAgents, keySkills, keyHooks, keyMCPServers, keyLSPServers, keyOutputStyles}

// metadataKeys are the manifest keys that describe the plugin.
var metadataKeys = []string{"$schema", "name", "displayName", "version", "description", "author", "homepage",
	"repository", "license", "keywords"}

// unsupportedKeys are manifest keys Claude Code reads that keel does not act on yet, with what
// that means for the plugin.
var unsupportedKeys = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"userConfig":     "keel does not ask for plugin options yet, so ${user_config.KEY} stays unexpanded",
		"dependencies":   "keel does not install or enable dependencies; enable them yourself",
		"channels":       "keel has no channels",
		"monitors":       "keel does not run plugin monitors",
		"themes":         "keel has no themes",
		"workflows":      "keel has no workflows",
		"settings":       "keel does not merge plugin settings",
		"binaries":       "keel does not fetch plugin binaries",
		"types":          "keel has no hooks modules",
		"experimental":   "keel reads no experimental components",
		"engines":        "keel does not check host versions",
		"network":        "",
		"metadata":       "",
		"defaultEnabled": "",
	}
}}

// entryKeys are the keys a marketplace entry has besides a manifest's.
var entryKeys = []string{"source", "category", "tags", "strict", "headers", "headersHelper", "relevance"}

// doc is a JSON object being read for a plugin: a manifest file or a marketplace entry inside
// its catalogue. ptr is the entry's JSON Pointer in the file ("" for a manifest).
type doc struct {
	file    string
	data    []byte
	ix      lineIndex
	ptr     string
	members map[string]json.RawMessage
}

func (d *doc) line(key ...any) int { return d.ix.line(d.ptr + pointer(key...)) }

// readDoc decodes the object at ptr of a file's data; a document that is not a JSON object is
// one error and nil.
func readDoc(pr *problems, file string, data []byte, ix lineIndex, ptr string, raw json.RawMessage) *doc {
	d := &doc{file: file, data: data, ix: ix, ptr: ptr}
	if err := json.Unmarshal(raw, &d.members); err != nil {
		line, msg := syntaxLine(raw, err)
		if ptr != "" {
			line = ix.line(ptr)
		}
		pr.errorf(ErrManifest, file, line, "", "not a JSON object: %s", msg)
		return nil
	}
	return d
}

// parseManifest reads the metadata of d and reports every key it cannot use. entry says d is
// a marketplace entry.
func parseManifest(pr *problems, d *doc, entry bool) Manifest {
	var m Manifest
	str := func(key string, dst *string) {
		raw, ok := d.members[key]
		if !ok {
			return
		}
		if json.Unmarshal(raw, dst) != nil {
			pr.errorf(ErrManifest, d.file, d.line(key), key, "%s is %s, want a string", key, kindOf(raw))
		}
	}
	str("name", &m.Name)
	str("displayName", &m.DisplayName)
	str("version", &m.Version)
	str("description", &m.Description)
	str("homepage", &m.Homepage)
	str("repository", &m.Repository)
	str("license", &m.License)
	if _, ok := d.members["name"]; ok && m.Name != "" {
		if why := validName(m.Name); why != "" {
			pr.errorf(ErrManifest, d.file, d.line("name"), "name", "name %q %s", m.Name, why)
		}
	}
	if m.Homepage != "" {
		if u, err := url.Parse(m.Homepage); err != nil || u.Scheme == "" || u.Host == "" {
			pr.errorf(ErrManifest, d.file, d.line("homepage"), "homepage", "homepage %q is not a URL", m.Homepage)
		}
	}
	if raw, ok := d.members["author"]; ok {
		m.Author = parseAuthor(pr, d, raw)
	}
	if raw, ok := d.members["keywords"]; ok && json.Unmarshal(raw, &m.Keywords) != nil {
		pr.errorf(ErrManifest, d.file, d.line("keywords"), "keywords", "keywords is %s, want an array of strings", kindOf(raw))
	}
	for _, key := range d.keys() {
		switch {
		case slices.Contains(metadataKeys, key), slices.Contains(componentKeys, key):
		case entry && slices.Contains(entryKeys, key):
		case unsupportedKeys.Get()[key] != "":
			pr.warnf(ErrUnsupported, d.file, d.line(key), key, "%s: %s (ignored)", key, unsupportedKeys.Get()[key])
		case hasKey(unsupportedKeys.Get(), key):
		default:
			valid := append(slices.Clone(metadataKeys), componentKeys...)
			if entry {
				valid = append(valid, entryKeys...)
			}
			pr.warnf(ErrManifest, d.file, d.line(key), key, "unknown key %s (ignored; the keys are %s)", key, strings.Join(valid, ", "))
		}
	}
	return m
}

func parseAuthor(pr *problems, d *doc, raw json.RawMessage) Author {
	var a Author
	var s string
	switch {
	case json.Unmarshal(raw, &s) == nil:
		pr.errorf(ErrManifest, d.file, d.line("author"), "author", `author is a string, want an object {"name": "…", "email": "…", "url": "…"} (keel takes the string as the name)`)
		return Author{Name: s}
	case json.Unmarshal(raw, &a) != nil:
		pr.errorf(ErrManifest, d.file, d.line("author"), "author", `author is %s, want an object {"name": "…", "email": "…", "url": "…"}`, kindOf(raw))
	case strings.TrimSpace(a.Name) == "":
		pr.errorf(ErrManifest, d.file, d.line("author"), "author.name", "author has no name")
	}
	return a
}

// kindOf names the JSON type of raw for messages.
func kindOf(raw json.RawMessage) string {
	s := strings.TrimSpace(string(raw))
	switch {
	case s == "":
		return "empty"
	case s[0] == '{':
		return "an object"
	case s[0] == '[':
		return "an array"
	case s[0] == '"':
		return "a string"
	case s == "true" || s == "false":
		return "a boolean"
	case s == "null":
		return "null"
	}
	return "a number"
}

func hasKey[V any](m map[string]V, k string) bool {
	_, ok := m[k]
	return ok
}

// keys lists d's members in file order.
func (d *doc) keys() []string {
	keys := make([]string, 0, len(d.members))
	for k := range d.members {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if la, lb := d.line(a), d.line(b); la != lb {
			return la - lb
		}
		return strings.Compare(a, b)
	})
	return keys
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
