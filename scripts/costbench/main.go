// Command costbench measures what the same scripted work costs with keel and with Claude Code:
// each harness runs one headless prompt against its own scripted model server (in this
// process, on 127.0.0.1), and the server's own prompt-cache accounting of every request it
// received — side requests included — is priced at the model's rates. Run it through
// scripts/bench-cost.sh, which installs the Claude Code binary of the Agent SDK package.
//
// Scenarios: reads-N (N Reads of 2.6 KB files, then an answer) and mixed-N (Read, Grep,
// Edit and a Bash test run with long output, in turn, N tool turns in all).
//
// Usage: costbench -keel BIN -claude BIN [-model M] [-scenarios reads-20,reads-50,mixed-30]
package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
)

func main() {
	keelBin := flag.String("keel", "", "keel binary")
	claudeBin := flag.String("claude", "", "Claude Code binary (the Agent SDK package's)")
	model := flag.String("model", "claude-sonnet-4-6", "model both harnesses ask for")
	names := flag.String("scenarios", "reads-20,reads-50,mixed-30", "comma-separated scenarios")
	keep := flag.Bool("keep", false, "keep the work directory and print its path")
	flag.Parse()
	if *keelBin == "" {
		fmt.Fprintln(os.Stderr, "costbench: -keel is required")
		os.Exit(2)
	}
	work, err := os.MkdirTemp("", "costbench-")
	check(err)
	if *keep {
		fmt.Fprintln(os.Stderr, "work directory:", work)
	} else {
		defer os.RemoveAll(work)
	}
	fmt.Printf("model %s; tokens as the scripted server accounts them (bytes/4), priced at the model's rates\n", *model)
	fmt.Printf("%-9s %-7s %5s %9s %11s %11s %8s %9s %8s\n", "scenario", "harness", "reqs", "input", "cache-write", "cache-read", "output", "cost $", "read %")
	for _, name := range strings.Split(*names, ",") {
		sc, err := parseScenario(name)
		check(err)
		var costs []float64
		for _, h := range harnesses(*keelBin, *claudeBin) {
			t, err := run(work, name, sc, h, *model)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s %s: %v\n", name, h.name, err)
				costs = append(costs, 0)
				continue
			}
			costs = append(costs, t.usd)
			fmt.Printf("%-9s %-7s %5d %9d %11d %11d %8d %9.4f %8.2f\n", name, h.name, t.requests, t.u.InputTokens,
				t.u.CacheCreationInputTokens, t.u.CacheReadInputTokens, t.u.OutputTokens, t.usd, 100*t.readShare())
		}
		if len(costs) == 2 && costs[1] > 0 && costs[0] > 0 {
			fmt.Printf("%-9s keel/claude cost ratio %.2f\n", name, costs[0]/costs[1])
		}
	}
}

func check(err error) {
	if err != nil {
		fmt.Fprintln(os.Stderr, "costbench:", err)
		os.Exit(1)
	}
}

// harness is one CLI and how it is asked to run a headless prompt.
type harness struct {
	name string
	cmd  func(prompt, model string) *exec.Cmd
	env  []string
	// noGrep: the harness has no Grep tool.
	noGrep bool
}

func harnesses(keelBin, claudeBin string) []harness {
	hs := []harness{{name: "keel", cmd: func(prompt, model string) *exec.Cmd {
		return exec.Command(keelBin, "-p", prompt, "--output-format", "json", "--model", model,
			"--dangerously-skip-permissions", "--max-turns", "200")
	}}}
	if claudeBin != "" {
		hs = append(hs, harness{name: "claude", cmd: func(prompt, model string) *exec.Cmd {
			return exec.Command(claudeBin, "-p", prompt, "--output-format", "json", "--model", model,
				"--dangerously-skip-permissions", "--max-turns", "200")
		}, noGrep: true, env: []string{"IS_SANDBOX=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1", "DISABLE_TELEMETRY=1",
			"DISABLE_AUTOUPDATER=1", "DISABLE_ERROR_REPORTING=1"}})
	}
	return hs
}

// totals is one run's account.
type totals struct {
	requests int
	u        message.Usage
	usd      float64
	// shared is the tokens each request shared with an earlier one, summed: what a perfect
	// cache would have read.
	shared int64
}

func (t totals) readShare() float64 {
	if t.shared == 0 {
		return 0
	}
	return float64(t.u.CacheReadInputTokens) / float64(t.shared)
}

// run lays out a fresh project, serves the scenario and runs the harness in it.
func run(work, name string, sc scenario, h harness, model string) (totals, error) {
	dir := filepath.Join(work, name+"-"+h.name)
	proj := filepath.Join(dir, "proj")
	home := filepath.Join(dir, "home")
	for _, d := range []string{proj, home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return totals{}, err
		}
	}
	if err := sc.layout(proj); err != nil {
		return totals{}, err
	}
	script, replies := sc.script(proj, !h.noGrep)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	srv, err := scripted.Start(ctx, "127.0.0.1:0", script, scripted.Options{Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return totals{}, err
	}
	defer srv.Close()
	cmd := h.cmd(startPrompt, model)
	cmd.Dir = proj
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + home, "KEEL_HOME=" + filepath.Join(home, ".keel"),
		"ANTHROPIC_BASE_URL=" + srv.URL(), "ANTHROPIC_API_KEY=sk-ant-bench"}, h.env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	runErr := cmd.Run()
	// The request log stays in the work directory (-keep) for a run that went wrong.
	var log bytes.Buffer
	for _, r := range srv.Requests() {
		fmt.Fprintf(&log, "%d rule=%q status=%d error=%q input=%d read=%d write=%d %s\n", r.N, r.Rule, r.Status, r.Error,
			r.Cache.InputTokens, r.Cache.CacheReadTokens, r.Cache.CacheCreationTokens, r.Body)
	}
	_ = os.WriteFile(filepath.Join(dir, "requests.log"), log.Bytes(), 0o644)
	if runErr != nil {
		return totals{}, fmt.Errorf("%v: %s", runErr, tail(errOut.String()+out.String()))
	}
	if !strings.Contains(out.String(), finalText) {
		return totals{}, fmt.Errorf("the run did not reach the end of the scenario (request log in %s): %s", dir, tail(out.String()))
	}
	var t totals
	for _, r := range srv.Requests() {
		if r.Status != 0 && r.Status != 200 {
			continue
		}
		var body struct {
			Model string `json:"model"`
		}
		_ = json.Unmarshal(r.Body, &body)
		c := r.Cache
		u := message.Usage{InputTokens: int64(c.UncachedTokens), CacheCreationInputTokens: int64(c.CacheCreationTokens),
			CacheCreation1hInputTokens: int64(c.CacheCreation1h), CacheReadInputTokens: int64(c.CacheReadTokens),
			OutputTokens: int64(replies[r.Rule])}
		usd, ok := cost.USD(body.Model, u)
		if !ok {
			return totals{}, fmt.Errorf("no price for model %q", body.Model)
		}
		t.requests++
		t.u = t.u.Add(u)
		t.usd += usd
		t.shared += int64(c.SharedPrefixTokens)
	}
	return t, nil
}

func tail(s string) string {
	if len(s) > 2000 {
		return "…" + s[len(s)-2000:]
	}
	return s
}
