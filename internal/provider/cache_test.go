package provider

import (
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/message"
)

func TestTTLPolicy(t *testing.T) {
	p, warnings := NewTTLPolicy([]string{"main", "sdk", "agent:*", "agnet:*", "ag*ent", "", "x y", "team*"})
	wantWarn := []string{
		`cache TTL pattern "agnet:*" names no known query source (main, sdk, agent, fork, teammate, compact, hook, title, summary)`,
		`cache TTL pattern "ag*ent" has a * that is not at the end; ignored`,
		`cache TTL pattern "" is empty; ignored`,
		`cache TTL pattern "x y" has the character ' '; ignored`,
	}
	if diff := cmp.Diff(wantWarn, warnings); diff != "" {
		t.Errorf("warnings mismatch (-want +got):\n%s", diff)
	}
	tests := []struct{ source, want string }{
		{"main", TTL1h},
		{"sdk", TTL1h},
		{"agent:Explore", TTL1h},
		{"agent:", TTL1h},
		{"agent", TTL5m},
		{"mainline", TTL5m},
		{"compact", TTL5m},
		{"teammate:alice", TTL1h},
		{"", TTL5m},
	}
	for _, tt := range tests {
		if got := p.TTL(tt.source); got != tt.want {
			t.Errorf("TTL(%q) = %s, want %s", tt.source, got, tt.want)
		}
	}
	var zero TTLPolicy
	if got := zero.TTL("main"); got != TTL5m {
		t.Errorf("zero policy TTL(main) = %s", got)
	}
}

func request(source string) *Request {
	return &Request{
		Model:  "m",
		Source: source,
		System: []SystemBlock{{Text: "static"}, {Text: "memory"}, {Text: "env"}},
		Tools: []ToolSpec{
			{Name: "Read", InputSchema: json.RawMessage(`{}`)},
			{Name: "Bash", InputSchema: json.RawMessage(`{}`)},
		},
		Messages: []message.Message{
			message.User(message.Text("hi")),
			message.Assistant(message.Text("thinking it over"), message.ToolUse("t1", "Read", json.RawMessage(`{}`))),
			message.User(message.ToolResult("t1", []message.Block{message.Text("file")}, false), message.Text("")),
		},
	}
}

// markers lists where a request carries cache_control, as "system[i]", "tools[i]",
// "messages[i][j]", with the TTL.
func markers(req *Request) []string {
	var out []string
	add := func(where string, cc *message.CacheControl) {
		if cc != nil {
			out = append(out, where+" "+cc.Type+"/"+cc.TTL)
		}
	}
	for i, b := range req.System {
		add("system["+itoa(i)+"]", b.CacheControl)
	}
	for i, t := range req.Tools {
		add("tools["+itoa(i)+"]", t.CacheControl)
	}
	for i, m := range req.Messages {
		for j, b := range m.Content {
			add("messages["+itoa(i)+"]["+itoa(j)+"]", b.CacheControl)
			for k, inner := range b.Content {
				add("messages["+itoa(i)+"]["+itoa(j)+"].content["+itoa(k)+"]", inner.CacheControl)
			}
		}
	}
	return out
}

func itoa(i int) string { return string(rune('0' + i)) }

func TestPlaceBreakpoints(t *testing.T) {
	policy, _ := NewTTLPolicy([]string{"main", "agent:*"})
	tests := []struct {
		name string
		req  func() *Request
		want []string
	}{
		{"main gets 1h", func() *Request { return request("main") }, []string{
			"system[0] ephemeral/1h", "tools[1] ephemeral/1h", "messages[2][0] ephemeral/1h",
		}},
		{"unlisted source gets the 5m default", func() *Request { return request("hook") }, []string{
			"system[0] ephemeral/", "tools[1] ephemeral/", "messages[2][0] ephemeral/",
		}},
		{"compaction reads the main conversation's entries and writes none", func() *Request {
			r := request(SourceCompact)
			r.SkipCacheWrite, r.CacheSource, r.SharedPrefix = true, "main", &BlockRef{Message: 0, Block: 0}
			r.Messages = append(r.Messages, message.User(message.Text("Summarise")))
			return r
		}, []string{"system[0] ephemeral/1h", "tools[1] ephemeral/1h", "messages[0][0] ephemeral/1h"}},
		{"compaction without a shared prefix reads the static part only", func() *Request {
			r := request(SourceCompact)
			r.SkipCacheWrite = true
			return r
		}, []string{"system[0] ephemeral/", "tools[1] ephemeral/"}},
		{"fork child: the shared end and its own directive, four in all", func() *Request {
			r := request("main")
			r.Messages = append(r.Messages, message.Assistant(message.ToolUse("t2", "Agent", json.RawMessage(`{}`))),
				message.User(message.ToolResult("t2", []message.Block{message.Text("Forked")}, false), message.Text("boilerplate"), message.Text("directive")))
			r.SharedPrefix = &BlockRef{Message: 4, Block: 1}
			return r
		}, []string{"system[0] ephemeral/1h", "tools[1] ephemeral/1h", "messages[4][1] ephemeral/1h", "messages[4][2] ephemeral/1h"}},
		{"a shared prefix out of range or unmarkable is ignored", func() *Request {
			r := request("main")
			r.SharedPrefix = &BlockRef{Message: 2, Block: 1} // the empty text block
			return r
		}, []string{"system[0] ephemeral/1h", "tools[1] ephemeral/1h", "messages[2][0] ephemeral/1h"}},
		{"stale markers are removed", func() *Request {
			r := request("agent:Plan")
			r.System[2].CacheControl = &message.CacheControl{Type: "ephemeral"}
			r.Tools[0].CacheControl = &message.CacheControl{Type: "ephemeral"}
			r.Messages[0].Content[0].CacheControl = &message.CacheControl{Type: "ephemeral"}
			r.Messages[2].Content[0].Content[0].CacheControl = &message.CacheControl{Type: "ephemeral"}
			return r
		}, []string{"system[0] ephemeral/1h", "tools[1] ephemeral/1h", "messages[2][0] ephemeral/1h"}},
		{"thinking is skipped", func() *Request {
			r := request("main")
			r.Messages = append(r.Messages, message.Assistant(message.Text("a"), message.Block{Type: message.TypeThinking, Thinking: "t"}))
			return r
		}, []string{"system[0] ephemeral/1h", "tools[1] ephemeral/1h", "messages[3][0] ephemeral/1h"}},
		{"empty request", func() *Request { return &Request{Source: "main"} }, nil},
		{"no tools, empty static", func() *Request {
			r := request("main")
			r.Tools = nil
			r.System[0].Text = ""
			return r
		}, []string{"messages[2][0] ephemeral/1h"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := tt.req()
			PlaceBreakpoints(req, policy)
			got := markers(req)
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("mismatch (-want +got):\n%s", diff)
			}
			if len(got) > MaxBreakpoints {
				t.Errorf("%d breakpoints, over the limit", len(got))
			}
		})
	}
}

// TestPlaceBreakpointsLeavesHistory checks the caller's slices are never written to: the
// tool pool and the history are shared by every later request.
func TestPlaceBreakpointsLeavesHistory(t *testing.T) {
	req := request("main")
	system, tools, history := req.System, req.Tools, req.Messages
	before, err := json.Marshal([]any{system, tools, history})
	if err != nil {
		t.Fatal(err)
	}
	PlaceBreakpoints(req, TTLPolicy{})
	after, err := json.Marshal([]any{system, tools, history})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(string(before), string(after)); diff != "" {
		t.Errorf("caller's slices changed (-before +after):\n%s", diff)
	}
	// Placing twice gives the same request: the moved breakpoint leaves nothing behind.
	again := &Request{Model: req.Model, System: req.System, Tools: req.Tools, Messages: req.Messages, Source: "main"}
	PlaceBreakpoints(again, TTLPolicy{})
	if diff := cmp.Diff(req, again, cmp.Comparer(func(a, b json.RawMessage) bool { return string(a) == string(b) })); diff != "" {
		t.Errorf("second placement differs (-first +second):\n%s", diff)
	}
}
