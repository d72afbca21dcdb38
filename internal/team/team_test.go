package team

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/waittest"
)

// newLead opens a lead's team handle on a fresh directory; members are added as records,
// as a teammate process would write them.
func newLead(t *testing.T, limits coord.Limits) *Team {
	t.Helper()
	be, err := fscoord.Open(t.TempDir(), fscoord.Options{Config: coord.Config{Limits: limits}})
	if err != nil {
		t.Fatal(err)
	}
	tm, err := Open(t.Context(), Config{Name: "crew", Backend: be, Lead: true, Lease: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = tm.Close(); _ = be.Close() })
	return tm
}

// addMember records a member run by a live process of this host (the test's parent stands in
// for it).
func addMember(t *testing.T, tm *Team, name string, state State) {
	t.Helper()
	now := time.Now()
	rec := Record{ID: newAgentID(), Name: name, Color: "green", AgentType: "general-purpose", Runner: RunnerProcess, State: state,
		PID: os.Getppid(), Host: tm.host, Heartbeat: now, Started: now}
	if err := tm.putRecord(t.Context(), rec); err != nil {
		t.Fatal(err)
	}
}

func call(t *testing.T, tl tool.Tool, input any) tool.Result {
	t.Helper()
	b, _ := json.Marshal(input)
	return tl.Call(waittest.Context(t), &tool.Env{Progress: func(string) {}}, b)
}

func toolNamed(tm *Team, name string) tool.Tool {
	for _, tl := range tm.Tools() {
		if tl.Name() == name {
			return tl
		}
	}
	panic(name)
}

func TestRouteBadRecipientsAndSizes(t *testing.T) {
	tm := newLead(t, coord.Limits{MessageBytes: 1000})
	addMember(t, tm, "alice", StateIdle)
	addMember(t, tm, "bob", StateStopped)
	ctx := waittest.Context(t)
	send := func(to string, msg any) tool.Result {
		raw, _ := json.Marshal(msg)
		res, handled := tm.Route(ctx, "", to, raw, "")
		if !handled {
			t.Fatalf("send to %q was not handled by the team", to)
		}
		return res
	}
	for _, tc := range []struct {
		name, to string
		msg      any
		want     []string
	}{
		{"unknown member", "carol", "hi", []string{`no member named "carol"`, "alice (idle)", "bob (stopped)", "team-lead"}},
		{"stopped member", "bob", "hi", []string{"bob has stopped", "spawn it again"}},
		{"oversize", "alice", strings.Repeat("x", 1200), []string{"over the 1000-byte budget"}},
		{"empty", "alice", " ", []string{"empty"}},
		{"to self", "team-lead", "hi", []string{"yourself"}},
		{"bad structured", "alice", map[string]any{"type": "shutdown_response"}, []string{"request_id"}},
		{"unknown type", "alice", map[string]any{"type": "hug"}, []string{`"hug" is not one of`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := send(tc.to, tc.msg)
			if !res.IsError {
				t.Fatalf("got success %q", res.ResultText())
			}
			for _, w := range tc.want {
				if !strings.Contains(res.ResultText(), w) {
					t.Errorf("error %q does not say %q", res.ResultText(), w)
				}
			}
		})
	}
	msgs, _ := tm.be.Mailbox().Fetch(ctx, "alice", 0)
	if len(msgs) != 0 {
		t.Errorf("refused messages reached alice: %v", msgs)
	}
	// A subagent id is not the team's to route.
	if _, handled := tm.Route(ctx, "", "a0123456789abcdef", json.RawMessage(`"x"`), ""); handled {
		t.Error("a subagent id was taken as a team recipient")
	}
	res := send("*", "all hands")
	if res.IsError || !strings.Contains(res.ResultText(), "alice") || strings.Contains(res.ResultText(), "bob") {
		t.Errorf("broadcast: %q; want alice only (bob stopped)", res.ResultText())
	}
}

func TestTaskToolsBadInput(t *testing.T) {
	tm := newLead(t, coord.Limits{})
	create, update := toolNamed(tm, TaskCreateName), toolNamed(tm, TaskUpdateName)
	for _, s := range []string{"a", "b", "c"} {
		if res := call(t, create, map[string]any{"subject": s}); res.IsError {
			t.Fatal(res.ResultText())
		}
	}
	for _, tc := range []struct {
		name  string
		input map[string]any
		want  string
	}{
		{"blocked by itself", map[string]any{"taskId": "1", "addBlockedBy": []string{"1"}}, "loop"},
		{"unknown dependency", map[string]any{"taskId": "1", "addBlockedBy": []string{"9"}}, "does not exist"},
		{"unknown task", map[string]any{"taskId": "42", "status": "completed"}, "does not exist"},
		{"bad status", map[string]any{"taskId": "1", "status": "done"}, "not one of"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if res := call(t, update, tc.input); !res.IsError || !strings.Contains(res.ResultText(), tc.want) {
				t.Errorf("got %q (error %v), want an error saying %q", res.ResultText(), res.IsError, tc.want)
			}
		})
	}
	if res := call(t, update, map[string]any{"taskId": "2", "addBlockedBy": []string{"1"}}); res.IsError {
		t.Fatal(res.ResultText())
	}
	if res := call(t, update, map[string]any{"taskId": "3", "addBlockedBy": []string{"2"}}); res.IsError {
		t.Fatal(res.ResultText())
	}
	res := call(t, update, map[string]any{"taskId": "1", "addBlockedBy": []string{"#3"}})
	if !res.IsError || !strings.Contains(res.ResultText(), "1 → 3 → 2 → 1") {
		t.Errorf("cycle through blockedBy: %q; want the loop spelled out", res.ResultText())
	}
	if res := call(t, update, map[string]any{"taskId": "2", "status": "in_progress"}); !res.IsError || !strings.Contains(res.ResultText(), "blocked by unfinished task(s) 1") {
		t.Errorf("claim of a blocked task: %q", res.ResultText())
	}
	if res := call(t, update, map[string]any{"taskId": "1", "status": "completed"}); res.IsError || !strings.Contains(res.ResultText(), "waiting for it: #2") {
		t.Errorf("complete: %q", res.ResultText())
	}
	if res := call(t, update, map[string]any{"taskId": "1", "status": "in_progress"}); !res.IsError || !strings.Contains(res.ResultText(), "already completed") {
		t.Errorf("claim of a completed task: %q", res.ResultText())
	}
	list := call(t, toolNamed(tm, TaskListName), map[string]any{})
	want := "#1 [completed] a\n#2 [pending] b\n#3 [pending] c [blocked by #2]"
	if diff := cmp.Diff(want, list.ResultText()); diff != "" {
		t.Errorf("TaskList mismatch (-want +got):\n%s", diff)
	}
}

func TestSpawnRefusals(t *testing.T) {
	tm := newLead(t, coord.Limits{})
	addMember(t, tm, "alice", StateIdle)
	for _, tc := range []struct {
		name    string
		agentID string
		in      SpawnInput
		want    string
	}{
		{"duplicate of a live member", "", SpawnInput{Name: "alice", Prompt: "x"}, "already exists and is idle"},
		{"reserved name", "", SpawnInput{Name: "team-lead", Prompt: "x"}, "reserved"},
		{"bad name", "", SpawnInput{Name: "no spaces", Prompt: "x"}, "letters, digits"},
		{"no prompt", "", SpawnInput{Name: "bob"}, "prompt is required"},
		{"not the lead", "a0123456789abcdef", SpawnInput{Name: "bob", Prompt: "x"}, "only the team lead"},
		{"no host", "", SpawnInput{Name: "bob", Prompt: "x"}, "cannot run teammates"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := tm.Spawn(waittest.Context(t), tc.agentID, tc.in)
			if !res.IsError || !strings.Contains(res.ResultText(), tc.want) {
				t.Errorf("got %q, want an error saying %q", res.ResultText(), tc.want)
			}
		})
	}
}

// A member is dead on evidence: its loop in this process ended, its process on this host is
// gone, or — on another host only — its heartbeat stopped. A late heartbeat of a member whose
// loop or process is known to run is not death.
func TestLiveness(t *testing.T) {
	tm := newLead(t, coord.Limits{})
	tm.mu.Lock()
	tm.members["alice"] = &Member{}
	tm.mu.Unlock()
	t.Cleanup(func() {
		tm.mu.Lock()
		delete(tm.members, "alice")
		tm.mu.Unlock()
	})
	now := time.Now()
	for _, tc := range []struct {
		name string
		rec  Record
		want State
	}{
		{"running here, stale heartbeat", Record{Name: "alice", State: StateWorking, Heartbeat: now.Add(-time.Hour), PID: tm.pid, Host: tm.host, Instance: tm.instance}, StateWorking},
		{"ended here", Record{Name: "bob", State: StateIdle, Heartbeat: now, PID: tm.pid, Host: tm.host, Instance: tm.instance}, StateDead},
		{"the lead here", Record{Name: LeadAlias, Runner: RunnerLead, State: StateIdle, Heartbeat: now.Add(-time.Hour), PID: tm.pid, Host: tm.host, Instance: tm.instance}, StateIdle},
		{"live process here, stale heartbeat", Record{State: StateIdle, Heartbeat: now.Add(-time.Hour), PID: os.Getppid(), Host: tm.host}, StateIdle},
		{"process gone", Record{State: StateIdle, Heartbeat: now, PID: 1 << 30, Host: tm.host}, StateDead},
		{"pid taken by another process", Record{State: StateIdle, Heartbeat: now, PID: os.Getppid(), ProcStart: procStart(os.Getppid()) + 1, Host: tm.host}, StateDead},
		{"live process, its start time", Record{State: StateIdle, Heartbeat: now, PID: os.Getppid(), ProcStart: procStart(os.Getppid()), Host: tm.host}, StateIdle},
		{"other host", Record{State: StateIdle, Heartbeat: now, PID: 1 << 30, Host: "elsewhere"}, StateIdle},
		{"other host, stale heartbeat", Record{State: StateIdle, Heartbeat: now.Add(-time.Hour), PID: 1 << 30, Host: "elsewhere"}, StateDead},
		{"stopped", Record{State: StateStopped, Heartbeat: now.Add(-time.Hour)}, StateStopped},
	} {
		if got := tm.liveness(tc.rec); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// The inbox hands a message to one request only, acks it after the turn's sync, gives it
// back when the request failed, and on resume drops what the history already holds.
func TestInboxAckRequeueReconcile(t *testing.T) {
	tm := newLead(t, coord.Limits{})
	ctx := waittest.Context(t)
	mb := tm.be.Mailbox()
	in := newInbox(mb, "w", tm.logger, nil)
	m1 := coord.Message{ID: newID(), From: "team-lead", To: "w", Text: "one", Summary: "first"}
	m2 := coord.Message{ID: newID(), From: "team-lead", To: "w", Text: "two"}
	for _, m := range []coord.Message{m1, m2} {
		if err := mb.Send(ctx, m); err != nil {
			t.Fatal(err)
		}
	}
	blocks := in.Observe(ctx)
	if len(blocks) != 2 || !strings.Contains(blocks[0].Text, `teammate_id="team-lead"`) || !strings.Contains(blocks[0].Text, `summary="first"`) {
		t.Fatalf("observe: %v", blocks)
	}
	if again := in.Observe(ctx); len(again) != 0 {
		t.Errorf("a message in flight was handed out twice: %v", again)
	}
	in.Requeue()
	if again := in.Observe(ctx); len(again) != 2 {
		t.Errorf("after a failed request the messages were not handed out again: %d", len(again))
	}
	if err := in.Ack(ctx); err != nil {
		t.Fatal(err)
	}
	if left, _ := mb.Fetch(ctx, "w", 0); len(left) != 0 {
		t.Errorf("acked messages are still unread: %v", left)
	}
	// A crash after the history recorded m3 but before its ack.
	m3 := coord.Message{ID: newID(), From: "team-lead", To: "w", Text: "three"}
	if err := mb.Send(ctx, m3); err != nil {
		t.Fatal(err)
	}
	history := []message.Message{message.User(message.Text(render(m3, "")))}
	fresh := newInbox(mb, "w", tm.logger, nil)
	fresh.Reconcile(ctx, history)
	if got := fresh.Observe(ctx); len(got) != 0 {
		t.Errorf("a message the history holds was delivered again: %v", got)
	}
}

func TestSettled(t *testing.T) {
	tm := newLead(t, coord.Limits{})
	ctx := waittest.Context(t)
	addMember(t, tm, "alice", StateIdle)
	if done, why := tm.Settled(ctx); !done {
		t.Errorf("an idle team with an empty board is not settled: %s", why)
	}
	if _, err := tm.be.Board().Create(ctx, coord.Task{Subject: "x"}); err != nil {
		t.Fatal(err)
	}
	if done, why := tm.Settled(ctx); done || !strings.Contains(why, "claimable by alice") {
		t.Errorf("a claimable task left the team settled (%v, %s)", done, why)
	}
	addMember(t, tm, "bob", StateWorking)
	if done, why := tm.Settled(ctx); done || !strings.Contains(why, "bob is working") {
		t.Errorf("a working member left the team settled (%v, %s)", done, why)
	}
}

func TestNextColor(t *testing.T) {
	var recs []Record
	var got []string
	for range len(Colors) + 2 {
		c := nextColor(recs)
		got = append(got, c)
		recs = append(recs, Record{Color: c})
	}
	want := append(append([]string(nil), Colors...), Colors[0], Colors[1])
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("colours mismatch (-want +got):\n%s", diff)
	}
}
