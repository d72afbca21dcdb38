package loop

import (
	"testing"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/provider/anthropic"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// Admit is asked before a run's first request and Check before every later one; an agent
// Admit refuses asks the model nothing and ends with Admit's subtype and text.
func TestAdmitBeforeTheFirstRequestCheckBeforeTheRest(t *testing.T) {
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "go"}, Reply: []scripted.Block{scripted.ToolUse("Nope", map[string]string{})}},
		{Reply: []scripted.Block{scripted.Text("ok")}},
	}}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	p, err := anthropic.New(anthropic.Options{APIKey: "k", BaseURL: srv.URL()})
	if err != nil {
		t.Fatal(err)
	}
	var admitted, checked []int
	refuse := false
	agent := &Agent{Provider: provider.WithRetries(p, provider.RetryPolicy{}, nil), Model: "claude-test",
		Admit: func(out *Outcome) (string, bool) {
			admitted = append(admitted, out.Turns)
			if refuse {
				out.Text = "spent"
				return SubtypeMaxBudget, true
			}
			return "", false
		},
		Check: func(out *Outcome) (string, bool) { checked = append(checked, out.Turns); return "", false },
	}
	out, err := agent.Run(t.Context(), []message.Message{message.User(message.Text("go"))})
	if err != nil || out.Text != "ok" {
		t.Fatalf("run: %q, %v", out.Text, err)
	}
	if len(admitted) != 1 || admitted[0] != 0 || len(checked) != 1 || checked[0] != 1 {
		t.Errorf("Admit asked at turns %v, Check at %v; want Admit at 0, Check at 1", admitted, checked)
	}

	refuse, admitted, checked = true, nil, nil
	before := len(srv.Requests())
	out, err = agent.Run(t.Context(), []message.Message{message.User(message.Text("again"))})
	if err != nil || out.Subtype != SubtypeMaxBudget || out.Text != "spent" || out.Turns != 0 {
		t.Errorf("refused run: %s %q after %d turns, %v; want %s \"spent\" after none", out.Subtype, out.Text, out.Turns, err, SubtypeMaxBudget)
	}
	if n := len(srv.Requests()) - before; n != 0 || len(checked) != 0 {
		t.Errorf("the refused run sent %d requests and asked Check %d times; want none", n, len(checked))
	}
}
