package coordtest

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/coord"
)

const lease = time.Minute

func ptr[T any](v T) *T { return &v }

func create(t *testing.T, b coord.Board, subject string, blockedBy ...string) coord.Task {
	t.Helper()
	return must[coord.Task](t, "create "+subject)(b.Create(ctxOf(t), coord.Task{Subject: subject, BlockedBy: blockedBy}))
}

func ids(ts []coord.Task) []string {
	var out []string
	for _, t := range ts {
		out = append(out, t.ID)
	}
	return out
}

func testCreateGetList(t *testing.T, s *store) {
	ctx := ctxOf(t)
	a, b := s.handle(t).Board(), s.handle(t).Board()
	t1 := create(t, a, "write the parser")
	if t1.ID != "1" || t1.Status != coord.StatusPending || t1.Revision != 1 || t1.Created.IsZero() {
		t.Errorf("first task = %+v; want id 1, pending, revision 1, a creation time", t1)
	}
	var want []string
	want = append(want, t1.ID)
	for i := 2; i <= 11; i++ {
		tk := create(t, b, fmt.Sprintf("task %d", i))
		want = append(want, tk.ID)
		if tk.ID != fmt.Sprint(i) {
			t.Errorf("task %d got id %s", i, tk.ID)
		}
	}
	got := must[coord.Task](t, "get")(b.Get(ctx, "1"))
	if got.Subject != "write the parser" {
		t.Errorf("get 1 from another handle = %+v", got)
	}
	list := must[[]coord.Task](t, "list")(a.List(ctx))
	if diff := cmp.Diff(want, ids(list)); diff != "" {
		t.Errorf("list order (numeric ids) mismatch (-want +got):\n%s", diff)
	}
	_, err := a.Get(ctx, "99")
	wantErr(t, "get unknown", err, coord.ErrNotFound)
	_, err = a.Create(ctx, coord.Task{Subject: "  "})
	wantErr(t, "create without subject", err, coord.ErrInvalid)
	_, err = a.Create(ctx, coord.Task{Subject: "x", BlockedBy: []string{"77"}})
	wantErr(t, "create blocked by unknown", err, coord.ErrNotFound)
}

func testUpdate(t *testing.T, s *store) {
	ctx := ctxOf(t)
	b := s.handle(t).Board()
	tk := create(t, b, "draft")
	s.clock.Advance(time.Second)
	got := must[coord.Task](t, "update")(b.Update(ctx, tk.ID, coord.TaskChange{
		Subject: ptr("final"), Description: ptr("the whole thing"), ActiveForm: ptr("Finishing"),
		Owner:    ptr("alice"),
		Metadata: map[string]json.RawMessage{"priority": json.RawMessage(`"high"`), "n": json.RawMessage(`3`)},
	}))
	if got.Subject != "final" || got.Description != "the whole thing" || got.ActiveForm != "Finishing" || got.Owner != "alice" ||
		got.Revision != 2 || !got.Updated.After(got.Created) {
		t.Errorf("after update = %+v", got)
	}
	got = must[coord.Task](t, "update metadata")(b.Update(ctx, tk.ID, coord.TaskChange{
		Metadata: map[string]json.RawMessage{"n": json.RawMessage(`null`), "tag": json.RawMessage(`"x"`)},
	}))
	if diff := cmp.Diff(map[string]string{"priority": `"high"`, "tag": `"x"`}, rawStrings(got.Metadata)); diff != "" {
		t.Errorf("metadata merge (null deletes) mismatch (-want +got):\n%s", diff)
	}
	_, err := b.Update(ctx, tk.ID, coord.TaskChange{Status: ptr(coord.TaskStatus("done"))})
	wantErr(t, "invalid status", err, coord.ErrInvalid)
	_, err = b.Update(ctx, "42", coord.TaskChange{Subject: ptr("x")})
	wantErr(t, "update unknown", err, coord.ErrNotFound)
	_, err = b.Update(ctx, tk.ID, coord.TaskChange{Subject: ptr("y"), IfOwner: ptr("bob")})
	wantErr(t, "update as someone who does not hold it", err, coord.ErrNotOwner)
	if now := must[coord.Task](t, "get")(b.Get(ctx, tk.ID)); now.Subject != "final" {
		t.Errorf("a refused update changed the task: %+v", now)
	}
}

func rawStrings(m map[string]json.RawMessage) map[string]string {
	out := map[string]string{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

func testDependencies(t *testing.T, s *store) {
	ctx := ctxOf(t)
	b := s.handle(t).Board()
	t1, t2, t3 := create(t, b, "schema"), create(t, b, "api"), create(t, b, "ui")
	must[coord.Task](t, "t2 blocked by t1")(b.Update(ctx, t2.ID, coord.TaskChange{AddBlockedBy: []string{t1.ID}}))
	must[coord.Task](t, "t1 blocks t3")(b.Update(ctx, t1.ID, coord.TaskChange{AddBlocks: []string{t3.ID}}))
	// Adding the same edge twice changes nothing.
	must[coord.Task](t, "again")(b.Update(ctx, t2.ID, coord.TaskChange{AddBlockedBy: []string{t1.ID}}))
	list := must[[]coord.Task](t, "list")(b.List(ctx))
	type deps struct{ BlockedBy, Blocks []string }
	got := map[string]deps{}
	for _, tk := range list {
		got[tk.ID] = deps{tk.BlockedBy, tk.Blocks}
	}
	want := map[string]deps{"1": {nil, []string{"2", "3"}}, "2": {[]string{"1"}, nil}, "3": {[]string{"1"}, nil}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dependencies mismatch (-want +got):\n%s", diff)
	}
	if g := must[coord.Task](t, "get 1")(b.Get(ctx, "1")); !slices.Equal(g.Blocks, []string{"2", "3"}) {
		t.Errorf("Get derives blocks too: got %v", g.Blocks)
	}
	_, err := b.Update(ctx, t3.ID, coord.TaskChange{AddBlockedBy: []string{"9"}})
	wantErr(t, "blocked by unknown", err, coord.ErrNotFound)
}

func testCycles(t *testing.T, s *store) {
	ctx := ctxOf(t)
	b := s.handle(t).Board()
	t1, t2, t3 := create(t, b, "a"), create(t, b, "b"), create(t, b, "c")
	_, err := b.Update(ctx, t1.ID, coord.TaskChange{AddBlockedBy: []string{t1.ID}})
	wantErr(t, "self dependency", err, coord.ErrCycle)
	must[coord.Task](t, "2 waits for 1")(b.Update(ctx, t2.ID, coord.TaskChange{AddBlockedBy: []string{t1.ID}}))
	must[coord.Task](t, "3 waits for 2")(b.Update(ctx, t3.ID, coord.TaskChange{AddBlockedBy: []string{t2.ID}}))
	_, err = b.Update(ctx, t1.ID, coord.TaskChange{AddBlockedBy: []string{t3.ID}})
	wantErr(t, "transitive cycle", err, coord.ErrCycle)
	_, err = b.Update(ctx, t3.ID, coord.TaskChange{AddBlocks: []string{t1.ID}})
	wantErr(t, "cycle through blocks", err, coord.ErrCycle)
	if g := must[coord.Task](t, "get 1")(b.Get(ctx, t1.ID)); len(g.BlockedBy) != 0 {
		t.Errorf("a refused cycle left a dependency: %+v", g)
	}
}

func testDelete(t *testing.T, s *store) {
	ctx := ctxOf(t)
	b := s.handle(t).Board()
	t1 := create(t, b, "obsolete")
	t2 := create(t, b, "waits", t1.ID)
	if err := b.Delete(ctx, t1.ID); err != nil {
		t.Fatal(err)
	}
	_, err := b.Get(ctx, t1.ID)
	wantErr(t, "get deleted", err, coord.ErrNotFound)
	g := must[coord.Task](t, "get 2")(b.Get(ctx, t2.ID))
	if len(g.BlockedBy) != 0 {
		t.Errorf("dependency on a deleted task kept: %v", g.BlockedBy)
	}
	must[coord.Task](t, "claim the former dependent")(b.Claim(ctx, t2.ID, "alice", lease))
	wantErr(t, "delete unknown", b.Delete(ctx, "50"), coord.ErrNotFound)
	if t3 := create(t, b, "new"); t3.ID != "3" {
		t.Errorf("ids are not reused after a delete: got %s, want 3", t3.ID)
	}
}

func testClaim(t *testing.T, s *store) {
	ctx := ctxOf(t)
	b := s.handle(t).Board()
	tk := create(t, b, "work")
	got := must[coord.Task](t, "claim")(b.Claim(ctx, tk.ID, "alice", lease))
	if got.Status != coord.StatusInProgress || got.Owner != "alice" || !got.LeaseUntil.Equal(s.clock.Now().Add(lease)) {
		t.Errorf("claimed task = %+v; want in_progress, owner alice, lease until now+%v", got, lease)
	}
	s.clock.Advance(10 * time.Second)
	again := must[coord.Task](t, "claim again by the holder")(b.Claim(ctx, tk.ID, "alice", lease))
	if !again.LeaseUntil.Equal(s.clock.Now().Add(lease)) {
		t.Errorf("re-claim by the holder did not renew: lease %v", again.LeaseUntil)
	}
	s.clock.Advance(10 * time.Second)
	renewed := must[coord.Task](t, "renew")(b.Renew(ctx, tk.ID, "alice", 2*lease))
	if !renewed.LeaseUntil.Equal(s.clock.Now().Add(2 * lease)) {
		t.Errorf("renew: lease %v", renewed.LeaseUntil)
	}
	_, err := b.Renew(ctx, tk.ID, "bob", lease)
	wantErr(t, "renew by someone else", err, coord.ErrNotOwner)
	done := must[coord.Task](t, "complete")(b.Update(ctx, tk.ID, coord.TaskChange{Status: ptr(coord.StatusCompleted), IfOwner: ptr("alice")}))
	if done.Status != coord.StatusCompleted || !done.LeaseUntil.IsZero() || done.Owner != "alice" {
		t.Errorf("completed task = %+v; want completed, no lease, owner kept", done)
	}
}

func testClaimRefusals(t *testing.T, s *store) {
	ctx := ctxOf(t)
	b := s.handle(t).Board()
	t1 := create(t, b, "first")
	t2 := create(t, b, "second", t1.ID)
	t3 := create(t, b, "assigned")
	must[coord.Task](t, "assign")(b.Update(ctx, t3.ID, coord.TaskChange{Owner: ptr("carol")}))
	must[coord.Task](t, "alice claims 1")(b.Claim(ctx, t1.ID, "alice", lease))

	_, err := b.Claim(ctx, t1.ID, "bob", lease)
	wantErr(t, "claim held task", err, coord.ErrClaimed)
	_, err = b.Claim(ctx, t2.ID, "bob", lease)
	wantErr(t, "claim blocked task", err, coord.ErrBlocked)
	_, err = b.Claim(ctx, t3.ID, "bob", lease)
	wantErr(t, "claim task assigned to another", err, coord.ErrClaimed)
	must[coord.Task](t, "carol claims her task")(b.Claim(ctx, t3.ID, "carol", lease))
	_, err = b.Claim(ctx, "404", "bob", lease)
	wantErr(t, "claim unknown", err, coord.ErrNotFound)
	must[coord.Task](t, "complete 3")(b.Update(ctx, t3.ID, coord.TaskChange{Status: ptr(coord.StatusCompleted)}))
	_, err = b.Claim(ctx, t3.ID, "carol", lease)
	wantErr(t, "claim completed task", err, coord.ErrCompleted)
	_, err = b.ClaimNext(ctx, "bob", lease)
	wantErr(t, "claim next with nothing claimable", err, coord.ErrNoTask)
	if g := must[coord.Task](t, "get 2")(b.Get(ctx, t2.ID)); g.Status != coord.StatusPending || g.Owner != "" {
		t.Errorf("a refused claim changed the task: %+v", g)
	}
}

func testCompletionUnblocks(t *testing.T, s *store) {
	ctx := ctxOf(t)
	lead, worker := s.handle(t).Board(), s.handle(t).Board()
	t1 := create(t, lead, "base")
	t2 := create(t, lead, "on top", t1.ID)
	t3 := create(t, lead, "also on top", t1.ID)
	claimed := must[coord.Task](t, "claim next")(worker.ClaimNext(ctx, "bob", lease))
	if claimed.ID != t1.ID {
		t.Fatalf("claim next took %s, want the only unblocked task %s", claimed.ID, t1.ID)
	}
	_, err := worker.ClaimNext(ctx, "carol", lease)
	wantErr(t, "claim next while the rest is blocked", err, coord.ErrNoTask)
	must[coord.Task](t, "complete 1")(worker.Update(ctx, t1.ID, coord.TaskChange{Status: ptr(coord.StatusCompleted), IfOwner: ptr("bob")}))
	a := must[coord.Task](t, "carol claims next")(lead.ClaimNext(ctx, "carol", lease))
	b := must[coord.Task](t, "dave claims next")(worker.ClaimNext(ctx, "dave", lease))
	if diff := cmp.Diff([]string{t2.ID, t3.ID}, []string{a.ID, b.ID}); diff != "" {
		t.Errorf("dependents claimed after completion mismatch (-want +got):\n%s", diff)
	}
}

func testLeaseLapse(t *testing.T, s *store) {
	ctx := ctxOf(t)
	dead, alive := s.handle(t).Board(), s.handle(t).Board()
	tk := create(t, dead, "long job")
	must[coord.Task](t, "alice claims")(dead.Claim(ctx, tk.ID, "alice", lease))
	s.clock.Advance(lease - time.Second)
	_, err := alive.Claim(ctx, tk.ID, "bob", lease)
	wantErr(t, "claim before the lease lapsed", err, coord.ErrClaimed)
	s.clock.Advance(time.Second)
	got := must[coord.Task](t, "claim after the lease lapsed")(alive.ClaimNext(ctx, "bob", lease))
	if got.ID != tk.ID || got.Owner != "bob" {
		t.Fatalf("after the lease lapsed bob got %+v", got)
	}
	// The old owner wakes up: it can neither renew nor complete the task.
	_, err = dead.Renew(ctx, tk.ID, "alice", lease)
	wantErr(t, "renew by the lapsed owner", err, coord.ErrNotOwner)
	_, err = dead.Update(ctx, tk.ID, coord.TaskChange{Status: ptr(coord.StatusCompleted), IfOwner: ptr("alice")})
	wantErr(t, "complete by the lapsed owner", err, coord.ErrNotOwner)
	must[coord.Task](t, "bob completes")(alive.Update(ctx, tk.ID, coord.TaskChange{Status: ptr(coord.StatusCompleted), IfOwner: ptr("bob")}))
}

func testRelease(t *testing.T, s *store) {
	ctx := ctxOf(t)
	b := s.handle(t).Board()
	tk := create(t, b, "maybe later")
	must[coord.Task](t, "claim")(b.Claim(ctx, tk.ID, "alice", lease))
	_, err := b.Release(ctx, tk.ID, "bob")
	wantErr(t, "release by someone else", err, coord.ErrNotOwner)
	got := must[coord.Task](t, "release")(b.Release(ctx, tk.ID, "alice"))
	if got.Status != coord.StatusPending || got.Owner != "" || !got.LeaseUntil.IsZero() {
		t.Errorf("released task = %+v", got)
	}
	must[coord.Task](t, "bob claims the released task")(b.Claim(ctx, tk.ID, "bob", lease))
	// Setting a held task back to pending by update ends the lease too.
	back := must[coord.Task](t, "set pending")(b.Update(ctx, tk.ID, coord.TaskChange{Status: ptr(coord.StatusPending), Owner: ptr("")}))
	if !back.LeaseUntil.IsZero() {
		t.Errorf("pending task kept a lease: %+v", back)
	}
}

func testClaimNextOrder(t *testing.T, s *store) {
	ctx := ctxOf(t)
	b := s.handle(t).Board()
	for i := 1; i <= 12; i++ {
		create(t, b, fmt.Sprintf("t%d", i))
	}
	must[coord.Task](t, "assign 11 to alice")(b.Update(ctx, "11", coord.TaskChange{Owner: ptr("alice")}))
	must[coord.Task](t, "assign 2 to bob")(b.Update(ctx, "2", coord.TaskChange{Owner: ptr("bob")}))
	must[coord.Task](t, "alice holds 12")(b.Claim(ctx, "12", "alice", lease))
	var got []string
	for range 3 {
		tk := must[coord.Task](t, "alice claims next")(b.ClaimNext(ctx, "alice", lease))
		got = append(got, tk.ID)
		must[coord.Task](t, "complete")(b.Update(ctx, tk.ID, coord.TaskChange{Status: ptr(coord.StatusCompleted)}))
	}
	// First what she holds, then what is assigned to her, then the lowest free id (not 2,
	// which is bob's).
	if diff := cmp.Diff([]string{"12", "11", "1"}, got); diff != "" {
		t.Errorf("claim next order mismatch (-want +got):\n%s", diff)
	}
	if tk := must[coord.Task](t, "next")(b.ClaimNext(ctx, "alice", lease)); tk.ID != "3" {
		t.Errorf("alice skipped bob's task 2 and should get 3, got %s", tk.ID)
	}
}

// testContentionOneTask: many handles claim one task at once; exactly one wins, every loser
// sees ErrClaimed.
func testContentionOneTask(t *testing.T, s *store) {
	ctx := ctxOf(t)
	const claimers = 16
	for round := range 8 {
		tk := create(t, s.handle(t).Board(), fmt.Sprintf("contended %d", round))
		var (
			wg      sync.WaitGroup
			mu      sync.Mutex
			winners []string
			other   []error
		)
		start := make(chan struct{})
		for i := range claimers {
			b := s.handle(t).Board()
			owner := fmt.Sprintf("m%d", i)
			wg.Go(func() {
				<-start
				_, err := b.Claim(ctx, tk.ID, owner, lease)
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					winners = append(winners, owner)
				case !errors.Is(err, coord.ErrClaimed):
					other = append(other, err)
				}
			})
		}
		close(start)
		wg.Wait()
		if len(winners) != 1 || len(other) > 0 {
			t.Fatalf("round %d: winners %v (want exactly one), unexpected errors %v", round, winners, other)
		}
		if g := must[coord.Task](t, "get")(s.handle(t).Board().Get(ctx, tk.ID)); g.Owner != winners[0] {
			t.Fatalf("round %d: task owned by %q, but %q won", round, g.Owner, winners[0])
		}
	}
}

// testContentionClaimNext: claimers on several handles drain a board with ClaimNext; every
// task is claimed exactly once.
func testContentionClaimNext(t *testing.T, s *store) {
	ctx := ctxOf(t)
	const tasks, claimers = 40, 8
	b0 := s.handle(t).Board()
	for i := range tasks {
		create(t, b0, fmt.Sprintf("job %d", i))
	}
	var (
		wg     sync.WaitGroup
		mu     sync.Mutex
		byTask = map[string][]string{}
		errs   []error
	)
	start := make(chan struct{})
	for i := range claimers {
		b := s.handle(t).Board()
		owner := fmt.Sprintf("m%d", i)
		wg.Go(func() {
			<-start
			for {
				tk, err := b.ClaimNext(ctx, owner, lease)
				if errors.Is(err, coord.ErrNoTask) {
					return
				}
				if err == nil {
					_, err = b.Update(ctx, tk.ID, coord.TaskChange{Status: ptr(coord.StatusCompleted), IfOwner: ptr(owner)})
				}
				mu.Lock()
				if err != nil {
					errs = append(errs, err)
				} else {
					byTask[tk.ID] = append(byTask[tk.ID], owner)
				}
				mu.Unlock()
				if err != nil {
					return
				}
			}
		})
	}
	close(start)
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("errors while draining: %v", errs)
	}
	if len(byTask) != tasks {
		t.Errorf("%d of %d tasks were claimed", len(byTask), tasks)
	}
	for id, owners := range byTask {
		if len(owners) != 1 {
			t.Errorf("task %s claimed by %v: a double claim", id, owners)
		}
	}
}

func testBoardWatch(t *testing.T, s *store) {
	ctx := ctxOf(t)
	watcher, writer := s.handle(t).Board(), s.handle(t).Board()
	ch, err := watcher.Watch(ctx)
	if err != nil {
		t.Fatal(err)
	}
	tk := create(t, writer, "watched")
	signalled(t, "a signal after a task was created", ch)
	waitFor(t, ch, "the claim to be visible", func() bool {
		g, err := watcher.Get(ctx, tk.ID)
		return err == nil && g.Owner == "bob"
	}, func() { must[coord.Task](t, "claim")(writer.Claim(ctx, tk.ID, "bob", lease)) })
}

// waitFor performs act, then waits on ch until cond holds, re-checking after each signal.
func waitFor(t *testing.T, ch <-chan struct{}, what string, cond func() bool, act func()) {
	t.Helper()
	act()
	for !cond() {
		signalled(t, what, ch)
	}
}
