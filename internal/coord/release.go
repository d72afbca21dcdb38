package coord

import (
	"math/rand/v2"
	"time"
)

// ContestedAfter is how many releases make a task contested: given back unfinished that
// often, it is no longer taken by whoever is idle (each taking is a paid model turn that
// ends the same way) but waits for the lead to assign it.
const ContestedAfter = 3

// Release backoff: the first release keeps the releaser off the task for about
// releaseBackoffBase, each further one doubles it, up to releaseBackoffMax; the jitter
// (±25 %) keeps members that released at the same moment from coming back together.
const (
	releaseBackoffBase = time.Second
	releaseBackoffMax  = 30 * time.Second
)

// Contested says whether t was released [ContestedAfter] times or more and is not done.
func Contested(t Task) bool { return t.Status != StatusCompleted && t.Releases >= ContestedAfter }

// BackingOff says whether owner released t and may not take it back by ClaimNext before
// t.RetryAfter.
func BackingOff(t Task, owner string, now time.Time) bool {
	return t.Status == StatusPending && t.ReleasedBy == owner && now.Before(t.RetryAfter)
}

// ReleaseBackoff is how long the member that released a task for the n-th time stays off
// it, before jitter.
func ReleaseBackoff(n int) time.Duration {
	d := releaseBackoffBase
	for i := 1; i < n && d < releaseBackoffMax; i++ {
		d *= 2
	}
	return min(d, releaseBackoffMax)
}

// Released returns t given back by owner at now: pending, unowned, no lease, the release
// counted and owner's backoff set. Both backends release through it.
func Released(t Task, owner string, now time.Time) Task {
	t.Status, t.Owner, t.LeaseUntil = StatusPending, "", time.Time{}
	t.Releases++
	d := ReleaseBackoff(t.Releases)
	d += time.Duration((rand.Float64() - 0.5) / 2 * float64(d))
	t.ReleasedBy, t.RetryAfter = owner, now.Add(d)
	return t
}
