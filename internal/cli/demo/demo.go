// Package demo holds what `keel demo` runs: the scripted model's scenario and the workspace
// it works in.
package demo

import (
	_ "embed"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

//go:embed scenario.yaml
var scenarioYAML []byte

// Prompt is what the demo asks the agent.
const Prompt = "The greeting in hello.sh is wrong. Fix it and run the script to check."

// FanOutPrompt is the demo's second prompt: three fork subagents and one background agent.
const FanOutPrompt = "Review the project from three angles in parallel, and survey it in the background."

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
