// Command costbench measures what the same scripted work costs with keel and with Claude Code:
// each harness runs one headless prompt against its own scripted model server (in this
// process, on 127.0.0.1), and the server's own prompt-cache accounting of every request it
// received — side requests included — is priced at the model's rates. Run it through
// scripts/bench-cost.sh, which installs the Claude Code binary of the Agent SDK package.
//
// Scenarios: reads-N (N Reads of 2.6 KB files, then an answer) and mixed-N (Read, Grep,
// Edit and a Bash test run with long output, in turn, N tool turns in all).
//
// With -provider-clearing, keel runs a second time with "clearToolResults": "provider" (the
// row keel-api): the scripted server then clears old tool results itself, as Anthropic's
// context editing does, and keel clears nothing.
//
// Usage: costbench -keel BIN -claude BIN [-model M] [-scenarios reads-20,reads-50,mixed-30] [-provider-clearing]
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
	providerClearing := flag.Bool("provider-clearing", false, `also run keel with "clearToolResults": "provider" (row keel-api)`)
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
	fmt.Printf("%-9s %-8s %5s %9s %11s %11s %8s %9s %8s\n", "scenario", "harness", "reqs", "input", "cache-write", "cache-read", "output", "cost $", "read %")
	for _, name := range strings.Split(*names, ",") {
		sc, err := parseScenario(name)
		check(err)
		costs := map[string]float64{}
		hs := harnesses(*keelBin, *claudeBin, *providerClearing)
		for i, h := range hs {
			t, err := run(filepath.Join(work, fmt.Sprintf("%s-%d", name, i)), sc, h, *model)
			if err != nil {
				fmt.Fprintf(os.Stderr, "%s %s: %v\n", name, h.name, err)
				continue
			}
			costs[h.name] = t.usd
			fmt.Printf("%-9s %-8s %5d %9d %11d %11d %8d %9.4f %8.2f\n", name, h.name, t.requests, t.u.InputTokens,
				t.u.CacheCreationInputTokens, t.u.CacheReadInputTokens, t.u.OutputTokens, t.usd, 100*t.readShare())
		}
		for _, h := range hs {
			if h.name != "claude" && costs[h.name] > 0 && costs["claude"] > 0 {
				fmt.Printf("%-9s %s/claude cost ratio %.3f\n", name, h.name, costs[h.name]/costs["claude"])
			}
		}
		if costs["keel"] > 0 && costs["keel-api"] > 0 {
			fmt.Printf("%-9s keel-api/keel cost ratio %.3f\n", name, costs["keel-api"]/costs["keel"])
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

func harnesses(keelBin, claudeBin string, providerClearing bool) []harness {
	keel := func(extra ...string) func(prompt, model string) *exec.Cmd {
		return func(prompt, model string) *exec.Cmd {
			return exec.Command(keelBin, append([]string{"-p", prompt, "--output-format", "json", "--model", model,
				"--dangerously-skip-permissions", "--max-turns", "200"}, extra...)...)
		}
	}
	hs := []harness{{name: "keel", cmd: keel()}}
	if providerClearing {
		hs = append(hs, harness{name: "keel-api", cmd: keel("--settings", `{"clearToolResults": "provider"}`)})
	}
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

// run lays out a fresh project in dir, serves the scenario and runs the harness in it. The
// directories of all harnesses' runs have names of one length, so the paths in their prompts
// cost the same.
func run(dir string, sc scenario, h harness, model string) (totals, error) {
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
