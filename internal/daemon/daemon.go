// Package daemon is the keel supervisor: a per-user process, started on demand by the first
// background agent that must outlive its launcher, that owns background agents so they
// survive the launching process's exit or kill -9. Each agent runs as a job in a process of
// its own (`keel supervisor run-job`), in its own session group, so the supervisor's death
// does not kill it either; the next supervisor adopts it.
//
// Everything durable lives under $KEEL_HOME/supervisor:
//
//	supervisor.lock      flock'd by the running supervisor: at most one per user, liveness
//	supervisor.log       its log (`keel supervisor logs`)
//	records/             job records (a coordination store, fscoord): jobs/<id>, supervisor
//	jobs/<id>.lock       flock'd by the process running the job
//	jobs/<id>.log        that process's output
//	nats/                the embedded nats-server's JetStream store, when it runs one
//	nats.port            the port it listened on last, which the next start asks for
//
// A job's life: the launcher creates its record (queued) and makes sure a supervisor runs;
// the supervisor marks it running and starts its process; the process runs the agent, writes
// the result into the record, queues the task notification into the launching session's
// notification directory, and marks the record delivered. A job whose process died (its lock
// free, its record not terminal) is started again and continues from its transcript, up to
// [MaxAttempts] times. A notification is written at most once per successful delivery, and
// the session's queue deduplicates by task id and reconciles with its transcript, so the
// session sees each result exactly once: when it next runs (keel --continue), or at once when
// the launcher still lives.
//
// The supervisor's and its jobs' environment is built from settings ([Environ]), never
// inherited from the shell that happened to start it.
package daemon

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"path/filepath"
	"time"

	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/subagent"
)

// MaxAttempts is how many times a job is started before its agent is reported failed.
const MaxAttempts = 3

// ErrRunning: a supervisor already runs for this user.
var ErrRunning = errors.New("a keel supervisor is already running")

// Layout is where the supervisor keeps its files.
type Layout struct {
	Dir     string
	Lock    string
	Log     string
	Records string
	Jobs    string
	NATS    string
}

// NewLayout returns the layout under keel's directory home.
func NewLayout(home string) Layout {
	dir := filepath.Join(home, "supervisor")
	return Layout{
		Dir:     dir,
		Lock:    filepath.Join(dir, "supervisor.lock"),
		Log:     filepath.Join(dir, "supervisor.log"),
		Records: filepath.Join(dir, "records"),
		Jobs:    filepath.Join(dir, "jobs"),
		NATS:    filepath.Join(dir, "nats"),
	}
}

func (l Layout) jobLock(id string) string { return filepath.Join(l.Jobs, id+".lock") }

// JobLog is where the process of job id writes its output.
func (l Layout) JobLog(id string) string { return filepath.Join(l.Jobs, id+".log") }

// id is a short stable name of this layout (for a NATS server name).
func (l Layout) id() string {
	h := sha256.Sum256([]byte(l.Dir))
	return hex.EncodeToString(h[:4])
}

// State is where a job stands.
type State string

// The states; the last three are terminal.
const (
	StateQueued    State = "queued"
	StateRunning   State = "running"
	StateCompleted State = "completed"
	StateFailed    State = "failed"
	StateKilled    State = "killed"
)

// Terminal reports whether the job has ended.
func (s State) Terminal() bool {
	return s == StateCompleted || s == StateFailed || s == StateKilled
}

// Job is one background agent the supervisor owns, as its durable record holds it.
type Job struct {
	Agent subagent.DetachedAgent `json:"agent"`
	// Launch is how the launching session was configured: a job's session is opened from
	// it (runconfig.Config.Job), so it is configured as its launcher was.
	Launch runconfig.Config `json:"launch"`
	State  State            `json:"state"`
	// Delivered says the task notification is in the session's queue.
	Delivered bool `json:"delivered"`
	// Stop asks for the job to be stopped (TaskStop, keel supervisor stop-job).
	Stop     bool      `json:"stop,omitempty"`
	Attempts int       `json:"attempts"`
	PID      int       `json:"pid,omitempty"`
	Result   string    `json:"result,omitempty"`
	Error    string    `json:"error,omitempty"`
	Created  time.Time `json:"created"`
	Started  time.Time `json:"started,omitzero"`
	Ended    time.Time `json:"ended,omitzero"`
}

// Info is the running supervisor's record.
type Info struct {
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
	Version string    `json:"version"`
	// NATSURL is the embedded nats-server's URL when the supervisor runs one.
	NATSURL string `json:"natsUrl,omitempty"`
	// NATSPID is the process running it (keel-nats).
	NATSPID int `json:"natsPid,omitempty"`
}
