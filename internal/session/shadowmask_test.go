package session

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestShadowLeavesMaskedOut: the shadow captures of a session's prompt hold neither
// what a user-level Read deny rule covers in the project (Read(./.env), Read(**/*.pem)) nor
// what sandbox.filesystem.denyRead masks there: keel's copy under its home would otherwise
// let a sandboxed command read them.
func TestShadowLeavesMaskedOut(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("no git")
	}
	home, cwd := t.TempDir(), t.TempDir()
	user := `{"permissions":{"deny":["Read(./.env)","Read(*.pem)"]},"sandbox":{"enabled":true,"filesystem":{"denyRead":["./private"]}}}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(user), 0o600); err != nil {
		t.Fatal(err)
	}
	for name, body := range map[string]string{"main.txt": "kept", ".env": "ENV-SECRET", "deep/k.pem": "PEM-SECRET", "private/token": "TOKEN-SECRET"} {
		p := filepath.Join(cwd, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	sc := &scripted.Scenario{Rules: []scripted.Rule{{When: scripted.Match{UserText: "hello"}, Reply: []scripted.Block{scripted.Text("hi")}}}}
	h := newHarness(t, sc, Options{Home: home, Cwd: cwd})
	h.send(t, "hello") // the prompt's capture
	repos, _ := filepath.Glob(filepath.Join(home, "shadow", "*.git"))
	if len(repos) != 1 {
		t.Fatalf("shadow repositories: %v", repos)
	}
	out, err := gitexec.Runner{Trusted: true}.Output(t.Context(), home, "--git-dir="+repos[0], "log", "--all", "--format=", "--name-only")
	if err != nil {
		t.Fatalf("git log: %v", err)
	}
	captured := strings.Fields(string(out))
	if !strings.Contains(string(out), "main.txt") {
		t.Fatalf("the capture holds %q, not main.txt", captured)
	}
	for _, masked := range []string{".env", "deep/k.pem", "private/token"} {
		for _, c := range captured {
			if c == masked {
				t.Errorf("the shadow capture holds %s", masked)
			}
		}
	}
}
