package toolgate

import (
	"context"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/lsp"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
)

// LSP is what the gate tells the language servers; *[lsp.Manager] is one.
type LSP interface {
	// Touch opens a file that was read.
	Touch(path string)
	// Before notes the diagnostics of a file an agent's edit is about to change.
	Before(agent, path string)
	// After reports the problems the edit introduced.
	After(ctx context.Context, agent, path string) lsp.Report
	// Late are diagnostics of the agent's earlier edits that arrived since.
	Late(agent string) []lsp.FileDiagnostics
}

var _ LSP = (*lsp.Manager)(nil)

// lspPaths are the files a call touches that its language servers may hear of: the paths the
// permission check judged (env.Paths, which the tool acts on), never the input resolved
// again — a link swapped in since would hand a server a file nobody approved — and none that
// the rules for reading keep out of searches (env.Hidden), since a server runs code the
// project controls.
func lspPaths(env *tool.Env) []string {
	out := make([]string, 0, len(env.Paths))
	for _, p := range env.Paths {
		if env.Hidden != nil && env.Hidden(p.Real) {
			continue
		}
		out = append(out, p.Real)
	}
	return out
}

// lspBefore notes, in the language servers of m (nil when none run), the diagnostics of
// the files an edit is about to change.
func lspBefore(m LSP, env *tool.Env, call tool.Call) {
	if m == nil || !isFileEdit(call.Name) {
		return
	}
	for _, p := range lspPaths(env) {
		m.Before(env.AgentID, p)
	}
}

// lspAfter opens files that were read in the servers of m (nil when none run), and adds to
// an edit's result the problems it introduced (and earlier edits' problems that arrived
// since).
func lspAfter(ctx context.Context, m LSP, env *tool.Env, call tool.Call, res *tool.Result, emit func(event.Event)) {
	if m == nil {
		return
	}
	var files []lsp.FileDiagnostics
	if !res.IsError {
		switch {
		case call.Name == "Read":
			for _, p := range lspPaths(env) {
				m.Touch(p)
			}
		case isFileEdit(call.Name):
			for _, p := range lspPaths(env) {
				rep := m.After(ctx, env.AgentID, p)
				files = append(files, rep.Files...)
				if rep.Note != "" {
					res.Content = append(res.Content, message.Text("("+rep.Note+")"))
					emit(event.Notice{Level: "warn", Text: rep.Note})
				}
			}
		}
	}
	files = append(files, m.Late(env.AgentID)...)
	if text := lsp.Format(files, env.State.Cwd); text != "" {
		res.Content = append(res.Content, message.Text(text))
	}
}
