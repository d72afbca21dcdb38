package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

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
	nodeSuite{dir: "sdk", onlyVar: "KEEL_SDK_TESTS", env: []string{"KEEL_AGENT_SDK=" + sdk,
		"KEEL_SDK_TIMEOUT_MS=" + strconv.FormatInt(waittest.Timeout().Milliseconds(), 10)}}.run(t, node)
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
