package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

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
	nodeSuite{dir: "acp", onlyVar: "KEEL_ACP_TESTS", env: []string{"KEEL_ACP_SDK=" + lib,
		"KEEL_ACP_TIMEOUT_MS=" + strconv.FormatInt(waittest.Timeout().Milliseconds(), 10)}}.run(t, node)
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
