//go:build linux

package session

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/sandbox"
)

// netAsker answers the sandbox's network questions (WebFetch requests) with answer and
// records them.
type netAsker struct {
	answer permission.Answer
	mu     sync.Mutex
	asked  []permission.AskRequest
}

func (a *netAsker) Ask(_ context.Context, r permission.AskRequest) (permission.Answer, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.asked = append(a.asked, r)
	ans := a.answer
	if ans.Behavior == permission.Allow && len(r.Suggestions) > 0 && len(ans.Updates) > 0 {
		ans.Updates = r.Suggestions // "always": the rules the asker was offered
	}
	return ans, nil
}

func (a *netAsker) requests() []permission.AskRequest {
	a.mu.Lock()
	defer a.mu.Unlock()
	return append([]permission.AskRequest(nil), a.asked...)
}

// sandboxNetHarness starts a loopback HTTP server named svc.test (for the egress proxy's
// resolver) and a session whose sandboxed Bash runs `curl http://svc.test:PORT/` on "fetch";
// its loopback address is listed, so that only the name is in question.
func sandboxNetHarness(t *testing.T, asker permission.Asker) (*harness, string) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "hello from the loopback server") })}
	go srv.Serve(l)
	t.Cleanup(func() { srv.Close() })
	port := l.Addr().(*net.TCPAddr).Port
	old := sandboxResolve
	sandboxResolve = func(_ context.Context, host string) ([]netip.Addr, error) {
		if host == "svc.test" {
			return []netip.Addr{netip.MustParseAddr("127.0.0.1")}, nil
		}
		return nil, errors.New("no such host in this test")
	}
	t.Cleanup(func() { sandboxResolve = old })
	home := t.TempDir()
	settingsJSON := fmt.Sprintf(`{"permissions": {"allow": ["Bash(curl:*)"]}, "sandbox": {"network": {"allowedDomains": ["127.0.0.1:%d"]}}}`, port)
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settingsJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := fmt.Sprintf("curl -sS --max-time 20 http://svc.test:%d/", port)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "fetch", When: scripted.Match{UserText: "fetch"}, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": cmd})}},
		{Name: "end", Reply: []scripted.Block{scripted.Text("done")}},
	}}
	opts := Options{Home: home}
	if asker != nil {
		opts.Asker = asker
	}
	h := newHarness(t, sc, opts)
	if h.sess.sandbox == nil {
		t.Fatal("the sandbox is not on by default")
	}
	if err := h.sess.sandbox.Available(); errors.Is(err, sandbox.ErrUnavailable) {
		t.Skipf("no sandbox on this machine: %v", err)
	}
	return h, fmt.Sprintf("svc.test:%d", port)
}

// bashOutput is the text of the Bash results among events.
func bashOutput(events []event.Event) string {
	var b strings.Builder
	for _, e := range events {
		if r, ok := e.(event.ToolEnd); ok && r.Name == "Bash" {
			for _, c := range r.Result {
				b.WriteString(c.Text)
			}
		}
	}
	return b.String()
}

// TestSandboxNetworkAsk: a sandboxed command connecting to a host no list names puts the
// question to the session's asker (the terminal's prompt, the SDK's can_use_tool); "allow
// always" lets it through now and later without asking again, as WebFetch(domain:…).
func TestSandboxNetworkAsk(t *testing.T) {
	asker := &netAsker{answer: permission.AllowAlways(permission.Rule{})}
	h, hp := sandboxNetHarness(t, asker)
	out := bashOutput(h.send(t, "fetch"))
	if !strings.Contains(out, "hello from the loopback server") {
		t.Fatalf("the allowed connection did not go through:\n%s", out)
	}
	asked := asker.requests()
	if len(asked) != 1 || asked[0].Request.Tool != "WebFetch" || !strings.Contains(asked[0].Reason, hp) ||
		!strings.Contains(string(asked[0].Request.Input), "Network request outside of the sandbox") {
		t.Fatalf("asked %+v", asked)
	}
	if len(asked[0].Suggestions) != 1 || asked[0].Suggestions[0].String() != "WebFetch(domain:svc.test)" {
		t.Errorf("suggestions %v", asked[0].Suggestions)
	}
	out = bashOutput(h.send(t, "fetch"))
	if !strings.Contains(out, "hello from the loopback server") || len(asker.requests()) != 1 {
		t.Errorf("after allow always: asked %d times, output:\n%s", len(asker.requests()), out)
	}
}

// TestSandboxNetworkAskDenied: a "no" refuses the connection, and the result names the host.
func TestSandboxNetworkAskDenied(t *testing.T) {
	asker := &netAsker{answer: permission.DenyAnswer("not this one")}
	h, hp := sandboxNetHarness(t, asker)
	out := bashOutput(h.send(t, "fetch"))
	if strings.Contains(out, "hello from the loopback server") || !strings.Contains(out, "[Sandbox: connection refused by the proxy: "+hp) ||
		!strings.Contains(out, "not this one") {
		t.Errorf("a refused connection:\n%s", out)
	}
}

// TestSandboxNetworkHeadless: with no one to ask the connection is refused, and the result
// says which settings would allow it.
func TestSandboxNetworkHeadless(t *testing.T) {
	h, hp := sandboxNetHarness(t, nil)
	out := bashOutput(h.send(t, "fetch"))
	if strings.Contains(out, "hello from the loopback server") || !strings.Contains(out, "[Sandbox: connection refused by the proxy: "+hp) ||
		!strings.Contains(out, `add "svc.test" to sandbox.network.allowedDomains`) {
		t.Errorf("a headless connection:\n%s", out)
	}
}

// TestSandboxUnattended: a headless run in auto permission mode never runs a command
// unsandboxed (the sandbox's failure becomes an error); with an asker it does, after the one
// notice.
func TestSandboxUnattended(t *testing.T) {
	h := newHarness(t, &scripted.Scenario{}, Options{PermissionMode: "auto"})
	if p := h.sess.sandbox.Policy(); !p.FailIfUnavailable || !strings.Contains(p.FailWhy, "auto permission mode") {
		t.Errorf("headless, auto mode: %+v", p)
	}
	h = newHarness(t, &scripted.Scenario{}, Options{PermissionMode: "auto", Asker: &netAsker{}})
	if p := h.sess.sandbox.Policy(); p.FailIfUnavailable {
		t.Errorf("with an asker, auto mode: %+v", p)
	}
	h.sess.sandboxUnavailable(h.sess.sandbox.Policy(), errors.New("sandbox unavailable: user namespaces are disabled"))
	if n := h.sess.notices; len(n) == 0 || !strings.Contains(n[len(n)-1].Text, "WITHOUT the sandbox: sandbox unavailable: user namespaces are disabled") {
		t.Errorf("notices %+v", n)
	}
}
