package connect

import (
	"path/filepath"
	"testing"

	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

func TestResolveModel(t *testing.T) {
	for in, want := range map[string]string{
		"sonnet": "claude-sonnet-5-5", "opus": "claude-opus-5-5", "haiku": "claude-haiku-5-5", "fable": "claude-fable-5-2",
		"default": "claude-opus-5-5", "best": "claude-fable-5-2",
		"claude-sonnet-4-5-20250929": "claude-sonnet-4-5-20250929", "qwen2.5-coder": "qwen2.5-coder", "": "",
	} {
		if got := ResolveModel(in); got != want {
			t.Errorf("ResolveModel(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestOpenNamesTheVariablesToSet(t *testing.T) {
	_, _, err := Open(Config{}, func(string) string { return "" })
	if err == nil || err.Error() != "no Anthropic API key: set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a bearer-token gateway)" {
		t.Errorf("err = %v", err)
	}
	if _, _, err := Open(Config{Provider: "gemini"}, func(string) string { return "" }); err == nil {
		t.Error("an unknown provider was accepted")
	}
}

// TestOpenResolvesAliases: the default, an alias from the flag or from ANTHROPIC_MODEL, and a
// family pinned by ANTHROPIC_DEFAULT_HAIKU_MODEL all come out as model ids.
func TestOpenResolvesAliases(t *testing.T) {
	env := map[string]string{}
	getenv := func(k string) string { return env[k] }
	tests := []struct {
		flag, envModel, pinned, want string
	}{
		{"", "", "", "claude-opus-5-5"},
		{"sonnet", "", "", "claude-sonnet-5-5"},
		{"", "fable", "", "claude-fable-5-2"},
		{"haiku", "", "claude-haiku-4-5", "claude-haiku-4-5"},
		{"claude-sonnet-4-5", "opus", "", "claude-sonnet-4-5"},
	}
	for _, tt := range tests {
		env["ANTHROPIC_MODEL"], env[EnvDefaultHaiku] = tt.envModel, tt.pinned
		_, model, err := Open(Config{APIKey: "k", Model: tt.flag}, getenv)
		if err != nil || model != tt.want {
			t.Errorf("flag %q, ANTHROPIC_MODEL %q, pinned %q: model %q (%v), want %q", tt.flag, tt.envModel, tt.pinned, model, err, tt.want)
		}
	}
}

// TestLoadModelsFromTheAPI: the list GET /v1/models answers (here the scripted server's)
// is cached under home and makes a new release what its alias means; a second load within
// the day does not ask again.
func TestLoadModelsFromTheAPI(t *testing.T) {
	sc := &scripted.Scenario{Models: []models.Model{
		{ID: "claude-opus-5-7", Created: models.Builtin()[0].Created.AddDate(0, 1, 0), ContextWindow: 2_000_000},
		{ID: "claude-sonnet-5-5", Created: models.Builtin()[0].Created},
	}}
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	home := t.TempDir()
	cfg := Config{APIKey: "k", BaseURL: srv.URL()}
	none := func(string) string { return "" }
	cat, err := LoadModels(t.Context(), cfg, none, home, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := cat.Resolve("opus"); got != "claude-opus-5-7" || cat.ContextWindow("claude-opus-5-7") != 2_000_000 {
		t.Errorf("opus = %q (window %d), want the new release the API listed", got, cat.ContextWindow("claude-opus-5-7"))
	}
	cfg.Models = cat
	if _, model, _ := Open(cfg, none); model != "claude-opus-5-7" {
		t.Errorf("the default model is %q, want the newest opus from the list", model)
	}
	srv.Close() // a second load within the day uses the cache: the API is not asked
	again, err := LoadModels(t.Context(), Config{APIKey: "k", BaseURL: srv.URL()}, none, home, false)
	if err != nil || again.Resolve("opus") != "claude-opus-5-7" {
		t.Errorf("second load: %v, opus = %q", err, again.Resolve("opus"))
	}
	matches, _ := filepath.Glob(filepath.Join(home, "cache", "models-*.json"))
	if len(matches) != 1 {
		t.Errorf("cache files: %v", matches)
	}
	if _, err := LoadModels(t.Context(), Config{APIKey: "k", BaseURL: srv.URL()}, none, home, true); err == nil {
		t.Error("a forced refresh from a closed server reported no error")
	}
}
