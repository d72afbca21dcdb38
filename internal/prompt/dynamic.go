package prompt

import (
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/memory"
)

// Names of the dynamic sections, in prompt order.
const (
	SectionGuidance   = "guidance"
	SectionMemory     = "memory"
	SectionAutoMemory = "auto_memory"
	SectionEnv        = "env"
	SectionLanguage   = "language"
	SectionScratchpad = "scratchpad"
	SectionStyle      = "output_style"
	SectionAppend     = "append"
)

// dynamicSections returns the per-session sections, each computed from values fixed for the
// session. What changes during a session (MCP server instructions, skills, agent types,
// deferred tools) is not here but in messages: see [Listing].
func dynamicSections(opts Options) []Section {
	sections := []Section{
		Memoized(SectionGuidance, func() string { return opts.Guidance }),
		Memoized(SectionMemory, func() string {
			if opts.Memory == nil {
				return ""
			}
			return renderMemory(opts.Memory())
		}),
		// Memoized like every memory: what the model saves during the session changes the
		// prompt at the next session (or after /clear, a compaction), never mid-session.
		Memoized(SectionAutoMemory, func() string {
			if opts.AutoMemory == nil {
				if opts.AutoMemoryProblem != "" {
					return "# Auto memory\nThe persistent memory directory of this project is unavailable in this session (" +
						opts.AutoMemoryProblem + "): nothing you would keep there can reach later sessions, so do not try."
				}
				return ""
			}
			return renderAutoMemory(opts.AutoMemory)
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
		Memoized(SectionStyle, func() string { return opts.OutputStyle }),
		Memoized(SectionAppend, func() string { return opts.AppendSystemPrompt }),
	}
	return append(sections, opts.Extra...)
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
