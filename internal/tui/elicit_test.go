package tui

import (
	"context"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/mcphost/mcptest"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// signupSchema has a field of every kind MCP allows: required text with a length limit, an
// email, a bounded integer, a titled enum, a boolean and a multi-select, most with defaults.
func signupSchema() map[string]any {
	return map[string]any{"type": "object", "required": []any{"name", "email"}, "properties": map[string]any{
		"name":       map[string]any{"type": "string", "title": "Full name", "description": "As on your ID.", "minLength": 2},
		"email":      map[string]any{"type": "string", "format": "email", "title": "Email"},
		"age":        map[string]any{"type": "integer", "title": "Age", "minimum": 18, "maximum": 130, "default": 30},
		"plan":       map[string]any{"type": "string", "title": "Plan", "enum": []any{"free", "pro"}, "enumNames": []any{"Free", "Pro"}, "default": "pro"},
		"newsletter": map[string]any{"type": "boolean", "title": "Newsletter", "default": true},
		"topics":     map[string]any{"type": "array", "title": "Topics", "items": map[string]any{"type": "string", "enum": []any{"go", "rust", "zig"}}, "default": []any{"go"}},
	}}
}

// openForm builds a model with a form open for p, as if the session had asked.
func openForm(t *testing.T, w, h int, p *mcp.ElicitParams, cfg Config) (*Model, *form) {
	t.Helper()
	sess, _ := newSession(t, nil)
	cfg.Backend, cfg.NoColor, cfg.Version, cfg.Now = sess, true, "test", func() time.Time { return epoch }
	m := New(cfg)
	t.Cleanup(m.Close)
	m.Update(tea.WindowSizeMsg{Width: w, Height: h})
	f, err := newForm(t.Context(), "signup", p)
	if err != nil {
		t.Fatal(err)
	}
	m.Update(f)
	return m, f
}

func answerOf(t *testing.T, f *form) *mcp.ElicitResult {
	t.Helper()
	select {
	case res := <-f.reply:
		return res
	default:
		t.Fatal("the form was not answered")
		return nil
	}
}

func keys(m *Model, ks ...string) {
	for _, k := range ks {
		m.Update(press(k))
	}
}

func TestFormFrames(t *testing.T) {
	form := &mcp.ElicitParams{Message: "Sign up for the beta.", RequestedSchema: signupSchema()}
	for _, tc := range []struct {
		name string
		w, h int
		p    *mcp.ElicitParams
		cfg  Config
		do   func(m *Model)
	}{
		// Defaults prefilled, the first field focused.
		{name: "elicit-form", w: 80, h: 24, p: form},
		// Accept with a required field empty and an email that is not one: the fields say
		// why, the focus goes to the first.
		{name: "elicit-errors", w: 80, h: 24, p: form, do: func(m *Model) {
			keys(m, "tab")
			typeKeys(m, "ada")
			keys(m, "tab", "tab", "tab", "tab", "tab", "enter")
		}},
		// A short terminal: the fields scroll with the focus.
		{name: "elicit-window", w: 80, h: 16, p: form, do: func(m *Model) { keys(m, "tab", "tab", "tab", "tab") }},
		// A message longer than a third of the screen is cut, so the fields stay in view.
		{name: "elicit-long-message", w: 80, h: 20, p: &mcp.ElicitParams{Message: strings.Repeat("The deployment needs a few details before it can go on. ", 12),
			RequestedSchema: map[string]any{"type": "object", "properties": map[string]any{"region": map[string]any{"type": "string", "enum": []any{"eu", "us"}}}}}},
		{name: "elicit-url", w: 80, h: 24, p: &mcp.ElicitParams{Mode: "url", Message: "Connect your calendar account.",
			URL: "https://auth.example.com/connect?session=abc123", ElicitationID: "e1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, _ := openForm(t, tc.w, tc.h, tc.p, tc.cfg)
			if tc.do != nil {
				tc.do(m)
			}
			got := frame(m)
			if n := strings.Count(got, "\n") + 1; n != tc.h {
				t.Errorf("frame has %d lines, want the terminal height %d", n, tc.h)
			}
			golden(t, tc.name, got)
		})
	}
}

func TestFormAnswers(t *testing.T) {
	for _, tc := range []struct {
		name string
		do   func(m *Model)
		want *mcp.ElicitResult
	}{
		{"fill and accept", func(m *Model) {
			typeKeys(m, "Ada Lovelace")
			keys(m, "enter") // next field
			typeKeys(m, "ada@example.com")
			keys(m, "tab")
			// age: replace 30 by 36
			keys(m, "backspace", "backspace")
			typeKeys(m, "36")
			keys(m, "tab", "space")                                                     // newsletter off
			keys(m, "tab", "left")                                                      // plan: pro → free
			keys(m, "tab", "right", "space", "right", "space", "left", "left", "space") // topics: +rust +zig -go
			keys(m, "tab", "enter")                                                     // Accept
		}, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada Lovelace", "email": "ada@example.com", "age": 36.0,
			"newsletter": false, "plan": "free", "topics": []any{"rust", "zig"}}}},
		{"defaults kept", func(m *Model) {
			typeKeys(m, "Ada")
			keys(m, "tab")
			typeKeys(m, "ada@example.com")
			keys(m, "tab", "tab", "tab", "tab", "tab", "enter")
		}, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "email": "ada@example.com", "age": 30.0,
			"newsletter": true, "plan": "pro", "topics": []any{"go"}}}},
		{"decline", func(m *Model) { keys(m, "shift+tab", "shift+tab", "enter") }, &mcp.ElicitResult{Action: "decline"}},
		{"esc cancels", func(m *Model) { typeKeys(m, "Ad"); keys(m, "esc") }, &mcp.ElicitResult{Action: "cancel"}},
		{"invalid, then fixed", func(m *Model) {
			typeKeys(m, "A") // too short
			keys(m, "tab")
			typeKeys(m, "not an email")
			keys(m, "tab")
			keys(m, "backspace", "backspace")
			typeKeys(m, "7")                             // below the minimum
			keys(m, "tab", "tab", "tab", "tab", "enter") // Accept: refused, focus on name
			typeKeys(m, "da")
			keys(m, "tab")
			for range len("not an email") {
				keys(m, "backspace")
			}
			typeKeys(m, "a@b.example")
			keys(m, "tab", "backspace")
			typeKeys(m, "77")
			keys(m, "tab", "tab", "tab", "tab", "enter")
		}, &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada", "email": "a@b.example", "age": 77.0,
			"newsletter": true, "plan": "pro", "topics": []any{"go"}}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m, f := openForm(t, 80, 30, &mcp.ElicitParams{Message: "Sign up", RequestedSchema: signupSchema()}, Config{})
			tc.do(m)
			if diff := cmp.Diff(tc.want, answerOf(t, f)); diff != "" {
				t.Errorf("answer mismatch (-want +got):\n%s\nframe:\n%s", diff, frame(m))
			}
			if len(m.forms) != 0 {
				t.Error("the form is still open after its answer")
			}
		})
	}
}

// TestFormRefusesInvalid: Accept does not go through while a field is wrong, and each
// wrong field says why.
func TestFormRefusesInvalid(t *testing.T) {
	m, f := openForm(t, 80, 30, &mcp.ElicitParams{Message: "Sign up", RequestedSchema: signupSchema()}, Config{})
	typeKeys(m, "A")
	keys(m, "tab")
	typeKeys(m, "nope")
	keys(m, "tab", "backspace", "backspace")
	typeKeys(m, "x")
	keys(m, "tab", "tab", "tab", "tab", "enter")
	select {
	case res := <-f.reply:
		t.Fatalf("an invalid form was answered: %+v", res)
	default:
	}
	got := frame(m)
	for _, want := range []string{"✗ at least 2 characters", "✗ must be an email address", "✗ must be a whole number", "✗ fix the fields marked ✗"} {
		if !strings.Contains(got, want) {
			t.Errorf("frame lacks %q:\n%s", want, got)
		}
	}
	if f.focus != 0 {
		t.Errorf("focus = %d, want the first wrong field (0)", f.focus)
	}
}

func TestFormURLOpens(t *testing.T) {
	var opened []string
	p := &mcp.ElicitParams{Mode: "url", Message: "Connect", URL: "https://auth.example.com/x", ElicitationID: "e1"}
	m, f := openForm(t, 80, 24, p, Config{OpenURL: func(u string) error { opened = append(opened, u); return nil }})
	keys(m, "enter")
	if diff := cmp.Diff(&mcp.ElicitResult{Action: "accept"}, answerOf(t, f)); diff != "" {
		t.Errorf("answer mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"https://auth.example.com/x"}, opened); diff != "" {
		t.Errorf("opened mismatch (-want +got):\n%s", diff)
	}
}

// TestFormWithdrawn: a question whose request ends (the server cancelled it) closes; an
// interrupt cancels the questions of the run.
func TestFormWithdrawn(t *testing.T) {
	sess, _ := newSession(t, nil)
	m := New(Config{Backend: sess, NoColor: true})
	defer m.Close()
	ctx, cancel := context.WithCancel(t.Context())
	f, err := newForm(ctx, "srv", &mcp.ElicitParams{Message: "Name?", RequestedSchema: map[string]any{"type": "object"}})
	if err != nil {
		t.Fatal(err)
	}
	_, cmd := m.Update(f)
	d := newDriver(t, m)
	d.run(cmd)
	cancel()
	d.until(func() bool { return len(m.forms) == 0 })
	if got := frame(m); !strings.Contains(got, "srv asked: Name? — withdrawn") {
		t.Errorf("no note of the withdrawn question:\n%s", got)
	}

	g, _ := newForm(t.Context(), "srv", &mcp.ElicitParams{Message: "Again?"})
	m.Update(g)
	m.interrupt()
	if diff := cmp.Diff(&mcp.ElicitResult{Action: "cancel"}, answerOf(t, g)); diff != "" {
		t.Errorf("answer after an interrupt mismatch (-want +got):\n%s", diff)
	}
}

// TestRealSessionElicit drives a real session: the scripted model calls the test server's
// tool, the server asks (SEP-1034 defaults in its schema), the form shows them, the user
// changes one field and accepts, and the tool result the model gets carries the answer.
func TestRealSessionElicit(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	srv, err := scripted.Start(ctx, "", &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "confirm"}, Reply: []scripted.Block{scripted.ToolUse("mcp__t__ask_defaults", map[string]any{})}},
		{When: scripted.Match{ToolResult: "mcp__t__ask_defaults"}, Reply: []scripted.Block{scripted.Text("Thanks.")}},
	}}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	el := NewElicitor()
	sess, err := keel.New(ctx, keel.Options{Cwd: t.TempDir(), Home: t.TempDir(), Model: "claude-test", APIKey: "test", BaseURL: srv.URL(),
		PermissionMode: "bypassPermissions", MCPServers: map[string]*mcp.Server{"t": mcptest.New().Server}, Elicit: el.Elicit})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	m := New(Config{Backend: sess, Elicitor: el, Prompt: "confirm my details", NoColor: true})
	defer m.Close()
	m.Update(tea.WindowSizeMsg{Width: 80, Height: 30})
	d := newDriver(t, m)
	d.run(m.Init())
	d.until(func() bool { return len(m.forms) > 0 })
	got := frame(m)
	for _, want := range []string{"Confirm your details", "[John Doe", "‹ active ›", "[x]"} {
		if !strings.Contains(got, want) {
			t.Errorf("form lacks %q:\n%s", want, got)
		}
	}
	// age is the first field (alphabetical: no required list): 30 → 31, then Accept.
	keys(m, "backspace")
	typeKeys(m, "1")
	for range 4 {
		keys(m, "tab")
	}
	_, cmd := m.Update(press("enter"))
	d.run(cmd)
	d.until(func() bool { return !m.working })
	reqs := srv.Requests()
	last := string(reqs[len(reqs)-1].Body)
	if want := `accept {\"age\":31,\"name\":\"John Doe\",\"status\":\"active\",\"verified\":true}`; !strings.Contains(last, want) {
		t.Errorf("tool result lacks %s:\n%s", want, last)
	}
	if got := frame(m); !strings.Contains(got, "t asked: Confirm your details — answered") {
		t.Errorf("the answer is not noted:\n%s", got)
	}
}
