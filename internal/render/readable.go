package render

import (
	"encoding/json"
	"html"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/message"
)

// The tags keel writes into messages for the model (Claude Code's formats): a person reading
// the conversation gets their meaning in words instead.
var (
	reminderRE   = lazy.Regexp{Expr: `(?s)<system-reminder>.*?</system-reminder>\s*`}
	taskRE       = lazy.Regexp{Expr: `(?s)<task-notification>(.*?)</task-notification>`}
	teammateRE   = lazy.Regexp{Expr: `(?s)<teammate-message([^>]*)>\n?(.*?)\n?</teammate-message>`}
	attrRE       = lazy.Regexp{Expr: `(\w+)="([^"]*)"`}
	bashInputRE  = lazy.Regexp{Expr: `(?s)<bash-input>(.*?)</bash-input>`}
	bashOutputRE = lazy.Regexp{Expr: `(?s)\s*<bash-(?:output|stdout|stderr)>(.*?)</bash-(?:output|stdout|stderr)>`}
)

// Readable is text from a message as a person reads it: keel's reminders to the model are
// left out, a background task's report reads "task a1b2 completed: …", a teammate's message
// "alice: …", a `!` command and its output "! cmd" and the output. Anything else is kept.
func Readable(text string) string {
	text = reminderRE.Get().ReplaceAllString(text, "")
	text = taskRE.Get().ReplaceAllStringFunc(text, func(s string) string {
		in := taskRE.Get().FindStringSubmatch(s)[1]
		line := "task " + tagText(in, "task-id") + " " + tagText(in, "status")
		if sum := tagText(in, "summary"); sum != "" {
			line += ": " + sum
		}
		if e := tagText(in, "error"); e != "" {
			line += " (" + e + ")"
		}
		return line
	})
	text = teammateRE.Get().ReplaceAllStringFunc(text, func(s string) string {
		m := teammateRE.Get().FindStringSubmatch(s)
		attrs := map[string]string{}
		for _, a := range attrRE.Get().FindAllStringSubmatch(m[1], -1) {
			attrs[a[1]] = html.UnescapeString(a[2])
		}
		who := attrs["teammate_id"]
		if t := attrs["type"]; t != "" {
			who += " (" + strings.ReplaceAll(t, "_", " ") + ")"
		}
		return who + ": " + strings.TrimSpace(m[2])
	})
	text = bashInputRE.Get().ReplaceAllString(text, "! $1")
	text = bashOutputRE.Get().ReplaceAllStringFunc(text, func(s string) string {
		out := strings.TrimSpace(bashOutputRE.Get().FindStringSubmatch(s)[1])
		if out == "" {
			return ""
		}
		return "\n" + out
	})
	return strings.TrimSpace(text)
}

// tagText is the text of the first <tag>…</tag> in s.
func tagText(s, tag string) string {
	_, rest, ok := strings.Cut(s, "<"+tag+">")
	if !ok {
		return ""
	}
	v, _, _ := strings.Cut(rest, "</"+tag+">")
	return strings.TrimSpace(v)
}

// MessageText is a team message as a person reads it: its text, and the fields of its data
// (a permission request's call, an approval, a reason) in words rather than JSON. Text that
// is itself a JSON object is read as data.
func MessageText(text string, data []byte) string {
	text = strings.TrimSpace(text)
	if len(data) == 0 && strings.HasPrefix(text, "{") && json.Valid([]byte(text)) {
		text, data = "", []byte(text)
	}
	words := dataWords(data)
	switch {
	case text == "":
		return words
	case words == "":
		return Readable(text)
	}
	return Readable(text) + " — " + words
}

// dataWords renders the fields of a structured message; ids and colours are left out.
func dataWords(data []byte) string {
	var m map[string]any
	if len(data) == 0 || json.Unmarshal(data, &m) != nil {
		return strings.TrimSpace(string(data))
	}
	var parts []string
	if req, ok := m["request"].(map[string]any); ok {
		tool, _ := req["Tool"].(string)
		input, _ := json.Marshal(req["Input"])
		parts = append(parts, CallLabel(tool, input, ""))
	}
	if a, ok := m["approve"].(bool); ok {
		parts = append(parts, map[bool]string{true: "approved", false: "declined"}[a])
	}
	if b, ok := m["behavior"].(string); ok {
		parts = append(parts, map[string]string{"allow": "allowed", "deny": "denied"}[b])
	}
	for _, k := range []string{"reason", "feedback", "plan", "summary"} {
		if v, ok := m[k].(string); ok && v != "" {
			parts = append(parts, k+": "+v)
		}
	}
	if s, ok := m["suggestions"].([]any); ok && len(s) > 0 {
		var rules []string
		for _, r := range s {
			if t, ok := r.(string); ok {
				rules = append(rules, t)
			}
		}
		parts = append(parts, "would allow "+strings.Join(rules, ", "))
	}
	return strings.Join(parts, "; ")
}

// MessageWords is a stored message in words on one line, for listings (`keel sessions
// show`): its text read as [Readable], its tool calls as Bash(go test ./...), its tool results
// as "result: " and their first line.
func MessageWords(m message.Message) string {
	var parts []string
	for _, b := range m.Content {
		switch b.Type {
		case message.TypeText:
			if t := Readable(b.Text); t != "" {
				parts = append(parts, t)
			}
		case message.TypeToolUse:
			parts = append(parts, "● "+CallLabel(b.Name, b.Input, ""))
		case message.TypeToolResult:
			what := "result"
			if b.IsError {
				what = "error"
			}
			parts = append(parts, what+": "+firstLine(message.Message{Content: b.Content}.TextOf()))
		}
	}
	return oneLine(strings.Join(parts, " · "), 1<<20)
}
