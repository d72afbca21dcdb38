package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/keel-dev/keel/internal/provider/scripted"
)

// startPrompt opens every run; finalText is the scripted model's last answer, which tells a
// run that reached the end from one that stopped early.
const (
	startPrompt = "BENCH-START: work through the files of this project as you are told."
	finalText   = "BENCH-DONE: all steps finished."
)

// scenario is a chain of tool calls: each step's call is answered by the harness, and the
// step's result (recognised by its tool and a marker only that result holds) triggers the
// next.
type scenario struct {
	kind  string // reads or mixed
	turns int
}

func parseScenario(name string) (scenario, error) {
	kind, n, ok := strings.Cut(name, "-")
	turns, err := strconv.Atoi(n)
	if !ok || err != nil || turns < 1 || (kind != "reads" && kind != "mixed") {
		return scenario{}, fmt.Errorf("scenario %q: want reads-N or mixed-N", name)
	}
	return scenario{kind: kind, turns: turns}, nil
}

// files is how many source files the project needs.
func (s scenario) files() int {
	if s.kind == "reads" {
		return s.turns
	}
	return (s.turns + 3) / 4
}

// layout writes the project: files f01.go… of about 2.6 KB, and run-tests.sh, whose output
// (about 9 KB, with a progress bar redrawn by carriage returns) is what a test run prints.
func (s scenario) layout(proj string) error {
	for i := 1; i <= s.files(); i++ {
		var b strings.Builder
		fmt.Fprintf(&b, "// Package bench is file %02d of the benchmark project. MARK-R-%02d.\npackage bench\n\n", i, i)
		fmt.Fprintf(&b, "// GREP-%02d marks what the benchmark searches for.\nconst name%02d = \"file %02d\" // TODO-%02d\n\n", i, i, i, i)
		for j := 0; b.Len() < 2600; j++ {
			fmt.Fprintf(&b, "// Work%02d_%02d combines a and b.\nfunc Work%02d_%02d(a, b int) int { return a*%d + b }\n\n", i, j, i, j, j)
		}
		if err := os.WriteFile(filepath.Join(proj, fmt.Sprintf("f%02d.go", i)), []byte(b.String()), 0o644); err != nil {
			return err
		}
	}
	sh := `#!/bin/sh
# A test run: a redrawn progress bar, then one line per test and a summary.
for p in 10 20 30 40 50 60 70 80 90 100; do printf '\rbuilding [%-10s] %d%%' "$(printf '#%.0s' $(seq 1 $((p/10))))" $p; done
printf '\n'
i=1
while [ $i -le 90 ]; do
  printf '=== RUN   TestCase%s_%03d\n--- PASS: TestCase%s_%03d (0.00s)\n' "$1" $i "$1" $i
  i=$((i+1))
done
printf 'PASS\nok  \tbench\t0.%03ds\nRUN-%s-DONE\n' $((RANDOM % 1000)) "$1"
`
	return os.WriteFile(filepath.Join(proj, "run-tests.sh"), []byte(sh), 0o755)
}

// step is one tool call and how its result is recognised.
type step struct {
	tool  string
	input map[string]any
	after scripted.Match
}

// steps are the scenario's calls. A harness without a Grep tool (Claude Code's binary of
// the SDK package has none: its prompt says to grep through Bash) searches with Bash.
func (s scenario) steps(proj string, grepTool bool) []step {
	file := func(i int) string { return filepath.Join(proj, fmt.Sprintf("f%02d.go", i)) }
	read := func(i int) step {
		return step{"Read", map[string]any{"file_path": file(i)},
			scripted.Match{ToolResult: "Read", Contains: fmt.Sprintf("MARK-R-%02d.", i)}}
	}
	var out []step
	for t := 0; t < s.turns; t++ {
		if s.kind == "reads" {
			out = append(out, read(t+1))
			continue
		}
		i := t/4 + 1
		switch t % 4 {
		case 0:
			out = append(out, read(i))
		case 1:
			pattern := fmt.Sprintf("GREP-%02d", i)
			if grepTool {
				out = append(out, step{"Grep", map[string]any{"pattern": pattern, "path": proj, "output_mode": "content"},
					scripted.Match{ToolResult: "Grep", Contains: pattern}})
			} else {
				out = append(out, step{"Bash", map[string]any{"command": "grep -rn " + pattern + " .", "description": "Search the code"},
					scripted.Match{ToolResult: "Bash", Contains: pattern}})
			}
		case 2:
			out = append(out, step{"Edit", map[string]any{"file_path": file(i), "old_string": fmt.Sprintf("// TODO-%02d", i),
				"new_string": fmt.Sprintf("// DONE-%02d", i)}, scripted.Match{ToolResult: "Edit", Contains: fmt.Sprintf("f%02d.go", i)}})
		case 3:
			out = append(out, step{"Bash", map[string]any{"command": fmt.Sprintf("sh run-tests.sh %02d", i), "description": "Run the tests"},
				scripted.Match{ToolResult: "Bash", Contains: fmt.Sprintf("RUN-%02d-DONE", i)}})
		}
	}
	return out
}

// script is the scripted model's side: one rule per step, in order, and the final answer.
// replies gives each rule's output tokens as the server counts them (bytes/4 of the reply).
func (s scenario) script(proj string, grepTool bool) (*scripted.Scenario, map[string]int) {
	steps := s.steps(proj, grepTool)
	sc := &scripted.Scenario{Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("OK.")}}}
	replies := map[string]int{"fallback": tokens("OK.")}
	trigger := scripted.Match{UserText: "BENCH-START"}
	for k, st := range steps {
		name := fmt.Sprintf("step-%02d-%s", k+1, st.tool)
		in, _ := json.Marshal(st.input)
		sc.Rules = append(sc.Rules, scripted.Rule{Name: name, When: trigger, Times: 1,
			Reply: []scripted.Block{scripted.ToolUse(st.tool, st.input)}})
		replies[name] = tokens(string(in))
		trigger = st.after
	}
	sc.Rules = append(sc.Rules, scripted.Rule{Name: "final", When: trigger, Times: 1, Reply: []scripted.Block{scripted.Text(finalText)}})
	replies["final"] = tokens(finalText)
	return sc, replies
}

// tokens is the server's approximation: a quarter of the bytes, rounded up.
func tokens(s string) int { return (len(s) + 3) / 4 }
