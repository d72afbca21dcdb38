// Package embed shows a program embedding keel: a session with a tool of its own, written
// against the public API alone.
package embed

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel"
)

// WordCount is a tool that counts the words of a file in the agent's working directory.
type WordCount struct{}

var _ keel.Tool = WordCount{}

func (WordCount) Name() string        { return "WordCount" }
func (WordCount) Description() string { return "Counts the words of a text file." }
func (WordCount) InputSchema() json.RawMessage {
	return json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","description":"the file, relative to the working directory"}},"required":["path"],"additionalProperties":false}`)
}
func (WordCount) ReadOnly(json.RawMessage) bool        { return true }
func (WordCount) ConcurrencySafe(json.RawMessage) bool { return true }

// Call reads the file from the agent's working directory.
func (WordCount) Call(ctx context.Context, env keel.ToolEnv, input json.RawMessage) (keel.ToolResult, error) {
	var in struct {
		Path string `json:"path"`
	}
	if err := json.Unmarshal(input, &in); err != nil {
		return keel.ToolResult{}, err
	}
	env.Progress("counting " + in.Path)
	b, err := os.ReadFile(filepath.Join(env.Cwd, in.Path))
	if err != nil {
		return keel.ErrorResult(fmt.Sprintf("cannot read %s: %v", in.Path, err)), nil
	}
	return keel.TextResult(fmt.Sprintf("%s has %d words", in.Path, len(strings.Fields(string(b))))), nil
}

// Ask runs prompt in a session with the WordCount tool and returns the final answer.
func Ask(ctx context.Context, opts keel.Options, prompt string) (string, error) {
	opts.Tools = append(opts.Tools, WordCount{})
	opts.PermissionMode = keel.ModeDefault
	sess, err := keel.New(ctx, opts)
	if err != nil {
		return "", err
	}
	defer sess.Close()
	for ev, err := range sess.Send(ctx, prompt) {
		if err != nil {
			return "", err
		}
		if res, ok := ev.(keel.Result); ok {
			if res.IsError {
				return "", fmt.Errorf("%s: %s", res.Subtype, res.Text)
			}
			return res.Text, nil
		}
	}
	return "", fmt.Errorf("the session ended without a result")
}
