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
		"You have a persistent memory directory for this project at %s. What you keep there reaches your later sessions "+
		"in this project: the first %d lines of %s join the system prompt, and the other files there are for you to read when "+
		"they matter. Read, Write and Edit work in that directory without asking.\n"+
		"- Keep what a later session should know and could not easily find again: the user's corrections and preferences, "+
		"commands that build and test this project, decisions and why they were taken, pitfalls met. Leave out what the code or its "+
		"history already says, and the details of the task at hand.\n"+
		"- Keep %s a short index, one line per topic linking a topic file that holds the details (- [Debugging](debugging.md): "+
		"…). Correct or remove what turns out wrong.\n"+
		"- When the user asks you to remember something, keep it here; asked to forget it, remove it.\n\n",
		a.Dir, memory.AutoIndexLines, memory.AutoIndexName, memory.AutoIndexName)
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
