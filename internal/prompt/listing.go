package prompt

import (
	"slices"
	"strconv"
	"strings"

	"github.com/keel-dev/keel/internal/message"
)

// Entry is one item of a listing: a name and a one-line description (may be empty).
type Entry struct {
	Name        string
	Description string
}

// Listing is what an agent is told about the lists that change during a session: the agent
// types it can start, the skills it can load, the tools deferred behind tool search and the
// connected MCP servers' instructions. Measured on Claude Code, they travel in messages, not in
// tool descriptions or the system prompt: the tool list and the system prompt come first in
// every cached prefix, so a list there would invalidate everything after it whenever it
// changed, while a message costs only its own tokens — once, and a delta after that.
type Listing struct {
	Agents []Entry
	Skills []Entry
	// SkillsOmitted counts skills left out of Skills to keep the listing small.
	SkillsOmitted int
	// Deferred are tools whose schemas are not sent until the model loads them with the
	// tool named DeferredSearch.
	Deferred       []string
	DeferredSearch string
	MCP            []MCPServer
}

// The fixed first lines of the listing messages. [ParseListing] reads them back from a
// history, so they are part of the format: change them only together with the parser, and
// know that an old transcript is then read as if nothing had been announced.
const (
	reminderOpen  = "<system-reminder>\n"
	reminderClose = "\n</system-reminder>"

	agentsFull    = "Agent types the Agent tool can start (its subagent_type):"
	agentsAdded   = "Agent types added or changed:"
	agentsRemoved = "Agent types no longer available: "

	skillsFull    = "Skills the Skill tool can load:"
	skillsAdded   = "Skills added or changed:"
	skillsRemoved = "Skills no longer available: "

	deferredFull    = "Deferred tools: not callable until their schemas are loaded with %s (search by name or keyword):"
	deferredAdded   = "Deferred tools added:"
	deferredRemoved = "Deferred tools no longer available: "

	mcpFull = "Instructions from the MCP server %s:"
	mcpGone = "The MCP server %s is gone; its instructions no longer apply."
)

// Announce returns the messages that tell an agent which knows prev about cur: every section
// in full the first time (prev zero), then only what changed. Each section is its own text
// block, so a change in one leaves the others' text alone. Nothing changed gives nil.
func Announce(prev, cur Listing) []message.Block {
	var out []message.Block
	add := func(text string) { out = append(out, message.Text(reminderOpen+text+reminderClose)) }
	for _, s := range entrySections(prev, cur) {
		if text := s.announce(); text != "" {
			add(text)
		}
	}
	if text := announceDeferred(prev, cur); text != "" {
		add(text)
	}
	was := map[string]string{}
	for _, m := range prev.MCP {
		was[m.Name] = strings.TrimSpace(m.Instructions)
	}
	now := map[string]bool{}
	for _, m := range sortedServers(cur.MCP) {
		text := strings.TrimSpace(m.Instructions)
		if text == "" {
			continue
		}
		now[m.Name] = true
		if old, ok := was[m.Name]; !ok || old != text {
			add(strings.Replace(mcpFull, "%s", m.Name, 1) + "\n" + text)
		}
	}
	for _, m := range sortedServers(prev.MCP) {
		if strings.TrimSpace(m.Instructions) != "" && !now[m.Name] {
			add(strings.Replace(mcpGone, "%s", m.Name, 1))
		}
	}
	return out
}

// entrySection is one name-and-description list of a listing, with its three headers.
type entrySection struct {
	full, added, removed string
	prev, cur            []Entry
	omitted              int
}

func entrySections(prev, cur Listing) []entrySection {
	return []entrySection{
		{full: agentsFull, added: agentsAdded, removed: agentsRemoved, prev: normalized(prev.Agents), cur: normalized(cur.Agents)},
		{full: skillsFull, added: skillsAdded, removed: skillsRemoved, prev: normalized(prev.Skills), cur: normalized(cur.Skills),
			omitted: cur.SkillsOmitted},
	}
}

// normalized puts descriptions on one line, as they are rendered and read back.
func normalized(es []Entry) []Entry {
	out := make([]Entry, len(es))
	for i, e := range es {
		out[i] = Entry{Name: e.Name, Description: oneLine(e.Description)}
	}
	return out
}

func (s entrySection) announce() string {
	if len(s.prev) == 0 {
		if len(s.cur) == 0 {
			return ""
		}
		text := s.full + "\n" + renderEntries(s.cur)
		if s.omitted > 0 {
			text += "\n(" + strconv.Itoa(s.omitted) + " more are not listed to save space; the user can list them with `keel skills`.)"
		}
		return text
	}
	var added []Entry
	for _, e := range s.cur {
		if i := slices.IndexFunc(s.prev, func(p Entry) bool { return p.Name == e.Name }); i < 0 || s.prev[i] != e {
			added = append(added, e)
		}
	}
	var removed []string
	for _, p := range s.prev {
		if !slices.ContainsFunc(s.cur, func(e Entry) bool { return e.Name == p.Name }) {
			removed = append(removed, p.Name)
		}
	}
	var parts []string
	if len(added) > 0 {
		parts = append(parts, s.added+"\n"+renderEntries(added))
	}
	if len(removed) > 0 {
		parts = append(parts, s.removed+strings.Join(removed, ", "))
	}
	return strings.Join(parts, "\n")
}

func renderEntries(es []Entry) string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = "- " + e.Name
		if e.Description != "" {
			lines[i] += ": " + e.Description
		}
	}
	return strings.Join(lines, "\n")
}

func announceDeferred(prev, cur Listing) string {
	if len(prev.Deferred) == 0 {
		if len(cur.Deferred) == 0 {
			return ""
		}
		return strings.Replace(deferredFull, "%s", cur.DeferredSearch, 1) + "\n" + renderNames(cur.Deferred)
	}
	var added, removed []string
	for _, n := range cur.Deferred {
		if !slices.Contains(prev.Deferred, n) {
			added = append(added, n)
		}
	}
	for _, n := range prev.Deferred {
		if !slices.Contains(cur.Deferred, n) {
			removed = append(removed, n)
		}
	}
	var parts []string
	if len(added) > 0 {
		parts = append(parts, deferredAdded+"\n"+renderNames(added))
	}
	if len(removed) > 0 {
		parts = append(parts, deferredRemoved+strings.Join(removed, ", "))
	}
	return strings.Join(parts, "\n")
}

func renderNames(names []string) string {
	return "- " + strings.Join(names, "\n- ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

func sortedServers(in []MCPServer) []MCPServer {
	out := slices.Clone(in)
	slices.SortStableFunc(out, func(a, b MCPServer) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// OnlyReminders reports whether blocks are text the harness added — system reminders — and
// nothing the user wrote: such a message is no prompt to rewind to or show as the user's.
func OnlyReminders(blocks []message.Block) bool {
	for _, b := range blocks {
		if b.Type != message.TypeText || !strings.HasPrefix(b.Text, strings.TrimSuffix(reminderOpen, "\n")) {
			return false
		}
	}
	return len(blocks) > 0
}

// ParseListing returns what the announcements in history told the agent: the listing as the
// model knows it, to announce only changes from there (a resumed session, a fork child that
// inherited its parent's conversation). A history without announcements gives the zero
// Listing. DeferredSearch and SkillsOmitted are not recovered: they are never compared.
func ParseListing(history []message.Message) Listing {
	var l Listing
	for _, m := range history {
		if m.Role != message.RoleUser {
			continue
		}
		for _, b := range m.Content {
			if b.Type != message.TypeText {
				continue
			}
			body, ok := strings.CutPrefix(b.Text, reminderOpen)
			if !ok {
				continue
			}
			body, ok = strings.CutSuffix(body, reminderClose)
			if ok {
				l.apply(body)
			}
		}
	}
	return l
}

// apply folds one announcement into l.
func (l *Listing) apply(body string) {
	first, rest, _ := strings.Cut(body, "\n")
	for _, s := range []struct {
		full, added, removed string
		list                 *[]Entry
	}{
		{agentsFull, agentsAdded, agentsRemoved, &l.Agents},
		{skillsFull, skillsAdded, skillsRemoved, &l.Skills},
	} {
		switch {
		case first == s.full:
			*s.list = parseEntries(rest)
			return
		case first == s.added || strings.HasPrefix(first, s.removed):
			for _, part := range sectionParts(body, s.removed) {
				if names, ok := strings.CutPrefix(part, s.removed); ok {
					*s.list = slices.DeleteFunc(*s.list, func(e Entry) bool { return slices.Contains(splitNames(names), e.Name) })
					continue
				}
				for _, e := range parseEntries(strings.TrimPrefix(part, s.added+"\n")) {
					if i := slices.IndexFunc(*s.list, func(p Entry) bool { return p.Name == e.Name }); i >= 0 {
						(*s.list)[i] = e
					} else {
						*s.list = append(*s.list, e)
					}
				}
			}
			return
		}
	}
	deferredHead, _, _ := strings.Cut(deferredFull, "%s")
	switch {
	case strings.HasPrefix(first, deferredHead):
		l.Deferred = parseNames(rest)
		return
	case first == deferredAdded || strings.HasPrefix(first, deferredRemoved):
		for _, part := range sectionParts(body, deferredRemoved) {
			if names, ok := strings.CutPrefix(part, deferredRemoved); ok {
				l.Deferred = slices.DeleteFunc(l.Deferred, func(n string) bool { return slices.Contains(splitNames(names), n) })
				continue
			}
			l.Deferred = append(l.Deferred, parseNames(strings.TrimPrefix(part, deferredAdded+"\n"))...)
		}
		return
	}
	if name, ok := cutTemplate(first, mcpFull); ok {
		l.MCP = slices.DeleteFunc(l.MCP, func(m MCPServer) bool { return m.Name == name })
		l.MCP = append(l.MCP, MCPServer{Name: name, Instructions: rest})
		return
	}
	if name, ok := cutTemplate(first, mcpGone); ok {
		l.MCP = slices.DeleteFunc(l.MCP, func(m MCPServer) bool { return m.Name == name })
	}
}

// sectionParts splits a delta announcement into its "added" part and its "removed" line.
func sectionParts(body, removed string) []string {
	if i := strings.Index(body, "\n"+removed); i >= 0 {
		return []string{body[:i], body[i+1:]}
	}
	return []string{body}
}

func parseEntries(text string) []Entry {
	var out []Entry
	for _, line := range strings.Split(text, "\n") {
		item, ok := strings.CutPrefix(line, "- ")
		if !ok {
			continue
		}
		name, desc, _ := strings.Cut(item, ": ")
		out = append(out, Entry{Name: name, Description: desc})
	}
	return out
}

func parseNames(text string) []string {
	var out []string
	for _, line := range strings.Split(text, "\n") {
		if name, ok := strings.CutPrefix(line, "- "); ok {
			out = append(out, name)
		}
	}
	return out
}

func splitNames(s string) []string {
	var out []string
	for _, n := range strings.Split(s, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// cutTemplate matches line against a one-%s template and returns what stands for %s.
func cutTemplate(line, template string) (string, bool) {
	before, after, _ := strings.Cut(template, "%s")
	if !strings.HasPrefix(line, before) || !strings.HasSuffix(line, after) || len(line) <= len(before)+len(after) {
		return "", false
	}
	return line[len(before) : len(line)-len(after)], true
}
