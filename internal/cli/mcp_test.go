package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// mcpServers reads the servers of an MCP configuration file.
func mcpServers(t *testing.T, file string) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		MCPServers map[string]map[string]any `json:"mcpServers"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v\n%s", file, err, data)
	}
	return cfg.MCPServers
}

// localMCPServers reads the servers a local MCP configuration file holds for any project:
// {"projects":{DIR:{"mcpServers":{…}}}}.
func localMCPServers(t *testing.T, file string) map[string]map[string]any {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var cfg struct {
		Projects map[string]struct {
			MCPServers map[string]map[string]any `json:"mcpServers"`
		} `json:"projects"`
	}
	if err := json.Unmarshal(data, &cfg); err != nil {
		t.Fatalf("%s: %v\n%s", file, err, data)
	}
	out := map[string]map[string]any{}
	for _, p := range cfg.Projects {
		for name, s := range p.MCPServers {
			out[name] = s
		}
	}
	return out
}

// keel mcp add, add-json and remove write and edit the project's .mcp.json: a stdio server
// with its arguments and environment, an HTTP server with its headers, a JSON entry.
func TestMCPAddRemoveProject(t *testing.T) {
	project := t.TempDir()
	t.Chdir(project)
	home := t.TempDir()
	steps := []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "add", "--scope", "project", "-e", "LEVEL=debug", "files", "--", "files-server", "--root", "."}, "added files (project) to "},
		{[]string{"mcp", "add", "--scope", "project", "--transport", "http", "-H", "Authorization: Bearer abc", "web", "http://127.0.0.1:9/mcp"}, "added web (project)"},
		{[]string{"mcp", "add-json", "--scope", "project", "raw", `{"type":"stdio","command":"raw-server"}`}, "added raw (project)"},
	}
	for _, s := range steps {
		if code, out := runKeel(t, home, s.args...); code != 0 || !strings.Contains(out, s.want) {
			t.Fatalf("keel %s exited %d:\n%s", strings.Join(s.args, " "), code, out)
		}
	}
	file := filepath.Join(project, ".mcp.json")
	servers := mcpServers(t, file)
	files, web, raw := servers["files"], servers["web"], servers["raw"]
	if files["command"] != "files-server" || !sameJSON(files["args"], []string{"--root", "."}) || !sameJSON(files["env"], map[string]string{"LEVEL": "debug"}) {
		t.Errorf("files = %v, want files-server --root . with LEVEL=debug", files)
	}
	if web["url"] != "http://127.0.0.1:9/mcp" || !sameJSON(web["headers"], map[string]string{"Authorization": "Bearer abc"}) {
		t.Errorf("web = %v, want its URL and Authorization header", web)
	}
	if raw["command"] != "raw-server" {
		t.Errorf("raw = %v, want raw-server", raw)
	}

	if code, out := runKeel(t, home, "mcp", "remove", "--scope", "project", "files"); code != 0 || !strings.Contains(out, "removed files (project)") {
		t.Fatalf("keel mcp remove exited %d:\n%s", code, out)
	}
	servers = mcpServers(t, file)
	if _, ok := servers["files"]; ok || len(servers) != 2 {
		t.Errorf("after removing files the project has %v", servers)
	}
	if code, out := runKeel(t, home, "mcp", "remove", "--scope", "project", "files"); code == 0 {
		t.Errorf("removing files twice succeeded:\n%s", out)
	}
}

// keel mcp add's default scope is local: a file of keel's own, named in its answer, not the
// project's .mcp.json; a client secret goes beside it, never into it.
func TestMCPAddLocal(t *testing.T) {
	project := t.TempDir()
	t.Chdir(project)
	home := t.TempDir()
	env := map[string]string{"KEEL_HOME": home, "HOME": t.TempDir(), "MCP_CLIENT_SECRET": "s3cret-value"}
	code, out := runKeelEnv(t, env, "mcp", "add", "--transport", "http", "--client-id", "keel-test", "--client-secret", "api", "http://127.0.0.1:9/mcp")
	_, file, ok := strings.Cut(strings.TrimSpace(out), " to ")
	if code != 0 || !strings.HasPrefix(out, "added api (local) to ") || !ok {
		t.Fatalf("keel mcp add exited %d:\n%s", code, out)
	}
	api := localMCPServers(t, file)["api"]
	if oauth, _ := api["oauth"].(map[string]any); oauth["clientId"] != "keel-test" {
		t.Errorf("api = %v, want the OAuth client id", api)
	}
	if data, _ := os.ReadFile(file); strings.Contains(string(data), "s3cret-value") {
		t.Errorf("the client secret is in the configuration file %s:\n%s", file, data)
	}
	if !fileHolds(t, home, "s3cret-value") {
		t.Errorf("the client secret was kept nowhere under the keel home")
	}
	if _, err := os.Stat(filepath.Join(project, ".mcp.json")); err == nil {
		t.Errorf("a local server went into the project's .mcp.json")
	}
	if code, out := runKeelEnv(t, env, "mcp", "remove", "api"); code != 0 || !strings.Contains(out, "removed api (local)") {
		t.Errorf("keel mcp remove exited %d:\n%s", code, out)
	}
	if _, ok := localMCPServers(t, file)["api"]; ok {
		t.Errorf("api is still in %s", file)
	}
}

// Mistakes in calling keel mcp add, add-json, remove and serve are usage errors that say
// what is wrong, and nothing is written.
func TestMCPUsageErrors(t *testing.T) {
	project := t.TempDir()
	t.Chdir(project)
	home := t.TempDir()
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"mcp", "add", "--scope", "global", "x", "cmd"}, `--scope "global" is not one of local, project, user`},
		{[]string{"mcp", "add", "--transport", "ftp", "x", "cmd"}, `--transport "ftp" is not one of stdio, http, sse`},
		{[]string{"mcp", "add", "-e", "NOEQUALS", "x", "cmd"}, `"NOEQUALS" is not of the form KEY=VALUE`},
		{[]string{"mcp", "add", "--callback-port", "8080", "x", "cmd"}, "need --client-id"},
		{[]string{"mcp", "add", "--client-id", "c", "--client-secret", "x", "cmd"}, "MCP_CLIENT_SECRET, which is not set"},
		{[]string{"mcp", "add-json", "--scope", "global", "x", "{}"}, `--scope "global"`},
		{[]string{"mcp", "remove", "--scope", "global", "x"}, `--scope "global"`},
		{[]string{"mcp", "serve", "--token-file", "t"}, "--token-file needs --http"},
	} {
		if code, out := runKeel(t, home, c.args...); code != 2 || !strings.Contains(out, c.want) {
			t.Errorf("keel %s exited %d:\n%s\nwant a usage error saying %q", strings.Join(c.args, " "), code, out, c.want)
		}
	}
	if entries, _ := os.ReadDir(project); len(entries) != 0 {
		t.Errorf("failed commands wrote %v into the project", entries)
	}
}

// fileHolds says a file under dir holds text.
func fileHolds(t *testing.T, dir, text string) bool {
	t.Helper()
	found := false
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		found = found || strings.Contains(string(data), text)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}

// sameJSON says v, decoded from JSON, is want.
func sameJSON(v, want any) bool {
	a, _ := json.Marshal(v)
	b, _ := json.Marshal(want)
	return string(a) == string(b)
}
