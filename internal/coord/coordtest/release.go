package coordtest

import (
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/coord"
)

// testReleaseBackoff: a member that gives a task back does not get it again from ClaimNext
// until its backoff (with jitter) passed, while another member may take it at once; the
// backoff doubles with each release; a task released ContestedAfter times is contested —
// ClaimNext leaves it to the member the lead assigns it to — and a claim by id still works.
func testReleaseBackoff(t *testing.T, s *store) {
	ctx := ctxOf(t)
	b := s.handle(t).Board()
	tk := create(t, b, "cannot be finished")
	claimNext := func(owner string) (coord.Task, error) { return b.ClaimNext(ctx, owner, lease) }
	for n := 1; n <= coord.ContestedAfter; n++ {
		got, err := claimNext("bob")
		if err != nil || got.ID != tk.ID {
			t.Fatalf("release %d: bob's claim = %+v, %v", n, got, err)
		}
		rel := must[coord.Task](t, "release")(b.Release(ctx, tk.ID, "bob"))
		base := coord.ReleaseBackoff(n)
		wait := rel.RetryAfter.Sub(s.clock.Now())
		if rel.Releases != n || rel.ReleasedBy != "bob" || wait < base*3/4 || wait > base*5/4 {
			t.Fatalf("release %d: %+v, backoff %v; want %d releases by bob, a backoff within 25%% of %v", n, rel, wait, n, base)
		}
		if n == coord.ContestedAfter {
			break
		}
		// bob hammers the board: nothing while his backoff lasts.
		for range 100 {
			if _, err := claimNext("bob"); err == nil {
				t.Fatalf("release %d: bob took the task back before his backoff passed", n)
			}
			s.clock.Advance(wait / 200)
		}
		s.clock.Advance(wait)
	}
	if !coord.Contested(must[coord.Task](t, "get")(b.Get(ctx, tk.ID))) {
		t.Fatal("a task released three times is not contested")
	}
	s.clock.Advance(time.Hour)
	if got, err := claimNext("carol"); err == nil {
		t.Fatalf("carol took the contested task %+v by ClaimNext", got)
	}
	must[coord.Task](t, "the lead assigns it to carol")(b.Update(ctx, tk.ID, coord.TaskChange{Owner: ptr("carol")}))
	if got, err := claimNext("carol"); err != nil || got.ID != tk.ID {
		t.Fatalf("carol's claim of the task assigned to her: %+v, %v", got, err)
	}
	must[coord.Task](t, "carol gives it back")(b.Release(ctx, tk.ID, "carol"))
	if got := must[coord.Task](t, "a claim by id")(b.Claim(ctx, tk.ID, "dave", lease)); got.Owner != "dave" {
		t.Errorf("a claim by id of a contested task: %+v", got)
	}

	// Another member takes a released task at once.
	other := create(t, b, "another")
	must[coord.Task](t, "bob claims")(b.Claim(ctx, other.ID, "bob", lease))
	must[coord.Task](t, "bob releases")(b.Release(ctx, other.ID, "bob"))
	if got, err := claimNext("erin"); err != nil || got.ID != other.ID {
		t.Errorf("erin's claim right after bob's release: %+v, %v", got, err)
	}
}
