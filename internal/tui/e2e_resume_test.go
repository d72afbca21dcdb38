package tui_test

import (
	"regexp"
	"strings"
	"testing"
)

// resumeHintRE finds the session id in the line keel prints on exit.
var resumeHintRE = regexp.MustCompile(`keel --resume ([0-9a-f-]{36})`)

// converse runs the two-prompt conversation of e2eRules in tm: a greeting, then a Bash call
// the user approves.
func converse(tm *term) {
	tm.t.Helper()
	tm.waitFor("shift+tab")
	tm.typeText("please say hello")
	tm.keys("Enter")
	tm.waitFor("Hello from the scripted model.")
	tm.typeText("make a file")
	tm.keys("Enter")
	tm.waitFor("Do you want to proceed?")
	tm.keys("Enter")
	tm.waitFor("The file is there now.")
}

func mustContain(t *testing.T, what, s string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(s, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, s)
		}
	}
}

// TestE2EExitLeavesConversationAndResumeShowsIt: quitting leaves the conversation in the
// terminal with the command that resumes it (item 3); resuming by an id prefix shows the
// conversation — prompts, answers, the tool call collapsed, a context figure above 0 % —
// and /rewind reaches its earlier prompts (items 1 and 4).
func TestE2EExitLeavesConversationAndResumeShowsIt(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	tm := startKeelOpts(t, srv, dir, 100, 30, termOptions{keep: true})
	converse(tm)
	tm.typeText("/exit")
	tm.keys("Enter")
	out := tm.waitForAll("[keel exited 0]")
	mustContain(t, "the terminal after exit", out, "❯ please say hello", "Hello from the scripted model.",
		"● Bash(touch made-by-keel.txt)", "The file is there now.", "Resume this conversation with: keel --resume ")
	m := resumeHintRE.FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("no session id in the resume hint:\n%s", out)
	}

	tm = startKeel(t, srv, dir, 100, 30, "--resume", m[1][:8])
	s := tm.waitFor("The file is there now.")
	mustContain(t, "the resumed session", s, "❯ please say hello", "Hello from the scripted model.", "❯ make a file",
		"● Bash(touch made-by-keel.txt) ✓")
	if strings.Contains(s, "ctx 0%") {
		t.Errorf("the resumed conversation reads as an empty context:\n%s", s)
	}
	tm.typeText("/rewind")
	tm.keys("Enter")
	s = tm.waitFor("Rewind to before which prompt?")
	mustContain(t, "the rewind picker", s, "please say hello", "make a file")
	tm.keys("Up", "Enter")
	tm.waitFor("Rewind what?")
	tm.keys("Down", "Enter") // conversation only
	s = tm.waitFor("rewound")
	if strings.Contains(s, "Hello from the scripted model.") {
		t.Errorf("the conversation from the first prompt on is still shown after the rewind:\n%s", s)
	}
	mustContain(t, "the screen after the rewind", s, "❯ please say hello") // back in the input, to edit
}

// TestE2EResumePicker: /resume lists the other sessions with a conversation, most recent
// first and never the one running; typing searches them; the one chosen opens with its
// conversation (item 2).
func TestE2EResumePicker(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	for _, p := range []string{"please say hello", "now say hello twice"} {
		tm := startKeel(t, srv, dir, 100, 30)
		tm.waitFor("shift+tab")
		tm.typeText(p)
		tm.keys("Enter")
		tm.waitFor("Hello from the scripted model.")
		tm.typeText("/exit")
		tm.keys("Enter")
	}
	tm := startKeel(t, srv, dir, 100, 30)
	tm.waitFor("shift+tab")
	tm.typeText("say hello from the third")
	tm.keys("Enter")
	tm.waitFor("Hello from the scripted model.")
	tm.typeText("/resume")
	tm.keys("Enter")
	s := tm.waitFor("Resume a session")
	picker := s[strings.Index(s, "Resume a session"):]
	if strings.Contains(picker, "say hello from the third") {
		t.Errorf("the picker offers the session it runs in:\n%s", s)
	}
	second, first := strings.Index(picker, "now say hello twice"), strings.Index(picker, "please say hello")
	if second < 0 || first < 0 || second > first {
		t.Errorf("the picker does not list the sessions most recent first:\n%s", s)
	}
	tm.typeText("twice")
	s = tm.waitFor("Search: twice")
	if strings.Contains(s[strings.Index(s, "Resume a session"):], "please say hello") {
		t.Errorf("the search left a session that does not match:\n%s", s)
	}
	tm.keys("Enter")
	s = tm.waitFor("resumed")
	mustContain(t, "the resumed session", s, "❯ now say hello twice", "Hello from the scripted model.")
	if strings.Contains(s, "say hello from the third") {
		t.Errorf("the previous conversation is still shown after the switch:\n%s", s)
	}
}

// TestE2EResumeWithoutID: keel --resume without an id opens the picker before the session
// (item 4); /rename gives a session a title that --resume TITLE finds.
func TestE2EResumeWithoutID(t *testing.T) {
	srv := startScripted(t, e2eRules...)
	dir := t.TempDir()
	tm := startKeel(t, srv, dir, 100, 30)
	tm.waitFor("shift+tab")
	tm.typeText("please say hello")
	tm.keys("Enter")
	tm.waitFor("Hello from the scripted model.")
	tm.typeText("/rename greeting test")
	tm.keys("Enter")
	tm.waitFor(`named this session "greeting test"`)
	tm.typeText("/exit")
	tm.keys("Enter")

	tm = startKeel(t, srv, dir, 100, 30, "--resume")
	s := tm.waitFor("Resume a session")
	mustContain(t, "the picker", s, "greeting test")
	tm.typeText("greet")
	tm.keys("Enter")
	s = tm.waitFor("Hello from the scripted model.")
	mustContain(t, "the resumed session", s, "❯ please say hello")
	tm.typeText("/exit")
	tm.keys("Enter")

	tm = startKeel(t, srv, dir, 100, 30, "--resume", "Greeting Test")
	tm.waitFor("❯ please say hello")
}
