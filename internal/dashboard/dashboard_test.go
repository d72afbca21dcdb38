package dashboard_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/dashboard"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/transcript"
	"github.com/keel-dev/keel/internal/waittest"
)

func start(t *testing.T, cfg dashboard.Config) *dashboard.Server {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	s, err := dashboard.Listen(ctx, "127.0.0.1:0", cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		// t.Context is over by now: wait under the plain timeout.
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve: %v", err)
			}
		case <-time.After(waittest.Timeout()):
			t.Errorf("the dashboard did not stop within %v", waittest.Timeout())
		}
	})
	return s
}

func get(t *testing.T, url string, header http.Header) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	if h := header.Get("Host"); h != "" {
		req.Host = h
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// Without its token the dashboard answers 403; a foreign Host (DNS rebinding) or Origin is
// refused even with it; the page's static assets need no token.
func TestGuard(t *testing.T) {
	s := start(t, dashboard.Config{Home: t.TempDir(), Token: "sekrit"})
	base := "http://" + s.Addr().String()
	tests := []struct {
		name   string
		url    string
		header http.Header
		want   int
	}{
		{"the printed URL", s.URL(), nil, http.StatusOK},
		{"no token", base + "/", nil, http.StatusForbidden},
		{"a wrong token", base + "/api/view?token=guess", nil, http.StatusForbidden},
		{"the token in the header", base + "/api/view", http.Header{"X-Keel-Token": {"sekrit"}}, http.StatusOK},
		{"a rebinding host name", s.URL(), http.Header{"Host": {"evil.example:80"}}, http.StatusForbidden},
		{"localhost", s.URL(), http.Header{"Host": {"localhost:" + portOf(s)}}, http.StatusOK},
		{"another site's page", s.URL(), http.Header{"Origin": {"http://evil.example"}}, http.StatusForbidden},
		{"its own page", s.URL(), http.Header{"Origin": {"http://127.0.0.1:" + portOf(s)}}, http.StatusOK},
		{"assets", base + "/assets/app.js", nil, http.StatusOK},
		{"assets from a rebinding host", base + "/assets/app.js", http.Header{"Host": {"evil.example:80"}}, http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got, body := get(t, tt.url, tt.header); got != tt.want {
				t.Errorf("status %d, want %d (%s)", got, tt.want, strings.TrimSpace(body))
			}
		})
	}
}

func portOf(s *dashboard.Server) string {
	a := s.Addr().String()
	return a[strings.LastIndex(a, ":")+1:]
}

// The view reads a session's cost and cache economy from its transcript's records; a line
// that does not parse is counted as damage, not a failure of the page.
func TestViewReadsTranscripts(t *testing.T) {
	home := t.TempDir()
	ctx := t.Context()
	path := transcript.SessionPath(home, filepath.Join(t.TempDir(), "project"), "11111111-2222-4333-8444-555555555555")
	w, err := transcript.Create(ctx, path, transcript.Options{SessionID: "11111111-2222-4333-8444-555555555555"})
	if err != nil {
		t.Fatal(err)
	}
	u := message.User(message.Text("count the files"))
	if _, err := w.Append(ctx, transcript.Entry{Type: transcript.TypeUser, Message: &u}); err != nil {
		t.Fatal(err)
	}
	for _, e := range []event.Event{
		event.AssistantMessage{Model: "claude-sonnet-4-5", Usage: message.Usage{InputTokens: 10, CacheCreationInputTokens: 2000, OutputTokens: 5}},
		event.AssistantMessage{Model: "claude-sonnet-4-5", Usage: message.Usage{InputTokens: 10, CacheReadInputTokens: 2000, OutputTokens: 5}},
		event.CacheBreak{Segment: "system", Reason: `section "env" changed`},
		event.AssistantMessage{Model: "claude-sonnet-4-5", Usage: message.Usage{InputTokens: 10, CacheCreationInputTokens: 2000, OutputTokens: 5}},
	} {
		rec, _ := transcript.RecordOf(e)
		if _, err := w.Append(ctx, rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = f.WriteString("{not json\n")
	f.Close()

	s := start(t, dashboard.Config{Home: home, Token: "t"})
	_, body := get(t, "http://"+s.Addr().String()+"/api/view?token=t", nil)
	var v dashboard.View
	if err := json.Unmarshal([]byte(body), &v); err != nil {
		t.Fatalf("view: %v\n%s", err, body)
	}
	if len(v.Sessions) != 1 {
		t.Fatalf("%d sessions, want 1: %s", len(v.Sessions), body)
	}
	got := v.Sessions[0]
	if got.Turns != 3 || got.Model != "claude-sonnet-4-5" || got.Usage.CacheReadInputTokens != 2000 || got.CostUSD <= 0 || got.Damaged != 1 || got.State != "ended" {
		t.Errorf("session: %+v", got)
	}
	if len(got.Breaks) != 1 || got.Breaks[0].N != 3 || got.Breaks[0].Segment != "system" {
		t.Errorf("breaks %+v: want the system break before request 3", got.Breaks)
	}
	if got.Requests[1].Share < 0.99 {
		t.Errorf("request 2 read its prefix from the cache: share %v", got.Requests[1].Share)
	}
	if filepath.Base(filepath.Dir(path)) != got.Project {
		t.Errorf("project %q", got.Project)
	}
}
