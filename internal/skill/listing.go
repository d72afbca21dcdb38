package skill

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/keel-dev/keel/internal/prompt"
)

// SectionName is the name of the system-prompt section holding the listing.
const SectionName = "skills"

// Listing budget: a description longer than MaxListedDescription is cut (with "…"), and the
// whole listing stops before DefaultListingBudget bytes (Options.ListingBudget overrides),
// ending with a line saying how many entries were left out. The listing is paid for on every
// request; the bodies are not.
const (
	MaxListedDescription = 250
	DefaultListingBudget = 8000
)

const listingIntro = "# Skills\n" +
	"These skills are available through the Skill tool. When a task matches a skill's description, " +
	"call Skill with {\"skill\": \"<name>\", \"args\": \"<arguments>\"} before doing the work yourself; " +
	"its full instructions load only then. When the user types /<name>, that skill is already loaded: " +
	"follow it rather than invoking it again."

// Listing renders what the model sees of the skills: one line of name and description per
// model-invocable entry, in name order. It holds no body text. The result depends only on
// the files loaded, so it belongs in a memoized section (see [Catalog.Section]).
func (c *Catalog) Listing() string {
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
	if len(listed) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString(listingIntro)
	b.WriteString("\n")
	for i, s := range listed {
		line := "\n- " + s.Name
		if d := oneLine(s.Description); d != "" {
			line += ": " + truncate(d, MaxListedDescription)
		}
		rest := len(listed) - i
		if b.Len()+len(line) > budget-len(moreLine(rest)) {
			b.WriteString(moreLine(rest))
			break
		}
		b.WriteString(line)
	}
	return b.String()
}

func moreLine(n int) string {
	return fmt.Sprintf("\n(%d more skills not listed to save space; the user can list them with `keel skills`.)", n)
}

// Section returns the memoized system-prompt section holding [Catalog.Listing].
func (c *Catalog) Section() prompt.Section { return prompt.Memoized(SectionName, c.Listing) }

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// truncate cuts s to at most n runes, ending with "…" when cut.
func truncate(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return strings.TrimRight(string(r[:n-1]), " ") + "…"
}
