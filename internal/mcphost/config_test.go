package mcphost

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/compattest"
	"github.com/keel-dev/keel/internal/settings"
)

func write(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLoadPrecedenceAndExpansion(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, UserFile), `{"mcpServers":{"a":{"command":"user-a"},"u":{"command":"user-u"}}}`)
	write(t, filepath.Join(proj, ProjectFile), `{"mcpServers":{"a":{"command":"proj-a"},"p":{"type":"http","url":"${BASE:-http://localhost}/mcp","headers":{"Authorization":"Bearer ${TOKEN}"}}}}`)
	abs, _ := filepath.Abs(proj)
	write(t, filepath.Join(home, LocalFile), `{"projects":{"`+abs+`":{"mcpServers":{"l":{"command":"${TOOL}","args":["--x=${MISSING}"]}}}}}`)
	c := Load(LoadOptions{Home: home, ProjectDir: proj, Env: map[string]string{"TOKEN": "s3cret", "TOOL": "local-tool"},
		CLIConfigs: []string{`{"mcpServers":{"c":{"command":"cli"}}}`}})
	got := map[string]string{}
	for _, s := range c.Servers {
		got[s.Name] = string(s.Scope) + " " + target(s)
	}
	want := map[string]string{"a": "project proj-a", "u": "user user-u", "p": "project http://localhost/mcp", "l": "local local-tool --x=${MISSING}", "c": "cli cli"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("servers mismatch (-want +got):\n%s", diff)
	}
	p, _ := c.Server("p")
	if p.Headers["Authorization"] != "Bearer s3cret" {
		t.Errorf("header = %q", p.Headers["Authorization"])
	}
	if len(c.Problems) != 1 || !c.Problems[0].Warning || !strings.Contains(c.Problems[0].Error(), "MISSING") {
		t.Errorf("problems = %v, want one warning naming MISSING", c.Problems)
	}
	strict := Load(LoadOptions{Home: home, ProjectDir: proj, Strict: true, CLIConfigs: []string{`{"mcpServers":{"c":{"command":"cli"}}}`}})
	if len(strict.Servers) != 1 || strict.Servers[0].Name != "c" {
		t.Errorf("strict servers = %+v", strict.Servers)
	}
}

func TestLoadBadInput(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	write(t, filepath.Join(home, UserFile), `{"mcpServers":{"ok":{"command":"fine"}}}`)
	tests := []struct {
		name, project, want string
	}{
		{"syntax", "{\n  \"mcpServers\": {\n    \"x\": {\"command\": \"a\",}\n  }\n}", ".mcp.json: invalid JSON: line 3 column 27"},
		{"type", `{"mcpServers":{"x":{"command":"a","args":"notalist"}}}`, ".mcp.json: mcpServers.x.args: is string, want []string"},
		{"transport", `{"mcpServers":{"x":{"type":"ws","url":"ws://h"}}}`, `.mcp.json: mcpServers.x.type: "ws" is not one of stdio, http, sse`},
		{"no command", `{"mcpServers":{"x":{"type":"stdio"}}}`, ".mcp.json: mcpServers.x.command: missing"},
		{"servers not object", `{"mcpServers":[1]}`, ".mcp.json: mcpServers: want an object of servers"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			write(t, filepath.Join(proj, ProjectFile), tt.project)
			c := Load(LoadOptions{Home: home, ProjectDir: proj})
			if len(c.Problems) != 1 || !strings.Contains(c.Problems[0].Error(), tt.want) {
				t.Fatalf("problems = %v, want one containing %q", c.Problems, tt.want)
			}
			if _, ok := c.Server("ok"); !ok {
				t.Error("the user source did not load beside the broken project file")
			}
		})
	}
	if c := Load(LoadOptions{Home: t.TempDir(), ProjectDir: t.TempDir()}); len(c.Servers)+len(c.Problems) != 0 {
		t.Errorf("no configuration: %+v", c)
	}
}

func TestPolicy(t *testing.T) {
	servers := []ServerConfig{
		{Name: "proj", Type: TypeStdio, Command: "x", Scope: ScopeProject},
		{Name: "user", Type: TypeStdio, Command: "y", Args: []string{"--a"}, Scope: ScopeUser},
		{Name: "web", Type: TypeHTTP, URL: "https://evil.example.com/mcp", Scope: ScopeUser},
	}
	reasons := func(p Policy) map[string]string {
		out := map[string]string{}
		for _, s := range p.Apply(servers) {
			if s.Disabled != "" {
				out[s.Name] = s.Disabled
			}
		}
		return out
	}
	untrusted := reasons(Policy{})
	if len(untrusted) != 1 || !strings.Contains(untrusted["proj"], "not trusted") {
		t.Errorf("untrusted = %v", untrusted)
	}
	for _, p := range []Policy{{Trusted: true}, {EnableAllProject: true}, {Enabled: []string{"proj"}}} {
		if r := reasons(p); len(r) != 0 {
			t.Errorf("%+v: %v", p, r)
		}
	}
	if r := reasons(Policy{Trusted: true, DisabledProject: []string{"proj"}}); !strings.Contains(r["proj"], "disabledMcpjsonServers") {
		t.Errorf("disabled: %v", r)
	}
	r := reasons(Policy{Trusted: true, Denied: []settings.MCPServerRule{{ServerURL: "https://*.example.com/*"}, {ServerCommand: []string{"y", "--a"}}}})
	if len(r) != 2 || r["web"] == "" || r["user"] == "" {
		t.Errorf("denied: %v", r)
	}
	r = reasons(Policy{Trusted: true, Allowed: []settings.MCPServerRule{{ServerName: "user"}}})
	if len(r) != 2 || r["user"] != "" {
		t.Errorf("allowed: %v", r)
	}
}

// TestPolicyFromSettings: a project's own settings cannot approve its servers.
func TestPolicyFromSettings(t *testing.T) {
	proj, home := t.TempDir(), t.TempDir()
	write(t, filepath.Join(proj, ".keel", "settings.json"), `{"enableAllProjectMcpServers": true, "enabledMcpjsonServers": ["proj"]}`)
	s, err := settings.Load(settings.Options{ProjectDir: proj, Env: settings.Env{Home: home}, ManagedPath: filepath.Join(t.TempDir(), "none")})
	if err != nil {
		t.Logf("settings: %v", err)
	}
	p := PolicyFrom(s, false)
	if p.EnableAllProject || len(p.Enabled) != 0 {
		t.Errorf("project settings approved project servers: %+v", p)
	}
}

// TestCompatCorpus loads every real-world .mcp.json of the shared corpus in place.
func TestCompatCorpus(t *testing.T) {
	root := findCompat(t)
	var files, servers int
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != ProjectFile {
			return err
		}
		files++
		c := Load(LoadOptions{ProjectDir: filepath.Dir(path), Env: map[string]string{}})
		for _, p := range c.Problems {
			if !p.Warning {
				t.Errorf("%s: %v", path, p)
			}
		}
		servers += len(c.Servers)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 4 || servers < 20 {
		t.Errorf("loaded %d servers from %d files, want at least 20 from 4", servers, files)
	}
}

func findCompat(t *testing.T) string {
	t.Helper()
	return compattest.Dir(t, "claude", "settings")
}

// TestSandboxStandInIsNoConfig: an empty directory where .mcp.json would be — the sandbox's
// stand-in for the absent file while a command runs — is no configuration and no problem;
// a directory with something in it is still a problem.
func TestSandboxStandInIsNoConfig(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	if err := os.Mkdir(filepath.Join(proj, ProjectFile), 0o555); err != nil {
		t.Fatal(err)
	}
	if c := Load(LoadOptions{Home: home, ProjectDir: proj}); len(c.Problems) != 0 {
		t.Errorf("an empty .mcp.json directory gave problems %v", c.Problems)
	}
	other := t.TempDir()
	write(t, filepath.Join(other, ProjectFile, "x"), "not a stand-in")
	if c := Load(LoadOptions{Home: home, ProjectDir: other}); len(c.Problems) != 1 {
		t.Errorf("a .mcp.json directory with a file in it gave problems %v, want one", c.Problems)
	}
}
