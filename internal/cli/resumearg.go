package cli

import (
	"strings"

	"github.com/keel-dev/keel"
)

// resumeWithoutValue lets --resume (-r) stand alone, as Claude Code's does: a --resume that
// ends the arguments or is followed by another flag becomes --resume=keel.ResumeChoose, which
// makes the terminal UI open its session picker. pflag has no optional values that take the
// next argument, and `--resume ID` must keep working.
func resumeWithoutValue(args []string) []string {
	out := make([]string, 0, len(args))
	for i, a := range args {
		if a == "--" {
			return append(out, args[i:]...)
		}
		if (a == "--resume" || a == "-r") && (i == len(args)-1 || strings.HasPrefix(args[i+1], "-")) {
			out = append(out, "--resume="+keel.ResumeChoose)
			continue
		}
		out = append(out, a)
	}
	return out
}
