package settings

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// ScopePlugin marks values read from a plugin's own files (its hooks file, its .lsp.json, its
// manifest): what a plugin runs is gated when the plugin is enabled, not by workspace trust.
const ScopePlugin Scope = "plugin"

// Plugins are the plugin keys of Claude Code's settings.
type Plugins struct {
	// Enabled is enabledPlugins: "name@marketplace" → on or off, the highest source winning
	// per plugin.
	Enabled map[string]Value[bool]
	// ExtraMarketplaces is extraKnownMarketplaces: marketplaces a settings file makes known
	// without `keel plugin marketplace add`, by name.
	ExtraMarketplaces map[string]Value[KnownMarketplace]
	// StrictMarketplaces is strictKnownMarketplaces (managed only): when set, only
	// marketplaces matching one of these may be added or used; an empty list allows none.
	StrictMarketplaces Value[[]MarketplaceSource]
	// BlockedMarketplaces is blockedMarketplaces (managed only): marketplaces never used.
	BlockedMarketplaces Value[[]MarketplaceSource]
}

// KnownMarketplace is one extraKnownMarketplaces entry.
type KnownMarketplace struct {
	Source     MarketplaceSource `json:"source"`
	AutoUpdate bool              `json:"autoUpdate,omitempty"`
}

// MarketplaceSources are the values of a marketplace source's "source" field.
var MarketplaceSources = []string{"github", "git", "directory", "file", "url", "npm", "settings", "hostPattern", "pathPattern"}

// MarketplaceSource says where a marketplace comes from, in Claude Code's shape:
// {"source": "github", "repo": "owner/repo", "ref": "v1"}, {"source": "git", "url": "…"},
// {"source": "directory", "path": "…"}; in the managed lists also {"source": "hostPattern",
// "hostPattern": "^github\\.example\\.com$"} and {"source": "pathPattern", "pathPattern": "…"}.
type MarketplaceSource struct {
	Source      string   `json:"source"`
	Repo        string   `json:"repo,omitempty"`
	URL         string   `json:"url,omitempty"`
	Ref         string   `json:"ref,omitempty"`
	Path        string   `json:"path,omitempty"`
	Package     string   `json:"package,omitempty"`
	SparsePaths []string `json:"sparsePaths,omitempty"`
	HostPattern string   `json:"hostPattern,omitempty"`
	PathPattern string   `json:"pathPattern,omitempty"`
	// Raw is the whole entry as written (the settings source carries a plugin list).
	Raw json.RawMessage `json:"-"`
}

// sourceFields names the field each source type requires.
var sourceFields = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"github": "repo", "git": "url", "url": "url", "directory": "path", "file": "path", "npm": "package",
		"settings": "plugins", "hostPattern": "hostPattern", "pathPattern": "pathPattern",
	}
}}

func enabledPluginsKey() keyDef {
	return mapKey("enabledPlugins", `an object {"name@marketplace": true}`,
		func(s *Settings) *map[string]Value[bool] { return &s.Plugins.Enabled }, decPluginEnabled)
}

func extraKnownMarketplacesKey() keyDef {
	return mapKey("extraKnownMarketplaces", `an object {"name": {"source": {"source": "github", "repo": "owner/repo"}}}`,
		func(s *Settings) *map[string]Value[KnownMarketplace] { return &s.Plugins.ExtraMarketplaces }, decKnownMarketplace)
}

func strictKnownMarketplacesKey() keyDef {
	return managedOnly(scalar("strictKnownMarketplaces", func(s *Settings) *Value[[]MarketplaceSource] { return &s.Plugins.StrictMarketplaces }, decSourceList))
}

func blockedMarketplacesKey() keyDef {
	return managedOnly(scalar("blockedMarketplaces", func(s *Settings) *Value[[]MarketplaceSource] { return &s.Plugins.BlockedMarketplaces }, decSourceList))
}

// mapKey merges an object key by key: for each key the highest source that sets it wins.
// want describes the object for the message when the value is something else.
func mapKey[T any](name, want string, field func(*Settings) *map[string]Value[T], dec decoder[T]) keyDef {
	return keyDef{
		name: name,
		apply: func(s *Settings, f *fileCtx, key string, n *node) {
			if n.kind != kindObject {
				wrongType(f, key, n, want)
				return
			}
			dst := field(s)
			if *dst == nil {
				*dst = map[string]Value[T]{}
			}
			for _, m := range n.members {
				v, ok := dec(f, key+"."+m.key, m.val)
				if _, seen := (*dst)[m.key]; ok && !seen {
					(*dst)[m.key] = Value[T]{V: v, From: f.origin(m.val)}
				}
			}
		},
		show: func(s *Settings, key string) []shown {
			var out []shown
			m := *field(s)
			for _, k := range slices.Sorted(maps.Keys(m)) {
				out = append(out, shown{key: key + "." + k, value: m[k].V, from: m[k].From})
			}
			return out
		},
	}
}

// pluginIDPattern is "name@marketplace" with names Claude Code accepts (no spaces, no "@").
var pluginIDPattern = lazy.Regexp{Expr: `^[^@\s]+@[^@\s]+$`}

func decPluginEnabled(f *fileCtx, key string, n *node) (bool, bool) {
	id := key[strings.IndexByte(key, '.')+1:]
	if !pluginIDPattern.Get().MatchString(id) {
		f.warnf(n.off, "%s: %q is not a plugin id of the form name@marketplace; it can match no installed plugin", key, id)
	}
	return decBool(f, key, n)
}

func decKnownMarketplace(f *fileCtx, key string, n *node) (KnownMarketplace, bool) {
	var km KnownMarketplace
	if n.kind != kindObject {
		wrongType(f, key, n, `an object {"source": {"source": "github", "repo": "owner/repo"}}`)
		return km, false
	}
	ok, hasSource := true, false
	for _, m := range n.members {
		mk := key + "." + m.key
		switch m.key {
		case "source":
			hasSource = true
			km.Source, ok = decMarketplaceSource(f, mk, m.val)
			if ok && (km.Source.Source == "hostPattern" || km.Source.Source == "pathPattern") {
				f.errorf(m.val.off, "%s: %s is only for strictKnownMarketplaces and blockedMarketplaces", mk, km.Source.Source)
				ok = false
			}
		case "autoUpdate":
			km.AutoUpdate, ok = decBool(f, mk, m.val)
		default:
			f.warnf(m.off, "unknown key %s (ignored; the keys are source, autoUpdate)", mk)
		}
		if !ok {
			return km, false
		}
	}
	if !hasSource {
		f.errorf(n.off, `%s has no source (want {"source": {"source": "github", "repo": "owner/repo"}})`, key)
		return km, false
	}
	return km, true
}

func decSourceList(f *fileCtx, key string, n *node) ([]MarketplaceSource, bool) {
	if n.kind != kindArray {
		wrongType(f, key, n, `an array of sources, [{"source": "github", "repo": "owner/repo"}]`)
		return nil, false
	}
	out := []MarketplaceSource{} // set and empty: nothing is allowed
	for i, e := range n.elems {
		if src, ok := decMarketplaceSource(f, fmt.Sprintf("%s[%d]", key, i), e); ok {
			out = append(out, src)
		}
	}
	return out, true
}

func decMarketplaceSource(f *fileCtx, key string, n *node) (MarketplaceSource, bool) {
	var src MarketplaceSource
	if n.kind != kindObject {
		wrongType(f, key, n, `an object {"source": "github", "repo": "owner/repo"}`)
		return src, false
	}
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(n.raw, &raw); err != nil {
		wrongType(f, key, n, "an object")
		return src, false
	}
	if err := json.Unmarshal(n.raw, &src); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			f.errorf(n.off, "%s.%s is a %s, want a %s", key, te.Field, te.Value, te.Type)
		} else {
			f.errorf(n.off, "%s: %v", key, err)
		}
		return src, false
	}
	src.Raw = n.raw
	need, known := sourceFields.Get()[src.Source]
	switch {
	case src.Source == "":
		f.errorf(n.off, "%s has no source type (want one of %s)", key, strings.Join(MarketplaceSources, ", "))
		return src, false
	case !known:
		f.errorf(n.off, "%s.source %q is not one of %s", key, src.Source, strings.Join(MarketplaceSources, ", "))
		return src, false
	case raw[need] == nil:
		f.errorf(n.off, "%s: a %s source needs %q", key, src.Source, need)
		return src, false
	}
	for _, pat := range []string{src.HostPattern, src.PathPattern} {
		if _, err := regexp.Compile(pat); err != nil {
			f.errorf(n.off, "%s: %q is not a valid regular expression: %v", key, pat, err)
			return src, false
		}
	}
	return src, true
}

// PluginHooks decodes the hook groups under key of a plugin's JSON document at path (a
// hooks file's "hooks", or the manifest's inline "hooks"), exactly as the hooks key of a
// settings file, each group marked [ScopePlugin]. A document that does not parse is one
// problem and no groups.
func PluginHooks(path string, data []byte, key string) ([]HookGroup, []Problem) {
	s := &Settings{}
	pluginMember(s, path, data, key, hooksKey())
	return s.Hooks, s.Problems
}

// PluginLSPServers decodes the language servers of a plugin's JSON document at path: the
// object under key (the manifest's inline "lspServers"), or the whole document when key is
// "" (a .lsp.json file). Entries are checked as the lspServers settings key checks them.
func PluginLSPServers(path string, data []byte, key string) (map[string]Value[LSPServer], []Problem) {
	s := &Settings{}
	pluginMember(s, path, data, key, lspKey())
	return s.LSPServers, s.Problems
}

// pluginMember applies def to the member key of the document's top object, or to the
// document itself when key is "".
func pluginMember(s *Settings, path string, data []byte, key string, def keyDef) {
	f := &fileCtx{src: Source{Scope: ScopePlugin, Path: path}, data: data, problems: &s.Problems}
	root, err := parseTree(data)
	if err != nil {
		f.errorf(errOffset(err), "%v", err)
		return
	}
	if key == "" {
		def.apply(s, f, def.name, root)
		return
	}
	if root.kind != kindObject {
		f.errorf(root.off, "the file is %s, want a JSON object", root.kind)
		return
	}
	for _, m := range root.members {
		if m.key == key {
			def.apply(s, f, key, m.val)
		}
	}
}
