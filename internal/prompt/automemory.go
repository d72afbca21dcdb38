package prompt

import (
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/memory"
)

// renderAutoMemory is the auto memory section: where the directory is, how to keep it, and
// the head of its index as it was when the section was computed.
func renderAutoMemory(a *memory.Auto) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# Auto memory\n"+
		"Your memory for this project, kept across sessions, is %s (Read, Write and Edit work there without asking). "+
		"The first %d lines of its %s join this prompt at each start: keep it a short index, a line per topic file "+
		"(- [Build](build.md): …). Keep what a later session needs and could not easily find again: the user's "+
		"corrections and preferences, build and test commands, decisions and why, pitfalls; not what the code or its history "+
		"says, nor the task at hand. Correct what proves wrong; asked to remember or forget something, do it here.\n\n",
		a.Dir, memory.AutoIndexLines, memory.AutoIndexName)
	idx, err := a.ReadIndex()
	switch {
	case err != nil:
		fmt.Fprintf(&b, "%s could not be read (%v).", memory.AutoIndexName, err)
	case idx.Text == "":
		fmt.Fprintf(&b, "%s is empty: nothing has been kept yet.", memory.AutoIndexName)
	default:
		fmt.Fprintf(&b, "Contents of %s at the start of this session:\n\n%s", memory.AutoIndexName, idx.Text)
		if idx.Truncated {
			fmt.Fprintf(&b, "\n\n(%s goes on past this point and the rest is not loaded: shorten it, moving details into topic files.)",
				memory.AutoIndexName)
		}
	}
	return b.String()
}
