package cli_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// keel models without a key prints keel's built-in list, with aliases and prices, as a
// table and as JSON.
func TestModelsBuiltin(t *testing.T) {
	t.Chdir(t.TempDir())
	home := t.TempDir()
	code, out := runKeel(t, home, "models")
	if code != 0 || !strings.Contains(out, "keel's built-in list") || !strings.Contains(out, "MODEL") || !strings.Contains(out, "CACHE READ") {
		t.Fatalf("keel models exited %d:\n%s\nwant the built-in table", code, out)
	}
	if !modelRow(out, "claude-opus-5-5", "opus") {
		t.Errorf("keel models has no row for claude-opus-5-5 with its alias opus:\n%s", out)
	}

	code, out = runKeel(t, home, "models", "--json")
	var list []struct {
		ID      string   `json:"id"`
		Aliases []string `json:"aliases"`
		Price   *struct {
			Input float64 `json:"input"`
		} `json:"price"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &list) != nil || len(list) == 0 {
		t.Fatalf("keel models --json exited %d:\n%s\nwant a JSON array of models", code, out)
	}
	found := false
	for _, m := range list {
		if m.ID == "claude-opus-5-5" {
			found = true
			if !contains(m.Aliases, "opus") || m.Price == nil || m.Price.Input <= 0 {
				t.Errorf("claude-opus-5-5 in JSON = %+v, want the alias opus and a price", m)
			}
		}
	}
	if !found {
		t.Errorf("keel models --json lacks claude-opus-5-5:\n%s", out)
	}
}

// keel models with a key asks the API (here a loopback server) for the key's models, shows
// one keel has no price for as such, and once the API cannot be reached shows the list it
// cached.
func TestModelsFromAPI(t *testing.T) {
	t.Chdir(t.TempDir())
	var asked atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/models" || r.Header.Get("x-api-key") != "test-key" {
			http.Error(w, "unexpected request", http.StatusBadRequest)
			return
		}
		asked.Add(1)
		_, _ = w.Write([]byte(`{"data":[{"id":"claude-unpriced-9","display_name":"Unpriced 9","created_at":"2026-01-02T00:00:00Z"},` +
			`{"id":"claude-opus-5-5","display_name":"Claude Opus 5.5"}],"has_more":false}`))
	}))
	env := map[string]string{"KEEL_HOME": t.TempDir(), "HOME": t.TempDir(), "ANTHROPIC_API_KEY": "test-key"}

	code, out := runKeelEnv(t, env, "models", "--base-url", srv.URL)
	if code != 0 || !strings.Contains(out, "models the API lists for this key") || asked.Load() != 1 {
		t.Fatalf("keel models against the API exited %d after %d requests:\n%s", code, asked.Load(), out)
	}
	if !modelRow(out, "claude-unpriced-9", "price unknown") || !modelRow(out, "claude-opus-5-5", "opus") {
		t.Errorf("keel models lacks the API's models:\n%s", out)
	}
	if strings.Contains(out, "claude-haiku-5-5") {
		t.Errorf("keel models shows a model the API did not list:\n%s", out)
	}

	srv.Close()
	code, out = runKeelEnv(t, env, "models", "--base-url", srv.URL)
	if code != 0 || !strings.Contains(out, "it could not be asked again") || !modelRow(out, "claude-unpriced-9", "price unknown") {
		t.Errorf("keel models with the API gone exited %d:\n%s\nwant the cached list, saying the API could not be asked", code, out)
	}
}

// modelRow says a line of out starts with the model id and holds want.
func modelRow(out, id, want string) bool {
	for line := range strings.SplitSeq(out, "\n") {
		if strings.HasPrefix(line, id+" ") && strings.Contains(line, want) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
