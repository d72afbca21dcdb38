package settings

import (
	"encoding/json"
	"net/url"
	"strings"
)

// WebSearch is the webSearch key: which backend the WebSearch tool uses.
type WebSearch struct {
	// Backend is auto (the provider's server-side search when it has one, else off),
	// anthropic, searxng, brave, tavily or off.
	Backend Value[string]
	// URL is the search service's endpoint (required for searxng).
	URL Value[string]
	// APIKey is the Brave or Tavily key; ${VAR} takes it from the environment.
	APIKey     Value[Secret]
	MaxResults Value[float64]
}

// WebSearchBackends are the values of webSearch.backend.
var WebSearchBackends = []string{"auto", "anthropic", "searxng", "brave", "tavily", "off"}

// Secret is a setting that `keel config` does not print (a ${VAR} reference it does).
type Secret string

// MarshalJSON shows a reference to the environment as written and hides a literal key.
func (s Secret) MarshalJSON() ([]byte, error) {
	if strings.HasPrefix(string(s), "${") && strings.HasSuffix(string(s), "}") {
		return json.Marshal(string(s))
	}
	return json.Marshal("(hidden)")
}

func webSearchKey() keyDef {
	return object("webSearch",
		scalar("backend", func(s *Settings) *Value[string] { return &s.WebSearch.Backend }, decOneOf(WebSearchBackends...)),
		scalar("url", func(s *Settings) *Value[string] { return &s.WebSearch.URL }, decHTTPURL),
		scalar("apiKey", func(s *Settings) *Value[Secret] { return &s.WebSearch.APIKey }, func(f *fileCtx, key string, n *node) (Secret, bool) {
			v, ok := decNonEmpty(f, key, n)
			return Secret(v), ok
		}),
		scalar("maxResults", func(s *Settings) *Value[float64] { return &s.WebSearch.MaxResults }, decNumberIn(1, 50, "a number of results")),
	)
}

func decHTTPURL(f *fileCtx, key string, n *node) (string, bool) {
	s, ok := decNonEmpty(f, key, n)
	if !ok {
		return "", false
	}
	if strings.Contains(s, "${") {
		return s, true // expanded later, from the environment
	}
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		f.errorf(n.off, "%s %q is not an http:// or https:// URL", key, s)
		return "", false
	}
	return s, true
}

// LSPServer is one entry of the lspServers key, in the shape Claude Code's plugins use:
// {"gopls": {"command": "gopls", "args": ["serve"], "extensionToLanguage": {".go": "go"}}}.
type LSPServer struct {
	Command             string            `json:"command"`
	Args                []string          `json:"args,omitempty"`
	ExtensionToLanguage map[string]string `json:"extensionToLanguage"`
	Env                 map[string]string `json:"env,omitempty"`
	// InitializationOptions go into the initialize request; Settings answer the server's
	// workspace/configuration requests.
	InitializationOptions json.RawMessage `json:"initializationOptions,omitempty"`
	Settings              json.RawMessage `json:"settings,omitempty"`
	WorkspaceFolder       string          `json:"workspaceFolder,omitempty"`
	// StartupTimeout and ShutdownTimeout are in milliseconds; 0 means the defaults.
	StartupTimeout  float64 `json:"startupTimeout,omitempty"`
	ShutdownTimeout float64 `json:"shutdownTimeout,omitempty"`
	// RestartOnCrash (default true) and MaxRestarts (default 3) say what happens when the
	// server dies.
	RestartOnCrash *bool `json:"restartOnCrash,omitempty"`
	MaxRestarts    *int  `json:"maxRestarts,omitempty"`
}

// lspServerKeys are the fields of an lspServers entry, for messages.
var lspServerKeys = []string{"command", "args", "extensionToLanguage", "env", "initializationOptions", "settings",
	"workspaceFolder", "startupTimeout", "shutdownTimeout", "restartOnCrash", "maxRestarts", "transport"}

// lspKey merges lspServers by server name: the highest source that names a server defines it.
func lspKey() keyDef {
	return mapKey("lspServers", `an object of servers, {"gopls": {"command": "gopls", "extensionToLanguage": {".go": "go"}}}`,
		func(s *Settings) *map[string]Value[LSPServer] { return &s.LSPServers }, decLSPServer)
}

func decLSPServer(f *fileCtx, key string, n *node) (LSPServer, bool) {
	var srv LSPServer
	if n.kind != kindObject {
		wrongType(f, key, n, `an object {"command": "…", "extensionToLanguage": {".ext": "language"}}`)
		return srv, false
	}
	ok := true
	for _, m := range n.members {
		mk := key + "." + m.key
		good := true
		switch m.key {
		case "command":
			srv.Command, good = decNonEmpty(f, mk, m.val)
		case "args":
			srv.Args, good = decStrings(f, mk, m.val)
		case "extensionToLanguage":
			srv.ExtensionToLanguage, good = decStringMap(f, mk, m.val)
			for ext := range srv.ExtensionToLanguage {
				if !strings.HasPrefix(ext, ".") || len(ext) < 2 {
					f.errorf(m.val.off, "%s: extension %q must start with a dot, like \".go\"", mk, ext)
					good = false
				}
			}
		case "env":
			srv.Env, good = decStringMap(f, mk, m.val)
		case "initializationOptions":
			srv.InitializationOptions = m.val.raw
		case "settings":
			srv.Settings = m.val.raw
		case "workspaceFolder":
			srv.WorkspaceFolder, good = decNonEmpty(f, mk, m.val)
		case "startupTimeout":
			srv.StartupTimeout, good = decNumberIn(1, 3_600_000, "a number of milliseconds")(f, mk, m.val)
		case "shutdownTimeout":
			srv.ShutdownTimeout, good = decNumberIn(1, 3_600_000, "a number of milliseconds")(f, mk, m.val)
		case "restartOnCrash":
			var b bool
			b, good = decBool(f, mk, m.val)
			srv.RestartOnCrash = &b
		case "maxRestarts":
			var v float64
			v, good = decNumberIn(0, 1000, "a number of restarts")(f, mk, m.val)
			r := int(v)
			srv.MaxRestarts = &r
		case "transport":
			_, good = decOneOf("stdio")(f, mk, m.val)
		default:
			f.warnf(m.off, "unknown key %s (ignored; the keys are %s)", mk, strings.Join(lspServerKeys, ", "))
		}
		ok = ok && good
	}
	if ok && srv.Command == "" {
		f.errorf(n.off, "%s has no command", key)
		ok = false
	}
	if ok && len(srv.ExtensionToLanguage) == 0 {
		f.errorf(n.off, `%s has no extensionToLanguage (e.g. {".go": "go"}): keel would not know its files`, key)
		ok = false
	}
	return srv, ok
}

func decStrings(f *fileCtx, key string, n *node) ([]string, bool) {
	if n.kind != kindArray {
		wrongType(f, key, n, "an array of strings")
		return nil, false
	}
	out := []string{}
	for _, e := range n.elems {
		s, ok := decString(f, key+"[]", e)
		if !ok {
			return nil, false
		}
		out = append(out, s)
	}
	return out, true
}

func decStringMap(f *fileCtx, key string, n *node) (map[string]string, bool) {
	if n.kind != kindObject {
		wrongType(f, key, n, "an object of strings")
		return nil, false
	}
	out := map[string]string{}
	for _, m := range n.members {
		s, ok := decString(f, key+"."+m.key, m.val)
		if !ok {
			return nil, false
		}
		out[m.key] = s
	}
	return out, true
}
