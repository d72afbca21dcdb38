package permission

import (
	"encoding/json"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/toolpath"
)

// Kind says which family of rules and mode semantics apply to a tool.
type Kind int

// The kinds. The zero value means "derive it from the tool name".
const (
	KindUnknown Kind = iota
	// KindRead tools read files; Read(...) rules apply, and an Edit(...)
	// allow rule also allows reading the same paths.
	KindRead
	// KindEdit tools change files; Edit(...) rules apply.
	KindEdit
	// KindShell is Bash: Bash(...) rules apply to every sub-command.
	KindShell
	// KindFetch is WebFetch: WebFetch(domain:...) rules apply to the URL.
	KindFetch
	// KindSearch is WebSearch: it changes nothing, but its query leaves the machine, so it
	// is asked about (as in Claude Code) unless a rule allows it.
	KindSearch
	// KindSafe tools change only session state (the todo list, starting a
	// subagent whose own calls are checked) and are allowed unless a rule
	// says otherwise.
	KindSafe
	// KindOther is everything else, MCP tools included: allowed when
	// read-only, asked otherwise.
	KindOther
)

// PlanExitTool is the tool a model calls to leave plan mode; plan mode lets
// it through so the plan can be approved.
const PlanExitTool = "ExitPlanMode"

// kinds maps built-in tool names to their kind. MultiEdit and NotebookRead
// are Claude Code names keel may not ship; rules naming them still work.
var kinds = lazy.Value[map[string]Kind]{New: func() map[string]Kind {
	return map[string]Kind{
		"Write": KindEdit, "Edit": KindEdit, "MultiEdit": KindEdit, "NotebookEdit": KindEdit,
		"Read": KindRead, "Glob": KindRead, "Grep": KindRead, "LS": KindRead, "NotebookRead": KindRead,
		"Bash":      KindShell,
		"WebFetch":  KindFetch,
		"WebSearch": KindSearch,
		"TodoWrite": KindSafe, "Agent": KindSafe, "ToolSearch": KindSafe,
		// The team's tools change only the team's shared state; SendMessage only talks.
		"SendMessage": KindSafe, "TaskCreate": KindSafe, "TaskUpdate": KindSafe,
	}
}}

// Request describes one tool call for a permission decision. The tool fills
// in what it knows; the engine never looks at the raw input.
type Request struct {
	// Tool is the name the model used: "Bash", "Edit", or an MCP tool's
	// fully qualified "mcp__server__tool". "Task" is read as "Agent".
	Tool string
	// Kind overrides the kind derived from Tool; leave it zero for
	// built-ins.
	Kind Kind
	// ReadOnly is the tool's own claim that this call changes nothing.
	ReadOnly bool
	// Paths are the files a file tool touches, absolute or relative to Cwd.
	// A read tool with no paths (Glob without a path) is taken to touch Cwd.
	Paths []string
	// Resolved, when it holds one entry per path of Paths, is Paths resolved already
	// ([Request.Resolve]): the check judges these instead of resolving Paths again, and the
	// caller hands the same to the tool, which acts on them. Not sent over the wire (a
	// teammate's question to its lead): it describes this process's view of the files.
	Resolved []toolpath.Path `json:"-"`
	// Command is the Bash command line.
	Command string
	// URL is the WebFetch address.
	URL string
	// Argument is what other specifiers match exactly: the subagent type for
	// Agent(Explore), a skill name, or a custom tool's key.
	Argument string
	// Cwd is the directory relative paths are resolved against; empty means
	// the checker's first working directory.
	Cwd string
	// Input is the call's raw input, for askers that show or forward it
	// (the stream-json control protocol); rules never look at it.
	Input json.RawMessage
	// ToolUseID is the tool_use being decided, for askers that report it.
	ToolUseID string
}

// Resolve fills r.Resolved: each of r.Paths resolved once, relative to r.Cwd, "~" being the
// user's home as the tools read it. Whoever runs the call resolves it here and hands
// r.Resolved to the tool: resolving twice — once to check, once to open — let a command in the
// background swap a link in for the file between the two, so that the check judged one file
// and the tool opened another (adversary10 N6). With no Cwd it does nothing, and the check
// resolves as before.
func (r *Request) Resolve() {
	if r.Cwd == "" || len(r.Paths) == 0 {
		return
	}
	r.Resolved = make([]toolpath.Path, len(r.Paths))
	for i, p := range r.Paths {
		r.Resolved[i] = toolpath.Resolve(p, r.Cwd, "")
	}
}

func canonicalTool(name string) string {
	if name == "Task" {
		return "Agent"
	}
	return name
}

func (r Request) kind() Kind {
	if r.Kind != KindUnknown {
		return r.Kind
	}
	if k, ok := kinds.Get()[canonicalTool(r.Tool)]; ok {
		return k
	}
	return KindOther
}

// RequestFor describes a tool call from the input fields Claude Code's tools use (file_path,
// notebook_path, path, command, url, subagent_type, skill); a tool without them is judged by
// its name and read-only claim. A Glob is a read of the directory it searches, which its
// pattern may name ([toolpath.GlobRoot]). MCP tools are KindOther.
func RequestFor(toolName string, readOnly bool, input json.RawMessage, cwd string) Request {
	var in struct {
		Pattern      string `json:"pattern"`
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
		Path         string `json:"path"`
		Command      string `json:"command"`
		URL          string `json:"url"`
		SubagentType string `json:"subagent_type"`
		Skill        string `json:"skill"`
	}
	_ = json.Unmarshal(input, &in)
	req := Request{Tool: toolName, ReadOnly: readOnly, Cwd: cwd, Command: in.Command, URL: in.URL, Input: input}
	if toolName == "Glob" && cwd != "" {
		root, _ := toolpath.GlobRoot(in.Pattern, in.Path, cwd, "")
		in.Path = root.Abs
	}
	for _, p := range []string{in.FilePath, in.NotebookPath, in.Path} {
		if p != "" {
			req.Paths = append(req.Paths, p)
		}
	}
	switch {
	case in.SubagentType != "":
		req.Argument = in.SubagentType
	case in.Skill != "":
		req.Argument = in.Skill
	}
	if strings.HasPrefix(toolName, "mcp__") {
		req.Kind = KindOther
	}
	return req
}
