package main

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestWebFetchUsesKeelWeb runs `keel -p` with a WebFetch of a local page: keel converts the
// page in the keel-web beside it, and the small model reads the Markdown. Without keel-web
// the call fails, saying where keel looked and how to install it.
func TestWebFetchUsesKeelWeb(t *testing.T) {
	page := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=iso-8859-1")
		fmt.Fprint(w, "<html><body><h1>Release notes</h1><p>Caf\xe9 <b>2.0</b> drops <a href=\"/py2\">Python 2</a>.</p><script>track()</script></body></html>")
	}))
	t.Cleanup(page.Close)
	exe := buildtest.Keel(t, buildtest.Options{Web: true})
	// The same keel with nothing beside it.
	alone := filepath.Join(t.TempDir(), "keel")
	b, err := os.ReadFile(exe)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(alone, b, 0o755); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, exe string
		want      []string // in the tool result or, converted, in the small model's request
	}{
		{"beside keel", exe, []string{`# Release notes`, `Café **2.0** drops [Python 2](` + page.URL + `/py2).`}},
		{"missing", alone, []string{"keel-web not found in " + filepath.Dir(alone), "make build"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{Rules: []scripted.Rule{
				{Name: "reader", When: scripted.Match{Model: "haiku"}, Reply: []scripted.Block{scripted.Text("It drops Python 2.")}},
				{Name: "fetch", When: scripted.Match{UserText: "read the notes"}, Times: 1,
					Reply: []scripted.Block{scripted.ToolUse("WebFetch", map[string]string{"url": page.URL + "/notes", "prompt": "What changes?"})}},
				{Name: "done", When: scripted.Match{ToolResult: "WebFetch"}, Reply: []scripted.Block{scripted.Text("done")}},
			}}, scripted.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { srv.Close() })
			cmd := exec.CommandContext(t.Context(), tt.exe, "-p", "read the notes", "--allowedTools", "WebFetch(domain:127.0.0.1)")
			cmd.Dir = t.TempDir()
			// No keel-web on PATH: only the one beside keel, if any, is found.
			cmd.Env = append(os.Environ(), "PATH="+t.TempDir(), "KEEL_HOME="+t.TempDir(), "HOME="+t.TempDir(),
				"ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=test")
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("keel -p: %v\nstdout: %s\nstderr: %s", err, stdout.String(), stderr.String())
			}
			var seen strings.Builder
			for _, r := range srv.Requests() {
				seen.Write(r.Body)
			}
			for _, w := range tt.want {
				// Request bodies are JSON: quotes and the non-ASCII as the encoder writes them.
				if !strings.Contains(seen.String(), w) && !strings.Contains(seen.String(), strings.ReplaceAll(w, `"`, `\"`)) {
					t.Errorf("no request to the model holds %q; requests:\n%s", w, seen.String())
				}
			}
			reader := strings.Contains(seen.String(), `"model":"`+connect.ResolveModel("haiku")+`"`)
			if reader != (tt.name == "beside keel") {
				t.Errorf("the small model was asked: %v, want %v", reader, !reader)
			}
		})
	}
}
