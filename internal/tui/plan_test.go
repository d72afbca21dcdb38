package tui

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestPlanDialog: an ExitPlanMode question shows the plan; approving it leaves plan mode in
// the mode chosen, and "keep planning" sends the feedback back as the refusal.
func TestPlanDialog(t *testing.T) {
	plan := keel.PermissionRequest{Tool: "ExitPlanMode", Input: json.RawMessage(`{"plan":"## Plan\n1. Rewrite calc.py\n2. Run the tests"}`)}
	for _, tt := range []struct {
		key  string
		mode string
	}{{"1", "acceptEdits"}, {"2", "default"}} {
		sess, _ := newSession(t, nil)
		if err := sess.SetPermissionMode("plan"); err != nil {
			t.Fatal(err)
		}
		m := New(Config{Backend: sess, NoColor: true})
		reply := make(chan keel.PermissionAnswer, 1)
		m.Update(askMsg{req: plan, reply: reply})
		got := frame(m)
		for _, want := range []string{"1. Rewrite calc.py", "2. Run the tests", "accept edits", "keep planning"} {
			if !strings.Contains(got, want) {
				t.Errorf("plan dialog lacks %q:\n%s", want, got)
			}
		}
		m.Update(press(tt.key))
		if ans := waittest.Recv(t, "the plan answer", reply); !ans.Allow {
			t.Errorf("choice %s: answer %+v, want the plan approved", tt.key, ans)
		}
		if mode := sess.PermissionMode(); string(mode) != tt.mode {
			t.Errorf("choice %s: mode %q after the approval, want %s", tt.key, mode, tt.mode)
		}
		m.Close()
	}

	sess, _ := newSession(t, nil)
	m := New(Config{Backend: sess, NoColor: true})
	defer m.Close()
	reply := make(chan keel.PermissionAnswer, 1)
	m.Update(askMsg{req: plan, reply: reply})
	m.Update(press("3"))
	typeKeys(m, "add a test first")
	m.Update(press("enter"))
	want := keel.PermissionAnswer{Reason: "the user denied this call: add a test first"}
	if diff := cmp.Diff(want, waittest.Recv(t, "the plan answer", reply)); diff != "" {
		t.Errorf("keep planning answer mismatch (-want +got):\n%s", diff)
	}
}
