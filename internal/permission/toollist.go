package permission

import (
	"strings"
	"unicode"
)

// SplitToolList splits a tool list into its entries, as every place keel reads one writes it:
// --allowedTools and --disallowedTools, an agent's tools and disallowedTools, a skill's or
// command's allowed-tools, an agent's mcpServers names. Entries are separated by commas and
// white space, except inside parentheses, so "Bash(git log:*) Edit,Read" is three; quotes
// around an entry are dropped ("Read", 'Grep'). An unclosed parenthesis keeps the rest as one
// entry, for [ParseRule] to report.
func SplitToolList(list string) []string {
	parts, unclosed := splitToolList(list)
	if unclosed != "" {
		parts = append(parts, unclosed)
	}
	return parts
}

func splitToolList(list string) (parts []string, unclosed string) {
	var (
		cur   strings.Builder
		depth int
	)
	flush := func() {
		if item := strings.TrimSpace(strings.Trim(cur.String(), `"'`)); item != "" {
			parts = append(parts, item)
		}
		cur.Reset()
	}
	for _, c := range list {
		switch {
		case c == '(':
			depth++
		case c == ')' && depth > 0:
			depth--
		case depth == 0 && (c == ',' || unicode.IsSpace(c)):
			flush()
			continue
		}
		cur.WriteRune(c)
	}
	if depth > 0 {
		return parts, cur.String()
	}
	flush()
	return parts, ""
}
