package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// sdkSuiteTimeout bounds the whole node suite; one test's limit is waittest.Timeout().
const sdkSuiteTimeoutFactor = 10

// TestAgentSDK drives keel through the official TypeScript Agent SDK, pinned in
// scripts/agent-sdk.txt and installed by scripts/test.sh: node's test runner runs
// testdata/sdk/*.test.mjs, where every query sets pathToClaudeCodeExecutable to keel built
// from this tree, against the scripted model of testdata/sdk/scenario.yaml on 127.0.0.1.
// The SDK is the adversary here: keel passes when the SDK, written by others, agrees.
func TestAgentSDK(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIPPED: node is not installed, so the Agent SDK suite cannot run (install Node.js 18.14 or later)")
	}
	sdk := agentSDKDir(t)
	// Race-enabled under -race, so a data race on the control protocol's paths fails the suite.
	bin := buildtest.Keel(t, buildtest.Options{Race: buildtest.RaceEnabled})
	sc, err := scripted.LoadScenario(filepath.Join("testdata", "sdk", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := scripted.Start(t.Context(), "127.0.0.1:0", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	files, err := filepath.Glob(filepath.Join("testdata", "sdk", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no SDK test files: %v", err)
	}
	if only := os.Getenv("KEEL_SDK_TESTS"); only != "" {
		files = filterFiles(files, strings.Split(only, ","))
	}
	ctx, cancel := context.WithTimeout(t.Context(), sdkSuiteTimeoutFactor*waittest.Timeout())
	defer cancel()
	nodeArgs := append([]string{"--test", "--test-reporter=spec", "--test-concurrency=4"}, files...)
	cmd := exec.CommandContext(ctx, node, nodeArgs...)
	// A race report makes keel exit 66, which the SDK reports as an error.
	cmd.Env = append(sdkEnv(), "GORACE=exitcode=66", "KEEL_BIN="+bin, "KEEL_AGENT_SDK="+sdk,
		"ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=sk-ant-scripted",
		"KEEL_SDK_TIMEOUT_MS="+strconv.FormatInt(waittest.Timeout().Milliseconds(), 10))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("node --test %s\n%s", strings.Join(files, " "), out.String())
	if err != nil {
		t.Fatalf("the Agent SDK suite failed: %v (output above)", err)
	}
}

// agentSDKDir finds the pinned SDK: $KEEL_AGENT_SDK, else the repository's .cache, where
// scripts/test.sh installs it. Without it the test is skipped, loudly.
func agentSDKDir(t *testing.T) string {
	dir := os.Getenv("KEEL_AGENT_SDK")
	if dir == "" {
		dir = filepath.Join("..", "..", ".cache", "agent-sdk")
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		if _, err = os.Stat(filepath.Join(abs, "node_modules", "@anthropic-ai", "claude-agent-sdk", "sdk.mjs")); err == nil {
			return abs
		}
	}
	t.Skipf("SKIPPED: the Agent SDK is not installed in %s (%v); `make test` installs the version pinned in scripts/agent-sdk.txt", dir, err)
	return ""
}

// sdkEnv is the environment of the node suite: this process's, without the variables that
// would point keel or the SDK elsewhere.
func sdkEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		switch {
		case strings.HasPrefix(k, "ANTHROPIC_"), strings.HasPrefix(k, "CLAUDE_"), strings.HasPrefix(k, "KEEL_") && k != "KEEL_TEST_TIMEOUT_SCALE" && k != "KEEL_NPM_CACHE",
			k == "NODE_OPTIONS", k == "DEBUG_CLAUDE_AGENT_SDK":
			continue
		}
		env = append(env, kv)
	}
	return env
}

func filterFiles(files, names []string) []string {
	var out []string
	for _, f := range files {
		for _, n := range names {
			if strings.Contains(filepath.Base(f), n) {
				out = append(out, f)
				break
			}
		}
	}
	if len(out) == 0 {
		panic(fmt.Sprintf("KEEL_SDK_TESTS=%v matches none of %v", names, files))
	}
	return out
}
