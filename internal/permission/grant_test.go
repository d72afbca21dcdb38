package permission

import (
	"path/filepath"
	"testing"
)

// TestDirectoryRules: an agent granted its memory directory reads and writes there without
// asking in default mode — also when the directory lies in keel's protected home — while
// writes beside it, Bash and deny rules are judged as before.
func TestDirectoryRules(t *testing.T) {
	home := t.TempDir()
	project := t.TempDir()
	mem := filepath.Join(home, ".keel", "projects", "-work-proj", "memory")
	rules, err := DirectoryRules(mem, Source{Name: "auto memory"})
	if err != nil {
		t.Fatal(err)
	}
	deny := mustRules(t, Deny, "Edit(//"+filepath.ToSlash(mem)[1:]+"/secret.md)")
	c := New(Config{Policy: Policy{Mode: ModeDefault, Dirs: []string{project}, Rules: deny,
		Protected: []string{filepath.Join(home, ".keel")}}, Home: home})
	c.Grant(rules...)
	for _, tc := range []struct {
		req  Request
		want Behavior
	}{
		{Request{Tool: "Write", Paths: []string{filepath.Join(mem, "MEMORY.md")}}, Allow},
		{Request{Tool: "Edit", Paths: []string{filepath.Join(mem, "topics", "build.md")}}, Allow},
		{Request{Tool: "Read", Paths: []string{filepath.Join(mem, "MEMORY.md")}}, Allow},
		{Request{Tool: "Edit", Paths: []string{filepath.Join(mem, "secret.md")}}, Deny},
		{Request{Tool: "Write", Paths: []string{filepath.Join(mem, "..", "settings.json")}}, Ask},
		{Request{Tool: "Write", Paths: []string{filepath.Join(project, "main.go")}}, Ask},
		{Request{Tool: "Bash", Command: "echo x > " + filepath.Join(mem, "MEMORY.md")}, Ask},
	} {
		if got := c.Evaluate(tc.req).Behavior; got != tc.want {
			t.Errorf("%s %v %s: %v, want %v (%s)", tc.req.Tool, tc.req.Paths, tc.req.Command, got, tc.want, c.Evaluate(tc.req).Reason)
		}
	}
	for _, bad := range []string{"relative/memory", "/home/[x]/memory"} {
		if _, err := DirectoryRules(bad, Source{}); err == nil {
			t.Errorf("DirectoryRules(%q) granted", bad)
		}
	}
}
