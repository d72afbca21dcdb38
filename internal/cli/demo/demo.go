// Package demo holds what `keel demo` runs: the scripted model's scenario and the workspace
// it works in.
package demo

import (
	"context"
	_ "embed"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

//go:embed scenario.yaml
var scenarioYAML []byte

// Prompt is what the demo asks the agent.
const Prompt = "The greeting in hello.sh is wrong. Fix it and run the script to check."

// FanOutPrompt is the demo's second prompt: three fork subagents and one background agent.
const FanOutPrompt = "Review the project from three angles in parallel, and survey it in the background."

// TeamPrompt is the demo's third prompt: a lead, two teammates and a four-task board.
const TeamPrompt = "Prepare a release with a small team."

// Scenario returns the scripted model's rules for the demo.
func Scenario() (*scripted.Scenario, error) {
	return scripted.ParseScenario("demo/scenario.yaml", scenarioYAML)
}

// Workspace writes the demo project into dir.
func Workspace(dir string) error {
	files := map[string]string{
		"hello.sh":  "#!/bin/sh\n# Greets whoever runs it.\necho \"Helo, keel!\"\n",
		"README.md": "# demo project\n\n`hello.sh` prints a greeting.\n",
	}
	for name, content := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o755); err != nil {
			return fmt.Errorf("write demo workspace: %w", err)
		}
	}
	return nil
}

// ChangelogServer is the demo's MCP server, run in-process with the official Go SDK: one tool
// that records a change, which the scripted model calls after the fix.
func ChangelogServer() *mcp.Server {
	srv := mcp.NewServer(&mcp.Implementation{Name: "changelog", Version: "1.0.0"},
		&mcp.ServerOptions{Instructions: "Record every change you make with log_change."})
	type entry struct {
		Summary string `json:"summary" jsonschema:"one line saying what changed"`
	}
	var (
		mu      sync.Mutex
		entries []string
	)
	mcp.AddTool(srv, &mcp.Tool{Name: "log_change", Description: "Record a change in the project's changelog."},
		func(_ context.Context, _ *mcp.CallToolRequest, in entry) (*mcp.CallToolResult, any, error) {
			mu.Lock()
			entries = append(entries, in.Summary)
			n := len(entries)
			mu.Unlock()
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("logged change #%d: %s", n, in.Summary)}}}, nil, nil
		})
	return srv
}
