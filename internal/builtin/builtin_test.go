package builtin

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/tool"
)

// maxToolBytes bounds what the built-in tools add to every request (names, descriptions,
// schemas); the whole first request must stay under 40 KB.
const maxToolBytes = 12 << 10

func TestToolsOrderAndSize(t *testing.T) {
	tools := Tools(Options{})
	var names []string
	var doc strings.Builder
	total := 0
	v := tool.NewValidator()
	for _, tl := range tools {
		names = append(names, tl.Name())
		if d, ok := tl.(tool.Deferrable); ok && d.DeferLoading() {
			total += len(tl.Name()) // a deferred tool is named, not described, until searched for
		} else {
			total += len(tl.Name()) + len(tl.Description()) + len(tl.InputSchema())
		}
		if err := v.Validate(tl, json.RawMessage(`{}`)); err != nil && strings.Contains(err.Error(), "invalid input schema") {
			t.Errorf("%s: %v", tl.Name(), err)
		}
		doc.WriteString("## " + tl.Name() + "\n" + tl.Description() + "\n" + string(tl.InputSchema()) + "\n\n")
	}
	want := []string{"Bash", "Glob", "Grep", "Read", "Edit", "Write", "TodoWrite", "BashOutput", "KillShell", "NotebookEdit", "WebFetch", "WebSearch"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("order mismatch (-want +got):\n%s", diff)
	}
	t.Logf("tool names+descriptions+schemas: %d bytes", total)
	if total > maxToolBytes {
		t.Errorf("the built-in tools take %d bytes, over the %d budget", total, maxToolBytes)
	}
	// The exact bytes are part of the prompt-cache prefix: any change must show up here.
	golden(t, "tools", doc.String())
}

func TestReadOnlyAndConcurrency(t *testing.T) {
	tests := []struct {
		name           string
		readOnly, safe bool
	}{
		{"Bash", false, false}, {"Glob", true, true}, {"Grep", true, true}, {"Read", true, true},
		{"Edit", false, false}, {"Write", false, false}, {"TodoWrite", true, false},
		{"BashOutput", true, false}, {"KillShell", false, false}, {"NotebookEdit", false, false},
		{"WebFetch", true, true}, {"WebSearch", true, true},
	}
	pool := tool.Assemble(Tools(Options{}), nil)
	for _, tt := range tests {
		tl, ok := pool.Lookup(tt.name)
		if !ok {
			t.Fatalf("no tool %s", tt.name)
		}
		in := json.RawMessage(`{"file_path":"x","pattern":"x","command":"ls","todos":[],"bash_id":"b","shell_id":"b","old_string":"a","new_string":"b","content":"","notebook_path":"x.ipynb","new_source":"","url":"https://example.com","prompt":"p","query":"q q"}`)
		if got := tl.ReadOnly(in); got != tt.readOnly {
			t.Errorf("%s ReadOnly = %v", tt.name, got)
		}
		if got := tl.ConcurrencySafe(in); got != tt.safe {
			t.Errorf("%s ConcurrencySafe = %v", tt.name, got)
		}
	}
}
