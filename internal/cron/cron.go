// Package cron is keel's scheduled work: jobs that run a prompt on a cron expression or at
// one moment, made by the model (CronCreate, CronList, CronDelete — Claude Code's tools) or by
// a person (`keel cron`), owned by the supervisor so that they run when no keel window is
// open, and reported into the session that made them at its next request boundary.
//
// # Records
//
// A job is one record of a [coord.Records] store, "cron/jobs/<id>": the supervisor's store
// under $KEEL_HOME, or a team's coordination backend (files or NATS) for a team's jobs. Every
// change is a compare-and-set on the record's revision, so any number of processes may
// create, list, delete and claim at once.
//
// # Exactly once per tick
//
// A tick is claimed by one compare-and-set that moves the job's LastTick forward and records
// the [Run] as Pending: of any number of schedulers that see the tick, one wins. The run's id
// is derived from the job and the tick, the [Runner] that starts its session is idempotent
// per run id, and the report is a task notification whose task id is the run id (the
// session's queue drops a second one): a scheduler that dies between claiming, running and
// reporting leaves Pending set, and the next scheduler finishes that run — it never starts a
// second one. Where several schedulers share the records at once — a team's on NATS, which
// every machine's supervisor schedules — a claimed run is its scheduler's under a lease it
// renews ([SchedulerConfig.Lease]), and another takes it over only once the lease passed.
// Ticks that pass while the scheduler is down, or while the job's previous run
// still goes, are run once, at the next chance, and the report says how many were missed.
//
// A job made with durable false lives as long as the session that made it (as in Claude
// Code, where such jobs are kept in memory): the session deletes it when it ends
// ([Store.EndSession]). Recurring jobs expire after [MaxAge]: the tick after that runs once
// more, as the last, and the job is deleted.
package cron

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"
)

// MaxAge is how long a recurring job lives, as in Claude Code: a forgotten "every morning"
// job ends after a week instead of running for ever.
const MaxAge = 7 * 24 * time.Hour

// MaxJobs is how many jobs one project may have at once (Claude Code's limit).
const MaxJobs = 50

// ErrNotFound: no job by that id (for this project).
var ErrNotFound = errors.New("no such scheduled job")

// Job is one scheduled prompt, as its record holds it.
type Job struct {
	ID string `json:"id"`
	// Cron is the schedule as given: an expression, a descriptor or an RFC 3339 time.
	Cron string `json:"cron"`
	// At is the moment of a one-shot time; zero for an expression.
	At        time.Time `json:"at,omitzero"`
	Prompt    string    `json:"prompt"`
	Recurring bool      `json:"recurring"`
	// Durable jobs outlive the session that made them; the others end with it.
	Durable bool `json:"durable"`
	// Origin is the session that made the job, where its reports go.
	Origin  Origin    `json:"origin"`
	Created time.Time `json:"created"`
	// Expires is when a recurring job ends: its next tick is its last.
	Expires time.Time `json:"expires,omitzero"`
	// LastTick is the newest tick claimed; ticks are counted from Created before the first.
	LastTick time.Time `json:"lastTick,omitzero"`
	// Runs counts the runs finished.
	Runs int `json:"runs"`
	// Pending is the claimed run not yet reported; while it is set, no tick is claimed.
	Pending *Run `json:"pending,omitempty"`
}

// Origin is the session that made a job: its report goes to its notification queue, and the
// job's prompt runs in a session configured like it.
type Origin struct {
	SessionID   string `json:"sessionId"`
	SessionPath string `json:"sessionPath,omitempty"`
	// NotifyDir is the session's notification queue directory (background.OpenQueue).
	NotifyDir string `json:"notifyDir"`
	// Cwd is the session's working directory; jobs are listed and deleted per project by it.
	Cwd string `json:"cwd"`
	// Team is the team whose coordination backend holds the job, if any; Member is the
	// session's name in it, whose inbox gets the reports ([Mail]): a team's jobs may run in
	// another machine's supervisor, which cannot reach NotifyDir.
	Team   string `json:"team,omitempty"`
	Member string `json:"member,omitempty"`
	// Launch is what the [Runner] needs to open a session like the origin's (the
	// supervisor's launch configuration); this package does not read it.
	Launch json.RawMessage `json:"launch,omitempty"`
}

// Run is one firing of a job.
type Run struct {
	// ID names the run: the job's id and the tick, so every scheduler derives the same one.
	ID    string    `json:"id"`
	JobID string    `json:"jobId"`
	Tick  time.Time `json:"tick"`
	// Missed counts the earlier ticks since the previous run that were not run, the first
	// of them at FirstMissed.
	Missed      int       `json:"missed,omitempty"`
	FirstMissed time.Time `json:"firstMissed,omitzero"`
	// Last says the job ends after this run (one-shot, or an expired recurring job).
	Last    bool      `json:"last,omitempty"`
	Claimed time.Time `json:"claimed"`
	// Owner is the scheduler that runs it when schedulers share the records (a team's, on
	// NATS, where every machine's supervisor schedules): it renews Renewed while the run
	// goes, and another scheduler takes the run over only once a lease has passed since
	// ([SchedulerConfig.Lease]). Empty for the supervisor's own records, where one scheduler
	// runs at a time and the next takes over at once.
	Owner   string    `json:"owner,omitempty"`
	Renewed time.Time `json:"renewed,omitzero"`
}

// runID derives the id of job's run at tick.
func runID(job string, tick time.Time) string {
	return "cron-" + job + "-" + strconv.FormatInt(tick.Unix(), 10)
}

// Schedule returns the job's schedule.
func (j Job) Schedule() (Schedule, error) { return mustSchedule(j) }

// newID returns a short random job id (8 hex digits, as Claude Code's).
func newID() string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// jobKey is the record key of job id.
func jobKey(id string) string { return "cron/jobs/" + id }

// checkID refuses an id that cannot be a record key segment, so a model's input never
// reaches another key.
func checkID(id string) error {
	if len(id) == 0 || len(id) > 64 {
		return fmt.Errorf("job id %q: %w", id, ErrNotFound)
	}
	for _, c := range id {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			return fmt.Errorf("job id %q: %w", id, ErrNotFound)
		}
	}
	return nil
}
