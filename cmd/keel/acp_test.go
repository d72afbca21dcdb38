package main

import (
	"bytes"
	"context"
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

// TestACP drives `keel acp` with the client side of the Agent Client Protocol's official
// TypeScript library, pinned in scripts/acp-sdk.txt and installed by scripts/test.sh: node's
// test runner runs testdata/acp/*.test.mjs, which start keel built from this tree as an
// editor would, against the scripted model of testdata/acp/scenario.yaml on 127.0.0.1. The
// library, written by the protocol's authors, is the judge of keel's messages.
func TestACP(t *testing.T) {
	node, err := exec.LookPath("node")
	if err != nil {
		t.Skip("SKIPPED: node is not installed, so the ACP suite cannot run (install Node.js 20 or later)")
	}
	lib := acpSDKDir(t)
	// Race-enabled under -race, so a data race on the protocol's paths fails the suite.
	bin := buildtest.Keel(t, buildtest.Options{Race: buildtest.RaceEnabled})
	sc, err := scripted.LoadScenario(filepath.Join("testdata", "acp", "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := scripted.Start(t.Context(), "127.0.0.1:0", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	files, err := filepath.Glob(filepath.Join("testdata", "acp", "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no ACP test files: %v", err)
	}
	if only := os.Getenv("KEEL_ACP_TESTS"); only != "" {
		files = filterFiles(files, strings.Split(only, ","))
	}
	ctx, cancel := context.WithTimeout(t.Context(), sdkSuiteTimeoutFactor*waittest.Timeout())
	defer cancel()
	nodeArgs := append([]string{"--test", "--test-reporter=spec", "--test-concurrency=4"}, files...)
	cmd := exec.CommandContext(ctx, node, nodeArgs...)
	// A race report makes keel exit 66, which the tests see as an unexpected exit.
	cmd.Env = append(sdkEnv(), "GORACE=exitcode=66", "KEEL_BIN="+bin, "KEEL_ACP_SDK="+lib,
		"ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=sk-ant-scripted",
		"KEEL_ACP_TIMEOUT_MS="+strconv.FormatInt(waittest.Timeout().Milliseconds(), 10))
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("node --test %s\n%s", strings.Join(files, " "), out.String())
	if err != nil {
		t.Fatalf("the ACP suite failed: %v (output above)", err)
	}
}

// acpSDKDir finds the pinned library: $KEEL_ACP_SDK, else the repository's .cache, where
// scripts/test.sh installs it. Without it the test is skipped, loudly.
func acpSDKDir(t *testing.T) string {
	dir := os.Getenv("KEEL_ACP_SDK")
	if dir == "" {
		dir = filepath.Join("..", "..", ".cache", "acp-sdk")
	}
	abs, err := filepath.Abs(dir)
	if err == nil {
		if _, err = os.Stat(filepath.Join(abs, "node_modules", "@agentclientprotocol", "sdk", "dist", "v1", "unstable", "acp.js")); err == nil {
			return abs
		}
	}
	t.Skipf("SKIPPED: the ACP library is not installed in %s (%v); `make test` installs the version pinned in scripts/acp-sdk.txt", dir, err)
	return ""
}
