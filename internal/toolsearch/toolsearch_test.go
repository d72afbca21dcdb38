package toolsearch

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/tool"
)

func fake(name, desc, schema string) tool.Tool {
	return tool.New(tool.Spec[struct{}]{Name: name, Description: desc, Schema: json.RawMessage(schema), Deferred: true,
		Run: func(context.Context, *tool.Env, struct{}) tool.Result { return tool.Text("") }})
}

func namesOf(ts []tool.Tool) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.Name())
	}
	return out
}

func call(t *testing.T, search tool.Tool, query string) tool.Result {
	t.Helper()
	in, _ := json.Marshal(map[string]any{"query": query})
	return search.Call(t.Context(), &tool.Env{}, in)
}

// TestSearchLoadsAndRemembers: select: and keyword queries return full schemas, and what was
// returned is discovered, in discovery order, until its schema changes.
func TestSearchLoadsAndRemembers(t *testing.T) {
	deferred := []tool.Tool{
		fake("BashOutput", "Returns new output of a background shell.", `{"type":"object"}`),
		fake("KillShell", "Stops a background shell.", `{"type":"object"}`),
		fake("mcp__gh__create_issue", "Create an issue.", `{"type":"object","properties":{"title":{"type":"string"}}}`),
	}
	s := New()
	search := s.Tool(func(context.Context) []tool.Tool { return deferred })
	res := call(t, search, "select:mcp__gh__create_issue")
	if res.IsError || !strings.Contains(res.ResultText(), `"input_schema":{"type":"object","properties":{"title"`) {
		t.Fatalf("select = %q", res.ResultText())
	}
	if res := call(t, search, "background shell output"); !strings.HasPrefix(res.ResultText(), "<functions>\n<function>{\"name\":\"BashOutput\"") {
		t.Errorf("keyword search ranks BashOutput first? %q", res.ResultText())
	}
	if diff := cmp.Diff([]string{"mcp__gh__create_issue", "BashOutput", "KillShell"}, namesOf(s.Discovered(deferred))); diff != "" {
		t.Errorf("discovered (-want +got):\n%s", diff)
	}
	// A new schema for a loaded tool (a new MCP generation) means it must be searched again.
	deferred[2] = fake("mcp__gh__create_issue", "Create an issue.", `{"type":"object","properties":{"body":{"type":"string"}}}`)
	if diff := cmp.Diff([]string{"BashOutput", "KillShell"}, namesOf(s.Discovered(deferred))); diff != "" {
		t.Errorf("discovered after the schema changed (-want +got):\n%s", diff)
	}
	if s.IsDiscovered(deferred[2]) {
		t.Error("the changed tool still counts as loaded")
	}
}

func TestSearchMisses(t *testing.T) {
	deferred := []tool.Tool{fake("KillShell", "Stops a background shell.", `{"type":"object"}`)}
	s := New()
	search := s.Tool(func(context.Context) []tool.Tool { return deferred })
	if res := call(t, search, "select:Nope"); !res.IsError || !strings.Contains(res.ResultText(), "the deferred tools are: KillShell") {
		t.Errorf("select of an unknown name = %q (error %v), want an error naming what exists", res.ResultText(), res.IsError)
	}
	if res := call(t, search, "weather"); res.IsError || !strings.Contains(res.ResultText(), "No matching deferred tools. The deferred tools are: KillShell") {
		t.Errorf("keyword miss = %q", res.ResultText())
	}
	if len(s.Discovered(deferred)) != 0 {
		t.Error("a miss loaded something")
	}
}

// TestFindsDeferredBuiltins: every built-in that defers its schema is loaded by select: and
// found by a query in the words of its purpose, first.
func TestFindsDeferredBuiltins(t *testing.T) {
	var deferred []tool.Tool
	for _, tl := range builtin.Tools(builtin.Options{}) {
		if tool.IsDeferred(tl) {
			deferred = append(deferred, tl)
		}
	}
	search := New().Tool(func(context.Context) []tool.Tool { return deferred })
	keywords := map[string]string{"TodoWrite": "todo list", "BashOutput": "background shell output", "KillShell": "kill shell",
		"NotebookEdit": "jupyter notebook cell", "WebFetch": "fetch url", "WebSearch": "search the web"}
	for _, tl := range deferred {
		if res := call(t, search, "select:"+tl.Name()); res.IsError || !strings.Contains(res.ResultText(), `{"name":"`+tl.Name()+`"`) {
			t.Errorf("select:%s = %q", tl.Name(), res.ResultText())
		}
		query, ok := keywords[tl.Name()]
		if !ok {
			t.Errorf("no keyword query for the deferred built-in %s", tl.Name())
			continue
		}
		if res := call(t, search, query); !strings.HasPrefix(res.ResultText(), "<functions>\n<function>{\"name\":\""+tl.Name()+"\"") {
			t.Errorf("%q does not find %s first: %.200s", query, tl.Name(), res.ResultText())
		}
	}
}
