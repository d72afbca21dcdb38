package telemetry_test

import (
	"bufio"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/telemetry"
	"github.com/keel-dev/keel/internal/telemetry/oteltest"
	"github.com/keel-dev/keel/internal/waittest"
)

// These tests run the real keel (and keel-otel beside it) against the scripted model, with an
// OTLP receiver in the test process.

var (
	buildOnce sync.Once
	keelBin   string
	buildErr  error
	buildDir  string
)

func keel(t *testing.T) string {
	t.Helper()
	buildOnce.Do(func() {
		buildDir, buildErr = os.MkdirTemp("", "keel-telemetry-test")
		if buildErr == nil {
			keelBin, buildErr = buildtest.Build(buildDir, buildtest.Options{OTel: true})
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return keelBin
}

func TestMain(m *testing.M) {
	code := m.Run()
	if buildDir != "" {
		os.RemoveAll(buildDir)
	}
	os.Exit(code)
}

const secretPrompt = "run the secret-prompt crew"

// crew: the lead runs a Bash command and an Explore subagent, then spawns the teammate alice,
// who answers once; the team settles and the lead shuts it down.
func crew() *scripted.Scenario {
	lead := func(m scripted.Match) scripted.Match { m.HasTool = "Agent"; return m }
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "alice", When: scripted.Match{System: "Your name in the team is alice.", UserText: "say hi"}, Reply: []scripted.Block{scripted.Text("hi from alice")}},
		{Name: "explorer", When: scripted.Match{UserText: "look around"}, Reply: []scripted.Block{scripted.Text("nothing to see")}},
		{Name: "lead starts", When: lead(scripted.Match{UserText: "secret-prompt"}), Reply: []scripted.Block{
			scripted.ToolUse("Bash", map[string]any{"command": "echo secret-command"}),
			scripted.ToolUse("Agent", map[string]any{"description": "look", "prompt": "look around", "subagent_type": "Explore"})}},
		{Name: "lead spawns", When: lead(scripted.Match{ToolResult: "Bash"}), Reply: []scripted.Block{
			scripted.ToolUse("Agent", map[string]any{"description": "greeter", "prompt": "say hi", "name": "alice"})}},
		{Name: "lead waits", When: lead(scripted.Match{ToolResult: "Agent"}), Reply: []scripted.Block{scripted.Text("alice is on it")}},
	}}
}

type results struct {
	costUSD float64
	tokens  map[string]float64
	lines   string
}

// run runs keel -p on the crew with telemetry sent to recv over protocol, and adds up its
// result lines.
func run(t *testing.T, recv *oteltest.Receiver, protocol string, extra ...string) results {
	t.Helper()
	bin := keel(t)
	// The model server lives as long as the test; keel's run, expected to finish, has one time limit.
	srv, err := scripted.Start(t.Context(), "", crew(), scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	endpoint := recv.HTTPEndpoint()
	if protocol == "grpc" {
		endpoint = recv.GRPCEndpoint()
	}
	cmd := exec.CommandContext(waittest.Context(t), bin, "-p", secretPrompt, "--output-format", "stream-json", "--verbose", "--allowedTools", "Bash")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "KEEL_HOME="+t.TempDir(), "HOME="+t.TempDir(), "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS=1", "CLAUDE_CODE_ENABLE_TELEMETRY=1",
		"OTEL_METRICS_EXPORTER=otlp", "OTEL_LOGS_EXPORTER=otlp", "OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL="+protocol, "OTEL_EXPORTER_OTLP_ENDPOINT="+endpoint,
		"TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	cmd.Env = append(cmd.Env, extra...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("keel: %v\n%s", err, out)
	}
	r := results{tokens: map[string]float64{}, lines: string(out)}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	for sc.Scan() {
		var line struct {
			Type       string  `json:"type"`
			Cost       float64 `json:"total_cost_usd"`
			ParentTool *string `json:"parent_tool_use_id"`
			AgentID    string  `json:"agent_id"`
			ModelUsage map[string]struct {
				Input         float64 `json:"inputTokens"`
				Output        float64 `json:"outputTokens"`
				CacheRead     float64 `json:"cacheReadInputTokens"`
				CacheCreation float64 `json:"cacheCreationInputTokens"`
			} `json:"modelUsage"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil || line.Type != "result" || line.AgentID != "" {
			continue
		}
		r.costUSD += line.Cost
		for _, u := range line.ModelUsage {
			r.tokens["input"] += u.Input
			r.tokens["output"] += u.Output
			r.tokens["cacheRead"] += u.CacheRead
			r.tokens["cacheCreation"] += u.CacheCreation
		}
	}
	if !strings.Contains(string(out), `"result":"alice is on it"`) || !strings.Contains(string(out), `"agent_name":"alice"`) {
		t.Fatalf("the crew did not finish:\n%s", out)
	}
	return r
}

// A scripted session's tokens and cost, as keel's result lines report them, are what the
// metrics say, over gRPC and over HTTP; its events and its span tree — a subagent under its
// Agent call, the teammate's turn under the call that spawned her, all under the caller's
// TRACEPARENT — arrive; and no prompt or command text leaves without its switch.
func TestTelemetryOfAScriptedSession(t *testing.T) {
	for _, protocol := range []string{"grpc", "http/protobuf"} {
		t.Run(strings.ReplaceAll(protocol, "/", "-"), func(t *testing.T) {
			recv := oteltest.Start(t)
			res := run(t, recv, protocol)
			d := recv.Data()
			for typ, want := range res.tokens {
				if got := d.Sum("claude_code.token.usage", map[string]string{"type": typ}); got != want {
					t.Errorf("claude_code.token.usage type=%s: %v, the result lines say %v", typ, got, want)
				}
			}
			if got := d.Sum("claude_code.cost.usage", nil); res.costUSD == 0 || math.Abs(got-res.costUSD) > 1e-9 {
				t.Errorf("claude_code.cost.usage: %v, the result lines say %v", got, res.costUSD)
			}
			if got := d.Sum("claude_code.session.count", map[string]string{"start_type": "fresh"}); got != 1 {
				t.Errorf("claude_code.session.count: %v", got)
			}
			for _, p := range d.Points("claude_code.token.usage") {
				if p.Attrs["model"] == "" || p.Attrs["session.id"] == "" || p.Attrs["user.id"] == "" || p.Attrs["query_source"] == "" {
					t.Fatalf("token.usage point without model, session.id, user.id or query_source: %v", p.Attrs)
				}
			}
			names := map[string]int{}
			for _, e := range d.Events("") {
				names[e.Name]++
			}
			for _, want := range []string{"claude_code.user_prompt", "claude_code.api_request", "claude_code.tool_result", "claude_code.tool_decision"} {
				if names[want] == 0 {
					t.Errorf("no %s event (got %v)", want, names)
				}
			}
			assertSpanTree(t, d)
			assertNoContent(t, d, "secret-prompt", "secret-command")
		})
	}
}

func assertSpanTree(t *testing.T, d oteltest.Data) {
	t.Helper()
	spans := d.Spans()
	byID := map[string]oteltest.Span{}
	for _, s := range spans {
		byID[s.ID] = s
	}
	var interaction, explorerReq, aliceTurn, aliceReq oteltest.Span
	for _, s := range spans {
		switch {
		case s.Name == "claude_code.interaction" && interaction.ID == "":
			interaction = s
		case s.Name == "claude_code.llm_request" && s.Attrs["query_source"] == "Explore":
			explorerReq = s
		case s.Name == "keel.teammate.turn" && s.Attrs["agent.name"] == "alice" && aliceTurn.ID == "":
			aliceTurn = s
		case s.Name == "claude_code.llm_request" && s.Attrs["query_source"] == "alice" && aliceReq.ID == "":
			aliceReq = s
		}
	}
	if interaction.TraceID != "0af7651916cd43dd8448eb211c80319c" || interaction.ParentID != "b7ad6b7169203331" {
		t.Errorf("the interaction is in trace %s under %s, want the caller's TRACEPARENT", interaction.TraceID, interaction.ParentID)
	}
	if p := byID[explorerReq.ParentID]; p.Name != "claude_code.tool" || p.Attrs["tool_name"] != "Agent" || byID[p.ParentID].Name != "claude_code.interaction" {
		t.Errorf("the subagent's request is under %q %v, want its Agent call's span in the interaction", p.Name, p.Attrs)
	}
	if aliceTurn.ID == "" || aliceReq.ParentID != aliceTurn.ID {
		t.Errorf("alice's request %v is not under her turn %v", aliceReq, aliceTurn)
	}
	if p := byID[aliceTurn.ParentID]; p.Name != "claude_code.tool" || p.Attrs["tool_name"] != "Agent" {
		t.Errorf("alice's turn is under %q %v, want the Agent call that spawned her", p.Name, p.Attrs)
	}
	for _, s := range spans {
		if s.TraceID != interaction.TraceID {
			t.Errorf("span %s is in trace %s, not the session's", s.Name, s.TraceID)
		}
	}
}

func assertNoContent(t *testing.T, d oteltest.Data, secrets ...string) {
	t.Helper()
	check := func(where string, attrs map[string]string) {
		for k, v := range attrs {
			for _, s := range secrets {
				if strings.Contains(v, s) {
					t.Errorf("%s attribute %s carries %q with the OTEL_LOG_* switches off", where, k, s)
				}
			}
		}
	}
	for _, e := range d.Events("") {
		check(e.Name, e.Attrs)
	}
	for _, s := range d.Spans() {
		check(s.Name, s.Attrs)
	}
}

// With OTEL_LOG_USER_PROMPTS and OTEL_LOG_TOOL_DETAILS the prompt and the command go out.
func TestTelemetryContentWhenSwitchedOn(t *testing.T) {
	recv := oteltest.Start(t)
	run(t, recv, "grpc", "OTEL_LOG_USER_PROMPTS=1", "OTEL_LOG_TOOL_DETAILS=1")
	d := recv.Data()
	if ev := d.Events("claude_code.user_prompt"); len(ev) == 0 || ev[0].Attrs["prompt"] != secretPrompt {
		t.Errorf("user_prompt events %v: want the prompt", ev)
	}
	found := false
	for _, e := range d.Events("claude_code.tool_result") {
		found = found || strings.Contains(e.Attrs["tool_parameters"], "echo secret-command")
	}
	if !found {
		t.Error("no tool_result carries the Bash command in tool_parameters")
	}
}

// A Bash command runs under the TRACEPARENT of its tool call's span, so what it traces joins
// the session's trace.
func TestBashGetsTheTraceparentOfItsCall(t *testing.T) {
	bin := keel(t)
	// The model server lives as long as the test; keel's run, expected to finish, has one time limit.
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{ToolResult: "Bash"}, Reply: []scripted.Block{scripted.Text("noted")}},
		{When: scripted.Match{UserText: "trace it"}, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": `printf %s "$TRACEPARENT" > tp.txt`})}},
	}}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	recv := oteltest.Start(t)
	dir := t.TempDir()
	cmd := exec.CommandContext(waittest.Context(t), bin, "-p", "trace it", "--allowedTools", "Bash")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KEEL_HOME="+t.TempDir(), "HOME="+t.TempDir(), "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_ENABLE_TELEMETRY=1", "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.GRPCEndpoint(),
		"TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("keel: %v\n%s", err, out)
	}
	b, err := os.ReadFile(dir + "/tp.txt")
	if err != nil {
		t.Fatal(err)
	}
	trace, span, _, err := telemetry.ParseTraceparent(string(b))
	if err != nil {
		t.Fatalf("the command's TRACEPARENT: %v", err)
	}
	if trace != "0af7651916cd43dd8448eb211c80319c" {
		t.Errorf("the command ran in trace %s, want the session's", trace)
	}
	var call oteltest.Span
	for _, s := range recv.Data().Spans() {
		if s.ID == span {
			call = s
		}
	}
	if call.Name != "claude_code.tool" || call.Attrs["tool_name"] != "Bash" {
		t.Errorf("the command's parent span %s is %q %v, want its Bash call's", span, call.Name, call.Attrs)
	}
}

// An Agent SDK run (stream-json on stdin) is seen too, under the caller's TRACEPARENT.
func TestTelemetryOfAnSDKRun(t *testing.T) {
	bin := keel(t)
	// The model server lives as long as the test; keel's run, expected to finish, has one time limit.
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "say hello"}, Reply: []scripted.Block{scripted.Text("hello")}}}}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	recv := oteltest.Start(t)
	cmd := exec.CommandContext(waittest.Context(t), bin, "--input-format", "stream-json", "--output-format", "stream-json", "--verbose")
	cmd.Dir = t.TempDir()
	cmd.Env = append(os.Environ(), "KEEL_HOME="+t.TempDir(), "HOME="+t.TempDir(), "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_ENABLE_TELEMETRY=1", "OTEL_LOGS_EXPORTER=otlp", "OTEL_TRACES_EXPORTER=otlp",
		"OTEL_EXPORTER_OTLP_PROTOCOL=http/protobuf", "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.HTTPEndpoint(),
		"TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	cmd.Stdin = strings.NewReader(`{"type":"user","message":{"role":"user","content":"say hello"}}` + "\n")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), `"result":"hello"`) {
		t.Fatalf("keel: %v\n%s", err, out)
	}
	d := recv.Data()
	if n := len(d.Events("claude_code.api_request")); n != 1 {
		t.Errorf("%d api_request events, want 1", n)
	}
	found := false
	for _, s := range d.Spans() {
		found = found || (s.Name == "claude_code.interaction" && s.ParentID == "b7ad6b7169203331")
	}
	if !found {
		t.Error("no interaction span under the caller's TRACEPARENT")
	}
}
