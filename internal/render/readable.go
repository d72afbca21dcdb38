package render

import (
	"html"
	"regexp"
	"strings"
)

// The tags keel writes into messages for the model (Claude Code's formats): a person reading
// the conversation gets their meaning in words instead.
var (
	reminderRE   = regexp.MustCompile(`(?s)<system-reminder>.*?</system-reminder>\s*`)
	taskRE       = regexp.MustCompile(`(?s)<task-notification>(.*?)</task-notification>`)
	teammateRE   = regexp.MustCompile(`(?s)<teammate-message([^>]*)>\n?(.*?)\n?</teammate-message>`)
	attrRE       = regexp.MustCompile(`(\w+)="([^"]*)"`)
	bashInputRE  = regexp.MustCompile(`(?s)<bash-input>(.*?)</bash-input>`)
	bashOutputRE = regexp.MustCompile(`(?s)\s*<bash-(?:output|stdout|stderr)>(.*?)</bash-(?:output|stdout|stderr)>`)
)

// Readable is text from a message as a person reads it: keel's reminders to the model are
// left out, a background task's report reads "task a1b2 completed: …", a teammate's message
// "alice: …", a `!` command and its output "! cmd" and the output. Anything else is kept.
func Readable(text string) string {
	text = reminderRE.ReplaceAllString(text, "")
	text = taskRE.ReplaceAllStringFunc(text, func(s string) string {
		in := taskRE.FindStringSubmatch(s)[1]
		line := "task " + tagText(in, "task-id") + " " + tagText(in, "status")
		if sum := tagText(in, "summary"); sum != "" {
			line += ": " + sum
		}
		if e := tagText(in, "error"); e != "" {
			line += " (" + e + ")"
		}
		return line
	})
	text = teammateRE.ReplaceAllStringFunc(text, func(s string) string {
		m := teammateRE.FindStringSubmatch(s)
		attrs := map[string]string{}
		for _, a := range attrRE.FindAllStringSubmatch(m[1], -1) {
			attrs[a[1]] = html.UnescapeString(a[2])
		}
		who := attrs["teammate_id"]
		if t := attrs["type"]; t != "" {
			who += " (" + strings.ReplaceAll(t, "_", " ") + ")"
		}
		return who + ": " + strings.TrimSpace(m[2])
	})
	text = bashInputRE.ReplaceAllString(text, "! $1")
	text = bashOutputRE.ReplaceAllStringFunc(text, func(s string) string {
		out := strings.TrimSpace(bashOutputRE.FindStringSubmatch(s)[1])
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
