package mcphost

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestConfigured: each runner's configuration files count in the start directory and every
// directory above it that counts, only those that runner reads, and only as files.
func TestConfigured(t *testing.T) {
	for _, tc := range []struct {
		argv  []string
		file  string // relative to the workspace; "sub/" prefix: in the start directory
		found bool
	}{
		{[]string{"npx", "-y", "pkg"}, ".npmrc", true},
		{[]string{"npx", "-y", "pkg"}, "sub/.npmrc", true},
		{[]string{"npm", "exec", "pkg"}, ".npmrc", true},
		{[]string{"npx", "-y", "pkg"}, ".yarnrc.yml", false},
		{[]string{"npx", "-y", "pkg"}, "bunfig.toml", false},
		{[]string{"pnpm", "dlx", "pkg"}, ".npmrc", true},
		{[]string{"pnpm", "dlx", "pkg"}, ".pnpmfile.cjs", true},
		{[]string{"pnpm", "exec", "pkg"}, "pnpm-workspace.yaml", true},
		{[]string{"pnpm", "dlx", "pkg"}, ".yarnrc.yml", false},
		{[]string{"yarn", "dlx", "pkg"}, ".yarnrc.yml", true},
		{[]string{"yarn", "dlx", "pkg"}, "sub/.yarnrc", true},
		{[]string{"yarn", "dlx", "pkg"}, ".npmrc", false},
		{[]string{"bunx", "pkg"}, "bunfig.toml", true},
		{[]string{"bun", "x", "pkg"}, ".npmrc", true},
		{[]string{"bunx", "pkg"}, ".pnpmfile.cjs", false},
	} {
		ws := t.TempDir()
		start := filepath.Join(ws, "sub")
		write(t, filepath.Join(start, "keep"), "")
		write(t, filepath.Join(ws, filepath.FromSlash(tc.file)), "script-shell=/x/evil.sh\n")
		run, ok := PackageRunner(tc.argv[0], tc.argv[1:])
		if !ok {
			t.Fatalf("%v is no package run", tc.argv)
		}
		got := run.Configured(start, func(p string) bool { return strings.HasPrefix(p, ws) })
		if want := filepath.Join(ws, filepath.FromSlash(tc.file)); tc.found && got != want || !tc.found && got != "" {
			t.Errorf("%v with %s: Configured = %q, found want %v", tc.argv, tc.file, got, tc.found)
		}
		if got := run.Configured(start, func(p string) bool { return strings.HasPrefix(p, start) }); tc.found && !strings.HasPrefix(tc.file, "sub/") && got != "" {
			t.Errorf("%v with %s: Configured looked where counts says not to: %q", tc.argv, tc.file, got)
		}
	}
	// The sandbox's placeholder for an absent file is a directory: it configures nothing.
	ws := t.TempDir()
	write(t, filepath.Join(ws, ".npmrc", "keep"), "")
	run, _ := PackageRunner("npx", []string{"-y", "pkg"})
	if got := run.Configured(ws, func(string) bool { return true }); got != "" {
		t.Errorf("a directory named .npmrc counts: %q", got)
	}
	if diff := cmp.Diff([]string{".npmrc", ".pnpmfile.cjs", ".yarnrc", ".yarnrc.yml", "bunfig.toml", "pnpm-workspace.yaml"}, RunnerConfigNames()); diff != "" {
		t.Errorf("RunnerConfigNames mismatch (-want +got):\n%s", diff)
	}
}

// TestRunnerConfigPolicy: a package-runner server whose runner would read a configuration
// file the untrusted workspace holds is not started, naming the file and trust; trusted, it
// starts unless the file lies where sandboxed commands write while the server runs outside
// (then trust alone does not start it, and the notice says how); a file above the workspace
// (the user's own) counts for neither, and other servers are untouched.
func TestRunnerConfigPolicy(t *testing.T) {
	parent := t.TempDir()
	ws := filepath.Join(parent, "ws")
	start := filepath.Join(ws, "pkg")
	write(t, filepath.Join(ws, ".npmrc"), "script-shell=./evil.sh\n")
	write(t, filepath.Join(start, "package.json"), "{}\n")
	write(t, filepath.Join(parent, ".yarnrc.yml"), "yarnPath: x.cjs\n")
	npxServer := ServerConfig{Name: "hello", Type: TypeStdio, Command: "npx", Args: []string{"-y", "mcp-hello-keel"}, Scope: ScopeUser}
	yarnServer := ServerConfig{Name: "yarn", Type: TypeStdio, Command: "yarn", Args: []string{"dlx", "mcp-hello-keel"}, Scope: ScopeUser}
	path := filepath.Join(ws, ".npmrc")
	for _, tc := range []struct {
		name     string
		p        Policy
		disabled []string
	}{
		{"untrusted", Policy{Dir: start, Repo: ws}, []string{path, "npm configuration", "not trusted", "keel trust"}},
		{"untrusted, sandboxed", Policy{Dir: start, Repo: ws, Writable: []string{ws}}, []string{path, "sandboxed commands write", "sandbox.wrapMcpServers", "trusting it alone does not start"}},
		{"trusted", Policy{Trusted: true, Dir: start, Repo: ws}, nil},
		{"trusted, sandboxed", Policy{Trusted: true, Dir: start, Repo: ws, Writable: []string{ws}}, []string{path, "sandboxed commands write", "sandbox.wrapMcpServers", "start its executable by its path"}},
		{"trusted, written elsewhere", Policy{Trusted: true, Dir: start, Repo: ws, Writable: []string{t.TempDir()}}, nil},
		{"not checked", Policy{}, nil},
	} {
		got := tc.p.Apply([]ServerConfig{npxServer, yarnServer})
		for _, want := range tc.disabled {
			if !strings.Contains(got[0].Disabled, want) {
				t.Errorf("%s: Disabled = %q, want it to say %q", tc.name, got[0].Disabled, want)
			}
		}
		if tc.disabled == nil && got[0].Disabled != "" {
			t.Errorf("%s: Disabled = %q, want it started", tc.name, got[0].Disabled)
		}
		if tc.p.Trusted && strings.Contains(got[0].Disabled, "not trusted either") {
			t.Errorf("%s: a trusted workspace's notice says it is not trusted: %q", tc.name, got[0].Disabled)
		}
		if got[1].Disabled != "" {
			t.Errorf("%s: yarn, whose configuration lies above the workspace: Disabled = %q", tc.name, got[1].Disabled)
		}
	}
}

// TestHarmlessNpmrc: an .npmrc counts as harmless only when every setting is one that starts
// nothing — a registry too where registries are allowed (a trusted workspace); any other key,
// another runner's file, or a line that is no setting makes it count. A trusted, sandboxed
// workspace's harmless .npmrc starts the npx server; a harmful one beside it still does not.
func TestHarmlessNpmrc(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		content           string
		plain, registries bool
	}{
		{"engine-strict=true\nsave-exact = true\n# comment\n; other\n\nlegacy-peer-deps=true\n", true, true},
		{"registry=https://npm.example/\n@acme:registry=https://npm.example/\n//npm.example/:_authToken=${NPM_TOKEN}\n", false, true},
		{"engine-strict=true\nscript-shell=./evil.sh\n", false, false},
		{"node-options=--require ./x.js\n", false, false},
		{"cache=./.npm-cache\n", false, false},
		{"just a line\n", false, false},
	} {
		p := filepath.Join(dir, ".npmrc")
		write(t, p, tc.content)
		if got := HarmlessConfig(p, false); got != tc.plain {
			t.Errorf("HarmlessConfig(%q, false) = %v, want %v", tc.content, got, tc.plain)
		}
		if got := HarmlessConfig(p, true); got != tc.registries {
			t.Errorf("HarmlessConfig(%q, true) = %v, want %v", tc.content, got, tc.registries)
		}
	}
	write(t, filepath.Join(dir, ".yarnrc.yml"), "enableTelemetry: false\n")
	if HarmlessConfig(filepath.Join(dir, ".yarnrc.yml"), true) {
		t.Error("a .yarnrc.yml counted as harmless")
	}

	ws := filepath.Join(t.TempDir(), "ws")
	write(t, filepath.Join(ws, ".npmrc"), "engine-strict=true\nregistry=https://npm.example/\n")
	npx := ServerConfig{Name: "hello", Type: TypeStdio, Command: "npx", Args: []string{"-y", "mcp-hello-keel"}, Scope: ScopeUser}
	trusted := Policy{Trusted: true, Dir: ws, Repo: ws, Writable: []string{ws}}
	if got := trusted.Apply([]ServerConfig{npx}); got[0].Disabled != "" {
		t.Errorf("a trusted workspace's harmless .npmrc kept the server from starting: %q", got[0].Disabled)
	}
	untrusted := Policy{Dir: ws, Repo: ws}
	if got := untrusted.Apply([]ServerConfig{npx}); got[0].Disabled == "" {
		t.Error("an untrusted workspace's .npmrc naming a registry let the server start")
	}
	write(t, filepath.Join(ws, "sub", ".npmrc"), "script-shell=./evil.sh\n")
	trusted.Dir = filepath.Join(ws, "sub")
	if got := trusted.Apply([]ServerConfig{npx}); !strings.Contains(got[0].Disabled, filepath.Join(ws, "sub", ".npmrc")) {
		t.Errorf("a harmful .npmrc below a harmless one: Disabled = %q", got[0].Disabled)
	}
}
