package cron

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/coord"
)

// Store keeps the jobs in a coordination store's records. It is safe for concurrent use, and
// any number of Stores (in any number of processes) may share the records.
type Store struct {
	rec coord.Records
	now func() time.Time
	// minInterval is the shortest interval Create accepts ([MinInterval] unless lowered).
	minInterval time.Duration
}

// NewStore returns a store over rec; now is its clock (nil: time.Now).
func NewStore(rec coord.Records, now func() time.Time) *Store {
	if now == nil {
		now = time.Now
	}
	return &Store{rec: rec, now: now, minInterval: MinInterval}
}

// WithMinInterval returns a store over the same records whose Create accepts intervals down
// to d (at least a second; zero or more than [MinInterval] keeps MinInterval). It exists for
// tests that must see a recurring job tick several times in seconds, through
// runconfig.Config.CronMinInterval; schedulers run whatever interval a record holds.
func (s *Store) WithMinInterval(d time.Duration) *Store {
	c := *s
	if d >= time.Second && d < MinInterval {
		c.minInterval = d
	}
	return &c
}

// Spec is a job to create: CronCreate's input and the session it came from.
type Spec struct {
	Cron      string
	Prompt    string
	Recurring bool
	Durable   bool
	Origin    Origin
}

// errSkip makes an update change nothing.
var errSkip = errors.New("no change")

// Create validates spec and records the job. Bad input — an invalid expression, a time in
// the past, an empty prompt, a one-shot time marked recurring, a project at [MaxJobs] — is
// an error that says what to change, and nothing is recorded.
func (s *Store) Create(ctx context.Context, spec Spec) (Job, error) {
	now := s.now()
	if strings.TrimSpace(spec.Prompt) == "" {
		return Job{}, errors.New("prompt is empty: give the prompt to run at each fire time")
	}
	sched, err := parseSchedule(spec.Cron, now, s.minInterval)
	if err != nil {
		return Job{}, err
	}
	if sched.OneShot() && spec.Recurring {
		return Job{}, fmt.Errorf("%q is one moment and runs once: set recurring to false, or give a cron expression", spec.Cron)
	}
	jobs, err := s.ListProject(ctx, spec.Origin.Cwd)
	if err != nil {
		return Job{}, err
	}
	if len(jobs) >= MaxJobs {
		return Job{}, fmt.Errorf("this project has %d scheduled jobs, the most it may have; delete one with CronDelete first", len(jobs))
	}
	j := Job{Cron: sched.Spec, At: sched.At, Prompt: spec.Prompt, Recurring: spec.Recurring, Durable: spec.Durable,
		Origin: spec.Origin, Created: now}
	if j.Recurring {
		j.Expires = now.Add(MaxAge)
	}
	for {
		j.ID = newID()
		data, err := json.Marshal(j)
		if err != nil {
			return Job{}, fmt.Errorf("encode job: %w", err)
		}
		_, err = s.rec.Create(ctx, jobKey(j.ID), data)
		if errors.Is(err, coord.ErrExists) {
			continue
		}
		if err != nil {
			return Job{}, fmt.Errorf("record job: %w", err)
		}
		if j.Origin.Team != "" {
			// The mark supervisors look for among a server's teams.
			if _, err := s.rec.Put(ctx, ActiveKey, []byte("{}")); err != nil {
				_ = s.rec.Delete(context.WithoutCancel(ctx), jobKey(j.ID))
				return Job{}, fmt.Errorf("mark team %s as holding scheduled jobs: %w", j.Origin.Team, err)
			}
		}
		return j, nil
	}
}

// Get returns job id ([ErrNotFound] when there is none).
func (s *Store) Get(ctx context.Context, id string) (Job, error) {
	if err := checkID(id); err != nil {
		return Job{}, err
	}
	r, err := s.rec.Get(ctx, jobKey(id))
	if errors.Is(err, coord.ErrNotFound) {
		return Job{}, fmt.Errorf("job %s: %w", id, ErrNotFound)
	}
	if err != nil {
		return Job{}, fmt.Errorf("read job %s: %w", id, err)
	}
	var j Job
	if err := json.Unmarshal(r.Value, &j); err != nil {
		return Job{}, fmt.Errorf("read job %s: %v: %w", id, err, coord.ErrCorrupt)
	}
	return j, nil
}

// List returns every job, oldest first. Unreadable records are skipped and reported in the
// error beside the jobs that could be read.
func (s *Store) List(ctx context.Context) ([]Job, error) {
	recs, err := s.rec.List(ctx, "cron/jobs/")
	var errs []error
	if err != nil {
		errs = append(errs, fmt.Errorf("list jobs: %w", err))
	}
	jobs := []Job{}
	for _, r := range recs {
		var j Job
		if err := json.Unmarshal(r.Value, &j); err != nil {
			errs = append(errs, fmt.Errorf("read %s: %v: %w", r.Key, err, coord.ErrCorrupt))
			continue
		}
		jobs = append(jobs, j)
	}
	slices.SortStableFunc(jobs, func(a, b Job) int { return a.Created.Compare(b.Created) })
	return jobs, errors.Join(errs...)
}

// ListProject returns the jobs made in the project whose working directory is cwd.
func (s *Store) ListProject(ctx context.Context, cwd string) ([]Job, error) {
	all, err := s.List(ctx)
	return slices.DeleteFunc(all, func(j Job) bool { return j.Origin.Cwd != cwd }), err
}

// Delete removes job id; a run already going finishes and reports. An unknown id is
// [ErrNotFound].
func (s *Store) Delete(ctx context.Context, id string) (Job, error) {
	j, err := s.Get(ctx, id)
	if err != nil {
		return Job{}, err
	}
	if err := s.rec.Delete(ctx, jobKey(id)); err != nil {
		return Job{}, fmt.Errorf("delete job %s: %w", id, err)
	}
	return j, nil
}

// EndSession deletes the jobs session made without durable: they live as long as it does.
func (s *Store) EndSession(ctx context.Context, session string) error {
	jobs, err := s.List(ctx)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, j := range jobs {
		if !j.Durable && j.Origin.SessionID == session {
			if err := s.rec.Delete(ctx, jobKey(j.ID)); err != nil {
				errs = append(errs, fmt.Errorf("delete job %s: %w", j.ID, err))
			}
		}
	}
	return errors.Join(errs...)
}

// Claim claims job id's newest due tick at now, by compare-and-set: of all schedulers that
// call it for one tick, exactly one gets ok. The run is recorded as the job's Pending run
// before Claim returns, so it survives the claimer's death. Nothing is claimed while a run
// is pending, before the next tick, or for a job that is gone.
func (s *Store) Claim(ctx context.Context, id string, now time.Time) (Run, bool, error) {
	return s.ClaimFor(ctx, id, "", now)
}

// ClaimFor is [Store.Claim] by scheduler owner, whose name the run records ([Run.Owner]).
func (s *Store) ClaimFor(ctx context.Context, id, owner string, now time.Time) (Run, bool, error) {
	var run Run
	_, err := coord.Modify(ctx, s.rec, jobKey(id), func(j *Job) error {
		if j.Pending != nil {
			return errSkip
		}
		sched, err := mustSchedule(*j)
		if err != nil {
			return err
		}
		from := j.LastTick
		if from.IsZero() {
			from = j.Created
		}
		due := sched.DueAt(from, now)
		if due.Tick.IsZero() {
			return errSkip
		}
		run = Run{ID: runID(j.ID, due.Tick), JobID: j.ID, Tick: due.Tick, Missed: due.Missed, FirstMissed: due.FirstMissed,
			Claimed: now, Last: !j.Recurring || sched.OneShot() || !j.Expires.IsZero() && !due.Tick.Before(j.Expires)}
		if owner != "" {
			run.Owner, run.Renewed = owner, now
		}
		j.LastTick, j.Pending = due.Tick, &run
		return nil
	})
	switch {
	case errors.Is(err, errSkip), errors.Is(err, coord.ErrNotFound):
		return Run{}, false, nil
	case err != nil:
		return Run{}, false, fmt.Errorf("claim a tick of job %s: %w", id, err)
	}
	return run, true, nil
}

// Renew records that owner still runs run at now: its lease starts again. It reports false
// when the run is no longer owner's (taken over, finished, or its job deleted).
func (s *Store) Renew(ctx context.Context, run Run, owner string, now time.Time) (bool, error) {
	_, err := coord.Modify(ctx, s.rec, jobKey(run.JobID), func(j *Job) error {
		if j.Pending == nil || j.Pending.ID != run.ID || j.Pending.Owner != owner {
			return errSkip
		}
		j.Pending.Renewed = now
		return nil
	})
	switch {
	case errors.Is(err, errSkip), errors.Is(err, coord.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("renew run %s: %w", run.ID, err)
	}
	return true, nil
}

// TakeOver makes owner the owner of job id's pending run when its lease has passed at now
// (no renewal for lease), by compare-and-set: of several schedulers that try, one gets ok.
func (s *Store) TakeOver(ctx context.Context, id, owner string, now time.Time, lease time.Duration) (Run, bool, error) {
	var run Run
	_, err := coord.Modify(ctx, s.rec, jobKey(id), func(j *Job) error {
		p := j.Pending
		if p == nil || p.Owner == owner || now.Before(p.Renewed.Add(lease)) {
			return errSkip
		}
		p.Owner, p.Renewed = owner, now
		run = *p
		return nil
	})
	switch {
	case errors.Is(err, errSkip), errors.Is(err, coord.ErrNotFound):
		return Run{}, false, nil
	case err != nil:
		return Run{}, false, fmt.Errorf("take over the run of job %s: %w", id, err)
	}
	return run, true, nil
}

// Finish records that run was reported: the job's next tick may be claimed, or, after its
// last run, the job is deleted. Finishing a run twice, or one of a deleted job, changes
// nothing.
func (s *Store) Finish(ctx context.Context, run Run) error {
	if run.Last {
		if err := s.rec.Delete(ctx, jobKey(run.JobID)); err != nil {
			return fmt.Errorf("delete job %s after its last run: %w", run.JobID, err)
		}
		return nil
	}
	_, err := coord.Modify(ctx, s.rec, jobKey(run.JobID), func(j *Job) error {
		if j.Pending == nil || j.Pending.ID != run.ID {
			return errSkip
		}
		j.Pending = nil
		j.Runs++
		return nil
	})
	if err != nil && !errors.Is(err, errSkip) && !errors.Is(err, coord.ErrNotFound) {
		return fmt.Errorf("finish run %s: %w", run.ID, err)
	}
	return nil
}

// Wake touches [WakeKey]: a supervisor watching it looks again for teams whose records hold
// jobs.
func (s *Store) Wake(ctx context.Context) error {
	if _, err := s.rec.Put(ctx, WakeKey, []byte(strconv.Quote(s.now().Format(time.RFC3339Nano)))); err != nil {
		return fmt.Errorf("wake the supervisor's team scheduling: %w", err)
	}
	return nil
}

// Watch signals whenever a job may have changed (coalesced; see [coord.Records.Watch]).
func (s *Store) Watch(ctx context.Context) (<-chan struct{}, error) {
	return s.rec.Watch(ctx, "cron/jobs/")
}
