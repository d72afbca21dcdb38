package prompt

import (
	"fmt"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/memory"
)

// Names of the dynamic sections, in prompt order.
const (
	SectionGuidance   = "guidance"
	SectionMemory     = "memory"
	SectionEnv        = "env"
	SectionLanguage   = "language"
	SectionMCP        = "mcp_instructions"
	SectionScratchpad = "scratchpad"
	SectionAppend     = "append"
)

// dynamicSections returns the per-session sections. Each is computed from values fixed for the
// session, except MCP instructions.
func dynamicSections(opts Options) []Section {
	sections := []Section{
		Memoized(SectionGuidance, func() string { return opts.Guidance }),
		Memoized(SectionMemory, func() string {
			if opts.Memory == nil {
				return ""
			}
			return renderMemory(opts.Memory())
		}),
		Memoized(SectionEnv, func() string {
			if opts.Environment == nil {
				return ""
			}
			return renderEnv(*opts.Environment)
		}),
		Memoized(SectionLanguage, func() string {
			if opts.Language == "" {
				return ""
			}
			return "# Language\nAlways answer the user in " + opts.Language + ". Code, identifiers and technical terms keep their own form."
		}),
		Memoized(SectionScratchpad, func() string {
			if opts.ScratchpadDir == "" {
				return ""
			}
			return "# Scratchpad\nFor temporary files use " + opts.ScratchpadDir +
				" instead of /tmp or the project; it belongs to this session and needs no permission prompt."
		}),
		Memoized(SectionAppend, func() string { return opts.AppendSystemPrompt }),
	}
	sections = append(sections, opts.Extra...)
	// Last, so a server that comes or goes changes only the final block of the prompt.
	return append(sections, Uncached(SectionMCP, "MCP servers connect, disconnect and change instructions between turns", func() string {
		if opts.MCP == nil {
			return ""
		}
		return renderMCP(opts.MCP())
	}))
}

// memoryIntro precedes the memory files.
const memoryIntro = "# Instructions from memory files\n" +
	"The user and the project provided the instructions below. Follow them; they override the defaults above, " +
	"and a later file overrides an earlier one."

func kindLabel(f memory.File) string {
	var what string
	switch f.Kind {
	case memory.KindManaged:
		what = "managed instructions for everyone on this machine"
	case memory.KindUser:
		what = "the user's own instructions for all projects"
	case memory.KindLocal:
		what = "the user's private instructions for this project, not checked in"
	default:
		what = "project instructions, checked in"
	}
	if f.Rule {
		what += "; a rule"
		if len(f.Globs) > 0 {
			what += " for " + strings.Join(f.Globs, ", ")
		}
	}
	if n := len(f.Chain); n > 0 {
		what += "; included by " + f.Chain[n-1]
	}
	return what
}

// RenderMemoryFile renders one memory file as the memory section does, for files that apply
// later in the session (path-scoped rules) and go into a message instead of the prompt.
func RenderMemoryFile(f memory.File) string {
	return fmt.Sprintf("Contents of %s (%s):\n\n%s", f.Display, kindLabel(f), strings.TrimSpace(f.Content))
}

func renderMemory(files []memory.File) string {
	var parts []string
	for _, f := range files {
		if strings.TrimSpace(f.Content) == "" {
			continue
		}
		parts = append(parts, RenderMemoryFile(f))
	}
	if len(parts) == 0 {
		return ""
	}
	return memoryIntro + "\n\n" + strings.Join(parts, "\n\n")
}

func renderEnv(env Environment) string {
	var b strings.Builder
	b.WriteString("# Environment\n")
	fmt.Fprintf(&b, "Working directory: %s\n", env.Cwd)
	fmt.Fprintf(&b, "Platform: %s\n", env.Platform)
	fmt.Fprintf(&b, "Date at session start: %s\n", env.Date)
	if !env.GitRepo {
		b.WriteString("Git repository: no\n")
		return b.String()
	}
	b.WriteString("Git repository: yes\n")
	if env.Branch != "" {
		fmt.Fprintf(&b, "Branch: %s\n", env.Branch)
	}
	if env.Status == "" {
		b.WriteString("Status at session start: clean\n")
	} else {
		b.WriteString("Status at session start (a snapshot; it does not update):\n" + env.Status + "\n")
	}
	return b.String()
}

func renderMCP(servers []MCPServer) string {
	servers = slices.Clone(servers)
	slices.SortStableFunc(servers, func(a, b MCPServer) int { return strings.Compare(a.Name, b.Name) })
	var b strings.Builder
	for _, s := range servers {
		if strings.TrimSpace(s.Instructions) == "" {
			continue
		}
		if b.Len() == 0 {
			b.WriteString("# MCP server instructions\nThe connected MCP servers describe how to use their tools:\n")
		}
		fmt.Fprintf(&b, "\n## %s\n%s\n", s.Name, strings.TrimSpace(s.Instructions))
	}
	return b.String()
}
