package main

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// nodeSuite is a suite of node tests (testdata/DIR/*.test.mjs) that drive keel built from
// this tree through a client library written by others, against the scripted model of
// testdata/DIR/scenario.yaml.
type nodeSuite struct {
	// dir is the suite's folder under testdata; onlyVar names the environment variable that
	// picks some of its files (a comma-separated list of name parts).
	dir, onlyVar string
	// env is what the suite needs besides the binary and the model (the library's folder,
	// the time limit of one test).
	env []string
}

// run builds keel (race-enabled under -race, so a data race on the paths the suite drives
// fails it), starts the scripted model and runs the suite with node's test runner.
func (s nodeSuite) run(t *testing.T, node string) {
	bin := buildtest.Keel(t, buildtest.Options{Race: buildtest.RaceEnabled})
	sc, err := scripted.LoadScenario(filepath.Join("testdata", s.dir, "scenario.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	srv, err := scripted.Start(t.Context(), "127.0.0.1:0", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()

	files, err := filepath.Glob(filepath.Join("testdata", s.dir, "*.test.mjs"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no test files in testdata/%s: %v", s.dir, err)
	}
	if only := os.Getenv(s.onlyVar); only != "" {
		files = filterFiles(files, strings.Split(only, ","))
	}
	ctx, cancel := context.WithTimeout(t.Context(), sdkSuiteTimeoutFactor*waittest.Timeout())
	defer cancel()
	nodeArgs := append([]string{"--test", "--test-reporter=spec", "--test-concurrency=4"}, files...)
	cmd := exec.CommandContext(ctx, node, nodeArgs...)
	// A race report makes keel exit 66, which the suite sees as a failure.
	cmd.Env = append(sdkEnv(), "GORACE=exitcode=66", "KEEL_BIN="+bin,
		"ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=sk-ant-scripted")
	cmd.Env = append(cmd.Env, s.env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err = cmd.Run()
	t.Logf("node --test %s\n%s", strings.Join(files, " "), out.String())
	if err != nil {
		t.Fatalf("the %s suite failed: %v (output above)", s.dir, err)
	}
}
