// Package prompt builds keel's system prompt from named sections: static sections, identical
// for every user and session, then a fixed dynamic boundary, then the sections that vary per
// session (guidance, memory files, environment, language, scratchpad). Lists that change during
// a session go to messages instead ([Listing], [Announce]).
//
// The rendered prompt is kept per agent as [Rendered]; forks reuse those bytes instead of
// rendering again, because a re-render can differ and would miss the parent's cache.
package prompt

import (
	"bytes"
	"embed"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/memory"
	"github.com/keel-dev/keel/internal/provider"
)

// DynamicBoundary separates the static part of [Rendered.Bytes] from the dynamic part. It is a
// fixed string: everything before it is the same for every session and may be cached across
// them, so moving a section across it is an architectural change.
const DynamicBoundary = "<<<KEEL_DYNAMIC_BOUNDARY>>>"

// StaticName is the name of the single system block that holds all static sections, as it
// appears in [Rendered.Names] and cache diagnostics.
const StaticName = "static"

//go:embed static/*.md
var staticFS embed.FS

// staticOrder lists the static sections in prompt order; each is static/<name>.md.
var staticOrder = []string{
	"identity", "system", "doing_tasks", "actions", "using_tools", "tone", "output_efficiency",
}

// MCPServer is one connected MCP server's instructions (announced in a [Listing]).
type MCPServer struct {
	Name         string
	Instructions string
}

// Options describe one agent's prompt. The zero value gives the default static prompt and no
// dynamic sections.
type Options struct {
	// SystemPrompt, when set, replaces all static sections (--system-prompt).
	SystemPrompt string
	// AppendSystemPrompt is added as the last section (--append-system-prompt).
	AppendSystemPrompt string
	// Guidance is session-specific advice, such as which optional tools are on.
	Guidance string
	// Memory returns the memory files to include; called once per memoization.
	Memory func() []memory.File
	// AutoMemory is the project's auto memory directory; nil leaves the section out.
	AutoMemory *memory.Auto
	// AutoMemoryProblem, when AutoMemory is nil, is why the auto memory is unavailable (a
	// directory keel cannot write): the section says so, so the model does not try.
	AutoMemoryProblem string
	// Environment is the session's environment snapshot; nil leaves the section out.
	Environment *Environment
	// Language, when set, asks the model to answer in it.
	Language string
	// ScratchpadDir is a per-session directory for temporary files.
	ScratchpadDir string
	// Extra are further sections other packages own, placed after the built-in dynamic ones.
	Extra []Section
	// OutputStyle is the instructions of the output style the user chose (internal/outputstyle),
	// "" for keel's own: a style leaves out the concise-output section, and the coding
	// instructions too unless KeepCodingInstructions, and its text comes before the appended
	// prompt.
	OutputStyle            string
	KeepCodingInstructions bool
}

// Rendered is a system prompt ready to send. Treat it as immutable: forks and post-turn
// helpers share it.
type Rendered struct {
	// Blocks are the system blocks: one block with every static section, then one block per
	// non-empty dynamic section.
	Blocks []provider.SystemBlock
	// Names parallels Blocks: [StaticName], then the dynamic section names.
	Names []string
	// Bytes is the whole prompt as one text, static part, [DynamicBoundary], dynamic part. Equal
	// Blocks give equal Bytes; it is what forks and cache-safe parameters keep.
	Bytes []byte
}

// Builder renders one agent's system prompt and remembers memoized sections. It is safe for
// concurrent use.
type Builder struct {
	static  []Section
	dynamic []Section

	// mu guards memo.
	mu   sync.Mutex
	memo map[string]string
}

// New returns a Builder with keel's default sections for opts.
func New(opts Options) *Builder {
	return NewFromSections(staticSections(opts), dynamicSections(opts))
}

// NewFromSections returns a Builder over the given sections, for callers that assemble their
// own. Section names must be unique.
func NewFromSections(static, dynamic []Section) *Builder {
	seen := map[string]bool{StaticName: true}
	for _, s := range append(append([]Section(nil), static...), dynamic...) {
		if seen[s.name] {
			panic("prompt: duplicate section " + s.name)
		}
		seen[s.name] = true
	}
	return &Builder{static: static, dynamic: dynamic, memo: map[string]string{}}
}

// Sections returns the static and the dynamic sections, in order.
func (b *Builder) Sections() (static, dynamic []Section) {
	return append([]Section(nil), b.static...), append([]Section(nil), b.dynamic...)
}

// Clear forgets memoized sections, so the next Render recomputes them (after /clear or a
// compaction, when memory files may be re-read).
func (b *Builder) Clear() {
	b.mu.Lock()
	defer b.mu.Unlock()
	clear(b.memo)
}

// Render returns the system prompt. Sections that render empty are left out.
func (b *Builder) Render() Rendered {
	b.mu.Lock()
	defer b.mu.Unlock()
	var static []string
	for _, s := range b.static {
		if t := b.text(s); t != "" {
			static = append(static, t)
		}
	}
	var r Rendered
	var all bytes.Buffer
	staticText := strings.Join(static, "\n\n")
	r.Blocks = append(r.Blocks, provider.SystemBlock{Text: staticText})
	r.Names = append(r.Names, StaticName)
	all.WriteString(staticText)
	all.WriteString("\n\n" + DynamicBoundary)
	for _, s := range b.dynamic {
		t := b.text(s)
		if t == "" {
			continue
		}
		r.Blocks = append(r.Blocks, provider.SystemBlock{Text: t})
		r.Names = append(r.Names, s.name)
		all.WriteString("\n\n" + t)
	}
	all.WriteByte('\n')
	r.Bytes = all.Bytes()
	return r
}

// text returns a section's text, from the memo when it is memoized. b.mu is held.
func (b *Builder) text(s Section) string {
	if s.reason != "" {
		return strings.TrimSpace(s.compute())
	}
	if t, ok := b.memo[s.name]; ok {
		return t
	}
	t := strings.TrimSpace(s.compute())
	b.memo[s.name] = t
	return t
}

// staticSections returns the default static sections, or one "custom" section holding
// opts.SystemPrompt.
func staticSections(opts Options) []Section {
	if opts.SystemPrompt != "" {
		text := opts.SystemPrompt
		return []Section{Memoized("custom", func() string { return text })}
	}
	out := make([]Section, 0, len(staticOrder))
	for _, name := range staticOrder {
		if opts.OutputStyle != "" && (name == "output_efficiency" || name == "doing_tasks" && !opts.KeepCodingInstructions) {
			continue
		}
		data, err := staticFS.ReadFile("static/" + name + ".md")
		if err != nil {
			panic("prompt: missing embedded section " + name) // a build defect
		}
		text := string(data)
		out = append(out, Memoized(name, func() string { return text }))
	}
	return out
}
