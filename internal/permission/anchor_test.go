package permission

import (
	"os"
	"path/filepath"
	"testing"
)

// TestPathRuleAnchors: Read and Edit rule paths mean what Claude Code documents, from every
// settings scope: //path absolute, ~/path under home, /path relative to the settings file
// (Source.Dir: home's keel directory's parent for the user file, the project for the
// project's), path and ./path relative to the working directory — so a user-level
// Read(./.env) denies the project's .env, not home's. The working directory is a
// subdirectory of the project here, so /path and ./path differ for project rules too.
func TestPathRuleAnchors(t *testing.T) {
	base := t.TempDir()
	home := filepath.Join(base, "home")
	proj := filepath.Join(base, "proj")
	cwd := filepath.Join(proj, "sub")
	for _, f := range []string{
		"home/.env", "home/secrets/token", "home/sub/x.pem",
		"proj/.env", "proj/secrets/token",
		"proj/sub/.env", "proj/sub/secrets/token", "proj/sub/deep/x.pem",
	} {
		p := filepath.Join(base, f)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	scopes := map[string]Source{
		"user":    {Name: "user", Path: filepath.Join(home, ".keel", "settings.json"), Dir: home},
		"project": {Name: "project", Path: filepath.Join(proj, ".keel", "settings.json"), Dir: proj},
		"local":   {Name: "local", Path: filepath.Join(proj, ".claude", "settings.local.json"), Dir: proj},
		"cli":     {Name: "cli", Path: "--settings"},
	}
	// settingsDir is where /path lands for each scope: the cli's has no file, so the working
	// directory.
	settingsDir := map[string]string{"user": home, "project": proj, "local": proj, "cli": cwd}
	type tc struct {
		spec    string
		denied  []string // relative to base or, when dir-relative, computed below
		allowed []string
	}
	for scope, src := range scopes {
		sd, _ := filepath.Rel(base, settingsDir[scope])
		cases := []tc{
			{"./.env", []string{"proj/sub/.env"}, []string{"home/.env", "proj/.env"}},
			{".env", []string{"proj/sub/.env"}, []string{"home/.env", "proj/.env"}},
			{"./secrets/**", []string{"proj/sub/secrets/token"}, []string{"home/secrets/token", "proj/secrets/token"}},
			{"secrets/**", []string{"proj/sub/secrets/token"}, []string{"home/secrets/token", "proj/secrets/token"}},
			{"*.pem", []string{"proj/sub/deep/x.pem"}, []string{"home/sub/x.pem"}},
			{"/secrets/**", []string{sd + "/secrets/token"}, nil},
			{"/.env", []string{sd + "/.env"}, nil},
			{"~/secrets/**", []string{"home/secrets/token"}, []string{"proj/secrets/token", "proj/sub/secrets/token"}},
			{"//" + base[1:] + "/proj/.env", []string{"proj/.env"}, []string{"proj/sub/.env", "home/.env"}},
		}
		if scope != "cli" {
			// /path is the settings file's, not the working directory's.
			cases[5].allowed = []string{"proj/sub/secrets/token"}
			cases[6].allowed = []string{"proj/sub/.env"}
		}
		for _, c := range cases {
			r, err := ParseRule("Read("+c.spec+")", Deny, src)
			if err != nil {
				t.Fatal(err)
			}
			chk := New(Config{Policy: Policy{Mode: ModeBypassPermissions, Rules: []Rule{r}, Dirs: []string{cwd}}, Home: home})
			for _, want := range []struct {
				files []string
				b     Behavior
			}{{c.denied, Deny}, {c.allowed, Allow}} {
				for _, f := range want.files {
					d := chk.Evaluate(Request{Tool: "Read", Paths: []string{filepath.Join(base, f)}})
					if d.Behavior != want.b {
						t.Errorf("%s Read(%s), reading %s: %s, want %s", scope, c.spec, f, d.Behavior, want.b)
					}
				}
			}
		}
	}
}
