package otelexport_test

import (
	"encoding/json"
	"io"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/telemetry"
	"github.com/keel-dev/keel/internal/telemetry/otelexport"
	"github.com/keel-dev/keel/internal/telemetry/oteltest"
)

const model = "claude-sonnet-4-5"

// session is a scripted session as keel writes it: a prompt; the main agent calls Bash and
// the Agent tool for a subagent, which makes a request of its own; a teammate spawned by name
// takes a turn; the result closes the interaction.
func session(t *testing.T, prompt telemetry.Prompt) ([]telemetry.Line, message.Usage) {
	t.Helper()
	at := time.Date(2026, 5, 1, 10, 0, 0, 0, time.UTC)
	var lines []telemetry.Line
	var total message.Usage
	add := func(d time.Duration, e event.Event) {
		at = at.Add(d)
		if a, ok := e.(event.AssistantMessage); ok {
			total = total.Add(a.Usage)
		}
		data, err := event.Encode(e)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, telemetry.Line{At: at, Event: data})
	}
	lines = append(lines, telemetry.Line{At: at, Session: &telemetry.SessionInfo{SessionID: "s-1", Version: "1.2.3", StartType: "fresh", UserID: "u-1", TerminalType: "non-interactive"}},
		telemetry.Line{At: at, Prompt: &prompt})
	main := event.Origin{}
	sub := event.Origin{AgentID: "sub-1", AgentName: "Explore", ParentToolUseID: "tu-agent"}
	mate := event.Origin{AgentID: "mate-1", AgentName: "alice"}
	use := func(id, name string, in any) message.Block {
		b, _ := json.Marshal(in)
		return message.Block{Type: message.TypeToolUse, ID: id, Name: name, Input: b}
	}
	bashIn := json.RawMessage(`{"command":"git commit -m secret-message","description":"commit"}`)
	agentIn := json.RawMessage(`{"description":"look","prompt":"find it","subagent_type":"Explore"}`)
	spawnIn := json.RawMessage(`{"description":"mate","prompt":"help","name":"alice"}`)
	add(time.Second, event.AssistantMessage{Origin: main, Model: model, RequestID: "req_1", StopReason: "tool_use",
		Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{use("tu-bash", "Bash", bashIn)}},
		Usage:   message.Usage{InputTokens: 100, OutputTokens: 20, CacheCreationInputTokens: 1000}})
	add(0, event.ToolStart{Origin: main, ID: "tu-bash", Name: "Bash", Input: bashIn})
	add(200*time.Millisecond, event.ToolEnd{Origin: main, ID: "tu-bash", Name: "Bash", Result: []message.Block{message.Text("[main abc] secret-message")}, Duration: 200 * time.Millisecond})
	add(0, event.UserMessage{Origin: main})
	add(time.Second, event.AssistantMessage{Origin: main, Model: model, RequestID: "req_2", StopReason: "tool_use",
		Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{use("tu-agent", "Agent", agentIn), use("tu-spawn", "Agent", spawnIn)}},
		Usage:   message.Usage{InputTokens: 10, OutputTokens: 30, CacheReadInputTokens: 1000}})
	add(0, event.CacheBreak{Origin: main, Segment: "tools", Reason: "tool list changed"})
	add(0, event.ToolStart{Origin: main, ID: "tu-agent", Name: "Agent", Input: agentIn})
	add(0, event.UserMessage{Origin: sub})
	add(time.Second, event.AssistantMessage{Origin: sub, Model: "claude-haiku-4-5", RequestID: "req_3", StopReason: "end_turn",
		Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{message.Text("found")}}, Usage: message.Usage{InputTokens: 50, OutputTokens: 5}})
	add(0, event.ToolEnd{Origin: main, ID: "tu-agent", Name: "Agent", Result: []message.Block{message.Text("found")}})
	add(0, event.ToolStart{Origin: main, ID: "tu-spawn", Name: "Agent", Input: spawnIn})
	add(0, event.ToolEnd{Origin: main, ID: "tu-spawn", Name: "Agent", Result: []message.Block{message.Text("spawned")}})
	add(0, event.TeammateState{Origin: mate, Name: "alice", Color: "blue", State: "working", Task: "1"})
	add(time.Second, event.AssistantMessage{Origin: mate, Model: model, RequestID: "req_4", StopReason: "end_turn",
		Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{message.Text("done")}}, Usage: message.Usage{InputTokens: 7, OutputTokens: 3}})
	add(0, event.TeammateState{Origin: mate, Name: "alice", Color: "blue", State: "idle"})
	add(0, event.UserMessage{Origin: main})
	add(time.Second, event.AssistantMessage{Origin: main, Model: model, RequestID: "req_5", StopReason: "end_turn",
		Message: message.Message{Role: message.RoleAssistant, Content: []message.Block{message.Text("all done")}}, Usage: message.Usage{InputTokens: 1, OutputTokens: 2, CacheReadInputTokens: 1100}})
	add(0, event.Result{Origin: main, Subtype: "success", Duration: 5 * time.Second})
	return lines, total
}

func record(t *testing.T, cfg telemetry.Config, lines []telemetry.Line) {
	t.Helper()
	ctx := t.Context()
	p, err := otelexport.New(ctx, cfg, io.Discard, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	rec := otelexport.NewRecorder(cfg, p.Signals())
	for _, l := range lines {
		if err := rec.Handle(l); err != nil {
			t.Fatal(err)
		}
	}
	rec.Close(lines[len(lines)-1].At)
	if err := p.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
}

func config(t *testing.T, protocol, endpoint string, content bool) telemetry.Config {
	t.Helper()
	env := map[string]string{"CLAUDE_CODE_ENABLE_TELEMETRY": "1", "OTEL_METRICS_EXPORTER": "otlp", "OTEL_LOGS_EXPORTER": "otlp",
		"OTEL_TRACES_EXPORTER": "otlp", "OTEL_EXPORTER_OTLP_PROTOCOL": protocol, "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
		"OTEL_RESOURCE_ATTRIBUTES": "team.id=platform", "OTEL_METRICS_INCLUDE_VERSION": "true"}
	if content {
		env["OTEL_LOG_USER_PROMPTS"], env["OTEL_LOG_TOOL_DETAILS"], env["OTEL_LOG_TOOL_CONTENT"] = "1", "1", "1"
	}
	cfg, err := telemetry.FromEnv(func(k string) string { return env[k] })
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// A scripted session's metrics, events and spans reach an OTLP receiver over gRPC and over
// HTTP under Claude Code's names, with totals that match the requests; no prompt or tool
// content leaves without its switch.
func TestRecorderExportsClaudeCodeNames(t *testing.T) {
	for _, protocol := range []string{"grpc", "http/protobuf", "http/json"} {
		t.Run(strings.ReplaceAll(protocol, "/", "-"), func(t *testing.T) {
			recv := oteltest.Start(t)
			endpoint := recv.HTTPEndpoint()
			if protocol == "grpc" {
				endpoint = recv.GRPCEndpoint()
			}
			trace := telemetry.NewTraceID()
			lines, total := session(t, telemetry.Prompt{ID: "p-1", Length: 14, Text: "do the secret", TraceID: trace, SpanID: telemetry.NewSpanID()})
			record(t, config(t, protocol, endpoint, false), lines)
			d := recv.Data()

			for typ, want := range map[string]int64{"input": total.InputTokens, "output": total.OutputTokens,
				"cacheRead": total.CacheReadInputTokens, "cacheCreation": total.CacheCreationInputTokens} {
				if got := d.Sum("claude_code.token.usage", map[string]string{"type": typ}); got != float64(want) {
					t.Errorf("token.usage type=%s: %v, want %d", typ, got, want)
				}
			}
			if got := d.Sum("claude_code.token.usage", map[string]string{"type": "output", "model": "claude-haiku-4-5", "query_source": "Explore"}); got != 5 {
				t.Errorf("the subagent's output tokens by model and query_source: %v, want 5", got)
			}
			var wantUSD float64
			for _, l := range lines {
				if l.Event != nil {
					if e, _ := event.Decode(l.Event); e != nil {
						if a, ok := e.(event.AssistantMessage); ok {
							usd, _ := cost.USD(a.Model, a.Usage)
							wantUSD += usd
						}
					}
				}
			}
			if got := d.Sum("claude_code.cost.usage", nil); wantUSD == 0 || math.Abs(got-wantUSD) > 1e-9 {
				t.Errorf("cost.usage: %v, want %v", got, wantUSD)
			}
			for name, want := range map[string]float64{"claude_code.session.count": 1, "claude_code.commit.count": 1, "keel.cache.break.count": 1, "keel.team.claim.count": 1} {
				if got := d.Sum(name, nil); got != want {
					t.Errorf("%s: %v, want %v", name, got, want)
				}
			}
			if got := d.Sum("keel.cache.break.count", map[string]string{"segment": "tools"}); got != 1 {
				t.Errorf("cache breaks of segment tools: %v, want 1", got)
			}
			for _, p := range d.Points("claude_code.token.usage") {
				if p.Unit != "tokens" || p.Attrs["session.id"] != "s-1" || p.Attrs["app.version"] != "1.2.3" || p.Attrs["user.id"] != "u-1" {
					t.Fatalf("token.usage point %+v: want unit tokens and the standard attributes", p)
				}
			}
			if res := d.Resources(); len(res) == 0 || res[0]["team.id"] != "platform" || res[0]["service.name"] != "keel" {
				t.Errorf("resource attributes %v: want OTEL_RESOURCE_ATTRIBUTES and service.name", res)
			}

			counts := map[string]int{}
			for _, e := range d.Events("") {
				counts[e.Name]++
				if e.Attrs["prompt.id"] != "p-1" || e.Attrs["session.id"] != "s-1" || e.Attrs["event.sequence"] == "" {
					t.Errorf("event %s lacks prompt.id, session.id or event.sequence: %v", e.Name, e.Attrs)
				}
				for _, secret := range []string{"do the secret", "secret-message"} {
					for k, v := range e.Attrs {
						if strings.Contains(v, secret) {
							t.Errorf("event %s attribute %s carries content %q with the OTEL_LOG_* switches off", e.Name, k, secret)
						}
					}
				}
			}
			for name, want := range map[string]int{"claude_code.user_prompt": 1, "claude_code.api_request": 5, "claude_code.tool_result": 3, "claude_code.tool_decision": 3} {
				if counts[name] != want {
					t.Errorf("%d %s events, want %d (all: %v)", counts[name], name, want, counts)
				}
			}
			ar := d.Events("claude_code.api_request")[0]
			if ar.Attrs["model"] != model || ar.Attrs["input_tokens"] != "100" || ar.Attrs["cache_creation_tokens"] != "1000" || ar.Attrs["duration_ms"] != "1000" || ar.Attrs["request_id"] != "req_1" {
				t.Errorf("the first api_request: %v", ar.Attrs)
			}

			spans := d.Spans()
			byID := map[string]oteltest.Span{}
			for _, s := range spans {
				byID[s.ID] = s
				if s.TraceID != trace {
					t.Errorf("span %s in trace %s, want %s", s.Name, s.TraceID, trace)
				}
				if v := s.Attrs["user_prompt"]; s.Name == "claude_code.interaction" && v != "<REDACTED>" {
					t.Errorf("interaction span user_prompt %q, want <REDACTED>", v)
				}
			}
			parentName := func(s oteltest.Span) string { return byID[s.ParentID].Name }
			find := func(name, key, val string) oteltest.Span {
				for _, s := range spans {
					if s.Name == name && s.Attrs[key] == val {
						return s
					}
				}
				t.Fatalf("no %s span with %s=%s", name, key, val)
				return oteltest.Span{}
			}
			bash := find("claude_code.tool", "tool_name", "Bash")
			if parentName(bash) != "claude_code.interaction" || bash.ID != telemetry.SpanID(trace, telemetry.KindTool, "tu-bash") {
				t.Errorf("Bash's span: parent %q, id %s; want under the interaction with the derived id", parentName(bash), bash.ID)
			}
			subReq := find("claude_code.llm_request", "request_id", "req_3")
			if p := byID[subReq.ParentID]; p.Name != "claude_code.tool" || p.ID != telemetry.SpanID(trace, telemetry.KindTool, "tu-agent") {
				t.Errorf("the subagent's request is under %s %v, want the Agent call's tool span", p.Name, p.Attrs)
			}
			turn := find("keel.teammate.turn", "agent.name", "alice")
			if p := byID[turn.ParentID]; p.ID != telemetry.SpanID(trace, telemetry.KindTool, "tu-spawn") {
				t.Errorf("alice's turn is under %s %v, want the Agent call that spawned her", p.Name, p.Attrs)
			}
			mateReq := find("claude_code.llm_request", "request_id", "req_4")
			if mateReq.ParentID != turn.ID || mateReq.Attrs["agent_id"] != "mate-1" {
				t.Errorf("alice's request: parent %s (want her turn %s), agent_id %q", mateReq.ParentID, turn.ID, mateReq.Attrs["agent_id"])
			}
		})
	}
}

// With the OTEL_LOG_* switches on, the prompt, the tool parameters and the tool output go out.
func TestRecorderContentWhenSwitchedOn(t *testing.T) {
	recv := oteltest.Start(t)
	lines, _ := session(t, telemetry.Prompt{ID: "p-1", Length: 14, Text: "do the secret", TraceID: telemetry.NewTraceID(), SpanID: telemetry.NewSpanID()})
	record(t, config(t, "grpc", recv.GRPCEndpoint(), true), lines)
	d := recv.Data()
	if got := d.Events("claude_code.user_prompt")[0].Attrs["prompt"]; got != "do the secret" {
		t.Errorf("user_prompt prompt %q, want the text", got)
	}
	var bash oteltest.Event
	for _, e := range d.Events("claude_code.tool_result") {
		if e.Attrs["tool_name"] == "Bash" {
			bash = e
		}
	}
	if !strings.Contains(bash.Attrs["tool_parameters"], `"full_command":"git commit -m secret-message"`) || bash.Attrs["tool_input"] == "" {
		t.Errorf("Bash tool_result with details: %v", bash.Attrs)
	}
	for _, s := range d.Spans() {
		if s.Name == "claude_code.interaction" && s.Attrs["user_prompt"] != "do the secret" {
			t.Errorf("interaction user_prompt %q", s.Attrs["user_prompt"])
		}
		if s.Name == "claude_code.tool" && s.Attrs["tool_name"] == "Bash" && (s.Attrs["full_command"] == "" || len(s.Events) == 0) {
			t.Errorf("Bash span with details and content: %v, events %v", s.Attrs, s.Events)
		}
	}
}

// A headless run's TRACEPARENT makes the interaction a child of the caller's span.
func TestRecorderJoinsCallersTrace(t *testing.T) {
	recv := oteltest.Start(t)
	trace, parent := telemetry.NewTraceID(), telemetry.NewSpanID()
	lines, _ := session(t, telemetry.Prompt{ID: "p-1", TraceID: trace, SpanID: telemetry.NewSpanID(), ParentSpanID: parent, TraceFlags: "01"})
	record(t, config(t, "http/protobuf", recv.HTTPEndpoint(), false), lines)
	for _, s := range recv.Data().Spans() {
		if s.Name == "claude_code.interaction" && (s.TraceID != trace || s.ParentID != parent) {
			t.Errorf("interaction in trace %s under %s, want %s under %s", s.TraceID, s.ParentID, trace, parent)
		}
	}
}
