package session

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// systemText is the system prompt of a recorded request, as one text.
func systemText(t *testing.T, body []byte) string {
	t.Helper()
	var req struct {
		System []struct {
			Text string `json:"text"`
		} `json:"system"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, s := range req.System {
		b.WriteString(s.Text + "\n")
	}
	return b.String()
}

// TestOutputStyle: the outputStyle setting changes the system prompt as Claude Code's does;
// switching styles mid-session changes the next request, is kept in the local settings, and
// is no cache break (it was asked for).
func TestOutputStyle(t *testing.T) {
	cwd := t.TempDir()
	for path, text := range map[string]string{
		".claude/settings.json":         `{"outputStyle": "explanatory"}`,
		".keel/output-styles/pirate.md": "---\ndescription: Talks like a pirate\n---\nAnswer like a pirate. Arr.\n",
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(cwd, path)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(cwd, path), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	h := newHarness(t, &scripted.Scenario{Rules: []scripted.Rule{{Reply: []scripted.Block{scripted.Text("ok")}}}}, Options{Cwd: cwd})
	if got := h.sess.switches.OutputStyle(); got != "Explanatory" {
		t.Errorf("style %q, want Explanatory from the settings", got)
	}
	h.send(t, "one")
	first := systemText(t, h.srv.Requests()[0].Body)
	if !strings.Contains(first, "# Output style: Explanatory") || strings.Contains(first, "Keep replies short") {
		t.Errorf("the Explanatory prompt is not in place:\n%s", first)
	}
	if !strings.Contains(first, "# Doing tasks") {
		t.Errorf("Explanatory dropped the coding instructions:\n%s", first)
	}

	if err := h.sess.switches.SetOutputStyle(t.Context(), "shakespeare"); err == nil || !strings.Contains(err.Error(), "default, Explanatory, Learning, pirate") {
		t.Errorf("an unknown style: %v", err)
	}
	if err := h.sess.switches.SetOutputStyle(t.Context(), "Pirate"); err != nil {
		t.Fatal(err)
	}
	res := result(t, h.send(t, "two"))
	second := systemText(t, h.srv.Requests()[1].Body)
	if !strings.Contains(second, "Arr.") || strings.Contains(second, "Explanatory") || strings.Contains(second, "# Doing tasks") {
		t.Errorf("the pirate style (without coding instructions) is not in place:\n%s", second)
	}
	if res.Cache.Breaks != 0 {
		t.Errorf("the switch asked for counted as %d cache breaks", res.Cache.Breaks)
	}
	b, err := os.ReadFile(filepath.Join(cwd, ".keel", "settings.local.json"))
	if err != nil || !strings.Contains(string(b), `"outputStyle": "pirate"`) {
		t.Errorf("the choice is not kept in the local settings (%v): %s", err, b)
	}
}
