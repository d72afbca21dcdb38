package memory

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/goldentest"
)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, name, got)
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
