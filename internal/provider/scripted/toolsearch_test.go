package scripted

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const (
	searchEntry = `{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex"}`
	deferredDef = `{"name":"mcp__wx__forecast","description":"Weather.","input_schema":{"type":"object"},"defer_loading":true}`
	searchUse   = `{"type":"server_tool_use","id":"srvtoolu_1","name":"tool_search_tool_regex","input":{"pattern":"weather"},"caller":{"type":"direct"}}`
)

func searchResultJSON(names ...string) string {
	var refs []string
	for _, n := range names {
		refs = append(refs, `{"type":"tool_reference","tool_name":"`+n+`"}`)
	}
	return `{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_1","content":{"type":"tool_search_tool_search_result","tool_references":[` + strings.Join(refs, ",") + `]}}`
}

func body(tools []string, assistant ...string) []byte {
	msgs := `[{"role":"user","content":"weather?"}`
	if len(assistant) > 0 {
		msgs += `,{"role":"assistant","content":[` + strings.Join(assistant, ",") + `]}`
		msgs += `,{"role":"user","content":"go on"}`
	}
	return []byte(`{"model":"m","max_tokens":10,"tools":[` + strings.Join(tools, ",") + `],"messages":` + msgs + `]}`)
}

// TestDeferredToolsCountWhereReferenced checks the approximation of the package doc: a
// deferred tool is not in the prefix until a tool_reference loads it, and then counts at the
// search result that names it.
func TestDeferredToolsCountWhereReferenced(t *testing.T) {
	total := func(p *parsed) int {
		n := 0
		for _, b := range p.blocks {
			n += b.tokens
		}
		return n
	}
	without, err := parseAnthropic(body([]string{searchEntry}), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	with, err := parseAnthropic(body([]string{deferredDef, searchEntry}), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(total(without), total(with)); diff != "" {
		t.Errorf("an unreferenced deferred tool changed the prompt tokens (-without +with):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"mcp__wx__forecast", "tool_search_tool_regex"}, with.view.tools); diff != "" {
		t.Errorf("tools mismatch (-want +got):\n%s", diff)
	}
	unref, err := parseAnthropic(body([]string{deferredDef, searchEntry}, searchUse, searchResultJSON()), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := parseAnthropic(body([]string{deferredDef, searchEntry}, searchUse, searchResultJSON("mcp__wx__forecast")), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	refTokens := tokensOf([]byte(`{"type":"tool_reference","tool_name":"mcp__wx__forecast"}`))
	if got, min := total(ref)-total(unref), refTokens+len(deferredDef)/4-2; got < min {
		t.Errorf("a referenced tool added %d tokens, want at least %d (its definition)", got, min)
	}
}

func TestDeferredToolErrors(t *testing.T) {
	for name, b := range map[string][]byte{
		"no search tool":         body([]string{deferredDef}),
		"unknown reference":      body([]string{deferredDef, searchEntry}, searchUse, searchResultJSON("mcp__nope")),
		"breakpoint on deferred": body([]string{strings.TrimSuffix(deferredDef, "}") + `,"cache_control":{"type":"ephemeral"}}`, searchEntry}),
	} {
		if _, err := parseAnthropic(b, false, nil); err == nil {
			t.Errorf("%s: want a 400", name)
		}
	}
}

// TestClientSideToolSearchIsAccepted: deferred tools beside ordinary ones, without the API's
// search tool, are a client-side tool search (Claude Code's ToolSearch), which the API takes.
func TestClientSideToolSearchIsAccepted(t *testing.T) {
	search := `{"name":"ToolSearch","description":"Find deferred tools.","input_schema":{"type":"object"}}`
	p, err := parseAnthropic(body([]string{search, deferredDef}), false, nil)
	if err != nil {
		t.Fatalf("client-side tool search refused: %v", err)
	}
	if diff := cmp.Diff([]string{"ToolSearch", "mcp__wx__forecast"}, p.view.tools); diff != "" {
		t.Errorf("tools mismatch (-want +got):\n%s", diff)
	}
}

// TestToolSearchReply streams a search and a call of the found tool: server_tool_use with its
// input streamed, the result whole in its start, then the tool_use.
func TestToolSearchReply(t *testing.T) {
	rule := &Rule{Reply: []Block{ToolSearch("weather", "mcp__wx__forecast"), ToolUse("mcp__wx__forecast", map[string]string{"city": "Oslo"})}}
	if err := (&Scenario{Rules: []Rule{*rule}}).Validate(); err != nil {
		t.Fatal(err)
	}
	rep, err := buildReply(3, "m", rule, replyEnv{search: "tool_search_tool_regex"})
	if err != nil {
		t.Fatal(err)
	}
	if rep.stopReason != "tool_use" {
		t.Errorf("stop reason %q, want tool_use", rep.stopReason)
	}
	var starts []string
	input := ""
	for _, ev := range anthropicEvents(rep, CacheAccount{}, nil) {
		var e struct {
			Type         string          `json:"type"`
			Index        int             `json:"index"`
			ContentBlock json.RawMessage `json:"content_block"`
			Delta        struct {
				PartialJSON string `json:"partial_json"`
			} `json:"delta"`
		}
		_ = json.Unmarshal(ev.data, &e)
		switch {
		case e.Type == "content_block_start":
			starts = append(starts, string(e.ContentBlock))
		case e.Type == "content_block_delta" && e.Index == 0:
			input += e.Delta.PartialJSON
		}
	}
	want := []string{
		`{"type":"server_tool_use","id":"srvtoolu_scripted_0003_0","name":"tool_search_tool_regex","input":{},"caller":{"type":"direct"}}`,
		`{"type":"tool_search_tool_result","tool_use_id":"srvtoolu_scripted_0003_0","content":{"type":"tool_search_tool_search_result","tool_references":[{"type":"tool_reference","tool_name":"mcp__wx__forecast"}]}}`,
		`{"type":"tool_use","id":"toolu_scripted_0003_0","name":"mcp__wx__forecast","input":{}}`,
	}
	if diff := cmp.Diff(want, starts); diff != "" {
		t.Errorf("block starts mismatch (-want +got):\n%s", diff)
	}
	if input != `{"pattern":"weather"}` {
		t.Errorf("streamed search input %q", input)
	}
	sc, err := ParseScenario("s.yaml", []byte("rules:\n  - reply:\n      - tool_search: {query: weather, found: [mcp__wx__forecast]}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]Block{ToolSearch("weather", "mcp__wx__forecast")}, sc.Rules[0].Reply); diff != "" {
		t.Errorf("YAML tool_search mismatch (-want +got):\n%s", diff)
	}
}

// TestNewDeferredToolKeepsThePrefix: a deferred tool added in the middle of the list (a new MCP
// generation) leaves the prefix's hash alone, as the API documents for tool search: the
// tools before and after it read from the cache as before.
func TestNewDeferredToolKeepsThePrefix(t *testing.T) {
	read := `{"name":"Read","input_schema":{"type":"object"}}`
	search := `{"type":"tool_search_tool_regex_20251119","name":"tool_search_tool_regex","cache_control":{"type":"ephemeral"}}`
	other := `{"name":"mcp__a__new","input_schema":{"type":"object"},"defer_loading":true}`
	before, err := parseAnthropic(body([]string{read, deferredDef, search}), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	after, err := parseAnthropic(body([]string{read, other, deferredDef, search}), false, nil)
	if err != nil {
		t.Fatal(err)
	}
	hb, _ := prefixes("m", before.blocks)
	ha, _ := prefixes("m", after.blocks)
	if len(hb) != len(ha) || hb[2] != ha[2] {
		t.Errorf("adding a deferred tool changed the prefix through the tool list")
	}
}
