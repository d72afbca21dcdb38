package mcpconform

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// The test binary plays three parts, chosen by environment variable: the suite's client
// command (the wrapper around keel), the browser keel opens for a login, and the test.
const (
	wrapperEnv = "KEEL_CONFORMANCE_WRAPPER" // value: the keel binary
	browserEnv = "KEEL_CONFORMANCE_BROWSER"
)

// serverName is what the wrapper calls the scenario's server in keel's configuration.
const serverName = "conf"

// scenarioTool is the tool each client scenario's server expects to be called, with its
// arguments; a scenario not listed needs only the connection (keel mcp list).
func scenarioTool(scenario string) (name string, args map[string]any, ok bool) {
	switch {
	case scenario == "tools_call":
		return "add_numbers", map[string]any{"a": 5, "b": 3}, true
	case scenario == "elicitation-sep1034-client-defaults":
		return "test_client_elicitation_defaults", map[string]any{}, true
	case scenario == "sse-retry":
		return "test_reconnection", map[string]any{}, true
	case strings.HasPrefix(scenario, "auth/"):
		return "test-tool", map[string]any{}, true
	}
	return "", nil, false
}

// cimdURL is the client ID metadata document the suite's authorization servers accept.
const cimdURL = "https://conformance-test.local/client-metadata.json"

// runWrapper is the suite's client command: `<binary> SERVER_URL`, with the scenario in
// MCP_CONFORMANCE_SCENARIO and its context (client credentials, keys) in
// MCP_CONFORMANCE_CONTEXT. It does what a keel user would, with the real binary.
func runWrapper(keel string, args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: wrapper SERVER_URL")
	}
	url := args[0]
	scenario := os.Getenv("MCP_CONFORMANCE_SCENARIO")
	var cc map[string]string
	if s := os.Getenv("MCP_CONFORMANCE_CONTEXT"); s != "" {
		var raw map[string]any
		if err := json.Unmarshal([]byte(s), &raw); err != nil {
			return fmt.Errorf("MCP_CONFORMANCE_CONTEXT: %w", err)
		}
		cc = map[string]string{}
		for k, v := range raw {
			cc[k] = fmt.Sprint(v)
		}
	}
	home, err := os.MkdirTemp("", "keel-conformance-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(home)
	self, err := os.Executable()
	if err != nil {
		return err
	}
	k := &keelRun{bin: keel, dir: home, env: append(os.Environ(), "KEEL_HOME="+filepath.Join(home, "keel"),
		"HOME="+home, "BROWSER="+self, browserEnv+"=1", "MCP_TIMEOUT=20000")}

	add := []string{"mcp", "add", "--scope", "user", "--transport", "http"}
	clientCreds := strings.HasPrefix(scenario, "auth/client-credentials")
	switch {
	case scenario == "auth/basic-cimd":
		add = append(add, "--client-id", cimdURL)
	case cc["private_key_pem"] != "":
		key := filepath.Join(home, "client-key.pem")
		if err := os.WriteFile(key, []byte(cc["private_key_pem"]), 0o600); err != nil {
			return err
		}
		add = append(add, "--client-id", cc["client_id"], "--grant-type", "client_credentials",
			"--private-key-file", key, "--signing-algorithm", cc["signing_algorithm"])
	case cc["client_id"] != "":
		add = append(add, "--client-id", cc["client_id"])
		if cc["client_secret"] != "" {
			add = append(add, "--client-secret")
			k.env = append(k.env, "MCP_CLIENT_SECRET="+cc["client_secret"])
		}
		if clientCreds {
			add = append(add, "--grant-type", "client_credentials")
		}
	}
	if _, err := k.run(append(add, serverName, url)...); err != nil {
		return err
	}
	login := strings.HasPrefix(scenario, "auth/") && !clientCreds
	if login {
		// A login error is not the end: the session below reports what is wrong, as it
		// would to a user (scope-retry-limit is such a server).
		k.run("mcp", "login", serverName)
	}
	tool, targs, ok := scenarioTool(scenario)
	if !ok {
		_, err := k.run("mcp", "list")
		return err
	}
	model, err := startModel(serverName, tool, targs)
	if err != nil {
		return err
	}
	defer model.Close()
	k.env = append(k.env, "ANTHROPIC_BASE_URL="+model.URL(), "ANTHROPIC_API_KEY=conformance")
	session := []string{"-p", "call the tool", "--output-format", "stream-json", "--verbose", "--allowedTools", "mcp__" + serverName,
		"--settings", `{"hooks":{"Elicitation":[{"hooks":[{"type":"command","command":"echo '{\"hookSpecificOutput\":{\"hookEventName\":\"Elicitation\",\"action\":\"accept\"}}'"}]}]}}`}
	out, err := k.run(session...)
	if login && strings.Contains(out, "keel mcp login "+serverName) {
		// Step-up: the session says the server wants more; do as it says, once.
		k.run("mcp", "login", serverName)
		_, err = k.run(session...)
	}
	return err
}

// keelRun runs the keel binary in one scenario's home and logs each command to stderr, which
// the suite keeps beside the checks.
type keelRun struct {
	bin, dir string
	env      []string
}

func (k *keelRun) run(args ...string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Scale(25*time.Second))
	defer cancel()
	cmd := exec.CommandContext(ctx, k.bin, args...)
	cmd.Dir, cmd.Env = k.dir, k.env
	var out bytes.Buffer
	cmd.Stdout = io.MultiWriter(&out, os.Stderr)
	cmd.Stderr = io.MultiWriter(&out, os.Stderr)
	fmt.Fprintf(os.Stderr, "$ keel %s\n", strings.Join(args, " "))
	err := cmd.Run()
	if err != nil {
		fmt.Fprintf(os.Stderr, "keel %s: %v\n", args[0], err)
	}
	return out.String(), err
}

// startModel serves a scripted model that, in every session, calls the scenario's tool once
// and then finishes.
func startModel(server, tool string, args map[string]any) (*scripted.Server, error) {
	name := "mcp__" + server + "__" + tool
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{ToolResult: name}, Reply: []scripted.Block{scripted.Text("done")}},
		{When: scripted.Match{UserText: "call the tool"}, Reply: []scripted.Block{scripted.ToolUse(name, args)}},
	}}
	return scripted.Start(context.Background(), "127.0.0.1:0", sc, scripted.Options{})
}

// runBrowser is $BROWSER during a login: it opens the authorization page and follows its
// redirects, back to keel's loopback listener, as a browser whose user approves would.
func runBrowser(args []string) error {
	if len(args) != 1 {
		return fmt.Errorf("usage: browser URL")
	}
	ctx, cancel := context.WithTimeout(context.Background(), waittest.Scale(20*time.Second))
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args[0], nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, resp.Body)
	return nil
}
