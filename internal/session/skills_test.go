package session

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

func writeSkill(t *testing.T, cwd string) {
	t.Helper()
	dir := filepath.Join(cwd, ".keel", "skills", "greet")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte(`---
name: greet
description: Greets people the house way.
allowed-tools: Bash(echo hi:*)
---
SECRET-BODY: greet warmly, then run echo hi. Arguments: $ARGUMENTS
`), 0o644)
}

func TestSkillBodyReachesTheModelOnlyWhenInvoked(t *testing.T) {
	cwd := t.TempDir()
	writeSkill(t, cwd)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "again"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]string{"command": "echo hi again"})}},
		{When: scripted.Match{UserText: "hello"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Skill", map[string]string{"skill": "greet", "args": "Ada"})}},
		{When: scripted.Match{Contains: "SECRET-BODY"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]string{"command": "echo hi there"})}},
		{Reply: []scripted.Block{scripted.Text("greeted")}},
	}}
	// A trusted workspace: its skill may grant tools.
	h := newHarness(t, sc, Options{Cwd: cwd, Trust: true})
	res := result(t, h.send(t, "say hello to Ada"))
	reqs := h.srv.Requests()
	first := string(reqs[0].Body)
	if !strings.Contains(first, "greet") || !strings.Contains(first, "Greets people the house way.") {
		t.Error("the first request does not list the skill's name and description")
	}
	if strings.Contains(first, "SECRET-BODY") {
		t.Error("the skill's body reached the model before it was invoked")
	}
	if !strings.Contains(string(reqs[1].Body), "SECRET-BODY: greet warmly, then run echo hi. Arguments: Ada") {
		t.Error("the invoked skill's expanded body is not in the next request")
	}
	// The skill's allowed-tools let its Bash call run without asking (headless would deny it).
	if len(res.Denials) != 0 {
		t.Errorf("denials = %+v, want none: the skill grants Bash(echo hi:*)", res.Denials)
	}
	if !strings.Contains(string(reqs[2].Body), "hi there") {
		t.Error("the granted Bash call did not run")
	}
	// The grant ends with the turn: the same kind of call is asked (headless: denied) after it.
	if again := result(t, h.send(t, "now run it again")); len(again.Denials) != 1 {
		t.Errorf("denials after the skill's turn = %+v, want the Bash call denied", again.Denials)
	}
}

func TestSlashCommandExpandsIntoThePrompt(t *testing.T) {
	cwd := t.TempDir()
	writeSkill(t, cwd)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "SECRET-BODY"}, Reply: []scripted.Block{scripted.Text("expanded")}},
		{Reply: []scripted.Block{scripted.Text("not expanded")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd})
	if res := result(t, h.send(t, "/greet Grace")); res.Text != "expanded" {
		t.Errorf("/greet reached the model as %q", res.Text)
	}
	if res := result(t, h.send(t, "/nosuchskill")); !res.IsError || !strings.Contains(res.Text, "nosuchskill") {
		t.Errorf("unknown command result = %+v, want an error naming it", res)
	}
}

func TestPathScopedRuleArrivesWhenAMatchingFileIsTouched(t *testing.T) {
	cwd := t.TempDir()
	os.MkdirAll(filepath.Join(cwd, ".git"), 0o755)
	os.MkdirAll(filepath.Join(cwd, ".keel", "rules"), 0o755)
	os.WriteFile(filepath.Join(cwd, ".keel", "rules", "go.md"), []byte("---\npaths: [\"**/*.go\"]\n---\nGO-RULE: wrap errors with context.\n"), 0o644)
	os.WriteFile(filepath.Join(cwd, "main.go"), []byte("package main\n"), 0o644)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "look"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Read", map[string]string{"file_path": "main.go"})}},
		{Reply: []scripted.Block{scripted.Text("seen")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd})
	h.send(t, "look at main.go")
	reqs := h.srv.Requests()
	if strings.Contains(string(reqs[0].Body), "GO-RULE") {
		t.Error("the path-scoped rule was in the first request, before any Go file was touched")
	}
	if !strings.Contains(string(reqs[1].Body), "GO-RULE: wrap errors with context.") {
		t.Error("the rule did not arrive in the request after main.go was read")
	}
}

func TestForkSkillRunsAsASubagent(t *testing.T) {
	cwd := t.TempDir()
	dir := filepath.Join(cwd, ".keel", "skills", "survey")
	os.MkdirAll(dir, 0o755)
	os.WriteFile(filepath.Join(dir, "SKILL.md"), []byte("---\nname: survey\ndescription: Survey the project in a subagent.\ncontext: fork\nagent: Explore\n---\nFORK-BODY: count the files.\n"), 0o644)
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		// The subagent gets the skill's body as its task.
		{When: scripted.Match{UserText: "FORK-BODY"}, Reply: []scripted.Block{scripted.Text("SUBAGENT-REPORT: 3 files")}},
		{When: scripted.Match{UserText: "use the skill"}, Times: 1, Reply: []scripted.Block{scripted.ToolUse("Skill", map[string]string{"skill": "survey"})}},
		{When: scripted.Match{Contains: "SUBAGENT-REPORT"}, Reply: []scripted.Block{scripted.Text("the survey says 3 files")}},
		{Reply: []scripted.Block{scripted.Text("no")}},
	}}
	h := newHarness(t, sc, Options{Cwd: cwd})
	// Invoked by the model through the Skill tool: the subagent's report is the tool result.
	if res := result(t, h.send(t, "use the skill")); res.Text != "the survey says 3 files" {
		t.Errorf("model-invoked fork skill: result %q", res.Text)
	}
	text, isErr := toolResultText(t, h.sess.History())
	if isErr || !strings.Contains(text, "SUBAGENT-REPORT: 3 files") {
		t.Errorf("Skill tool result = %q (error %v), want the subagent's report", text, isErr)
	}
	// The main agent never saw the body; only the subagent's request carried it.
	for _, r := range h.srv.Requests() {
		body := string(r.Body)
		if strings.Contains(body, "FORK-BODY") && strings.Contains(body, "use the skill") {
			t.Error("the fork skill's body reached the main agent's conversation")
		}
	}
	// Invoked by the user as /survey: the report becomes the prompt of the main agent.
	if res := result(t, h.send(t, "/survey")); res.Text != "the survey says 3 files" {
		t.Errorf("/survey: result %q", res.Text)
	}
}
