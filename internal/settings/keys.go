package settings

import (
	"encoding/json"
	"maps"
	"slices"

	"github.com/keel-dev/keel/internal/lazy"
)

// PermissionModes are the values of permissions.defaultMode: every permission.Mode but
// bubble, which only a parent session gives to a child. Written out rather than taken from
// the permission package, which settings must not import: permission's tests run the shell,
// whose sandbox reads settings. TestPermissionModes holds the two lists together.
var PermissionModes = []string{"default", "acceptEdits", "plan", "dontAsk", "bypassPermissions", "auto"}

// TeammateModes are the values of teammateMode: Claude Code's in-process, tmux and auto,
// and keel's process (separate processes without tmux).
var TeammateModes = []string{"in-process", "tmux", "auto", "process"}

// The clearToolResults values, as [Settings.ClearToolResults] holds them: keel's own clearing
// (true, the default), none (false), or the provider's ("provider": Anthropic's context
// editing, where the provider has it).
const (
	ClearingKeel     = "keel"
	ClearingOff      = "off"
	ClearingProvider = "provider"
)

// Settings is the merged result of every source, each value with its origin. Lists hold the
// union of all sources, highest priority first; a scalar holds the highest source's value.
//
// Adding a key: a field here and one row in keyTable below.
type Settings struct {
	Permissions                Permissions
	Hooks                      []HookGroup // every source's matcher groups, highest first
	DisableAllHooks            Value[bool]
	Env                        map[string]Value[string]
	Model                      Value[string]
	EnableAllProjectMcpServers Value[bool]
	EnabledMcpjsonServers      []Value[string]
	DisabledMcpjsonServers     []Value[string]
	AllowedMcpServers          []Value[MCPServerRule] // managed only
	DeniedMcpServers           []Value[MCPServerRule] // managed only
	ForkSubagents              Value[bool]
	// Teams turns on agent teams (also the env value CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1);
	// TeammateMode is where teammates run.
	Teams        Value[bool]
	TeammateMode Value[string]
	// CacheTTL1h lists query-source patterns ("main", "sdk", "agent:*") whose requests ask for
	// the one-hour prompt-cache lifetime; see [Settings.CacheTTL1hFor].
	CacheTTL1h []Value[string]
	// AutoCompactThreshold is the percentage (1–100) of the context window at which the
	// conversation is compacted.
	AutoCompactThreshold Value[float64]
	// ClearToolResults says who clears stale tool results (old results replaced by stubs
	// once the context grows, when that saves cost): keel ([ClearingKeel], the file's true,
	// and the default when unset), nobody ([ClearingOff], false) or the provider
	// ([ClearingProvider], "provider").
	ClearToolResults Value[string]
	// WebSearch picks the WebSearch tool's backend.
	WebSearch WebSearch
	// LSPServers are the language servers by name; edits are checked with them.
	LSPServers map[string]Value[LSPServer]
	// Coordination picks the teams' coordination backend (coordination.go).
	Coordination Coordination
	// Plugins are enabledPlugins, extraKnownMarketplaces and the managed marketplace lists
	// (plugins.go).
	Plugins Plugins
	// StatusLine is the terminal UI's status line command (ui.go); OutputStyle names the
	// output style (default, Explanatory, Learning, or one in an output-styles directory).
	StatusLine  StatusLine
	OutputStyle Value[string]
	// AutoMemoryEnabled switches the project's auto memory (MEMORY.md under keel's home) on
	// or off; unset is on.
	AutoMemoryEnabled Value[bool]
	// Sandbox is the sandbox key (sandbox.go): the kernel sandbox of Bash.
	Sandbox Sandbox

	// Unknown holds keys keel does not know, by dotted key, highest source winning. They are
	// kept (and warned about) because real files carry many keys for other tools.
	Unknown map[string]Value[json.RawMessage]
	// Ignored lists the keys of an untrusted workspace's project and local files that were
	// skipped because they could widen what keel may do (see [Options.Trust]); V is the
	// dotted key.
	Ignored []Value[string]
	// Trusted is the trust decision Load made for the project directory (true without one).
	Trusted bool
	// Files says what happened to each source, in precedence order.
	Files []FileStatus
	// Problems lists everything wrong in any source, in precedence order.
	Problems []Problem
}

// Permissions is the permissions key. Rules are carried as strings; the permission package
// parses them, resolving path rules against the directory of From.Path.
type Permissions struct {
	Allow                 []Value[string]
	Ask                   []Value[string]
	Deny                  []Value[string]
	DefaultMode           Value[string]
	AdditionalDirectories []Value[string]
}

// keyTable is every key keel reads. Order is the order of `keel config` output. Built on
// first use: a run that reads no settings (`keel --version`) does not pay for its 150 closures.
var keyTable = lazy.Value[[]keyDef]{New: func() []keyDef {
	return []keyDef{
		object("permissions",
			list("allow", func(s *Settings) *[]Value[string] { return &s.Permissions.Allow }, decNonEmpty),
			list("ask", func(s *Settings) *[]Value[string] { return &s.Permissions.Ask }, decNonEmpty),
			list("deny", func(s *Settings) *[]Value[string] { return &s.Permissions.Deny }, decNonEmpty),
			scalar("defaultMode", func(s *Settings) *Value[string] { return &s.Permissions.DefaultMode }, decOneOf(PermissionModes...)),
			list("additionalDirectories", func(s *Settings) *[]Value[string] { return &s.Permissions.AdditionalDirectories }, decNonEmpty),
		),
		hooksKey(),
		scalar("disableAllHooks", func(s *Settings) *Value[bool] { return &s.DisableAllHooks }, decBool),
		envKey(),
		scalar("model", func(s *Settings) *Value[string] { return &s.Model }, decNonEmpty),
		scalar("enableAllProjectMcpServers", func(s *Settings) *Value[bool] { return &s.EnableAllProjectMcpServers }, decBool),
		list("enabledMcpjsonServers", func(s *Settings) *[]Value[string] { return &s.EnabledMcpjsonServers }, decNonEmpty),
		list("disabledMcpjsonServers", func(s *Settings) *[]Value[string] { return &s.DisabledMcpjsonServers }, decNonEmpty),
		managedOnly(list("allowedMcpServers", func(s *Settings) *[]Value[MCPServerRule] { return &s.AllowedMcpServers }, decMCPServerRule)),
		managedOnly(list("deniedMcpServers", func(s *Settings) *[]Value[MCPServerRule] { return &s.DeniedMcpServers }, decMCPServerRule)),
		scalar("forkSubagents", func(s *Settings) *Value[bool] { return &s.ForkSubagents }, decBool),
		scalar("teams", func(s *Settings) *Value[bool] { return &s.Teams }, decBool),
		scalar("teammateMode", func(s *Settings) *Value[string] { return &s.TeammateMode }, decOneOf(TeammateModes...)),
		list("cacheTTL1h", func(s *Settings) *[]Value[string] { return &s.CacheTTL1h }, decPattern),
		scalar("autoCompactThreshold", func(s *Settings) *Value[float64] { return &s.AutoCompactThreshold }, decNumberIn(1, 100, "a percentage of the context window")),
		scalar("clearToolResults", func(s *Settings) *Value[string] { return &s.ClearToolResults }, decClearing),
		webSearchKey(),
		lspKey(),
		coordinationKey(),
		enabledPluginsKey(),
		extraKnownMarketplacesKey(),
		strictKnownMarketplacesKey(),
		blockedMarketplacesKey(),
		statusLineKey(),
		scalar("outputStyle", func(s *Settings) *Value[string] { return &s.OutputStyle }, decNonEmpty),
		scalar("autoMemoryEnabled", func(s *Settings) *Value[bool] { return &s.AutoMemoryEnabled }, decBool),
		sandboxKey(),
	}
}}

// keyDef reads one key. Sources are applied highest first, so apply only fills what is unset
// (scalars) or not yet present (lists).
type keyDef struct {
	name        string
	managedOnly bool
	sub         []keyDef // an object's keys
	apply       func(s *Settings, f *fileCtx, key string, n *node)
	show        func(s *Settings, key string) []shown
}

// shown is one merged value for `keel config`.
type shown struct {
	key   string
	list  bool
	value any
	from  Origin
}

func managedOnly(k keyDef) keyDef {
	k.managedOnly = true
	return k
}

func scalar[T any](name string, field func(*Settings) *Value[T], dec decoder[T]) keyDef {
	return keyDef{
		name: name,
		apply: func(s *Settings, f *fileCtx, key string, n *node) {
			v, ok := dec(f, key, n)
			if dst := field(s); ok && !dst.IsSet() {
				*dst = Value[T]{V: v, From: f.origin(n)}
			}
		},
		show: func(s *Settings, key string) []shown {
			if v := field(s); v.IsSet() {
				return []shown{{key: key, value: v.V, from: v.From}}
			}
			return nil
		},
	}
}

// list merges arrays as a union; a value in several sources keeps the highest one's origin.
func list[T any](name string, field func(*Settings) *[]Value[T], dec decoder[T]) keyDef {
	return keyDef{
		name: name,
		apply: func(s *Settings, f *fileCtx, key string, n *node) {
			if n.kind != kindArray {
				wrongType(f, key, n, "an array")
				return
			}
			dst := field(s)
			for _, e := range n.elems {
				v, ok := dec(f, key+"[]", e)
				if !ok {
					continue
				}
				id, _ := json.Marshal(v)
				if !slices.ContainsFunc(*dst, func(have Value[T]) bool {
					h, _ := json.Marshal(have.V)
					return string(h) == string(id)
				}) {
					*dst = append(*dst, Value[T]{V: v, From: f.origin(e)})
				}
			}
		},
		show: func(s *Settings, key string) []shown {
			var out []shown
			for _, v := range *field(s) {
				out = append(out, shown{key: key, list: true, value: v.V, from: v.From})
			}
			return out
		},
	}
}

// object reads a nested object whose keys are sub.
func object(name string, sub ...keyDef) keyDef {
	return keyDef{
		name: name,
		sub:  sub,
		apply: func(s *Settings, f *fileCtx, key string, n *node) {
			if n.kind != kindObject {
				wrongType(f, key, n, "an object")
				return
			}
			applyMembers(s, f, key+".", n, sub)
		},
		show: func(s *Settings, key string) []shown {
			var out []shown
			for _, k := range sub {
				out = append(out, k.show(s, key+"."+k.name)...)
			}
			return out
		},
	}
}

// envKey merges env maps key by key.
func envKey() keyDef {
	return keyDef{
		name: "env",
		apply: func(s *Settings, f *fileCtx, key string, n *node) {
			if n.kind != kindObject {
				wrongType(f, key, n, "an object of strings")
				return
			}
			if s.Env == nil {
				s.Env = map[string]Value[string]{}
			}
			for _, m := range n.members {
				var v string
				switch m.val.kind {
				case kindString:
					v, _ = decString(f, key, m.val)
				case kindNumber, kindBool:
					v = string(m.val.raw)
					f.warnf(m.val.off, "%s.%s is %s; using it as the string %q", key, m.key, m.val.kind, v)
				default:
					wrongType(f, key+"."+m.key, m.val, "a string")
					continue
				}
				if _, ok := s.Env[m.key]; !ok {
					s.Env[m.key] = Value[string]{V: v, From: f.origin(m.val)}
				}
			}
		},
		show: func(s *Settings, key string) []shown {
			var out []shown
			for _, k := range slices.Sorted(maps.Keys(s.Env)) {
				out = append(out, shown{key: key + "." + k, value: s.Env[k].V, from: s.Env[k].From})
			}
			return out
		},
	}
}

// wideningKeys are what a workspace's own files may not set until it is trusted: rules that
// allow, a mode, directories, the environment of every command (proxies and OTEL endpoints
// included), commands keel or another tool reading the same file would run, and anything that
// names a host or turns on a network feature — where team traffic goes (teams,
// coordination), where search queries and keys go (webSearch), servers to start
// (lspServers), telemetry endpoints and proxies. A cloned repository can narrow (deny, ask)
// but never widen. Every key of keyTable is either here or in narrowingKeys (a test checks),
// so a key added later has to be classified.
var wideningKeys = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{
		"permissions.allow": true, "permissions.defaultMode": true, "permissions.additionalDirectories": true,
		"env": true, "hooks": true, "apiKeyHelper": true, "awsAuthRefresh": true, "awsCredentialExport": true,
		"otelHeadersHelper": true, "statusLine": true, "fileSuggestion": true,
		"enabledPlugins": true, "extraKnownMarketplaces": true,
		"teams": true, "coordination": true, "webSearch": true, "lspServers": true,
		// Claude Code's and OpenTelemetry's names for endpoints and proxies, should keel read them.
		"otelEndpoint": true, "otelExporterEndpoint": true, "telemetry": true, "proxy": true, "httpProxy": true,
		"httpsProxy": true,
		// What the sandbox lets a command write, read, reach or run outside of it.
		"sandbox.excludedCommands": true, "sandbox.network.allowedDomains": true,
		"sandbox.network.allowUnixSockets": true, "sandbox.filesystem.allowWrite": true,
		"sandbox.filesystem.allowRead": true,
	}
}}

// narrowingKeys are the keys a workspace may set before it is trusted: they narrow, pick
// among things the user already allows, or have a trust gate of their own (MCP servers of a
// project start only once it is trusted).
var narrowingKeys = lazy.Value[map[string]bool]{New: func() map[string]bool {
	return map[string]bool{
		"permissions.ask": true, "permissions.deny": true, "disableAllHooks": true, "model": true,
		"enableAllProjectMcpServers": true, "enabledMcpjsonServers": true, "disabledMcpjsonServers": true,
		"allowedMcpServers": true, "deniedMcpServers": true, "forkSubagents": true, "cacheTTL1h": true,
		"autoCompactThreshold": true, "teammateMode": true,
		// Clearing stale tool results changes what the model keeps seeing, not what it may do.
		"clearToolResults": true,
		// How answers are worded: a style changes the prompt as a project's memory files do
		// before trust, and grants nothing.
		"outputStyle": true,
		// Auto memory is on unless switched off; a project may only switch it off.
		"autoMemoryEnabled": true,
		// Managed-only policies: honoured only from managed settings, where they narrow.
		"strictKnownMarketplaces": true, "blockedMarketplaces": true,
		// The sandbox's deny lists narrow; its bools are tighteningBool (sandbox.go): an
		// untrusted workspace's value is honoured only when it gives the sandbox less room.
		"sandbox.enabled": true, "sandbox.autoAllowBashIfSandboxed": true, "sandbox.allowUnsandboxedCommands": true,
		"sandbox.failIfUnavailable": true, "sandbox.wrapHooks": true, "sandbox.wrapMcpServers": true,
		"sandbox.wrapLspServers": true, "sandbox.network.deniedDomains": true, "sandbox.network.allowLocalBinding": true,
		"sandbox.network.strictAllowlist": true, "sandbox.filesystem.denyWrite": true, "sandbox.filesystem.denyRead": true,
	}
}}

// WideningKeys lists the keys an untrusted workspace's files may not set, sorted.
func WideningKeys() []string { return slices.Sorted(maps.Keys(wideningKeys.Get())) }

// applyMembers applies each member of n with its keyDef, keeping and warning about unknown keys.
func applyMembers(s *Settings, f *fileCtx, prefix string, n *node, defs []keyDef) {
	for _, m := range n.members {
		key := prefix + m.key
		if f.src.Untrusted && wideningKeys.Get()[key] {
			s.Ignored = append(s.Ignored, Value[string]{V: key, From: f.origin(m.val)})
			continue
		}
		i := slices.IndexFunc(defs, func(d keyDef) bool { return d.name == m.key })
		if i < 0 {
			if m.key != "$schema" {
				f.warnf(m.off, "unknown key %s (kept, not used by keel)", key)
			}
			if s.Unknown == nil {
				s.Unknown = map[string]Value[json.RawMessage]{}
			}
			if _, ok := s.Unknown[key]; !ok {
				s.Unknown[key] = Value[json.RawMessage]{V: m.val.raw, From: f.origin(m.val)}
			}
			continue
		}
		d := defs[i]
		if d.managedOnly && f.src.Scope != ScopeManaged {
			f.warnf(m.off, "%s is only honoured in managed settings; ignored here", key)
			continue
		}
		d.apply(s, f, key, m.val)
	}
}
