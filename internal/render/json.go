package render

import (
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/google/uuid"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/event"
)

// jsonRenderer prints one result object at the end.
type jsonRenderer struct {
	w      io.Writer
	result *event.Result
	model  string
}

func (r *jsonRenderer) Render(e event.Event) error {
	switch e := e.(type) {
	case event.Init:
		r.model = e.Model
	case event.AssistantMessage:
		if e.Model != "" && e.Origin.AgentID == "" {
			r.model = e.Model
		}
	case event.Result:
		if e.Origin.AgentID == "" {
			r.result = &e
		}
	}
	return nil
}

func (r *jsonRenderer) Finish() error {
	if r.result == nil {
		return nil
	}
	return writeLine(r.w, resultLine(*r.result, r.model))
}

// ResultLine is the result object of json and stream-json output, in the shape of the Agent
// SDK's SDKResultMessage: an error subtype carries errors (the SDK reads them) instead of a
// result text; denials, uuid and modelUsage are always present.
func ResultLine(e event.Result) obj {
	denials := make([]obj, 0, len(e.Denials))
	for _, d := range e.Denials {
		input := d.Input
		if len(input) == 0 {
			input = json.RawMessage("{}")
		}
		denials = append(denials, obj{{"tool_name", d.ToolName}, {"tool_use_id", d.ToolUseID}, {"tool_input", input}, {"reason", d.Reason}})
	}
	cache := obj{{"hits", e.Cache.Hits}, {"misses", e.Cache.Misses}, {"breaks", e.Cache.Breaks}}
	if len(e.Cache.BreaksByReason) > 0 {
		cache = append(cache, kv{"breaks_by_reason", e.Cache.BreaksByReason}) // maps encode sorted
	}
	var stop any
	if e.StopReason != "" {
		stop = e.StopReason
	}
	line := obj{
		{"type", "result"}, {"subtype", e.Subtype}, {"is_error", e.IsError},
		{"duration_ms", e.Duration / time.Millisecond}, {"duration_api_ms", e.APIDuration / time.Millisecond},
		{"num_turns", e.NumTurns},
	}
	if e.Subtype == "success" {
		line = append(line, kv{"result", e.Text})
	} else {
		line = append(line, kv{"errors", resultErrors(e)})
	}
	line = append(line, obj{
		{"stop_reason", stop}, {"session_id", e.SessionID},
		{"total_cost_usd", e.CostUSD}, {"usage", fullUsage(e.Usage)}, {"modelUsage", modelUsageLine(e.ModelUsage)},
		{"permission_denials", denials},
	}...)
	if len(e.StructuredOutput) > 0 {
		line = append(line, kv{"structured_output", e.StructuredOutput})
	}
	if models := unpriced(e); len(models) > 0 {
		line = append(line, kv{"unpriced_models", models})
	}
	id := e.UUID
	if id == "" {
		id = uuid.NewString()
	}
	return append(line, kv{"uuid", id}, kv{"cache", cache})
}

// resultErrors are the messages of an error result; there is always at least one.
func resultErrors(e event.Result) []string {
	if e.Text != "" {
		return []string{e.Text}
	}
	switch e.Subtype {
	case "error_max_turns":
		return []string{fmt.Sprintf("Reached maximum number of turns (%d)", e.NumTurns)}
	case "error_max_budget_usd":
		return []string{"Reached the maximum budget (" + cost.FormatUSD(e.CostUSD) + " spent)"}
	}
	return []string{e.Subtype}
}

// set replaces the member k, or appends it.
func (o obj) set(k string, v any) obj {
	for i := range o {
		if o[i].k == k {
			o[i].v = v
			return o
		}
	}
	return append(o, kv{k, v})
}

// kv is one member of an obj.
type kv struct {
	k string
	v any
}

// obj is a JSON object that keeps its members in order, so lines read like Claude Code's
// ("type" first) and encode the same way every time.
type obj []kv

func (o obj) has(k string) bool {
	for _, m := range o {
		if m.k == k {
			return true
		}
	}
	return false
}

// MarshalJSON writes the members in order.
func (o obj) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, m := range o {
		if i > 0 {
			buf = append(buf, ',')
		}
		k, _ := json.Marshal(m.k)
		v, err := json.Marshal(m.v)
		if err != nil {
			return nil, err
		}
		buf = append(append(append(buf, k...), ':'), v...)
	}
	return append(buf, '}'), nil
}

func writeLine(w io.Writer, v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
