package memory

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

var update = flag.Bool("update", false, "rewrite golden files")

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read golden (run with -update): %v", err)
	}
	if diff := cmp.Diff(string(want), string(got)); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", name, diff)
	}
}

func TestReport(t *testing.T) {
	fx := newFixture(t, map[string]string{
		"repo/.git/":                 "",
		"home/.keel/KEEL.md":         "user prefs",
		"repo/KEEL.md":               "root\n@docs/guide.md\n@img.gif\n",
		"repo/docs/guide.md":         "guide @more.md",
		"repo/docs/more.md":          strings.Repeat("m", 2000),
		"repo/img.gif":               "GIF89a",
		"repo/.keel/rules/go.md":     "---\npaths: ['**/*.go']\n---\ngo rule",
		"repo/sub/pkg/KEEL.local.md": "mine",
	})
	r := NewReport(fx.load(t))
	tmp := filepath.Dir(fx.repo)

	var text, js bytes.Buffer
	if err := r.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	if err := r.WriteJSON(&js); err != nil {
		t.Fatal(err)
	}
	golden(t, "report.txt", text.Bytes())
	golden(t, "report.json", bytes.ReplaceAll(js.Bytes(), []byte(filepath.ToSlash(tmp)), []byte("$TMP")))
}
