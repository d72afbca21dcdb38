package otelexport

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"go.opentelemetry.io/otel/attribute"
	otellog "go.opentelemetry.io/otel/log"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/telemetry"
)

// Recorder turns the lines of one session into metrics, log events and spans. One goroutine
// owns it (keel-otel's reader); lines come in the order keel saw them.
type Recorder struct {
	cfg     telemetry.Config
	session telemetry.SessionInfo
	meters  instruments
	logger  otellog.Logger
	tracer  trace.Tracer

	seq         int64
	interaction *interaction
	interactNo  int
	// agents are the agents seen, by agent id ("" for the main thread).
	agents map[string]*agent
	// tools are the tool calls started and not ended, by tool_use id; spawns are the span
	// contexts of Agent calls that named a teammate, by the teammate's name.
	tools  map[string]*toolCall
	spawns map[string]trace.SpanContext
	// claimed is the task each member held last, to count new claims.
	claimed map[string]string
}

type interaction struct {
	prompt telemetry.Prompt
	span   trace.Span
	ctx    context.Context
	start  time.Time
}

type agent struct {
	// boundary is when the agent's next request began to be assembled: its last user
	// message, tool batch or turn start.
	boundary time.Time
	requests int
	// turn is a teammate's open turn (working → idle), its context the parent of its spans.
	turn    trace.Span
	turnCtx context.Context
	turns   int
}

type toolCall struct {
	start time.Time
	name  string
	input json.RawMessage
	agent string
	span  trace.Span
	ctx   context.Context
}

// Signals are the providers a [Recorder] records into; a nil one (the signal is off) records
// nothing.
type Signals struct {
	Meter  metric.MeterProvider
	Logs   otellog.LoggerProvider
	Traces trace.TracerProvider
}

// NewRecorder records into the given providers (nil ones record nothing).
func NewRecorder(cfg telemetry.Config, s Signals) *Recorder {
	r := &Recorder{cfg: cfg, agents: map[string]*agent{}, tools: map[string]*toolCall{}, spawns: map[string]trace.SpanContext{}, claimed: map[string]string{}}
	r.meters = newInstruments(meterOf(s.Meter))
	r.logger = loggerOf(s.Logs)
	r.tracer = tracerOf(s.Traces)
	return r
}

// Handle records one line.
func (r *Recorder) Handle(l telemetry.Line) error {
	switch {
	case l.Config != nil:
		r.cfg = *l.Config
	case l.Session != nil:
		r.session = *l.Session
		r.meters.sessions.Add(context.Background(), 1, metric.WithAttributes(r.metricAttrs(attribute.String("start_type", orDefault(r.session.StartType, "fresh")))...))
	case l.Prompt != nil:
		r.startInteraction(l.At, *l.Prompt)
	case l.Event != nil:
		e, err := event.Decode(l.Event)
		if err != nil {
			return err
		}
		r.event(l.At, e)
	}
	return nil
}

// Close ends what is still open (a session stopped mid-turn) at at.
func (r *Recorder) Close(at time.Time) {
	for id, t := range r.tools {
		t.span.End(trace.WithTimestamp(at))
		delete(r.tools, id)
	}
	for _, a := range r.agents {
		if a.turn != nil {
			a.turn.End(trace.WithTimestamp(at))
			a.turn = nil
		}
	}
	if r.interaction != nil {
		r.interaction.span.End(trace.WithTimestamp(at))
		r.interaction = nil
	}
}

func (r *Recorder) startInteraction(at time.Time, p telemetry.Prompt) {
	if r.interaction != nil {
		r.interaction.span.End(trace.WithTimestamp(at))
	}
	r.interactNo++
	ctx := context.Background()
	tid, _ := trace.TraceIDFromHex(p.TraceID)
	if p.ParentSpanID != "" {
		psid, _ := trace.SpanIDFromHex(p.ParentSpanID)
		flags := trace.FlagsSampled
		if p.TraceFlags == "00" {
			flags = 0
		}
		ts, _ := trace.ParseTraceState(p.TraceState)
		ctx = trace.ContextWithRemoteSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: psid, TraceFlags: flags, TraceState: ts, Remote: true}))
	}
	sid, _ := trace.SpanIDFromHex(p.SpanID)
	prompt := "<REDACTED>"
	if r.cfg.LogUserPrompts {
		prompt = p.Text
	}
	ctx, span := r.tracer.Start(withIDs(ctx, tid, sid), "claude_code.interaction", trace.WithTimestamp(at), trace.WithAttributes(r.spanAttrs("interaction",
		attribute.String("user_prompt", prompt), attribute.Int("user_prompt_length", p.Length), attribute.Int("interaction.sequence", r.interactNo))...))
	r.interaction = &interaction{prompt: p, span: span, ctx: ctx, start: at}
	r.agentOf("").boundary = at
	attrs := []attribute.KeyValue{attribute.Int("prompt_length", p.Length)}
	if r.cfg.LogUserPrompts {
		attrs = append(attrs, attribute.String("prompt", p.Text))
	}
	r.emit(at, "user_prompt", attrs...)
}

func (r *Recorder) agentOf(id string) *agent {
	a := r.agents[id]
	if a == nil {
		a = &agent{}
		r.agents[id] = a
	}
	return a
}

// parent is the context an agent's spans start under: a subagent's Agent call, a teammate's
// turn, else the interaction.
func (r *Recorder) parent(o event.Origin) context.Context {
	if o.ParentToolUseID != "" {
		if t := r.tools[o.ParentToolUseID]; t != nil {
			return t.ctx
		}
		if r.interaction != nil {
			sc := r.derived(telemetry.KindTool, o.ParentToolUseID)
			return trace.ContextWithSpanContext(context.Background(), sc)
		}
	}
	if o.AgentID != "" {
		if a := r.agents[o.AgentID]; a != nil && a.turnCtx != nil {
			return a.turnCtx
		}
	}
	if r.interaction != nil {
		return r.interaction.ctx
	}
	return context.Background()
}

// derived is the span context keel derived for a span of the current trace.
func (r *Recorder) derived(kind, key string) trace.SpanContext {
	if r.interaction == nil {
		return trace.SpanContext{}
	}
	tid, _ := trace.TraceIDFromHex(r.interaction.prompt.TraceID)
	sid, _ := trace.SpanIDFromHex(telemetry.SpanID(r.interaction.prompt.TraceID, kind, key))
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled})
}

// start begins a span with the id keel derives for kind and key.
func (r *Recorder) start(parent context.Context, name, kind, key string, at time.Time, attrs ...attribute.KeyValue) (context.Context, trace.Span) {
	ctx := parent
	if sc := r.derived(kind, key); sc.IsValid() {
		ctx = withIDs(parent, sc.TraceID(), sc.SpanID())
	}
	return r.tracer.Start(ctx, name, trace.WithTimestamp(at), trace.WithAttributes(attrs...))
}

func (r *Recorder) event(at time.Time, e event.Event) {
	o := e.From()
	switch e := e.(type) {
	case event.UserMessage:
		r.agentOf(o.AgentID).boundary = at
	case event.AssistantMessage:
		r.request(at, e)
	case event.Retry:
		r.emit(at, "api_error", attribute.String("error", e.Err), attribute.Int("attempt", e.Attempt), attribute.String("query_source", querySource(o)))
	case event.ToolStart:
		r.toolStart(at, e)
	case event.ToolEnd:
		r.toolEnd(at, e)
	case event.PermissionDenied:
		r.decision(at, o, e.ToolUseID, e.ToolName, e.Input, "reject", "user_reject")
	case event.CacheBreak:
		r.meters.cacheBreaks.Add(context.Background(), 1, metric.WithAttributes(r.metricAttrs(attribute.String("segment", e.Segment))...))
		r.emit(at, "keel.cache_break", attribute.String("segment", e.Segment), attribute.String("reason", e.Reason), attribute.String("query_source", querySource(o)))
	case event.Compacted:
		r.meters.compactions.Add(context.Background(), 1, metric.WithAttributes(r.metricAttrs(attribute.String("trigger", e.Trigger))...))
		r.emit(at, "compaction", attribute.String("trigger", e.Trigger), attribute.String("success", "true"), attribute.Int64("pre_tokens", e.TokensBefore))
	case event.TeammateState:
		r.teammate(at, e)
	case event.TeamMessage:
		r.meters.mail.Add(context.Background(), 1, metric.WithAttributes(r.metricAttrs(attribute.String("type", orDefault(e.Type, "message")))...))
	case event.TeamMessageRead:
		if !e.Sent.IsZero() {
			// Hosts' clocks differ: a message read "before" it was sent waited no time.
			wait := max(at.Sub(e.Sent), 0).Seconds()
			r.meters.mailLatency.Record(context.Background(), wait, metric.WithAttributes(r.metricAttrs(attribute.String("type", orDefault(e.Type, "message")))...))
		}
	case event.TaskNotification:
		r.meters.deliveries.Add(context.Background(), 1, metric.WithAttributes(r.metricAttrs(attribute.String("status", e.Status))...))
	case event.Result:
		if o.AgentID == "" {
			r.result(at, e)
		}
	}
}

// request records a model request: token and cost counters, the api_request event and the
// claude_code.llm_request span from the agent's last boundary to the reply.
func (r *Recorder) request(at time.Time, e event.AssistantMessage) {
	a := r.agentOf(e.Origin.AgentID)
	a.requests++
	start := a.boundary
	if start.IsZero() || start.After(at) {
		start = at
	}
	a.boundary = at
	model := e.Model
	usd, _ := cost.USD(model, e.Usage)
	src := querySource(e.Origin)
	ctx := context.Background()
	base := []attribute.KeyValue{attribute.String("model", model), attribute.String("query_source", src)}
	if e.Origin.AgentName != "" {
		base = append(base, attribute.String("agent.name", e.Origin.AgentName))
	}
	for _, t := range []struct {
		kind string
		n    int64
	}{{"input", e.Usage.InputTokens}, {"output", e.Usage.OutputTokens}, {"cacheRead", e.Usage.CacheReadInputTokens}, {"cacheCreation", e.Usage.CacheCreationInputTokens}} {
		r.meters.tokens.Add(ctx, float64(t.n), metric.WithAttributes(r.metricAttrs(append([]attribute.KeyValue{attribute.String("type", t.kind)}, base...)...)...))
	}
	r.meters.cost.Add(ctx, usd, metric.WithAttributes(r.metricAttrs(base...)...))
	if in := e.Usage.InputTokens + e.Usage.CacheReadInputTokens + e.Usage.CacheCreationInputTokens; in > 0 {
		r.meters.cacheReadShare.Record(ctx, float64(e.Usage.CacheReadInputTokens)/float64(in), metric.WithAttributes(r.metricAttrs(base...)...))
	}
	dur := at.Sub(start).Milliseconds()
	r.emit(at, "api_request", append(base, attribute.Float64("cost_usd", usd), attribute.Int64("duration_ms", dur),
		attribute.Int64("input_tokens", e.Usage.InputTokens), attribute.Int64("output_tokens", e.Usage.OutputTokens),
		attribute.Int64("cache_read_tokens", e.Usage.CacheReadInputTokens), attribute.Int64("cache_creation_tokens", e.Usage.CacheCreationInputTokens),
		attribute.String("request_id", e.RequestID), attribute.String("speed", "normal"))...)
	hasTool := len(e.Message.ToolUses()) > 0
	attrs := r.spanAttrs("llm_request", append(base, attribute.String("gen_ai.system", "anthropic"), attribute.String("gen_ai.request.model", model),
		attribute.Int64("duration_ms", dur), attribute.Int64("input_tokens", e.Usage.InputTokens), attribute.Int64("output_tokens", e.Usage.OutputTokens),
		attribute.Int64("cache_read_tokens", e.Usage.CacheReadInputTokens), attribute.Int64("cache_creation_tokens", e.Usage.CacheCreationInputTokens),
		attribute.String("request_id", e.RequestID), attribute.String("gen_ai.response.id", e.RequestID), attribute.Bool("success", true),
		attribute.Bool("response.has_tool_call", hasTool), attribute.String("stop_reason", string(e.StopReason)),
		attribute.StringSlice("gen_ai.response.finish_reasons", []string{string(e.StopReason)}))...)
	if e.Origin.AgentID != "" {
		attrs = append(attrs, attribute.String("agent_id", e.Origin.AgentID))
	}
	_, span := r.start(r.parent(e.Origin), "claude_code.llm_request", telemetry.KindRequest, e.Origin.AgentID+"/"+strconv.Itoa(a.requests), start, attrs...)
	span.End(trace.WithTimestamp(at))
}

func (r *Recorder) toolStart(at time.Time, e event.ToolStart) {
	attrs := r.spanAttrs("tool", attribute.String("tool_name", e.Name))
	if e.Origin.AgentID != "" {
		attrs = append(attrs, attribute.String("agent_id", e.Origin.AgentID))
	}
	if r.cfg.LogToolDetails {
		attrs = append(attrs, toolDetails(e.Name, e.Input)...)
	}
	ctx, span := r.start(r.parent(e.Origin), "claude_code.tool", telemetry.KindTool, e.ID, at, attrs...)
	r.tools[e.ID] = &toolCall{start: at, name: e.Name, input: e.Input, agent: e.Origin.AgentID, span: span, ctx: ctx}
	if e.Name == "Agent" {
		var in struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(e.Input, &in) == nil && in.Name != "" {
			r.spawns[in.Name] = span.SpanContext()
		}
	}
	r.decision(at, e.Origin, e.ID, e.Name, e.Input, "accept", "config")
}

func (r *Recorder) toolEnd(at time.Time, e event.ToolEnd) {
	t := r.tools[e.ID]
	if t == nil {
		return
	}
	delete(r.tools, e.ID)
	dur := e.Duration
	if dur <= 0 {
		dur = at.Sub(t.start)
	}
	ok := !e.IsError
	result := resultText(e)
	_, exec := r.tracer.Start(t.ctx, "claude_code.tool.execution", trace.WithTimestamp(t.start),
		trace.WithAttributes(r.spanAttrs("tool.execution", attribute.Int64("duration_ms", dur.Milliseconds()), attribute.Bool("success", ok))...))
	exec.End(trace.WithTimestamp(at))
	t.span.SetAttributes(attribute.Int64("duration_ms", dur.Milliseconds()), attribute.Int("result_tokens", len(result)/4))
	if r.cfg.LogToolContent {
		t.span.AddEvent("tool.output", trace.WithTimestamp(at), trace.WithAttributes(
			attribute.String("input", truncate(string(t.input), 60<<10)), attribute.String("output", truncate(result, 60<<10))))
	}
	t.span.End(trace.WithTimestamp(at))

	attrs := []attribute.KeyValue{attribute.String("tool_name", e.Name), attribute.String("tool_use_id", e.ID),
		attribute.String("success", strconv.FormatBool(ok)), attribute.Int64("duration_ms", dur.Milliseconds()),
		attribute.String("decision_type", "accept"), attribute.String("decision_source", "config"),
		attribute.Int("tool_input_size_bytes", len(t.input)), attribute.Int("tool_result_size_bytes", len(result))}
	if !ok {
		attrs = append(attrs, attribute.String("error_type", "ToolError"))
	}
	if r.cfg.LogToolDetails {
		if !ok {
			attrs = append(attrs, attribute.String("error", truncate(result, 4<<10)))
		}
		if p := toolParameters(e.Name, t.input); p != "" {
			attrs = append(attrs, attribute.String("tool_parameters", p))
		}
		attrs = append(attrs, attribute.String("tool_input", truncate(string(t.input), 4<<10)))
	}
	r.emit(at, "tool_result", attrs...)
	if ok {
		r.effects(e.Name, t.input)
	}
}

// effects counts what a successful call changed: lines, commits, pull requests.
func (r *Recorder) effects(name string, input json.RawMessage) {
	ctx := context.Background()
	var in struct {
		OldString string `json:"old_string"`
		NewString string `json:"new_string"`
		Content   string `json:"content"`
		NewSource string `json:"new_source"`
		Command   string `json:"command"`
	}
	_ = json.Unmarshal(input, &in)
	var added, removed int
	switch name {
	case "Edit":
		added, removed = lines(in.NewString), lines(in.OldString)
	case "Write":
		added = lines(in.Content)
	case "NotebookEdit":
		added = lines(in.NewSource)
	case "Bash":
		if strings.Contains(in.Command, "git commit") {
			r.meters.commits.Add(ctx, 1, metric.WithAttributes(r.metricAttrs()...))
		}
		if strings.Contains(in.Command, "gh pr create") || strings.Contains(in.Command, "glab mr create") {
			r.meters.pullRequests.Add(ctx, 1, metric.WithAttributes(r.metricAttrs()...))
		}
	}
	if added > 0 {
		r.meters.lines.Add(ctx, float64(added), metric.WithAttributes(r.metricAttrs(attribute.String("type", "added"))...))
	}
	if removed > 0 {
		r.meters.lines.Add(ctx, float64(removed), metric.WithAttributes(r.metricAttrs(attribute.String("type", "removed"))...))
	}
}

// decision records a permission decision: the tool_decision event, and for the code-editing
// tools the claude_code.code_edit_tool.decision counter.
func (r *Recorder) decision(at time.Time, o event.Origin, id, name string, input json.RawMessage, decision, source string) {
	r.emit(at, "tool_decision", attribute.String("tool_name", name), attribute.String("tool_use_id", id),
		attribute.String("decision", decision), attribute.String("source", source))
	switch name {
	case "Edit", "Write", "NotebookEdit":
	default:
		return
	}
	var in struct {
		FilePath     string `json:"file_path"`
		NotebookPath string `json:"notebook_path"`
	}
	_ = json.Unmarshal(input, &in)
	r.meters.editDecisions.Add(context.Background(), 1, metric.WithAttributes(r.metricAttrs(attribute.String("tool_name", name),
		attribute.String("decision", decision), attribute.String("source", source), attribute.String("language", language(in.FilePath+in.NotebookPath)))...))
}

// teammate opens a teammate's turn span when it starts working (a child of the Agent call
// that spawned it) and closes it when it idles or stops; it counts claims.
func (r *Recorder) teammate(at time.Time, e event.TeammateState) {
	a := r.agentOf(e.Origin.AgentID)
	if e.Task != "" && r.claimed[e.Name] != e.Task {
		r.meters.claims.Add(context.Background(), 1, metric.WithAttributes(r.metricAttrs()...))
	}
	r.claimed[e.Name] = e.Task
	if e.State == "working" && a.turn == nil {
		a.turns++
		parent := context.Background()
		if sc, ok := r.spawns[e.Name]; ok {
			parent = trace.ContextWithSpanContext(parent, sc)
		} else if r.interaction != nil {
			parent = r.interaction.ctx
		}
		a.turnCtx, a.turn = r.start(parent, "keel.teammate.turn", telemetry.KindTurn, e.Name+"/"+strconv.Itoa(a.turns), at,
			r.spanAttrs("teammate.turn", attribute.String("agent_id", e.Origin.AgentID), attribute.String("agent.name", e.Name), attribute.String("color", e.Color))...)
		a.boundary = at
		return
	}
	if e.State != "working" && a.turn != nil {
		a.turn.End(trace.WithTimestamp(at))
		a.turn, a.turnCtx = nil, nil
	}
}

func (r *Recorder) result(at time.Time, e event.Result) {
	r.meters.activeTime.Add(context.Background(), e.Duration.Seconds(), metric.WithAttributes(r.metricAttrs(attribute.String("type", "cli"))...))
	if r.interaction == nil {
		return
	}
	r.interaction.span.SetAttributes(attribute.Int64("interaction.duration_ms", at.Sub(r.interaction.start).Milliseconds()))
	r.interaction.span.End(trace.WithTimestamp(at))
	// The interaction stays current: teammates and background agents may still work for it.
}

// metricAttrs are the standard attributes of a metric plus extra.
func (r *Recorder) metricAttrs(extra ...attribute.KeyValue) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("user.id", r.session.UserID)}
	if r.cfg.IncludeSessionID {
		attrs = append(attrs, attribute.String("session.id", r.session.SessionID))
	}
	if r.cfg.IncludeVersion {
		attrs = append(attrs, attribute.String("app.version", r.session.Version))
	}
	if r.session.TerminalType != "" {
		attrs = append(attrs, attribute.String("terminal.type", r.session.TerminalType))
	}
	return append(attrs, extra...)
}

func (r *Recorder) spanAttrs(kind string, extra ...attribute.KeyValue) []attribute.KeyValue {
	attrs := []attribute.KeyValue{attribute.String("span.type", kind), attribute.String("session.id", r.session.SessionID),
		attribute.String("app.version", r.session.Version), attribute.String("user.id", r.session.UserID)}
	return append(attrs, extra...)
}

// emit writes a log event: its name as body and event name, the standard attributes, the
// prompt it belongs to and its sequence number.
func (r *Recorder) emit(at time.Time, name string, attrs ...attribute.KeyValue) {
	r.seq++
	full := name
	if !strings.HasPrefix(name, "keel.") {
		full = "claude_code." + name
	}
	var rec otellog.Record
	rec.SetTimestamp(at)
	rec.SetObservedTimestamp(at)
	rec.SetEventName(full)
	rec.SetBody(attribute.StringValue(full))
	rec.SetSeverity(otellog.SeverityInfo)
	kvs := []attribute.KeyValue{attribute.String("event.name", strings.TrimPrefix(name, "keel.")), attribute.String("event.timestamp", at.UTC().Format(time.RFC3339Nano)),
		attribute.Int64("event.sequence", r.seq), attribute.String("session.id", r.session.SessionID), attribute.String("app.version", r.session.Version),
		attribute.String("user.id", r.session.UserID)}
	if r.session.TerminalType != "" {
		kvs = append(kvs, attribute.String("terminal.type", r.session.TerminalType))
	}
	if r.interaction != nil {
		kvs = append(kvs, attribute.String("prompt.id", r.interaction.prompt.ID))
	}
	rec.AddAttributes(append(kvs, attrs...)...)
	ctx := context.Background()
	if r.interaction != nil {
		ctx = r.interaction.ctx
	}
	r.logger.Emit(ctx, rec)
}

func querySource(o event.Origin) string {
	if o.AgentID == "" {
		return "repl_main_thread"
	}
	if o.AgentName != "" {
		return o.AgentName
	}
	return "subagent"
}

func resultText(e event.ToolEnd) string {
	var b strings.Builder
	for _, blk := range e.Result {
		b.WriteString(blk.Text)
	}
	return b.String()
}

func lines(s string) int {
	if s == "" {
		return 0
	}
	return strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// toolDetails are the span attributes OTEL_LOG_TOOL_DETAILS allows.
func toolDetails(name string, input json.RawMessage) []attribute.KeyValue {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	str := func(k string) string { s, _ := in[k].(string); return s }
	switch name {
	case "Read", "Edit", "Write":
		return []attribute.KeyValue{attribute.String("file_path", str("file_path"))}
	case "Bash":
		return []attribute.KeyValue{attribute.String("full_command", str("command"))}
	case "Skill":
		return []attribute.KeyValue{attribute.String("skill_name", str("skill"))}
	case "Agent", "Task":
		return []attribute.KeyValue{attribute.String("subagent_type", str("subagent_type"))}
	}
	return nil
}

// toolParameters is tool_result's tool_parameters: a JSON string of the tool's telling
// parameters.
func toolParameters(name string, input json.RawMessage) string {
	var in map[string]any
	_ = json.Unmarshal(input, &in)
	var p map[string]any
	switch {
	case name == "Bash":
		cmd, _ := in["command"].(string)
		first, _, _ := strings.Cut(strings.TrimSpace(cmd), " ")
		p = map[string]any{"bash_command": first, "full_command": cmd, "description": in["description"], "timeout": in["timeout"]}
	case name == "Skill":
		p = map[string]any{"skill_name": in["skill"]}
	case name == "Agent" || name == "Task":
		p = map[string]any{"subagent_type": in["subagent_type"]}
	case strings.HasPrefix(name, "mcp__"):
		server, tool, _ := strings.Cut(strings.TrimPrefix(name, "mcp__"), "__")
		p = map[string]any{"mcp_server_name": server, "mcp_tool_name": tool}
	default:
		return ""
	}
	b, err := json.Marshal(p)
	if err != nil {
		return fmt.Sprint(p)
	}
	return string(b)
}
