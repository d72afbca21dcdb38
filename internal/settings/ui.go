package settings

// StatusLine is the statusLine key, in Claude Code's shape: {"type": "command", "command":
// "~/.keel/statusline.sh", "padding": 0}. The terminal UI runs the command with the session's
// state as JSON on stdin and shows the first line it prints.
type StatusLine struct {
	Type    Value[string]
	Command Value[string]
	Padding Value[float64]
}

func statusLineKey() keyDef {
	return object("statusLine",
		scalar("type", func(s *Settings) *Value[string] { return &s.StatusLine.Type }, decOneOf("command")),
		scalar("command", func(s *Settings) *Value[string] { return &s.StatusLine.Command }, decNonEmpty),
		scalar("padding", func(s *Settings) *Value[float64] { return &s.StatusLine.Padding }, decNumberIn(0, 20, "a number of columns")),
	)
}
