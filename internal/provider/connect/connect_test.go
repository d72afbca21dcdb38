package connect

import "testing"

func TestResolveModel(t *testing.T) {
	for in, want := range map[string]string{
		"sonnet": "claude-sonnet-4-5", "opus": "claude-opus-4-5", "haiku": "claude-haiku-4-5",
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
