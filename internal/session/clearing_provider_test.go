package session

import (
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// "clearToolResults": "provider" sends the Anthropic API the clear_tool_uses edit with keel's
// trigger, keep and minimum; a provider that cannot clear gets keel's own clearing and the
// user a notice naming the setting.
func TestClearToolResultsProvider(t *testing.T) {
	settings := []string{`{"clearToolResults": "provider"}`}
	sc := &scripted.Scenario{Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("ok")}}}
	const edit = `"context_management":{"edits":[{"type":"clear_tool_uses_20250919","trigger":{"type":"input_tokens","value":10000},"keep":{"type":"tool_uses","value":2},"clear_at_least":{"type":"input_tokens","value":2000}}]}`
	for _, c := range []struct {
		provider string
		sent     bool
	}{{"anthropic", true}, {"openai", false}} {
		t.Run(c.provider, func(t *testing.T) {
			h := newProviderHarness(t, c.provider, sc, Options{SettingsArgs: settings})
			var notice bool
			for _, n := range h.sess.Notices() {
				notice = notice || strings.Contains(n.Text, `clearToolResults "provider"`) && strings.Contains(n.Text, "keel clears them")
			}
			if res := result(t, h.send(t, "hi")); res.Text != "ok" {
				t.Fatalf("result %q", res.Text)
			}
			reqs := h.srv.Requests()
			if got := strings.Contains(string(reqs[len(reqs)-1].Body), edit); got != c.sent {
				t.Errorf("request carries the edit: %v, want %v\n%s", got, c.sent, reqs[len(reqs)-1].Body)
			}
			if notice == c.sent {
				t.Errorf("notice that keel clears instead: %v, want %v", notice, !c.sent)
			}
		})
	}
}
