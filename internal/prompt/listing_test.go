package prompt

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/keel-dev/keel/internal/message"
)

func fixtureListing() Listing {
	return Listing{
		Agents: []Entry{{"general-purpose", "Handles open-ended work. (Tools: *)"}, {"Explore", "Fast read-only\nsearch."}},
		Skills: []Entry{{"review", "Review the current change."}, {"init", ""}}, SkillsOmitted: 2,
		Deferred: []string{"BashOutput", "KillShell", "mcp__gh__create_issue"}, DeferredSearch: "ToolSearch",
		MCP: []MCPServer{{Name: "tracker", Instructions: "Issue keys look like SHOP-123."}, {Name: "db", Instructions: "Read-only.\nUse LIMIT."}, {Name: "quiet"}},
	}
}

// known is what ParseListing recovers: the fields Announce compares.
func known(l Listing) Listing {
	l.SkillsOmitted, l.DeferredSearch = 0, ""
	l.Agents, l.Skills = normalized(l.Agents), normalized(l.Skills)
	l.MCP = sortedServers(l.MCP)
	var mcp []MCPServer
	for _, m := range l.MCP {
		if m.Instructions != "" {
			mcp = append(mcp, m)
		}
	}
	l.MCP = mcp
	return l
}

func history(blocks ...[]message.Block) []message.Message {
	var out []message.Message
	for _, bs := range blocks {
		out = append(out, message.User(append([]message.Block{message.Text("prompt")}, bs...)...), message.Assistant(message.Text("ok")))
	}
	return out
}

func texts(blocks []message.Block) string {
	var parts []string
	for _, b := range blocks {
		parts = append(parts, b.Text)
	}
	return strings.Join(parts, "\n\n")
}

// TestAnnounceFirstAndDelta pins the text of a first announcement and of a delta, and checks
// both read back to the listing the model was told about.
func TestAnnounceFirstAndDelta(t *testing.T) {
	first := fixtureListing()
	a := Announce(Listing{}, first)
	if len(a) != 5 {
		t.Fatalf("%d blocks, want one per non-empty section (agents, skills, deferred, 2 MCP servers)", len(a))
	}
	sortByName := cmpopts.SortSlices(func(a, b MCPServer) bool { return a.Name < b.Name })
	if diff := cmp.Diff(known(first), ParseListing(history(a)), sortByName); diff != "" {
		t.Errorf("first announcement read back (-want +got):\n%s", diff)
	}
	next := fixtureListing()
	next.Agents = append(next.Agents[:1], Entry{"reviewer", "Reviews diffs."})  // Explore gone, reviewer new
	next.Skills[0].Description = "Review the change, ranked by severity."       // changed
	next.Deferred = []string{"BashOutput", "KillShell", "mcp__gh__list_issues"} // one swapped
	next.MCP = []MCPServer{{Name: "tracker", Instructions: "Issue keys look like SHOP-1234."}}
	d := Announce(first, next)
	goldenText := "# first\n\n" + texts(a) + "\n\n# delta\n\n" + texts(d) + "\n"
	golden(t, "listing.golden", []byte(goldenText))
	if diff := cmp.Diff(known(next), ParseListing(history(a, d)), sortByName); diff != "" {
		t.Errorf("first announcement and delta read back (-want +got):\n%s", diff)
	}
	if got := Announce(known(next), next); got != nil {
		t.Errorf("nothing changed, yet announced:\n%s", texts(got))
	}
}

// TestAnnounceServerOrder checks the announcement does not depend on the order servers
// connected in (a map or a connection race upstream must not reach the request bytes).
func TestAnnounceServerOrder(t *testing.T) {
	servers := []MCPServer{{Name: "b", Instructions: "B"}, {Name: "a", Instructions: "A"}, {Name: "c", Instructions: "C"}}
	want := texts(Announce(Listing{}, Listing{MCP: servers}))
	for _, perm := range [][]int{{0, 2, 1}, {1, 0, 2}, {2, 1, 0}} {
		got := texts(Announce(Listing{}, Listing{MCP: []MCPServer{servers[perm[0]], servers[perm[1]], servers[perm[2]]}}))
		if diff := cmp.Diff(want, got); diff != "" {
			t.Errorf("order %v mismatch (-want +got):\n%s", perm, diff)
		}
	}
}

// TestParseIgnoresOtherText: reminders of other kinds and user text that merely resembles a
// listing leave the listing alone.
func TestParseIgnoresOtherText(t *testing.T) {
	h := history([]message.Block{
		message.Text("<system-reminder>\nThese instructions apply to files you are working on:\n\nx\n</system-reminder>"),
		message.Text(agentsFull + "\n- fake: not in a reminder"),
	})
	if got := ParseListing(h); !cmp.Equal(got, Listing{}) {
		t.Errorf("parsed %+v from text that announces nothing", got)
	}
}
