package session

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/settings"
)

// TestSandboxReadDenyAnchors: the sandbox masks what a Read deny rule covers as the
// permission rules read it, from each settings scope: ./path and path at the working
// directory (a user-level Read(./.env) masks the project's .env, not home's), /path at the
// settings file's directory (the project for the project's files, the keel directory's parent
// for the user's), //path absolute.
func TestSandboxReadDenyAnchors(t *testing.T) {
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	home := filepath.Join(base, "home")
	proj := filepath.Join(base, "proj")
	cwd := filepath.Join(proj, "sub")
	for _, f := range []string{
		"home/.env", "home/secrets/token", "home/abs.txt",
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
	user := settings.Origin{Scope: settings.ScopeUser, Path: filepath.Join(home, ".keel", "settings.json")}
	project := settings.Origin{Scope: settings.ScopeProject, Path: filepath.Join(proj, ".claude", "settings.json")}
	for _, tc := range []struct {
		from         settings.Origin
		spec         string
		masked, open []string
	}{
		{user, "./.env", []string{"proj/sub/.env"}, []string{"home/.env", "proj/.env"}},
		{user, ".env", []string{"proj/sub/.env"}, []string{"home/.env", "proj/.env"}},
		{user, "./secrets/**", []string{"proj/sub/secrets"}, []string{"home/secrets", "proj/secrets"}},
		{user, "secrets/token", []string{"proj/sub/secrets/token"}, []string{"home/secrets/token"}},
		{user, "*.pem", []string{"proj/sub/deep/x.pem"}, nil},
		{user, "/secrets/**", []string{"home/secrets"}, []string{"proj/sub/secrets", "proj/secrets"}},
		{user, "//" + base[1:] + "/home/abs.txt", []string{"home/abs.txt"}, nil},
		{project, "./.env", []string{"proj/sub/.env"}, []string{"proj/.env"}},
		{project, "secrets/**", []string{"proj/sub/secrets"}, []string{"proj/secrets"}},
		{project, "/secrets/**", []string{"proj/secrets"}, []string{"proj/sub/secrets"}},
		{project, "/.env", []string{"proj/.env"}, []string{"proj/sub/.env"}},
	} {
		st := &settings.Settings{}
		st.Permissions.Deny = []settings.Value[string]{{V: "Read(" + tc.spec + ")", From: tc.from}}
		sb, err := NewSandbox(runconfig.Config{Cwd: cwd, Home: filepath.Join(home, ".keel")}, st)
		if err != nil {
			t.Fatal(err)
		}
		masked := sb.Policy().Complete().Masked
		for _, f := range tc.masked {
			if !slices.Contains(masked, filepath.Join(base, f)) {
				t.Errorf("%s Read(%s): %s not masked (masked %v)", tc.from.Scope, tc.spec, f, masked)
			}
		}
		for _, f := range tc.open {
			if slices.Contains(masked, filepath.Join(base, f)) {
				t.Errorf("%s Read(%s): %s masked", tc.from.Scope, tc.spec, f)
			}
		}
	}
}
