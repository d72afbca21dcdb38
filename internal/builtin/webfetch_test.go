package builtin

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/webfetch"
	"github.com/keel-dev/keel/internal/webfetch/htmltext"
	"github.com/keel-dev/keel/internal/websearch"
)

// echoReader is a PageReader that shows what it was given.
type echoReader struct{}

func (echoReader) ReadPage(_ context.Context, url, content, prompt string) (string, error) {
	return fmt.Sprintf("asked %q about %s:\n%s", prompt, url, content), nil
}

func TestWebFetchResults(t *testing.T) {
	mux := http.NewServeMux()
	mux.HandleFunc("/doc", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprint(w, `<html><body><h2>Install</h2><p>Run <code>make</code>.</p></body></html>`)
	})
	mux.HandleFunc("/moved", func(w http.ResponseWriter, r *http.Request) {
		_, port, _ := net.SplitHostPort(r.Host)
		http.Redirect(w, r, "http://localhost:"+port+"/doc", http.StatusMovedPermanently)
	})
	mux.HandleFunc("/gone", func(w http.ResponseWriter, r *http.Request) { http.Error(w, "gone", http.StatusGone) })
	mux.HandleFunc("/bin", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/zip")
		w.Write([]byte("PK\x03\x04"))
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	allowed := func() bool { return true }
	tests := []struct {
		name     string
		path     string
		explicit func() bool
		reader   PageReader
	}{
		{"read by the model", "/doc", allowed, echoReader{}},
		{"page itself without a reader", "/doc", allowed, nil},
		{"redirect to another host", "/moved", allowed, echoReader{}},
		{"private address without a rule", "/doc", nil, echoReader{}},
		{"http error", "/gone", allowed, echoReader{}},
		{"binary", "/bin", allowed, echoReader{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, t.TempDir())
			env.Explicit = tt.explicit
			tl := WebFetch(webfetch.New(webfetch.Options{CacheTTL: -1, Converter: htmltext.InProcess{}}), tt.reader)
			res := call(t, tl, env, webFetchInput{URL: srv.URL + tt.path, Prompt: "How is it installed?"})
			_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
			golden(t, "webfetch/"+strings.ReplaceAll(tt.name, " ", "_"), strings.ReplaceAll(render(res, env.State.Cwd), port, "PORT"))
		})
	}
}

func TestWebFetchEmptyPrompt(t *testing.T) {
	res := call(t, WebFetch(nil, nil), newEnv(t, t.TempDir()), webFetchInput{URL: "https://example.com", Prompt: " "})
	if !res.IsError {
		t.Errorf("an empty prompt was accepted: %s", res.ResultText())
	}
}

func TestWebSearchOffWithoutBackend(t *testing.T) {
	res := call(t, WebSearch(nil), newEnv(t, t.TempDir()), webSearchInput{Query: "anything"})
	if !res.IsError || res.ResultText() != WebSearchOff {
		t.Errorf("result = %+v", res)
	}
	var _ websearch.Backend = (*websearch.Service)(nil)
}

func TestToolsAreDeferred(t *testing.T) {
	for _, tl := range Tools(Options{}) {
		d, ok := tl.(tool.Deferrable)
		deferred := ok && d.DeferLoading()
		want := map[string]bool{"TodoWrite": true, "BashOutput": true, "KillShell": true, "NotebookEdit": true, "WebFetch": true, "WebSearch": true}[tl.Name()]
		if deferred != want {
			t.Errorf("%s deferred = %v, want %v", tl.Name(), deferred, want)
		}
	}
}
