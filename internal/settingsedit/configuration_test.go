package settingsedit

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
)

// configFixture is a Configuration over a real checker, with the hooks' and switches' calls
// recorded.
type configFixture struct {
	c                     *Configuration
	checker               *permission.Checker
	project, home, cwd    string
	changes, modes, model []string
	refuse                error
}

func newConfigFixture(t *testing.T, home string) *configFixture {
	t.Helper()
	f := &configFixture{project: t.TempDir(), home: home}
	f.cwd = f.project
	st, err := settings.Load(settings.Options{Env: settings.Env{Home: home}, ProjectDir: f.project, ManagedPath: filepath.Join(t.TempDir(), "none")})
	if err != nil {
		t.Fatal(err)
	}
	f.checker = permission.New(permission.Config{Policy: permission.Policy{Mode: permission.ModeDefault, Dirs: []string{f.project, "/extra"}}, Home: t.TempDir()})
	f.c = New(Options{Settings: st, Rules: f.checker, ProjectDir: f.project, Home: home, Cwd: f.cwd,
		ConfigChange: func(_ context.Context, source, label string) error {
			f.changes = append(f.changes, source+" "+label)
			return f.refuse
		},
		SetMode:  func(m string) error { f.modes = append(f.modes, m); return nil },
		SetModel: func(m string) { f.model = append(f.model, m) },
	})
	return f
}

// ruleTexts lists the rules the configuration reports, as behavior:rule.
func (f *configFixture) ruleTexts() []string {
	var out []string
	for _, r := range f.c.PermissionRules() {
		out = append(out, r.Behavior.String()+":"+r.String())
	}
	return out
}

// Changed permissions are seen by PermissionRules at once; those meant for a settings file
// are written there, a session's only kept in memory.
func TestChangePermissions(t *testing.T) {
	f := newConfigFixture(t, t.TempDir())
	err := f.c.ChangePermissions([]permission.Update{
		{Type: permission.UpdateAddRules, Behavior: "allow", Destination: permission.DestinationLocalSettings,
			Rules: []permission.RuleValue{{ToolName: "Bash", RuleContent: "go test:*"}}},
		{Type: permission.UpdateAddRules, Behavior: "deny", Destination: permission.DestinationSession,
			Rules: []permission.RuleValue{{ToolName: "WebFetch"}}},
	})
	if err != nil {
		t.Fatal(err)
	}
	rules := f.ruleTexts()
	if !slices.Contains(rules, "allow:Bash(go test:*)") || !slices.Contains(rules, "deny:WebFetch") {
		t.Errorf("rules %v; want the allowed Bash and the denied WebFetch", rules)
	}
	doc := readDoc(t, filepath.Join(f.project, ".keel", "settings.local.json"))
	b, _ := json.Marshal(doc)
	if !strings.Contains(string(b), "go test:*") || strings.Contains(string(b), "WebFetch") {
		t.Errorf("local settings %s; want the Bash rule only", b)
	}
	if _, err := os.Stat(filepath.Join(f.home, "settings.json")); err == nil {
		t.Error("the user settings were written")
	}
	if err := f.c.ChangePermissions([]permission.Update{{Type: "nonsense", Destination: permission.DestinationLocalSettings}}); err == nil {
		t.Error("an invalid update was accepted")
	}
}

// UpdateSettings writes the keys into the destination's file, keeping its others, then
// layers the rules, mode and model over the session, once the ConfigChange hooks heard of
// it as that file's source.
func TestUpdateSettings(t *testing.T) {
	f := newConfigFixture(t, t.TempDir())
	user := filepath.Join(f.home, "settings.json")
	if err := os.WriteFile(user, []byte(`{"theme":"dark"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	raw := json.RawMessage(`{"permissions":{"allow":["Read(./docs/**)"],"defaultMode":"acceptEdits"},"model":"opus"}`)
	if err := f.c.UpdateSettings(t.Context(), permission.DestinationUserSettings, raw); err != nil {
		t.Fatal(err)
	}
	doc := readDoc(t, user)
	if doc["theme"] != "dark" || doc["model"] != "opus" || doc["permissions"] == nil {
		t.Errorf("user settings %v; want theme kept, model and permissions written", doc)
	}
	if !slices.Equal(f.changes, []string{"user_settings " + user}) {
		t.Errorf("ConfigChange heard %v; want the user settings file", f.changes)
	}
	var found bool
	for _, r := range f.c.PermissionRules() {
		found = found || (r.Behavior == permission.Allow && r.Tool == "Read" && r.Source.Path == user && r.Source.Dir == f.cwd)
	}
	if !found {
		t.Errorf("rules %v; want Read allowed from %s, anchored at the session's directory", f.ruleTexts(), user)
	}
	if !slices.Equal(f.modes, []string{"acceptEdits"}) || !slices.Equal(f.model, []string{"opus"}) {
		t.Errorf("modes %v, models %v; want acceptEdits and opus", f.modes, f.model)
	}

	if err := f.c.UpdateSettings(t.Context(), permission.DestinationLocalSettings, json.RawMessage(`{"permissions":{"deny":["Bash"]}}`)); err != nil {
		t.Fatal(err)
	}
	local := filepath.Join(f.project, ".keel", "settings.local.json")
	if readDoc(t, local)["permissions"] == nil || f.changes[1] != "local_settings "+local || !slices.Contains(f.ruleTexts(), "deny:Bash") {
		t.Errorf("local update: changes %v, rules %v; want local_settings and Bash denied", f.changes, f.ruleTexts())
	}

	noHome := newConfigFixture(t, "")
	if err := noHome.c.UpdateSettings(t.Context(), permission.DestinationUserSettings, raw); err == nil || len(noHome.changes) != 0 {
		t.Errorf("user settings without keel's directory: %v, changes %v; want an error and no change", err, noHome.changes)
	}
}

// Settings applied over the command line's are labelled as such for the hooks; a hook's
// refusal leaves the rules, mode and model as they were.
func TestApplyFlagSettings(t *testing.T) {
	f := newConfigFixture(t, t.TempDir())
	if err := f.c.ApplyFlagSettings(t.Context(), json.RawMessage(`{"permissions":{"ask":["Edit"]}}`)); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(f.changes, []string{"policy_settings --settings (apply_flag_settings)"}) || !slices.Contains(f.ruleTexts(), "ask:Edit") {
		t.Errorf("changes %v, rules %v; want policy_settings and Edit asked", f.changes, f.ruleTexts())
	}
	f.refuse = errors.New("no")
	before := f.ruleTexts()
	err := f.c.ApplyFlagSettings(t.Context(), json.RawMessage(`{"permissions":{"allow":["Bash"],"defaultMode":"plan"},"model":"haiku"}`))
	if err == nil || !slices.Equal(f.ruleTexts(), before) || len(f.modes) != 0 || len(f.model) != 0 {
		t.Errorf("refused change: %v, rules %v, modes %v, models %v; want nothing applied", err, f.ruleTexts(), f.modes, f.model)
	}
	f.refuse = nil
	if err := f.c.ApplyFlagSettings(t.Context(), json.RawMessage(`{"permissions":{"allow":["Bash(("]}}`)); err == nil {
		t.Error("an invalid rule was applied")
	}
}

// The effective settings list the files that were read, and the working directories are
// the checker's.
func TestEffectiveSettingsAndDirs(t *testing.T) {
	home := t.TempDir()
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(`{"model":"sonnet"}`), 0o600); err != nil {
		t.Fatal(err)
	}
	f := newConfigFixture(t, home)
	eff, files := f.c.EffectiveSettings()
	var doc map[string]any
	if err := json.Unmarshal(eff, &doc); err != nil || doc["model"] != "sonnet" {
		t.Errorf("effective settings %s (%v); want the user's model", eff, err)
	}
	if len(files) != 1 || files[0].Path != filepath.Join(home, "settings.json") || files[0].Scope != "user" {
		t.Errorf("files %+v; want the user settings only (the others are missing)", files)
	}
	if f.c.Settings().Model.V != "sonnet" {
		t.Errorf("settings model %q", f.c.Settings().Model.V)
	}
	if dirs := f.c.WorkingDirs(); !slices.Equal(dirs, []string{f.project, "/extra"}) {
		t.Errorf("working dirs %v", dirs)
	}
}
