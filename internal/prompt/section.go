package prompt

// Section is one named part of the system prompt. A memoized section is computed the first
// time it is rendered and kept until [Builder.Clear]; an uncached section is recomputed on
// every render and so can change the prompt between requests, which costs a prompt-cache miss.
// Construct sections with [Memoized] or [Uncached].
type Section struct {
	name    string
	compute func() string
	// reason is why the section may not be cached; empty for a memoized section.
	reason string
}

// Memoized returns a section computed once and kept until the prompt is cleared (a /clear or a
// compaction).
func Memoized(name string, compute func() string) Section {
	if name == "" || compute == nil {
		panic("prompt: section needs a name and a compute function")
	}
	return Section{name: name, compute: compute}
}

// Uncached returns a section recomputed on every render. Every change of its text breaks the
// prompt cache for everything after it, so the call site must say why caching is impossible;
// an empty reason is a programming error.
func Uncached(name, reason string, compute func() string) Section {
	if reason == "" {
		panic("prompt: uncached section " + name + " needs a reason")
	}
	s := Memoized(name, compute)
	s.reason = reason
	return s
}

// Name is the section's name, as shown in cache diagnostics.
func (s Section) Name() string { return s.name }

// UncachedReason is why the section is recomputed every request, or "" for a memoized one.
func (s Section) UncachedReason() string { return s.reason }
