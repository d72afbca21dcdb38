package keel_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

// TestHistoryOfResumedSession: a resumed session hands its conversation back as events, with
// the uuids its rewind points carry.
func TestHistoryOfResumedSession(t *testing.T) {
	ctx := t.Context()
	srv, err := scripted.Start(ctx, "", &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "list"}, Reply: []scripted.Block{scripted.ToolUse("Glob", map[string]string{"pattern": "*"})}},
		{When: scripted.Match{ToolResult: "Glob"}, Reply: []scripted.Block{scripted.Text("Nothing here.")}},
		{Reply: []scripted.Block{scripted.Text("Hello.")}},
	}}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	opts := keel.Options{Cwd: t.TempDir(), Home: t.TempDir(), APIKey: "test", BaseURL: srv.URL()}
	sess, err := keel.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"say hello", "list the files"} {
		for _, err := range sess.Send(ctx, p) {
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	id := sess.ID()
	sess.Close()

	opts.Resume = id
	resumed, err := keel.New(ctx, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer resumed.Close()
	var got []string
	uuids := map[string]bool{}
	for _, ev := range resumed.History() {
		switch e := ev.(type) {
		case keel.UserMessage:
			uuids[e.UUID] = true
			for _, b := range e.Message.Content {
				switch b.Type {
				case "text":
					// Listing reminders ride in the first user message; only the conversation counts.
					if !strings.HasPrefix(b.Text, "<system-reminder>") {
						got = append(got, "user: "+b.Text)
					}
				case "tool_result":
					got = append(got, "result")
				}
			}
		case keel.AssistantMessage:
			uuids[e.UUID] = true
			for _, b := range e.Message.Content {
				switch b.Type {
				case "text":
					got = append(got, "assistant: "+b.Text)
				case "tool_use":
					got = append(got, "call "+b.Name)
				}
			}
		}
	}
	want := []string{"user: say hello", "assistant: Hello.", "user: list the files", "call Glob", "result", "assistant: Nothing here."}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("history mismatch (-want +got):\n%s", diff)
	}
	for _, p := range resumed.RewindPoints() {
		if !uuids[p.UUID] {
			t.Errorf("rewind point %q (%s) is not in the history", p.Prompt, p.UUID)
		}
	}
	if n := len(resumed.RewindPoints()); n != 2 {
		t.Errorf("%d rewind points, want both earlier prompts", n)
	}
}
