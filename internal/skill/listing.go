package skill

import (
	"strings"
	"unicode/utf8"

	"github.com/keel-dev/keel/internal/prompt"
)

// Listing budget: a description longer than MaxListedDescription is cut (with "…"), and the
// listing stops before DefaultListingBudget bytes of entries (Options.ListingBudget
// overrides); the entries left out are counted. The listing is paid for in every
// conversation; the bodies only when loaded.
const (
	MaxListedDescription = 250
	DefaultListingBudget = 8000
)

// Entries returns what the model is told of the skills: the name and description of each
// model-invocable entry, in name order, within the budget, and how many were left out. It
// holds no body text. The session announces them in a message (see [prompt.Listing]), not
// in the system prompt or the Skill tool's description, so a skill that appears mid-session
// costs only its own line.
func (c *Catalog) Entries() (entries []prompt.Entry, omitted int) {
	budget := c.opts.ListingBudget
	if budget <= 0 {
		budget = DefaultListingBudget
	}
	var listed []*Skill
	for _, s := range c.sorted() {
		if s.ModelInvocable() {
			listed = append(listed, s)
		}
	}
	used := 0
	for i, s := range listed {
		e := prompt.Entry{Name: s.Name, Description: truncate(oneLine(s.Description), MaxListedDescription)}
		used += len("- " + e.Name + ": " + e.Description + "\n")
		if used > budget {
			return entries, len(listed) - i
		}
		entries = append(entries, e)
	}
	return entries, 0
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncate cuts s to at most n runes, ending with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}
