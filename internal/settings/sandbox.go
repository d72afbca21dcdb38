package settings

import (
	"slices"
	"strings"
)

// Sandbox is the sandbox key, in Claude Code's shape: whether Bash (and, opted in, hooks and
// MCP stdio servers) runs inside the kernel sandbox, and what it may write, read and reach.
// Lists merge as every list does (the union of all sources); a bool's highest source wins,
// except that an untrusted workspace may only move a bool the tightening way (see
// [Sandbox] keys in narrowingKeys and tighteningBool).
type Sandbox struct {
	Enabled                  Value[bool]
	AutoAllowBashIfSandboxed Value[bool]
	// ExcludedCommands are command patterns (Bash rule syntax, "docker:*") run outside the
	// sandbox, through the normal permission flow.
	ExcludedCommands         []Value[string]
	AllowUnsandboxedCommands Value[bool]
	FailIfUnavailable        Value[bool]
	// WrapHooks and WrapMcpServers (keel's) run hooks and MCP stdio servers inside too;
	// WrapLspServers (keel's) runs language servers inside, unless it is set to false.
	WrapHooks      Value[bool]
	WrapMcpServers Value[bool]
	WrapLspServers Value[bool]
	Network        SandboxNetwork
	Filesystem     SandboxFilesystem
}

// SandboxNetwork is sandbox.network: what the egress proxy lets through.
type SandboxNetwork struct {
	AllowedDomains    []Value[string]
	DeniedDomains     []Value[string]
	AllowLocalBinding Value[bool]
	AllowUnixSockets  []Value[string]
	StrictAllowlist   Value[bool]
}

// SandboxFilesystem is sandbox.filesystem: paths added to the writable set, protected from
// writes, masked from reads, or kept readable inside a masked directory.
type SandboxFilesystem struct {
	AllowWrite []Value[string]
	DenyWrite  []Value[string]
	DenyRead   []Value[string]
	AllowRead  []Value[string]
}

// sandboxIgnoredKeys are Claude Code sandbox keys keel does not use: kept with a warning, not
// an error, because real files carry them.
var sandboxIgnoredKeys = []string{"ignoreViolations", "enableWeakerNestedSandbox", "enableWeakerNetworkIsolation",
	"network.httpProxyPort", "network.socksProxyPort", "network.allowAllUnixSockets", "ripgrep"}

func sandboxKey() keyDef {
	sb := func(get func(*Sandbox) *Value[bool]) func(*Settings) *Value[bool] {
		return func(s *Settings) *Value[bool] { return get(&s.Sandbox) }
	}
	strs := func(get func(*Sandbox) *[]Value[string]) func(*Settings) *[]Value[string] {
		return func(s *Settings) *[]Value[string] { return get(&s.Sandbox) }
	}
	return strictObject("sandbox",
		tighteningBool("enabled", sb(func(x *Sandbox) *Value[bool] { return &x.Enabled }), true),
		tighteningBool("autoAllowBashIfSandboxed", sb(func(x *Sandbox) *Value[bool] { return &x.AutoAllowBashIfSandboxed }), false),
		list("excludedCommands", strs(func(x *Sandbox) *[]Value[string] { return &x.ExcludedCommands }), decNonEmpty),
		tighteningBool("allowUnsandboxedCommands", sb(func(x *Sandbox) *Value[bool] { return &x.AllowUnsandboxedCommands }), false),
		tighteningBool("failIfUnavailable", sb(func(x *Sandbox) *Value[bool] { return &x.FailIfUnavailable }), true),
		tighteningBool("wrapHooks", sb(func(x *Sandbox) *Value[bool] { return &x.WrapHooks }), true),
		tighteningBool("wrapMcpServers", sb(func(x *Sandbox) *Value[bool] { return &x.WrapMcpServers }), true),
		tighteningBool("wrapLspServers", sb(func(x *Sandbox) *Value[bool] { return &x.WrapLspServers }), true),
		strictObject("network",
			list("allowedDomains", strs(func(x *Sandbox) *[]Value[string] { return &x.Network.AllowedDomains }), decDomain),
			list("deniedDomains", strs(func(x *Sandbox) *[]Value[string] { return &x.Network.DeniedDomains }), decDomain),
			tighteningBool("allowLocalBinding", sb(func(x *Sandbox) *Value[bool] { return &x.Network.AllowLocalBinding }), false),
			list("allowUnixSockets", strs(func(x *Sandbox) *[]Value[string] { return &x.Network.AllowUnixSockets }), decNonEmpty),
			tighteningBool("strictAllowlist", sb(func(x *Sandbox) *Value[bool] { return &x.Network.StrictAllowlist }), true),
		),
		strictObject("filesystem",
			list("allowWrite", strs(func(x *Sandbox) *[]Value[string] { return &x.Filesystem.AllowWrite }), decNonEmpty),
			list("denyWrite", strs(func(x *Sandbox) *[]Value[string] { return &x.Filesystem.DenyWrite }), decNonEmpty),
			list("denyRead", strs(func(x *Sandbox) *[]Value[string] { return &x.Filesystem.DenyRead }), decNonEmpty),
			list("allowRead", strs(func(x *Sandbox) *[]Value[string] { return &x.Filesystem.AllowRead }), decNonEmpty),
		),
	)
}

// strictObject is an object whose unknown keys are errors naming the valid ones: a misspelt
// sandbox key would silently leave a path writable or a domain open. Claude Code keys keel
// does not use are warned about instead.
func strictObject(name string, sub ...keyDef) keyDef {
	k := object(name, sub...)
	inner := k.apply
	k.apply = func(s *Settings, f *fileCtx, key string, n *node) {
		if n.kind != kindObject {
			inner(s, f, key, n)
			return
		}
		valid := make([]string, 0, len(sub))
		for _, d := range sub {
			valid = append(valid, d.name)
		}
		known := *n
		known.members = nil
		for _, m := range n.members {
			dotted := strings.TrimPrefix(key+"."+m.key, "sandbox.")
			switch {
			case slices.Contains(valid, m.key):
				known.members = append(known.members, m)
			case slices.Contains(sandboxIgnoredKeys, dotted):
				f.warnf(m.off, "%s.%s is a Claude Code key keel does not use (ignored)", key, m.key)
			default:
				f.errorf(m.off, "unknown key %s.%s: valid keys are %s", key, m.key, strings.Join(valid, ", "))
			}
		}
		inner(s, f, key, &known)
	}
	return k
}

// tighteningBool is a bool an untrusted workspace may set only to safe, the value that gives
// the sandbox less room (enabled: true, allowUnsandboxedCommands: false…); the other value is
// skipped and listed in [Settings.Ignored]. Project files outrank the user's, so without this
// a cloned repository could switch the user's sandbox off.
func tighteningBool(name string, field func(*Settings) *Value[bool], safe bool) keyDef {
	k := scalar(name, field, decBool)
	inner := k.apply
	k.apply = func(s *Settings, f *fileCtx, key string, n *node) {
		if f.src.Untrusted && n.kind == kindBool && (string(n.raw) == "true") != safe {
			s.Ignored = append(s.Ignored, Value[string]{V: key, From: f.origin(n)})
			return
		}
		inner(s, f, key, n)
	}
	return k
}

// decDomain accepts a domain pattern: "example.com", "*.example.com", either with ":port".
func decDomain(f *fileCtx, key string, n *node) (string, bool) {
	s, ok := decNonEmpty(f, key, n)
	if !ok {
		return "", false
	}
	host := strings.TrimPrefix(strings.ToLower(s), "*.")
	if h, port, found := strings.Cut(host, ":"); found {
		host = h
		if port == "" || strings.Trim(port, "0123456789") != "" {
			f.errorf(n.off, "%s %q has a bad port: want host, *.host, host:port or *.host:port", key, s)
			return "", false
		}
	}
	if host == "" || strings.ContainsAny(host, "*/ @") {
		f.errorf(n.off, "%s %q is not a domain pattern: want host, *.host, host:port or *.host:port", key, s)
		return "", false
	}
	return s, true
}
