package skill

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/goldentest"
)

func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	goldentest.Check(t, name, got)
}

// TestRender checks `keel skills` output, text and JSON, over every kind and source.
func TestRender(t *testing.T) {
	l := newLayout(t)
	write(t, l.home, ".claude/skills/notes/SKILL.md", skillFile("notes", "Take notes in the user's format.", "b"))
	write(t, l.keelHome, "commands/standup.md", "---\ndescription: Draft a standup update\nargument-hint: \"[day]\"\n---\nb")
	write(t, l.root, ".claude/commands/frontend/component.md", "Create a React component named $1")
	write(t, l.root, ".keel/skills/review/SKILL.md", "---\nname: review\ndescription: Project-specific review checklist.\nallowed-tools: Read, Grep\nversion: 2\n---\nb")
	write(t, l.root, ".keel/skills/audit/SKILL.md", "---\nname: audit\ndescription: Security audit in a subagent.\ncontext: fork\nagent: Explore\nmodel: opus\ndisable-model-invocation: true\n---\nb")
	write(t, l.root, ".keel/skills/broken/SKILL.md", "---\nname: broken\ncontext: sideways\n---\nb")
	src := &promptServer{prompts: []PromptInfo{{Server: "docs", Name: "summarize", Description: "Summarize a page", Arguments: []PromptArgument{{Name: "url", Required: true}}}}}
	c, problems := l.load(t, func(o *Options) { o.NoBundled = false; o.Prompts = src })
	base := filepath.Dir(l.root)
	clean := func(b []byte) []byte {
		s := strings.ReplaceAll(string(b), filepath.ToSlash(base), "$TMP")
		return []byte(strings.ReplaceAll(s, base, "$TMP"))
	}
	var text bytes.Buffer
	if err := RenderText(&text, c.All(), problems); err != nil {
		t.Fatal(err)
	}
	golden(t, "render.txt", clean(text.Bytes()))
	var js bytes.Buffer
	if err := RenderJSON(&js, c.All(), problems); err != nil {
		t.Fatal(err)
	}
	if !json.Valid(js.Bytes()) {
		t.Fatalf("invalid JSON:\n%s", js.Bytes())
	}
	golden(t, "render.json", clean(js.Bytes()))
}
