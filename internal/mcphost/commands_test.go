package mcphost

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestAddGetListRemove(t *testing.T) {
	home, proj := t.TempDir(), t.TempDir()
	for _, scope := range []Scope{ScopeLocal, ScopeProject, ScopeUser} {
		name := "s-" + string(scope)
		if err := Add(scope, home, proj, ServerConfig{Name: name, Command: "srv", Args: []string{"--" + string(scope)}, Env: map[string]string{"TOKEN": "abcdef"}}); err != nil {
			t.Fatal(err)
		}
	}
	if err := AddJSON(ScopeUser, home, proj, "web", `{"type":"http","url":"http://127.0.0.1:1/mcp"}`); err != nil {
		t.Fatal(err)
	}
	if err := Add(ScopeUser, home, proj, ServerConfig{Name: "web", URL: "http://x"}); err == nil || !strings.Contains(err.Error(), "exists") {
		t.Errorf("duplicate add: %v", err)
	}
	if err := AddJSON(ScopeUser, home, proj, "bad", `{"type":"ws","url":"ws://x"}`); err == nil || !strings.Contains(err.Error(), "stdio, http, sse") {
		t.Errorf("bad type: %v", err)
	}
	if st, _ := os.Stat(filepath.Join(home, UserFile)); st.Mode().Perm() != 0o600 {
		t.Errorf("user file mode = %v", st.Mode())
	}
	c := Load(LoadOptions{Home: home, ProjectDir: proj})
	var names []string
	for _, s := range c.Servers {
		names = append(names, string(s.Scope)+":"+s.Name)
	}
	if got := strings.Join(names, " "); got != "local:s-local project:s-project user:s-user user:web" {
		t.Errorf("loaded %s; problems %v", got, c.Problems)
	}
	m := New(Options{Servers: Policy{}.Apply(c.Servers)})
	var out bytes.Buffer
	if err := List(&out, m.Status(), false); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "s-project  project  srv --project") || !strings.Contains(out.String(), "disabled: project server from .mcp.json: the workspace is not trusted") {
		t.Errorf("list:\n%s", out.String())
	}
	out.Reset()
	List(&out, m.Status(), true)
	var js []ServerStatus
	if err := json.Unmarshal(out.Bytes(), &js); err != nil || len(js) != 4 {
		t.Errorf("list --json: %v %s", err, out.String())
	}
	out.Reset()
	cfg, _ := c.Server("s-user")
	Get(&out, cfg, nil)
	if !strings.Contains(out.String(), "Env: TOKEN=ab******") || strings.Contains(out.String(), "abcdef") {
		t.Errorf("get leaks or misses the env:\n%s", out.String())
	}
	if err := Remove(ScopeLocal, home, proj, "s-local"); err != nil {
		t.Fatal(err)
	}
	if err := Remove(ScopeLocal, home, proj, "s-local"); err == nil {
		t.Error("removing twice should fail")
	}
	if _, ok := Load(LoadOptions{Home: home, ProjectDir: proj}).Server("s-local"); ok {
		t.Error("removed server still loads")
	}
}
