package agentdef

import (
	"cmp"
	"slices"
	"strings"
	"sync"
)

// Set is the merged result of loading every source: for each name, the definition from the
// highest-precedence source is active and the others are kept to show what it overrides. A Set
// is safe for concurrent use; only [Set.Replace] changes it. The definitions it returns are
// shared and must not be modified.
type Set struct {
	// mu guards defs, active and diags.
	mu     sync.RWMutex
	defs   []*Definition          // every definition, lowest precedence first
	active map[string]*Definition // name → winner
	diags  []Diagnostic
}

// Replace gives s the contents of other (the sources were read again: a plugin enabled or
// disabled); every holder of s sees the new definitions from then on.
func (s *Set) Replace(other *Set) {
	other.mu.RLock()
	defs, active, diags := other.defs, other.active, other.diags
	other.mu.RUnlock()
	s.mu.Lock()
	s.defs, s.active, s.diags = defs, active, diags
	s.mu.Unlock()
}

// NewSet builds a set from definitions given lowest precedence first: for each name the last
// one wins.
func NewSet(defs []*Definition) *Set {
	s := &Set{defs: slices.Clone(defs), active: map[string]*Definition{}}
	for _, d := range s.defs {
		s.active[d.Name] = d
	}
	return s
}

// Get returns the active definition of an agent name; names are matched exactly.
func (s *Set) Get(name string) (*Definition, bool) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	d, ok := s.active[name]
	return d, ok
}

// Agents returns the active definitions: built-in names first in their fixed order, then the
// others sorted by name, so that a list rendered from them is stable across runs (it may end
// up in a cached prompt).
func (s *Set) Agents() []*Definition {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := make([]*Definition, 0, len(s.active))
	for _, d := range s.active {
		out = append(out, d)
	}
	slices.SortFunc(out, func(a, b *Definition) int { return compareNames(a.Name, b.Name) })
	return out
}

// Diagnostics returns the errors and warnings of every file read, in load order.
func (s *Set) Diagnostics() []Diagnostic {
	s.mu.RLock()
	defer s.mu.RUnlock()
	return slices.Clone(s.diags)
}

// Errors returns only the diagnostics that dropped a definition.
func (s *Set) Errors() []Diagnostic {
	return slices.DeleteFunc(s.Diagnostics(), func(d Diagnostic) bool { return d.Severity != SeverityError })
}

func compareNames(a, b string) int {
	ia, ib := slices.Index(builtinNames, a), slices.Index(builtinNames, b)
	switch {
	case ia >= 0 && ib >= 0:
		return cmp.Compare(ia, ib)
	case ia >= 0:
		return -1
	case ib >= 0:
		return 1
	}
	return cmp.Or(cmp.Compare(strings.ToLower(a), strings.ToLower(b)), cmp.Compare(a, b))
}
