package permission

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/toolpath"
)

// SearchFilter returns what a search tool (Glob, Grep) applies to each file it finds, as
// tool.Env.Hidden and tool.Env.HiddenNote. hide reports whether the file is left out: a deny
// or an ask rule for reading covers it — by its path, another mount's path for it, or another
// hard link — in this policy or any ceiling, in every mode. A file a deny rule covers is left
// out silently; note says which files ask rules kept out and that reading one with the Read
// tool asks the user, so an ask rule's file is never quoted without the question. Both are nil
// when no such rule exists, so a search without them pays nothing. The filter is a snapshot:
// rules added later apply to later calls. It is safe for concurrent use.
func (c *Checker) SearchFilter() (hide func(path string) bool, note func() string) {
	f := c.readFilter()
	if f == nil {
		return nil, nil
	}
	return f.hide, f.note
}

// ReadFilter returns what keel applies to a file it reads into a prompt itself, not through a
// Read call the rules decide: a memory file's @include, a skill's @file mention. refused says
// why the file is left out — a deny or an ask rule for reading covers it or the file it links
// to, as [SearchFilter] finds them (nobody is asked: keel reads these files without anyone
// watching) — or "" when it may be read. It is nil when no such rule exists. The filter is a snapshot, safe for
// concurrent use.
func (c *Checker) ReadFilter() (refused func(path string) string) {
	f := c.readFilter()
	if f == nil {
		return nil
	}
	return func(path string) string {
		r, deny, why := f.cover(path)
		if real := toolpath.Real(path); r == nil && why == "" && real != path {
			// A link is read as what it leads to, as the Read tool resolves it.
			r, deny, why = f.cover(real)
		}
		switch {
		case why != "":
			return why
		case r == nil:
			return ""
		case deny && r.Mask() != "":
			return fmt.Sprintf("the sandbox masks it (%s)", r.Mask())
		case deny:
			return fmt.Sprintf("a Read deny rule covers it (%s)", r)
		}
		return fmt.Sprintf("a Read ask rule covers it (%s); the Read tool asks for it", r)
	}
}

// readFilter gathers the deny and ask rules for reading of this policy and its ceilings,
// anchored; nil when there are none.
func (c *Checker) readFilter() *searchFilter {
	pol := c.Policy()
	var cwd string
	if len(pol.Dirs) > 0 {
		cwd = pol.Dirs[0]
	}
	f := &searchFilter{home: c.home, rhome: resolveHome(c.home), cwd: cwd}
	for _, layer := range append([]Policy{pol}, pol.Ceilings...) {
		for _, r := range layer.Rules {
			if r.Behavior == Allow || !r.toolMatches("Read", KindRead) {
				continue
			}
			// Rule anchors are resolved once here, not once per file found.
			root := r.root(cwd)
			a := anchoredRule{r: r, root: root, rroot: toolpath.Real(root)}
			if r.Behavior == Deny {
				f.deny = append(f.deny, a)
			} else {
				f.ask = append(f.ask, a)
			}
		}
	}
	if len(f.deny)+len(f.ask) == 0 {
		return nil
	}
	f.mounts = readMounts()
	return f
}

type anchoredRule struct {
	r           Rule
	root, rroot string
}

func (a anchoredRule) covers(path, home, rhome string) bool {
	return a.r.Specifier == "" || a.r.path != nil && (a.r.path.match(path, a.root, home) || a.r.path.match(path, a.rroot, rhome))
}

type searchFilter struct {
	deny, ask        []anchoredRule
	home, rhome, cwd string
	mounts           []mount

	// mu guards links, asked and askRule.
	mu      sync.Mutex
	links   *linkIndex
	asked   []string
	askRule string
}

// maxNoted caps the files a note names.
const maxNoted = 20

func (f *searchFilter) hide(path string) bool {
	r, deny, why := f.cover(path)
	switch {
	case why != "":
		return f.noteAsked(path, why)
	case r == nil:
		return false
	case deny:
		return true
	}
	return f.noteAsked(path, r.String())
}

// cover returns the rule that covers path — a deny rule before an ask rule — by its path,
// another mount's path for it or another hard link; or why keel cannot tell (its other hard
// links could not all be checked).
func (f *searchFilter) cover(path string) (r *Rule, deny bool, why string) {
	names := append([]string{path}, aliasesIn(f.mounts, path)...)
	if id, n, ok := identity(path); ok && n > 1 {
		f.mu.Lock()
		if f.links == nil {
			var rules []*Rule
			for i := range f.deny {
				rules = append(rules, &f.deny[i].r)
			}
			for i := range f.ask {
				rules = append(rules, &f.ask[i].r)
			}
			f.links = newLinkIndex(rules, f.cwd, f.home)
		}
		others, complete := f.links.names(id)
		f.mu.Unlock()
		if !complete && len(others) == 0 {
			return nil, false, "its other hard links could not all be checked"
		}
		names = append(names, others...)
	}
	for _, n := range names {
		for i := range f.deny {
			if f.deny[i].covers(n, f.home, f.rhome) {
				return &f.deny[i].r, true, ""
			}
		}
	}
	for _, n := range names {
		for i := range f.ask {
			if f.ask[i].covers(n, f.home, f.rhome) {
				return &f.ask[i].r, false, ""
			}
		}
	}
	return nil, false, ""
}

func (f *searchFilter) noteAsked(path, rule string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	if !slices.Contains(f.asked, path) {
		f.asked = append(f.asked, path)
	}
	if f.askRule == "" {
		f.askRule = rule
	}
	return true
}

func (f *searchFilter) note() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.asked) == 0 {
		return ""
	}
	shown := f.asked[:min(len(f.asked), maxNoted)]
	rel := make([]string, len(shown))
	for i, p := range shown {
		rel[i] = p
		if r, err := filepath.Rel(f.cwd, p); err == nil && !strings.HasPrefix(r, "..") {
			rel[i] = r
		}
	}
	more := ""
	if n := len(f.asked) - len(shown); n > 0 {
		more = fmt.Sprintf(" and %d more", n)
	}
	return fmt.Sprintf("[Left out of this search: %d file(s) that the permission rules ask about before they are read (%s): %s%s. "+
		"Read one with the Read tool to ask the user for it.]", len(f.asked), f.askRule, strings.Join(rel, ", "), more)
}
