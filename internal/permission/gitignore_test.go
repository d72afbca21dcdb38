package permission

import (
	"slices"
	"testing"
)

// TestGitignoreUnder: a Read deny rule becomes gitignore lines anchored at a directory —
// relative forms at the working directory, /path at the settings file's, ~ and // where they
// lead — covering at least what the rule covers there, nothing when it reaches nothing there.
func TestGitignoreUnder(t *testing.T) {
	const home, proj = "/h", "/h/proj"
	user := Source{Name: "user", Dir: home}
	for _, tc := range []struct {
		spec string
		src  Source
		dir  string
		want []string // the first line; nil: no lines
	}{
		{"./.env", user, proj, []string{"/.env"}},
		{".env", user, proj, []string{"/**/.env"}},
		{"secrets/**", user, proj, []string{"/secrets/**"}},
		{"./sub/x[1].pem", user, proj, []string{"/sub/x[1].pem"}},
		{"/proj/keys/*", user, proj, []string{"/keys/*"}},
		{"/other/keys/*", user, proj, nil},
		{"~/proj/a/{b,c}.txt", user, proj, []string{"/a/*.txt"}},
		{"~/*/secret", user, proj, []string{"/secret"}},
		{"//h/**/id_rsa", user, proj, []string{"/**/id_rsa"}},
		{"//h/proj", user, proj, []string{"/*"}},
		{"//etc/shadow", user, proj, nil},
		{"./.env", user, "/h/proj/sub", nil},
		{"./sub/.env", user, "/h/proj/sub", []string{"/.env"}},
		{"/lib", Source{Name: "project", Dir: proj}, proj, []string{"/lib"}},
	} {
		r, err := ParseRule("Read("+tc.spec+")", Deny, tc.src)
		if err != nil {
			t.Fatal(err)
		}
		got := r.GitignoreUnder(tc.dir, proj, home)
		switch {
		case tc.want == nil && got != nil:
			t.Errorf("Read(%s) under %s: %q, want none", tc.spec, tc.dir, got)
		case tc.want != nil && (len(got) == 0 || got[0] != tc.want[0]):
			t.Errorf("Read(%s) under %s: %q, want %q first", tc.spec, tc.dir, got, tc.want[0])
		case tc.want != nil && got[0] != "/*" && !slices.Contains(got, tc.want[0]+"/**"):
			t.Errorf("Read(%s) under %s: %q, want the directory form too", tc.spec, tc.dir, got)
		}
	}
	if got := GitignoreLiteral("a*b/[c]?/d\\ "); got != `a\*b/\[c\]\?/d\\\ ` {
		t.Errorf("GitignoreLiteral: %q", got)
	}
}
