package tui

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
)

// statusBackend is a real session whose MCP status the test sets.
type statusBackend struct {
	*keel.Session
	mu     sync.Mutex
	status string
}

func (b *statusBackend) MCPServers() []MCPServer {
	b.mu.Lock()
	defer b.mu.Unlock()
	return []MCPServer{{Name: "docs", Status: b.status}}
}

func (b *statusBackend) set(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.status = s
}

// TestSignIn: a sign-in shows the server, whether the browser opened, and the whole address
// (wrapped over full lines); when the flow ends the outcome follows, once the server's
// status has settled.
func TestSignIn(t *testing.T) {
	page := "https://auth.example.com/authorize?response_type=code&client_id=keel&redirect_uri=http%3A%2F%2F127.0.0.1%3A41234%2Fcallback&scope=mcp+offline_access&state=abcdef&code_challenge=0123456789abcdef0123456789abcdef&code_challenge_method=S256"
	for _, tc := range []struct {
		name   string
		open   func(string) error
		final  string
		golden string
		want   string
	}{
		{name: "opened, connected", open: func(string) error { return nil }, final: "connected", golden: "signin", want: "※ docs: signed in, connected"},
		{name: "no browser, not completed", final: "needs-auth: server \"docs\" needs authorization: sign-in not completed",
			want: "✗ docs: not signed in: needs-auth: server \"docs\" needs authorization: sign-in"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sess, _ := newSession(t, nil)
			b := &statusBackend{Session: sess, status: "pending: waiting for you to sign in: " + page}
			si := NewSignIns(tc.open)
			m := New(Config{Backend: b, SignIns: si, NoColor: true, Version: "test", Now: func() time.Time { return epoch }})
			defer m.Close()
			m.Update(tea.WindowSizeMsg{Width: 80, Height: 16})
			d := newDriver(t, m)
			d.run(m.Init())
			ctx, cancel := context.WithCancel(t.Context())
			errs := make(chan error, 1)
			go func() { errs <- si.Authorize(ctx, "docs", page) }()
			d.until(func() bool { return strings.Contains(frame(m), "asks you to sign in") })
			if err := <-errs; err != nil {
				t.Fatal(err)
			}
			if tc.golden != "" {
				golden(t, tc.golden, frame(m))
			}
			// The status still says pending: the UI looks again later, saying nothing yet.
			n := len(m.items)
			if _, cmd := m.Update(signInDoneMsg{server: "docs"}); cmd == nil || len(m.items) != n {
				t.Errorf("a pending server got an outcome (cmd %v, items %d → %d)", cmd != nil, n, len(m.items))
			}
			// The flow ends: the outcome follows.
			b.set(tc.final)
			cancel()
			d.until(func() bool { return strings.Contains(frame(m), tc.want) })
		})
	}
}
