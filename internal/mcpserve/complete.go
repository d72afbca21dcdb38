package mcpserve

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// maxCompletions is the most values one completion returns (the protocol's limit is 100).
const maxCompletions = 100

// completer completes a prompt's arguments and a file template's path with the workspace's
// paths: skills and commands mostly take files.
type completer struct {
	prompts PromptSource
	root    string
}

func (c *completer) complete(_ context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	p := req.Params
	var values []string
	if c.root != "" && p.Ref != nil && (p.Ref.Type == "ref/prompt" || p.Ref.Type == "ref/resource") {
		// An argument string may hold several words; the last is the one being typed.
		head, last := "", p.Argument.Value
		if i := strings.LastIndexByte(last, ' '); i >= 0 {
			head, last = last[:i+1], last[i+1:]
		}
		for _, v := range c.paths(last) {
			values = append(values, head+v)
		}
	}
	total := len(values)
	more := total > maxCompletions
	if more {
		values = values[:maxCompletions]
	}
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: values, Total: total, HasMore: more}}, nil
}

// paths returns the workspace paths starting with prefix (relative, slash-separated, a "/"
// after directories), sorted.
func (c *completer) paths(prefix string) []string {
	dir, base := filepath.Split(filepath.FromSlash(prefix))
	if filepath.IsAbs(dir) || strings.Contains(dir, "..") {
		return nil
	}
	entries, err := os.ReadDir(filepath.Join(c.root, dir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), base) || (strings.HasPrefix(e.Name(), ".") && !strings.HasPrefix(base, ".")) {
			continue
		}
		v := filepath.ToSlash(filepath.Join(dir, e.Name()))
		if e.IsDir() {
			v += "/"
		}
		out = append(out, v)
	}
	slices.Sort(out)
	return out
}
