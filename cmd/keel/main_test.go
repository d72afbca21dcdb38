package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/keel-dev/keel/internal/cli"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/sandbox"
	"github.com/keel-dev/keel/internal/waittest"
)

func TestMain(m *testing.M) {
	sandbox.Dispatch(os.Args)
	testscript.Main(m, map[string]func(){
		"keel": func() {
			os.Exit(cli.Main(os.Args[1:], cli.Streams{In: os.Stdin, Out: os.Stdout, Err: os.Stderr}, os.Getenv))
		},
	})
}

// TestScripts runs the CLI scenarios in testdata/script. Each script gets its own KEEL_HOME
// and HOME; `model SCENARIO.yaml` starts a scripted model on loopback for the commands after it.
func TestScripts(t *testing.T) {
	// Scripts that run the go command share the build cache instead of filling a fresh one.
	gocache, err := exec.Command("go", "env", "GOCACHE").Output()
	if err != nil {
		t.Fatalf("go env GOCACHE: %v", err)
	}
	testscript.Run(t, testscript.Params{
		Dir: "testdata/script",
		Setup: func(env *testscript.Env) error {
			home := filepath.Join(env.WorkDir, ".keel-home")
			env.Setenv("KEEL_HOME", home)
			// A script that fails before its `keel supervisor stop` must not leave a
			// supervisor running after the test.
			env.Defer(func() { stopSupervisor(env.T(), home) })
			env.Setenv("HOME", filepath.Join(env.WorkDir, ".home"))
			env.Setenv("ANTHROPIC_API_KEY", "")
			env.Setenv("ANTHROPIC_BASE_URL", "")
			env.Setenv("OPENAI_API_KEY", "")
			env.Setenv("OPENAI_BASE_URL", "")
			env.Setenv("GOCACHE", strings.TrimSpace(string(gocache)))
			// The MCP reference servers that scripts/test.sh installed from npm, if any.
			env.Setenv("KEEL_NPM_CACHE", os.Getenv("KEEL_NPM_CACHE"))
			return nil
		},
		Condition: func(cond string) (bool, error) {
			if cond == "npmservers" {
				return os.Getenv("KEEL_NPM_CACHE") != "", nil
			}
			return false, fmt.Errorf("unknown condition %q", cond)
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"model": startModel,
		},
	})
}

// stopSupervisor stops the supervisor a script started under home, if one runs.
func stopSupervisor(t testscript.T, home string) {
	c := daemon.NewClient(daemon.ClientConfig{Home: home})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Timeout())
	defer cancel()
	if _, err := c.Shutdown(ctx); err != nil {
		t.Log("stop the script's supervisor: " + err.Error())
	}
}

// startModel serves a scenario file and points the Anthropic and OpenAI variables at it.
func startModel(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: model SCENARIO.yaml")
	}
	sc, err := scripted.LoadScenario(ts.MkAbs(args[0]))
	ts.Check(err)
	srv, err := scripted.Start(context.Background(), "", sc, scripted.Options{})
	ts.Check(err)
	ts.Defer(func() { srv.Close() })
	ts.Setenv("ANTHROPIC_BASE_URL", srv.URL())
	ts.Setenv("ANTHROPIC_API_KEY", "test-key")
	ts.Setenv("OPENAI_BASE_URL", srv.URL()+"/v1")
	ts.Setenv("MODEL_URL", srv.URL())
}
