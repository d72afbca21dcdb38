package settings

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestToolSettings(t *testing.T) {
	l := newLayout(t)
	f := l.files()
	l.write(t, f["project"], `{
  "webSearch": {"backend": "searxng", "url": "http://127.0.0.1:8888", "maxResults": 5},
  "lspServers": {
    "gopls": {"command": "gopls", "args": ["serve"], "extensionToLanguage": {".go": "go"}, "startupTimeout": 20000, "restartOnCrash": false, "maxRestarts": 2}
  }
}`)
	l.write(t, f["user"], `{"webSearch": {"backend": "brave", "apiKey": "${BRAVE_API_KEY}"},
  "lspServers": {"gopls": {"command": "other", "extensionToLanguage": {".go": "go"}}, "pyright": {"command": "pyright-langserver", "args": ["--stdio"], "extensionToLanguage": {".py": "python"}}}}`)
	s, err := Load(l.options())
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Problems) > 0 {
		t.Fatalf("problems: %v", s.Problems)
	}
	ws := s.WebSearch
	if ws.Backend.V != "searxng" || ws.URL.V != "http://127.0.0.1:8888" || ws.MaxResults.V != 5 || ws.APIKey.V != "${BRAVE_API_KEY}" {
		t.Errorf("webSearch = %+v", ws)
	}
	if ws.Backend.From.Scope != ScopeProject || ws.APIKey.From.Scope != ScopeUser {
		t.Errorf("webSearch origins = %v / %v", ws.Backend.From, ws.APIKey.From)
	}
	gopls := s.LSPServers["gopls"]
	no := false
	two := 2
	want := LSPServer{Command: "gopls", Args: []string{"serve"}, ExtensionToLanguage: map[string]string{".go": "go"},
		StartupTimeout: 20000, RestartOnCrash: &no, MaxRestarts: &two}
	if diff := cmp.Diff(want, gopls.V); diff != "" {
		t.Errorf("gopls mismatch (-want +got):\n%s", diff)
	}
	if gopls.From.Scope != ScopeProject || gopls.From.Line != 4 {
		t.Errorf("gopls from %v, want the project file, line 4", gopls.From)
	}
	if s.LSPServers["pyright"].V.Command != "pyright-langserver" {
		t.Errorf("pyright not merged from the user file: %+v", s.LSPServers)
	}
	var out strings.Builder
	if err := s.RenderText(&out); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), `"${BRAVE_API_KEY}"`) {
		t.Errorf("keel config hides a ${VAR} reference:\n%s", out.String())
	}
}

func TestToolSettingsProblems(t *testing.T) {
	tests := []struct {
		name    string
		content string
		want    []string
	}{
		{"backend", `{"webSearch": {"backend": "google"}}`,
			[]string{`settings.json:1:27: webSearch.backend "google" is not one of auto, anthropic, searxng, brave, tavily, off`}},
		{"url", `{"webSearch": {"url": "ftp://x"}}`, []string{`settings.json:1:23: webSearch.url "ftp://x" is not an http:// or https:// URL`}},
		{"no command", `{"lspServers": {"go": {"extensionToLanguage": {".go": "go"}}}}`, []string{`settings.json:1:23: lspServers.go has no command`}},
		{"no extensions", `{"lspServers": {"go": {"command": "gopls"}}}`,
			[]string{`settings.json:1:23: lspServers.go has no extensionToLanguage (e.g. {".go": "go"}): keel would not know its files`}},
		{"bad extension", `{"lspServers": {"go": {"command": "gopls", "extensionToLanguage": {"go": "go"}}}}`,
			[]string{`settings.json:1:67: lspServers.go.extensionToLanguage: extension "go" must start with a dot, like ".go"`}},
		{"socket", `{"lspServers": {"go": {"command": "gopls", "extensionToLanguage": {".go": "go"}, "transport": "socket"}}}`,
			[]string{`settings.json:1:95: lspServers.go.transport "socket" is not one of stdio`}},
		{"unknown key", `{"lspServers": {"go": {"command": "gopls", "extensionToLanguage": {".go": "go"}, "colour": 1}}}`,
			[]string{`settings.json:1:82: unknown key lspServers.go.colour (ignored; the keys are command, args, extensionToLanguage, env, initializationOptions, settings, workspaceFolder, startupTimeout, shutdownTimeout, restartOnCrash, maxRestarts, transport)`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := newLayout(t)
			f := l.files()
			l.write(t, f["project"], tt.content)
			s, _ := Load(l.options())
			var got []string
			for _, p := range s.Problems {
				got = append(got, strings.ReplaceAll(p.Error(), filepath.Dir(f["project"])+string(filepath.Separator), ""))
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
