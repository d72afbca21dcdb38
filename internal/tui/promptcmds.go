package tui

import (
	"context"
	"iter"
	"strings"

	tea "charm.land/bubbletea/v2"

	"github.com/keel-dev/keel"
)

// The commands that are a prompt (Claude Code's /review, /security-review, /pr-comments):
// the transcript shows the command as typed, the model gets the instructions.

const reviewPrompt = `Review a pull request as an experienced reviewer of this codebase.
- With no pull request named (%ARGS% is empty), list the open ones with "gh pr list" and ask which to review.
- Otherwise read it with "gh pr view %ARGS%" and its diff with "gh pr diff %ARGS%".
Then report, briefly: what the change does; problems of correctness, tests, naming, structure
and performance, each with the file and line; and what you would ask the author to change.`

const securityReviewPrompt = `Review the changes on the current branch for security problems.
Read "git diff" against the branch's merge base with the default branch (and uncommitted
changes), then look for: injection (shell, SQL, paths), secrets in code, missing
authentication or authorization checks, unsafe deserialization, unchecked input reaching
files, processes or the network, and dependencies added. Report each finding with its file
and line, how it could be exploited and how to fix it; say plainly if you found none. %ARGS%`

const prCommentsPrompt = `Show the comments of a GitHub pull request (%ARGS%, or this branch's).
Use "gh pr view --json number,url" to find it, then "gh api repos/{owner}/{repo}/issues/{number}/comments"
and "gh api repos/{owner}/{repo}/pulls/{number}/comments" for the review comments. List each
with its author, the file and line it is about, and the diff hunk it refers to; summarise
nothing away.`

// promptCommand runs the command name that is a prompt: template with %ARGS% replaced by
// the command's argument.
func promptCommand(name, template string) func(m *Model, arg string) tea.Cmd {
	return func(m *Model, arg string) tea.Cmd {
		return m.submitAs(strings.TrimSpace(name+" "+arg), strings.ReplaceAll(template, "%ARGS%", strings.TrimSpace(arg)))
	}
}

// submitAs sends prompt to the model, showing shown in the transcript instead.
func (m *Model) submitAs(shown, prompt string) tea.Cmd {
	if m.working {
		m.notice("wait for the current turn to end (or esc), then run " + shown + " again")
		return nil
	}
	m.addItem(&item{kind: kindUser, text: shown})
	b := m.b
	return m.startRun(func(ctx context.Context) iter.Seq2[keel.Event, error] { return b.Send(ctx, prompt) })
}
