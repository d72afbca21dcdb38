package skill

import (
	"strconv"
	"strings"
)

// Substitute fills a body's argument placeholders, as Claude Code does for commands and skills:
//
//   - $ARGUMENTS is the whole argument string;
//   - $ARGUMENTS[N] is the N-th argument counting from 0;
//   - $1 … $9 are the arguments counting from 1 (the classic command form, which the
//     published commands use: "Read this plan file $1"); a missing one is empty;
//   - ${CLAUDE_SKILL_DIR} and ${KEEL_SKILL_DIR} are the skill's base directory.
//
// Arguments split at spaces; single or double quotes keep spaces in one argument. Anything
// else with a "$" stays as written: ${{ github.repository }}, $10, $HOME, {{args}}. When the
// body has no $ARGUMENTS and no positional placeholder and args is not empty, the arguments
// are appended as a last line "ARGUMENTS: <args>" so they still reach the model.
func Substitute(body, args, skillDir string) string {
	fields := splitArgs(args)
	var b strings.Builder
	used := false
	for i := 0; i < len(body); {
		j := strings.IndexByte(body[i:], '$')
		if j < 0 {
			b.WriteString(body[i:])
			break
		}
		b.WriteString(body[i : i+j])
		i += j
		rest := body[i:]
		switch {
		case strings.HasPrefix(rest, "$ARGUMENTS[") && indexArg(rest) >= 0:
			n := indexArg(rest)
			if n < len(fields) {
				b.WriteString(fields[n])
			}
			i += strings.IndexByte(rest, ']') + 1
			used = true
		case strings.HasPrefix(rest, "$ARGUMENTS"):
			b.WriteString(args)
			i += len("$ARGUMENTS")
			used = true
		case strings.HasPrefix(rest, "${CLAUDE_SKILL_DIR}") || strings.HasPrefix(rest, "${KEEL_SKILL_DIR}"):
			b.WriteString(skillDir)
			i += strings.IndexByte(rest, '}') + 1
		case len(rest) >= 2 && rest[1] >= '1' && rest[1] <= '9' && (len(rest) == 2 || !isDigit(rest[2])):
			n := int(rest[1] - '1')
			if n < len(fields) {
				b.WriteString(fields[n])
			}
			i += 2
			used = true
		default:
			b.WriteByte('$')
			i++
		}
	}
	out := b.String()
	if !used && strings.TrimSpace(args) != "" {
		if out != "" && !strings.HasSuffix(out, "\n") {
			out += "\n"
		}
		out += "\nARGUMENTS: " + args
	}
	return out
}

// indexArg reads N from a text starting "$ARGUMENTS[N]", or -1 when it is not that form.
func indexArg(rest string) int {
	inner, _, ok := strings.Cut(rest[len("$ARGUMENTS["):], "]")
	if !ok || inner == "" || len(inner) > 3 {
		return -1
	}
	n, err := strconv.Atoi(inner)
	if err != nil || n < 0 || strings.ContainsAny(inner, "+-") {
		return -1
	}
	return n
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// splitArgs splits an argument string at unquoted spaces; quotes group and are removed.
func splitArgs(s string) []string {
	var out []string
	var cur strings.Builder
	in, quote := false, byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote == 0 && (c == '"' || c == '\''):
			quote, in = c, true
		case quote == 0 && (c == ' ' || c == '\t' || c == '\n'):
			if in {
				out = append(out, cur.String())
				cur.Reset()
				in = false
			}
		default:
			cur.WriteByte(c)
			in = true
		}
	}
	if in {
		out = append(out, cur.String())
	}
	return out
}
