package fanout_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/fanout"
	"github.com/keel-dev/keel/internal/waittest"
)

// board opens the ledger in dir through a handle of its own (another process's, after a
// restart); its watches poll, which synctest can wait out.
func board(t *testing.T, dir string) coord.Board {
	t.Helper()
	b, err := fscoord.Open(dir, fscoord.Options{PollInterval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return b.Board()
}

func items(n int) []string {
	var out []string
	for i := range n {
		out = append(out, fmt.Sprintf("review file%02d.go", i+1))
	}
	return out
}

// counter records what the item runners did across runs.
type counter struct {
	// full is closed once the cap is reached: the first items wait for it, so the test sees
	// the cap filled however fast items finish.
	full chan struct{}
	cap  int

	mu        sync.Mutex
	finished  map[int]int
	running   int
	maxActive int
}

func (c *counter) enter() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running++
	if c.running == c.cap && c.maxActive < c.cap {
		close(c.full)
	}
	c.maxActive = max(c.maxActive, c.running)
}

func (c *counter) leave(index int, finished bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.running--
	if finished {
		c.finished[index]++
	}
}

// TestFanOutResumesWhereItStopped: 50 items with a cap of 5, stopped half-way (the items
// still running are cut off; one finishing just as it stops is kept), then run again by the same owner from a new handle: every
// item finishes exactly once, never more than 5 run at once, and the summary has them all.
func TestFanOutResumesWhereItStopped(t *testing.T) {
	dir := t.TempDir()
	in := items(50)
	if err := fanout.Plan(waittest.Context(t), board(t, dir), in); err != nil {
		t.Fatal(err)
	}
	c := &counter{finished: map[int]int{}, full: make(chan struct{}), cap: 5}
	var done atomic.Int32
	ctx, stop := context.WithCancel(waittest.Context(t))
	first, err := fanout.Run(ctx, fanout.Config{Board: board(t, dir), Owner: "s1", Concurrency: 5}, func(ctx context.Context, it fanout.Item, warm func()) (string, error) {
		c.enter()
		warm()
		<-c.full
		n := done.Add(1)
		if n > 25 {
			stop() // the crash: this and the items still running never finish
			<-ctx.Done()
			c.leave(it.Index, false)
			return "", ctx.Err()
		}
		if n == 25 {
			<-ctx.Done() // finishes as the run is stopped: recorded all the same, not run again
		}
		c.leave(it.Index, true)
		return "ok " + it.Input, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if first.Done != 25 || first.Pending != 25 {
		t.Fatalf("first run: %d done, %d pending; want 25 and 25", first.Done, first.Pending)
	}

	second, err := fanout.Run(waittest.Context(t), fanout.Config{Board: board(t, dir), Owner: "s1", Concurrency: 5}, func(ctx context.Context, it fanout.Item, warm func()) (string, error) {
		c.enter()
		defer c.leave(it.Index, true)
		warm()
		return "ok " + it.Input, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if second.Done != 50 || second.Failed != 0 || second.Pending != 0 {
		t.Fatalf("after resuming: %+v", second)
	}
	for i := 1; i <= 50; i++ {
		if c.finished[i] != 1 {
			t.Errorf("item %d finished %d times, want once", i, c.finished[i])
		}
	}
	if c.maxActive != 5 {
		t.Errorf("at most %d items ran at once, want the cap of 5", c.maxActive)
	}
	it, err := fanout.Get(waittest.Context(t), board(t, dir), 42)
	if err != nil || it.Result != "ok review file42.go" || it.State != fanout.StateDone {
		t.Errorf("item 42: %+v, %v", it, err)
	}
	if !strings.HasPrefix(second.Text(), "Fan-out of 50 items: 50 done, 0 failed") || !strings.Contains(second.Text(), "\n42. ok review file42.go\n") {
		t.Errorf("summary:\n%s", second.Text())
	}
}

// TestFanOutTakesBackItemsOfADeadRun: items a killed run of the same owner still holds, under
// a lease that has not lapsed, run at once when the owner runs the fan-out again; another
// owner's live claim is left alone.
func TestFanOutTakesBackItemsOfADeadRun(t *testing.T) {
	ctx := waittest.Context(t)
	dir := t.TempDir()
	b := board(t, dir)
	if err := fanout.Plan(ctx, b, items(4)); err != nil {
		t.Fatal(err)
	}
	for id, owner := range map[string]string{"1": "s1-w0", "2": "s1-w3", "3": "other-w0"} {
		if _, err := b.Claim(ctx, id, owner, time.Hour); err != nil {
			t.Fatal(err)
		}
	}
	var mu sync.Mutex
	var ran []int
	sum, err := fanout.Run(ctx, fanout.Config{Board: board(t, dir), Owner: "s1", Concurrency: 2, NoStagger: true}, func(ctx context.Context, it fanout.Item, warm func()) (string, error) {
		mu.Lock()
		ran = append(ran, it.Index)
		mu.Unlock()
		if it.Index == 4 {
			return "", errors.New("no such file")
		}
		return "ok", nil
	})
	if err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(ran) != 3 || sum.Done != 2 || sum.Failed != 1 || sum.Pending != 1 {
		t.Errorf("ran %v; summary %+v; want items 1, 2, 4 run, 3 (another owner's) left", ran, sum)
	}
	if !strings.Contains(sum.Text(), "4. failed: no such file") || !strings.Contains(sum.Text(), "3. (running)") {
		t.Errorf("summary:\n%s", sum.Text())
	}
}

// TestFanOutStaggersSiblings: until the first item's agent has had its first answer (the
// shared prefix is cached), it runs alone; then its siblings start, up to the cap.
func TestFanOutStaggersSiblings(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		dir := t.TempDir()
		if err := fanout.Plan(t.Context(), board(t, dir), items(10)); err != nil {
			t.Fatal(err)
		}
		var started atomic.Int32
		firstAnswered, release := make(chan struct{}), make(chan struct{})
		done := make(chan fanout.Summary)
		go func() {
			s, err := fanout.Run(t.Context(), fanout.Config{Board: board(t, dir), Owner: "s1", Concurrency: 4}, func(ctx context.Context, it fanout.Item, warm func()) (string, error) {
				started.Add(1)
				if it.Index == 1 {
					<-firstAnswered
					warm()
				}
				<-release
				return "ok", nil
			})
			if err != nil {
				t.Error(err)
			}
			done <- s
		}()
		synctest.Wait()
		if n := started.Load(); n != 1 {
			t.Fatalf("%d items started before the first warmed the cache, want 1", n)
		}
		close(firstAnswered)
		synctest.Wait()
		if n := started.Load(); n != 4 {
			t.Fatalf("%d items running after the first warmed the cache, want the cap of 4", n)
		}
		close(release)
		if s := <-done; s.Done != 10 {
			t.Errorf("summary %+v", s)
		}
	})
}

// TestFanOutFirstItemFailingReleasesSiblings: a first item that ends without warming the
// cache (its agent failed at once) does not hold the others back.
func TestFanOutFirstItemFailingReleasesSiblings(t *testing.T) {
	ctx := waittest.Context(t)
	dir := t.TempDir()
	if err := fanout.Plan(ctx, board(t, dir), items(6)); err != nil {
		t.Fatal(err)
	}
	s, err := fanout.Run(ctx, fanout.Config{Board: board(t, dir), Owner: "s1", Concurrency: 3}, func(ctx context.Context, it fanout.Item, warm func()) (string, error) {
		if it.Index == 1 {
			return "", errors.New("model refused")
		}
		return "ok", nil
	})
	if err != nil || s.Done != 5 || s.Failed != 1 {
		t.Fatalf("summary %+v, %v", s, err)
	}
}

func TestPlanAndConfigRefuseBadInput(t *testing.T) {
	ctx := waittest.Context(t)
	dir := t.TempDir()
	b := board(t, dir)
	if err := fanout.Plan(ctx, b, nil); err == nil {
		t.Error("a fan-out of no items was planned")
	}
	if err := fanout.Plan(ctx, b, items(3)); err != nil {
		t.Fatal(err)
	}
	if err := fanout.Plan(ctx, b, items(3)); err != nil {
		t.Errorf("planning the same items again (a resume): %v", err)
	}
	if err := fanout.Plan(ctx, b, items(4)); err == nil || !strings.Contains(err.Error(), "holds 3 other items") {
		t.Errorf("planning other items on the ledger: %v", err)
	}
	if _, err := fanout.Run(ctx, fanout.Config{Board: b, Owner: "bad owner"}, func(context.Context, fanout.Item, func()) (string, error) { return "", nil }); err == nil {
		t.Error("an owner with a space ran")
	}
	for v, want := range map[string]int{"": 20, "5": 5, " 7 ": 7} {
		if got, err := fanout.ParseConcurrency(v); err != nil || got != want {
			t.Errorf("ParseConcurrency(%q) = %d, %v; want %d", v, got, err, want)
		}
	}
	for _, v := range []string{"0", "-1", "many"} {
		if _, err := fanout.ParseConcurrency(v); err == nil || !strings.Contains(err.Error(), fanout.ConcurrencyEnv) {
			t.Errorf("ParseConcurrency(%q): %v", v, err)
		}
	}
	got, err := fanout.Items(ctx, b)
	if err != nil {
		t.Fatal(err)
	}
	want := []fanout.Item{{Index: 1, Input: "review file01.go", State: fanout.StatePending}, {Index: 2, Input: "review file02.go", State: fanout.StatePending},
		{Index: 3, Input: "review file03.go", State: fanout.StatePending}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("items, mismatch (-want +got):\n%s", diff)
	}
}
