package plugin

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// Default locations of components, relative to a plugin's root (Claude Code's standard layout).
const (
	defaultCommands     = "commands"
	defaultAgents       = "agents"
	defaultSkills       = "skills"
	defaultOutputStyles = "output-styles"
	defaultHooks        = "hooks/hooks.json"
	defaultMCP          = ".mcp.json"
	defaultLSP          = ".lsp.json"
	defaultBin          = "bin"
)

// replacesDefault says whether declaring a key stops the default folder from loading. As in
// Claude Code, a commands, agents or outputStyles key lists everything of its kind (name the
// default folder too to keep it), while skills, hooks, mcpServers and lspServers add to the
// default files.
var replacesDefault = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{keyCommands: true, keyAgents: true, keyOutputStyles: true}
}}

// declared is one value of a component key: a path (resolved against the plugin root) or an
// inline object, with where it was written.
type declared struct {
	path   string          // absolute; "" for an inline object
	inline json.RawMessage // an inline object
	d      *doc
	ptr    []any // key and index within d
}

func (x declared) line() int { return x.d.line(x.ptr...) }

// declaredValues reads a component key of d: a path string, or an array of paths, and (where
// inline is true) objects in place of paths. Bad values are reported and skipped; paths are
// checked to stay inside the plugin and to exist.
func (l *loader) declaredValues(d *doc, key string, inline bool) []declared {
	raw, ok := d.members[key]
	if !ok {
		return nil
	}
	want := "a path starting with ./, or an array of them"
	if inline {
		want = "a path starting with ./, an object, or an array of them"
	}
	var out []declared
	one := func(v json.RawMessage, ptr ...any) {
		var s string
		switch {
		case json.Unmarshal(v, &s) == nil:
			if p, ok := l.checkPath(d, key, ptr, s); ok {
				out = append(out, declared{path: p, d: d, ptr: ptr})
			}
		case inline && kindOf(v) == "an object":
			out = append(out, declared{inline: v, d: d, ptr: ptr})
		default:
			l.pr.errorf(ErrManifest, d.file, d.line(ptr...), key, "%s is %s, want %s", pathKey(ptr), kindOf(v), want)
		}
	}
	var list []json.RawMessage
	if json.Unmarshal(raw, &list) == nil {
		for i, v := range list {
			one(v, key, i)
		}
		return out
	}
	one(raw, key)
	return out
}

// pathKey renders a key and its indexes as hooks[1].
func pathKey(ptr []any) string {
	var b strings.Builder
	for i, p := range ptr {
		if n, ok := p.(int); ok {
			b.WriteString("[" + strconv.Itoa(n) + "]")
			continue
		}
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(p.(string))
	}
	return b.String()
}

// checkPath resolves a declared path. Claude Code wants every path relative and starting with
// "./"; one without the prefix is reported and still used, one leaving the plugin or missing
// is reported and skipped.
func (l *loader) checkPath(d *doc, key string, ptr []any, rel string) (string, bool) {
	line, at := d.line(ptr...), pathKey(ptr)
	switch {
	case strings.TrimSpace(rel) == "":
		l.pr.errorf(ErrManifest, d.file, line, key, "%s is an empty path", at)
		return "", false
	case filepath.IsAbs(rel) || strings.Contains(rel, "://"):
		l.pr.errorf(ErrManifest, d.file, line, key, "%s %q must be a path relative to the plugin root, starting with ./", at, rel)
		return "", false
	case !strings.HasPrefix(rel, "./") && rel != "." && rel != "./":
		l.pr.errorf(ErrManifest, d.file, line, key, "%s %q must start with ./ (Claude Code refuses it; keel reads it as ./%s)", at, rel, rel)
	}
	abs := filepath.Join(l.p.Root, filepath.FromSlash(rel))
	if r, err := filepath.Rel(l.p.Root, abs); err != nil || r == ".." || strings.HasPrefix(r, ".."+string(filepath.Separator)) {
		l.pr.errorf(ErrManifest, d.file, line, key, "%s %q leaves the plugin folder (ignored)", at, rel)
		return "", false
	}
	if _, err := os.Stat(abs); err != nil {
		l.pr.errorf(ErrPathNotFound, d.file, line, key, "%s %q does not exist in the plugin (%s)", at, rel, abs)
		return "", false
	}
	return abs, true
}

// paths gathers the paths of one folder-or-file component kind: the default folder unless a
// declaration replaces it, then every declaration, without repeats (a declared "./skills" is
// the default folder, read once).
func (l *loader) paths(key, def string, check func(declared)) []string {
	var out []string
	add := func(p string) {
		if !slices.Contains(out, p) {
			out = append(out, p)
		}
	}
	var decls []declared
	for _, d := range l.docs {
		decls = append(decls, l.declaredValues(d, key, false)...)
	}
	if len(decls) == 0 || !replacesDefault.Get()[key] {
		if p := filepath.Join(l.p.Root, def); isDir(p) {
			add(p)
		}
	}
	for _, x := range decls {
		if check != nil {
			check(x)
		}
		add(x.path)
	}
	return out
}

// files gathers the JSON files and inline objects of one configuration kind (hooks, MCP, LSP):
// the default file, then every declaration.
func (l *loader) files(key, def string) []declared {
	var out []declared
	if p := filepath.Join(l.p.Root, filepath.FromSlash(def)); isFile(p) {
		out = append(out, declared{path: p})
	}
	for _, d := range l.docs {
		for _, x := range l.declaredValues(d, key, true) {
			if x.path != "" && slices.ContainsFunc(out, func(o declared) bool { return o.path == x.path }) {
				continue
			}
			if x.path != "" && !strings.EqualFold(filepath.Ext(x.path), ".json") {
				l.pr.errorf(ErrManifest, d.file, x.line(), key, "%s %q is not a .json file", pathKey(x.ptr), rel(l.p.Root, x.path))
				continue
			}
			out = append(out, x)
		}
	}
	return out
}

func rel(root, p string) string {
	if r, err := filepath.Rel(root, p); err == nil {
		return "./" + filepath.ToSlash(r)
	}
	return p
}

func isDir(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.IsDir()
}

func isFile(p string) bool {
	st, err := os.Stat(p)
	return err == nil && st.Mode().IsRegular()
}
