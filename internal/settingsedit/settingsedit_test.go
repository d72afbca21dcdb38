package settingsedit

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/permission"
)

func readDoc(t *testing.T, path string) map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	return doc
}

func TestFile(t *testing.T) {
	for _, tc := range []struct{ dest, home, want string }{
		{permission.DestinationLocalSettings, "/k", "/p/.keel/settings.local.json"},
		{permission.DestinationProjectSettings, "/k", "/p/.keel/settings.json"},
		{permission.DestinationUserSettings, "/k", "/k/settings.json"},
		{permission.DestinationUserSettings, "", ""},
		{permission.DestinationSession, "/k", ""},
	} {
		if got := File(tc.dest, "/p", tc.home); got != tc.want {
			t.Errorf("File(%s, home %q) = %q, want %q", tc.dest, tc.home, got, tc.want)
		}
	}
}

// Updates land in their files: rules added once, removed, replaced; the mode; directories;
// keys the file had before stay.
func TestPersist(t *testing.T) {
	project, home := t.TempDir(), t.TempDir()
	local := filepath.Join(project, ".keel", "settings.local.json")
	if err := os.MkdirAll(filepath.Dir(local), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(local, []byte(`{"model":"opus","permissions":{"allow":["Read"]}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	add := permission.Update{Type: permission.UpdateAddRules, Behavior: "allow", Destination: permission.DestinationLocalSettings,
		Rules: []permission.RuleValue{{ToolName: "Bash", RuleContent: "go test:*"}, {ToolName: "Read"}}}
	err := Persist(project, home, []permission.Update{
		add, add,
		{Type: permission.UpdateSetMode, Mode: "acceptEdits", Destination: permission.DestinationLocalSettings},
		{Type: permission.UpdateAddDirectories, Directories: []string{"/data"}, Destination: permission.DestinationUserSettings},
		{Type: permission.UpdateAddRules, Behavior: "deny", Destination: permission.DestinationSession, Rules: []permission.RuleValue{{ToolName: "Edit"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "opus", "permissions": map[string]any{"allow": []any{"Read", "Bash(go test:*)"}, "defaultMode": "acceptEdits"}}
	if diff := cmp.Diff(want, readDoc(t, local)); diff != "" {
		t.Errorf("local settings (-want +got):\n%s", diff)
	}
	user := readDoc(t, filepath.Join(home, "settings.json"))
	if diff := cmp.Diff(map[string]any{"permissions": map[string]any{"additionalDirectories": []any{"/data"}}}, user); diff != "" {
		t.Errorf("user settings (-want +got):\n%s", diff)
	}
	remove := permission.Update{Type: permission.UpdateRemoveRules, Behavior: "allow", Destination: permission.DestinationLocalSettings,
		Rules: []permission.RuleValue{{ToolName: "Read"}}}
	if err := Persist(project, home, []permission.Update{remove}); err != nil {
		t.Fatal(err)
	}
	if got := readDoc(t, local)["permissions"].(map[string]any)["allow"]; !cmp.Equal(got, []any{"Bash(go test:*)"}) {
		t.Errorf("after removing Read: allow = %v", got)
	}
}

func TestMerge(t *testing.T) {
	path := filepath.Join(t.TempDir(), "settings.json")
	if err := os.WriteFile(path, []byte(`{"model":"opus","env":{"A":"1"}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := Merge(path, json.RawMessage(`{"env":{"B":"2"},"teams":true}`)); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"model": "opus", "env": map[string]any{"B": "2"}, "teams": true}
	if diff := cmp.Diff(want, readDoc(t, path)); diff != "" {
		t.Errorf("(-want +got):\n%s", diff)
	}
	if err := Merge(path, json.RawMessage(`[1]`)); err == nil {
		t.Error("a patch that is not an object was merged")
	}
}

func TestRead(t *testing.T) {
	c, err := Read(json.RawMessage(`{"permissions":{"allow":["Bash(ls:*)"],"deny":["Edit"],"defaultMode":"plan"},"model":"haiku"}`), "--settings", "/w")
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Rules) != 2 || c.Mode != "plan" || c.Model != "haiku" || c.Rules[0].Source.Path != "--settings" {
		t.Errorf("Read = %+v", c)
	}
	if _, err := Read(json.RawMessage(`{"permissions":{"allow":["Bash(unclosed"]}}`), "x", "/w"); err == nil {
		t.Error("a bad rule was read")
	}
}
