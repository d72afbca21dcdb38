package skill

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/prompt"
	"github.com/keel-dev/keel/internal/tool"
)

// forkCall records what a fork skill asked the subagent runner to do.
type forkCall struct {
	Agent, Prompt string
	Tools         []string
	Model         string
}

// recordingRunner is a ForkRunner that records its calls and answers with a fixed result.
// The real runner (subagents) is wired by the session; this checks the arguments it gets.
type recordingRunner struct {
	mu     sync.Mutex
	calls  []forkCall
	result string
	err    error
}

func (r *recordingRunner) RunFork(_ context.Context, agent, prompt string, tools []string, model string) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, forkCall{agent, prompt, tools, model})
	return r.result, r.err
}

func callTool(t *testing.T, tl tool.Tool, agentID, input string) tool.Result {
	t.Helper()
	env := &tool.Env{
		State:    tool.State{Cwd: t.TempDir()},
		AgentID:  agentID,
		Progress: func(string) {},
		Logger:   slog.New(slog.DiscardHandler),
	}
	if err := tool.NewValidator().Validate(tl, json.RawMessage(input)); err != nil {
		t.Fatalf("input %s rejected: %v", input, err)
	}
	return tl.Call(t.Context(), env, json.RawMessage(input))
}

func toolCatalog(t *testing.T) *Catalog {
	l := newLayout(t)
	dir := ".keel/skills/"
	write(t, l.root, dir+"pdf/SKILL.md", "---\nname: pdf\ndescription: Work with PDF files.\nallowed-tools: Bash(pdftotext:*), Read\n---\nSECRET-PDF-BODY for $ARGUMENTS\n")
	write(t, l.root, dir+"research/SKILL.md", "---\nname: research\ndescription: Research a topic in depth.\ncontext: fork\nagent: Explore\nmodel: haiku\nallowed-tools: [WebSearch, Read]\n---\nSECRET-RESEARCH-BODY on $ARGUMENTS\n")
	write(t, l.root, dir+"plain-fork/SKILL.md", "---\nname: plain-fork\ndescription: Fork with defaults.\ncontext: fork\nmodel: inherit\n---\nDo $ARGUMENTS\n")
	write(t, l.root, dir+"deploy/SKILL.md", "---\nname: deploy\ndescription: Deploy to production.\ndisable-model-invocation: true\n---\nSECRET-DEPLOY-BODY\n")
	write(t, l.root, dir+"background/SKILL.md", "---\nname: background\ndescription: Project background knowledge.\nuser-invocable: false\n---\nSECRET-BACKGROUND-BODY\n")
	write(t, l.root, ".keel/commands/undescribed.md", "SECRET-UNDESCRIBED-BODY first line\n")
	write(t, l.root, ".keel/commands/described.md", "---\ndescription: A command with a description.\n---\nSECRET-DESCRIBED-BODY\n")
	c, problems := l.load(t)
	if len(problems) > 0 {
		t.Fatal(problems)
	}
	return c
}

// TestListingDisclosesOnlyNames checks progressive disclosure: the listing holds names and
// descriptions of what the model may invoke, never a body.
func TestListingDisclosesOnlyNames(t *testing.T) {
	c := toolCatalog(t)
	want := []prompt.Entry{
		{Name: "background", Description: "Project background knowledge."},
		{Name: "described", Description: "A command with a description."},
		{Name: "pdf", Description: "Work with PDF files."},
		{Name: "plain-fork", Description: "Fork with defaults."},
		{Name: "research", Description: "Research a topic in depth."},
	}
	got, omitted := c.Entries()
	if diff := cmp.Diff(want, got); diff != "" || omitted != 0 {
		t.Errorf("mismatch (-want +got), %d omitted:\n%s", omitted, diff)
	}
	if strings.Contains(fmt.Sprint(got), "SECRET") {
		t.Errorf("listing contains body text")
	}
}

func TestListingBudget(t *testing.T) {
	l := newLayout(t)
	long := strings.Repeat("word ", 100)
	for i := range 40 {
		write(t, l.root, fmt.Sprintf(".keel/skills/s%02d/SKILL.md", i), skillFile(fmt.Sprintf("s%02d", i), long, "b"))
	}
	c, _ := l.load(t, func(o *Options) { o.ListingBudget = 3000 })
	got, omitted := c.Entries()
	size := 0
	for _, e := range got {
		size += len("- " + e.Name + ": " + e.Description + "\n")
	}
	if size > 3000 {
		t.Errorf("listing is %d bytes, budget 3000", size)
	}
	if want := truncate(oneLine(long), MaxListedDescription); got[0].Name != "s00" || got[0].Description != want {
		t.Errorf("first entry = %+v, want s00: %q", got[0], want)
	}
	if d := got[0].Description; !strings.HasSuffix(d, "…") || len([]rune(d)) != MaxListedDescription {
		t.Errorf("description not cut at %d runes: %q", MaxListedDescription, d)
	}
	if len(got)+omitted != 40 || omitted == 0 {
		t.Errorf("%d listed and %d omitted, want 40 in all with some omitted", len(got), omitted)
	}
}

func TestSkillToolInline(t *testing.T) {
	c := toolCatalog(t)
	grants := NewGrants()
	tl := c.Tool(ToolOptions{Grants: grants})
	if tl.Name() != "Skill" || !tl.ReadOnly(json.RawMessage(`{"skill":"pdf"}`)) {
		t.Errorf("name %q read-only %v", tl.Name(), tl.ReadOnly(json.RawMessage(`{"skill":"pdf"}`)))
	}
	if strings.Contains(tl.Description(), "SECRET") || strings.Contains(string(tl.InputSchema()), "SECRET") {
		t.Error("tool description carries a body")
	}
	r := callTool(t, tl, "agent-1", `{"skill": "/pdf", "args": "report.pdf"}`)
	if r.IsError {
		t.Fatalf("error result: %s", r.ResultText())
	}
	if got := r.ResultText(); !strings.HasSuffix(got, "SECRET-PDF-BODY for report.pdf") || !strings.HasPrefix(got, "Base directory for this skill: ") {
		t.Errorf("result = %q", got)
	}
	wantOut := Outcome{Skill: "pdf", Context: ContextInline, AllowedTools: []string{"Bash(pdftotext:*)", "Read"}}
	if diff := cmp.Diff(wantOut, r.Output); diff != "" {
		t.Errorf("outcome mismatch (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"Bash(pdftotext:*)", "Read"}, grants.Rules("agent-1")); diff != "" {
		t.Errorf("grants mismatch (-want +got):\n%s", diff)
	}
	if got := grants.Rules("other-agent"); got != nil {
		t.Errorf("grant leaked to another agent: %v", got)
	}
	grants.End("agent-1")
	if got := grants.Rules("agent-1"); got != nil {
		t.Errorf("grant survived the end of the turn: %v", got)
	}
	// user-invocable: false hides from /name, not from the model.
	if r := callTool(t, tl, "", `{"skill": "background"}`); r.IsError || !strings.Contains(r.ResultText(), "SECRET-BACKGROUND-BODY") {
		t.Errorf("background: %s", r.ResultText())
	}
}

func TestSkillToolRefusals(t *testing.T) {
	c := toolCatalog(t)
	tl := c.Tool(ToolOptions{})
	tests := []struct{ input, want string }{
		{`{"skill": "deploy"}`, "skill deploy can only be invoked by the user (/deploy)"},
		{`{"skill": "undescribed"}`, "skill undescribed can only be invoked by the user (/undescribed)"},
		{`{"skill": "pfd"}`, "unknown skill or command pfd; did you mean pdf?"},
		{`{"skill": "zzzzzzzz"}`, "unknown skill or command zzzzzzzz"},
		{`{"skill": "research"}`, "skill research: fork skills need a subagent runner, and none is configured"},
	}
	for _, tt := range tests {
		r := callTool(t, tl, "", tt.input)
		if !r.IsError || r.ResultText() != tt.want {
			t.Errorf("%s: error=%v %q, want %q", tt.input, r.IsError, r.ResultText(), tt.want)
		}
		if strings.Contains(r.ResultText(), "SECRET") {
			t.Errorf("%s: refused call leaked a body", tt.input)
		}
	}
}

func TestSkillToolFork(t *testing.T) {
	c := toolCatalog(t)
	runner := &recordingRunner{result: "the subagent's report"}
	grants := NewGrants()
	tl := c.Tool(ToolOptions{Runner: runner, Grants: grants})
	r := callTool(t, tl, "a", `{"skill": "research", "args": "caching"}`)
	if r.IsError || r.ResultText() != "the subagent's report" {
		t.Fatalf("result = %v %q", r.IsError, r.ResultText())
	}
	r = callTool(t, tl, "a", `{"skill": "plain-fork", "args": "it"}`)
	if r.IsError {
		t.Fatal(r.ResultText())
	}
	dir := func(name string) string { s, _ := c.Lookup(name); return s.Dir }
	want := []forkCall{
		{"Explore", "Base directory for this skill: " + dir("research") + "\nFiles it mentions by relative path are in that directory.\n\nSECRET-RESEARCH-BODY on caching", []string{"WebSearch", "Read"}, "haiku"},
		{"general-purpose", "Base directory for this skill: " + dir("plain-fork") + "\nFiles it mentions by relative path are in that directory.\n\nDo it", nil, ""},
	}
	if diff := cmp.Diff(want, runner.calls); diff != "" {
		t.Errorf("fork calls mismatch (-want +got):\n%s", diff)
	}
	if got := grants.Rules("a"); got != nil {
		t.Errorf("fork skill granted tools to the parent: %v", got)
	}
	runner.err = errors.New("subagent crashed")
	r = callTool(t, tl, "a", `{"skill": "research"}`)
	if !r.IsError || r.ResultText() != "skill research: subagent crashed" {
		t.Errorf("error result = %v %q", r.IsError, r.ResultText())
	}
}

func TestExpand(t *testing.T) {
	c := toolCatalog(t)
	tests := []struct {
		line    string
		ok      bool
		text    string
		fork    bool
		wantErr string
	}{
		{line: "plain prompt", ok: false},
		{line: "/usr/bin/env is a path", ok: false},
		{line: "/", ok: false},
		{line: "/described", ok: true, text: "SECRET-DESCRIBED-BODY"},
		{line: "  /undescribed  extra words ", ok: true, text: "SECRET-UNDESCRIBED-BODY first line\n\nARGUMENTS: extra words"},
		{line: "/deploy", ok: true, text: "SECRET-DEPLOY-BODY"}, // text compared by suffix: skills start with their base directory
		{line: "/research x", ok: true, fork: true},
		{line: "/background", ok: true, wantErr: "/background is not user-invocable (user-invocable: false); the model loads it when relevant"},
		{line: "/deplyo now", ok: true, wantErr: "unknown skill or command /deplyo; did you mean /deploy?"},
		{line: "/describe", ok: true, wantErr: "unknown skill or command /describe; did you mean /described, /undescribed?"},
	}
	for _, tt := range tests {
		t.Run(tt.line, func(t *testing.T) {
			inv, ok, err := c.Expand(t.Context(), tt.line)
			if ok != tt.ok {
				t.Fatalf("ok = %v, want %v", ok, tt.ok)
			}
			if tt.wantErr != "" {
				if err == nil || err.Error() != tt.wantErr {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if inv.Fork != tt.fork || tt.text != "" && !strings.HasSuffix(inv.Text, tt.text) {
				t.Errorf("got fork=%v %q, want fork=%v %q", inv.Fork, inv.Text, tt.fork, tt.text)
			}
		})
	}
}

// promptServer is a PromptSource over a fixed table, standing in for connected MCP servers.
type promptServer struct {
	prompts []PromptInfo
	got     []map[string]string
}

func (p *promptServer) Prompts() []PromptInfo { return p.prompts }

func (p *promptServer) GetPrompt(_ context.Context, server, name string, args map[string]string) (string, error) {
	p.got = append(p.got, args)
	if name == "broken" {
		return "", errors.New("server went away")
	}
	return fmt.Sprintf("%s/%s %v", server, name, args), nil
}

func TestMCPPrompts(t *testing.T) {
	src := &promptServer{prompts: []PromptInfo{
		{Server: "git hub", Name: "review-pr", Description: "Review a PR", Arguments: []PromptArgument{
			{Name: "number", Required: true}, {Name: "focus"},
		}},
		{Server: "x", Name: "broken"},
	}}
	l := newLayout(t)
	c, _ := l.load(t, func(o *Options) { o.Prompts = src })
	s, ok := c.Lookup("mcp__git_hub__review-pr")
	if !ok || s.ArgumentHint != "<number> [focus]" || s.ModelInvocable() || s.Source != SourceMCP {
		t.Fatalf("lookup = %+v, %v", s, ok)
	}
	if got, _ := c.Entries(); len(got) != 0 {
		t.Errorf("MCP prompts reached the model's listing: %+v", got)
	}
	inv, ok, err := c.Expand(t.Context(), "/mcp__git_hub__review-pr 42 error handling")
	if !ok || err != nil {
		t.Fatal(ok, err)
	}
	if want := "git hub/review-pr map[focus:error handling number:42]"; inv.Text != want {
		t.Errorf("text = %q, want %q", inv.Text, want)
	}
	_, _, err = c.Expand(t.Context(), "/mcp__git_hub__review-pr")
	if want := "/mcp__git_hub__review-pr needs number (usage: /mcp__git_hub__review-pr <number> [focus])"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	_, _, err = c.Expand(t.Context(), "/mcp__x__broken")
	if want := "get MCP prompt broken from x: server went away"; err == nil || err.Error() != want {
		t.Errorf("err = %v, want %q", err, want)
	}
	r := callTool(t, c.Tool(ToolOptions{}), "", `{"skill": "mcp__x__broken"}`)
	if !r.IsError || len(src.got) != 2 {
		t.Errorf("model invoked an MCP prompt: %q (server calls %d)", r.ResultText(), len(src.got))
	}
}
