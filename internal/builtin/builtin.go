// Package builtin holds keel's built-in tools — Bash, Glob, Grep, Read, Edit, Write,
// TodoWrite, BashOutput, KillShell, NotebookEdit, WebFetch, WebSearch — with Claude Code's names and input fields, because Claude
// models are trained on them and users' hooks and permission rules match on them.
//
// Tools do not check permissions (the batch runner's [tool.Gate] does), but they resolve every
// path input through [toolpath], as the check does, and open the path it returns; Glob and
// Grep leave out what the gate's [tool.Env.Hidden] filter hides. They keep their own
// invariants too: Write and Edit refuse to overwrite a file that was not read in this session or
// changed since, refuse to write through a symlink that leads out of the working directories,
// and leave the file intact on every error.
package builtin

import (
	"embed"
	"strings"

	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/webfetch"
	"github.com/keel-dev/keel/internal/websearch"
)

//go:embed *.md
var descriptions embed.FS

// description returns the embedded description of a tool, without its trailing newline.
func description(name string) string {
	data, err := descriptions.ReadFile(name + ".md")
	if err != nil {
		panic("builtin: missing description " + name + ".md")
	}
	return strings.TrimRight(string(data), "\n")
}

// GrepEngine picks how Grep searches.
type GrepEngine int

// The Grep engines. Both give the same answer; ripgrep is faster on large trees.
const (
	// GrepAuto uses ripgrep when it is on PATH, the built-in walker otherwise.
	GrepAuto GrepEngine = iota
	// GrepRipgrep always uses ripgrep to find the files with a match (an error result when
	// it is missing); keel searches those files itself, as the built-in walker would.
	GrepRipgrep
	// GrepBuiltin always uses the built-in parallel walker.
	GrepBuiltin
)

// Options configures the built-in tools. The zero value works; a session passes its own Jobs
// and Todos so it can close the jobs and observe the list.
type Options struct {
	// Jobs holds the background shells of Bash's run_in_background; nil makes a private one.
	Jobs *shell.Jobs
	// Todos holds the TodoWrite list; nil makes a private one.
	Todos *Todos
	// Grep picks the Grep engine.
	Grep GrepEngine
	// RipgrepPath is the rg binary; empty looks it up on PATH.
	RipgrepPath string
	// Fetcher fetches WebFetch's pages; nil makes a private one. Reader answers WebFetch's
	// prompts about them; nil returns the pages themselves.
	Fetcher *webfetch.Fetcher
	Reader  PageReader
	// Search runs WebSearch's searches; nil leaves WebSearch off (it says how to turn it on).
	Search websearch.Backend
	// Sandbox runs Bash's commands, when its policy is on; nil runs them without one.
	Sandbox *sandbox.Sandbox
}

// Tools returns the built-in tools in their fixed order: Bash, Glob, Grep, Read, Edit, Write,
// TodoWrite, BashOutput, KillShell, NotebookEdit, WebFetch, WebSearch. The order is part of
// every request's cache prefix, so it never changes at run time; new tools go at the end.
// The rarely needed ones (NotebookEdit, WebFetch, WebSearch) implement [tool.Deferrable].
func Tools(opts Options) []tool.Tool {
	if opts.Jobs == nil {
		opts.Jobs = shell.NewJobs()
	}
	if opts.Todos == nil {
		opts.Todos = NewTodos(nil)
	}
	return []tool.Tool{
		SandboxedBash(opts.Jobs, opts.Sandbox),
		Glob(),
		Grep(opts.Grep, opts.RipgrepPath),
		Read(),
		Edit(),
		Write(),
		TodoWrite(opts.Todos),
		BashOutput(opts.Jobs),
		KillShell(opts.Jobs),
		NotebookEdit(),
		WebFetch(opts.Fetcher, opts.Reader),
		WebSearch(opts.Search),
	}
}
