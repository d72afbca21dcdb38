package mcphost

import (
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// TestPackageRunner: the runners' command lines name the package and the executable names
// npx looks for; other commands, and specs that are no registry name, are no package runs.
func TestPackageRunner(t *testing.T) {
	for _, tc := range []struct {
		cmd  string
		args []string
		pkg  string
		bins []string
	}{
		{"npx", []string{"-y", "@modelcontextprotocol/server-filesystem", "."}, "@modelcontextprotocol/server-filesystem", []string{"@modelcontextprotocol/server-filesystem", "server-filesystem"}},
		{"/usr/local/bin/npx", []string{"--yes", "mcp-hello@1.2"}, "mcp-hello", []string{"mcp-hello@1.2", "mcp-hello"}},
		{"npx", []string{"-p", "@playwright/mcp@latest", "mcp-server-playwright"}, "@playwright/mcp", []string{"mcp-server-playwright", "mcp"}},
		{"npx", []string{"--package=tool", "--", "tool-cli"}, "tool", []string{"tool-cli", "tool"}},
		{"npm", []string{"exec", "--yes", "--", "srv"}, "srv", []string{"srv"}},
		{"npm", []string{"x", "srv"}, "srv", []string{"srv"}},
		{"pnpm", []string{"dlx", "srv"}, "srv", []string{"srv"}},
		{"pnpm", []string{"exec", "srv"}, "srv", []string{"srv"}},
		{"yarn", []string{"dlx", "-q", "srv"}, "srv", []string{"srv"}},
		{"bunx", []string{"--bun", "srv"}, "srv", []string{"srv"}},
		{"bun", []string{"x", "srv"}, "srv", []string{"srv"}},
	} {
		run, ok := PackageRunner(tc.cmd, tc.args)
		if !ok || run.Package != tc.pkg || !slices.Equal(run.Bins, tc.bins) {
			t.Errorf("PackageRunner(%s %v) = %+v, %v; want %s %v", tc.cmd, tc.args, run, ok, tc.pkg, tc.bins)
		}
	}
	for _, argv := range [][]string{
		{"node", "server.js"}, {"npm", "run", "srv"}, {"npm", "install", "srv"}, {"bun", "run", "x"},
		{"npx", "./local-dir"}, {"npx", "github:user/repo"}, {"npx", "file:../x"}, {"npx", "-y"}, {"npx", "../x"},
	} {
		if run, ok := PackageRunner(argv[0], argv[1:]); ok {
			t.Errorf("PackageRunner(%v) = %+v, want none", argv, run)
		}
	}
}

// plantings are the ways a project provides a package to `npx -y mcp-hello-keel` in its place:
// each writes a bin that prints the marker, for the real npx to run.
var plantings = map[string]map[string]string{
	"package":  {"node_modules/mcp-hello-keel/package.json": `{"name":"mcp-hello-keel","version":"1.0.0","bin":{"evil":"s.js"}}`, "node_modules/mcp-hello-keel/s.js": "", "node_modules/.bin/evil": "#!/bin/sh\necho PLANTED\n"},
	"nested":   {"node_modules/a/package.json": `{"name":"a","version":"1.0.0"}`, "node_modules/a/node_modules/mcp-hello-keel/package.json": `{"name":"mcp-hello-keel","version":"1.0.0","bin":{"evil":"s.js"}}`, "node_modules/a/node_modules/mcp-hello-keel/s.js": "", "node_modules/.bin/evil": "#!/bin/sh\necho PLANTED\n"},
	"alias":    {"node_modules/other/package.json": `{"name":"mcp-hello-keel","version":"1.0.0","bin":{"evil":"s.js"}}`, "node_modules/other/s.js": "", "node_modules/.bin/evil": "#!/bin/sh\necho PLANTED\n"},
	"bin":      {"node_modules/.bin/mcp-hello-keel": "#!/bin/sh\necho PLANTED\n"},
	"own bin":  {"package.json": `{"name":"proj","version":"1.0.0","bin":{"mcp-hello-keel":"s.js"}}`, "s.js": "#!/usr/bin/env node\nconsole.log('PLANTED')\n"},
	"scope up": {"node_modules/.bin/mcp-hello-keel": "#!/bin/sh\necho PLANTED\n", "sub/.keep": ""},
}

// TestProvidedMatchesNpx: every layout through which the real npx runs a project's copy of the
// package in place of the registry's is one Provided finds — the resolution is npx's — and
// without one npx runs nothing local and Provided finds nothing. npx is offline (its registry
// a closed loopback port), so it can only run what the project provides.
func TestProvidedMatchesNpx(t *testing.T) {
	npx, err := exec.LookPath("npx")
	if err != nil {
		t.Skip("npx is not installed")
	}
	run, _ := PackageRunner("npx", []string{"-y", "mcp-hello-keel"})
	npxIn := func(dir string) string {
		cmd := exec.Command(npx, "-y", "mcp-hello-keel")
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "npm_config_registry=http://127.0.0.1:9/", "npm_config_cache="+t.TempDir(),
			"npm_config_update_notifier=false", "npm_config_fetch_retries=0", "npm_config_audit=false", "npm_config_fund=false")
		out, _ := cmd.CombinedOutput()
		return string(out)
	}
	all := func(string) bool { return true }
	for name, files := range plantings {
		dir := t.TempDir()
		for f, content := range files {
			write(t, filepath.Join(dir, f), content)
			if strings.HasSuffix(f, ".js") || strings.Contains(f, ".bin/") {
				os.Chmod(filepath.Join(dir, f), 0o755)
			}
		}
		from := dir
		if name == "scope up" {
			from = filepath.Join(dir, "sub") // found in the directory above
		}
		if out := npxIn(from); !strings.Contains(out, "PLANTED") {
			t.Errorf("%s: npx did not run the planted copy:\n%s", name, out)
		}
		if got := run.Provided(from, all); got == "" || !strings.HasPrefix(got, dir) {
			t.Errorf("%s: Provided = %q, want a path in %s", name, got, dir)
		}
		if name == "scope up" {
			if got := run.Provided(from, func(p string) bool { return strings.HasPrefix(p, from) }); got != "" {
				t.Errorf("%s: Provided looked where counts says not to: %q", name, got)
			}
		}
	}
	clean := t.TempDir()
	write(t, filepath.Join(clean, "node_modules/dep/package.json"), `{"name":"dep","version":"1.0.0","bin":{"dep":"x.js"}}`)
	if out := npxIn(clean); strings.Contains(out, "PLANTED") {
		t.Errorf("npx ran something local in a clean project:\n%s", out)
	}
	if got := run.Provided(clean, all); got != "" {
		t.Errorf("Provided in a clean project = %q", got)
	}
}

// TestWorkspaceCopyPolicy: before trust, a package-runner server whose package the workspace
// provides is not started, naming the path and trust; trusted, it starts unless the copy lies
// where sandboxed commands write while the server runs outside; other servers are untouched.
func TestWorkspaceCopyPolicy(t *testing.T) {
	ws := t.TempDir()
	write(t, filepath.Join(ws, "node_modules/mcp-hello-keel/package.json"), `{"name":"mcp-hello-keel","version":"1.0.0","bin":"s.js"}`)
	npxServer := ServerConfig{Name: "hello", Type: TypeStdio, Command: "npx", Args: []string{"-y", "mcp-hello-keel"}, Scope: ScopeUser}
	other := ServerConfig{Name: "other", Type: TypeStdio, Command: "npx", Args: []string{"-y", "something-else"}, Scope: ScopeUser}
	path := filepath.Join(ws, "node_modules", "mcp-hello-keel")
	for _, tc := range []struct {
		name     string
		p        Policy
		disabled []string
	}{
		{"untrusted", Policy{Dir: ws, Repo: ws}, []string{path, "not trusted", "keel trust"}},
		{"untrusted, sandboxed", Policy{Dir: ws, Repo: ws, Writable: []string{ws}}, []string{path, "sandboxed commands can write", "not trusted", "trusting it alone does not start"}},
		{"trusted", Policy{Trusted: true, Dir: ws, Repo: ws}, nil},
		{"trusted, sandboxed", Policy{Trusted: true, Dir: ws, Repo: ws, Writable: []string{ws}}, []string{path, "sandboxed commands can write", "sandbox.wrapMcpServers"}},
		{"trusted, written elsewhere", Policy{Trusted: true, Dir: ws, Repo: ws, Writable: []string{t.TempDir()}}, nil},
		{"not checked", Policy{}, nil},
	} {
		got := tc.p.Apply([]ServerConfig{npxServer, other})
		for _, want := range tc.disabled {
			if !strings.Contains(got[0].Disabled, want) {
				t.Errorf("%s: Disabled = %q, want it to say %q", tc.name, got[0].Disabled, want)
			}
		}
		if tc.disabled == nil && got[0].Disabled != "" {
			t.Errorf("%s: Disabled = %q, want it started", tc.name, got[0].Disabled)
		}
		if got[1].Disabled != "" {
			t.Errorf("%s: a server whose package the workspace does not hold: Disabled = %q", tc.name, got[1].Disabled)
		}
	}
}

// TestInstalledModuleLeavesTheDirectoryOff: a `python3 -m PKG` server whose package is not in
// the directory it starts in runs with PYTHONSAFEPATH=1, so that a PKG/ a sandboxed command
// (or the repository) puts there does not run in its place; a module the project holds, a
// script, and a value the configuration sets stay as they are.
func TestInstalledModuleLeavesTheDirectoryOff(t *testing.T) {
	dir := t.TempDir()
	if err := os.Mkdir(filepath.Join(dir, "local_server"), 0o755); err != nil {
		t.Fatal(err)
	}
	servers := []ServerConfig{
		{Name: "installed", Command: "/usr/bin/python3", Args: []string{"-u", "-m", "mcp_server_fetch"}},
		{Name: "local", Command: "python3", Args: []string{"-m", "local_server.main"}},
		{Name: "script", Command: "python3", Args: []string{"server.py", "-m", "x"}},
		{Name: "set", Command: "python3", Args: []string{"-m", "mcp_server_time"}, Env: map[string]string{"PYTHONSAFEPATH": ""}},
		{Name: "node", Command: "node", Args: []string{"-m", "x"}},
	}
	got := map[string]string{}
	for _, s := range (Policy{Trusted: true, Dir: dir}).Apply(servers) {
		got[s.Name] = s.Env["PYTHONSAFEPATH"]
	}
	want := map[string]string{"installed": "1", "local": "", "script": "", "set": "", "node": ""}
	if !maps.Equal(got, want) {
		t.Errorf("PYTHONSAFEPATH = %v, want %v", got, want)
	}
	if servers[3].Env["PYTHONSAFEPATH"] != "" || servers[0].Env != nil {
		t.Error("Apply changed the configuration it was given")
	}
}
