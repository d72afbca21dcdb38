package shell

import (
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"
)

// ErrNoJob is returned for a job id the registry does not know.
var ErrNoJob = errors.New("no such background shell")

// ErrClosed is returned by Start after Close.
var ErrClosed = errors.New("background shells are closed")

// maxUnread bounds the output a job keeps between reads; older bytes are dropped and counted.
const maxUnread = 1 << 20

// Status is the state of a background job.
type Status string

// The states a job passes through.
const (
	StatusRunning   Status = "running"
	StatusCompleted Status = "completed" // the shell exited 0
	StatusFailed    Status = "failed"    // the shell exited non-zero
	StatusKilled    Status = "killed"    // stopped by Kill or Close
)

// Jobs is a registry of background shells. A session owns one, hands it to the tools, and
// calls Close when it ends so no job outlives it. It is safe for concurrent use.
type Jobs struct {
	// mu guards jobs, next, closed and tempDir.
	mu      sync.Mutex
	jobs    map[string]*job
	next    int
	closed  bool
	tempDir string
}

type job struct {
	id, command string
	seq         int
	started     time.Time
	p           *proc
	// ended is closed once the shell exited and status says so.
	ended chan struct{}

	// mu guards unread, dropped, status, exitCode, wrote.
	mu       sync.Mutex
	wrote    chan struct{} // closed and replaced on every write
	unread   []byte
	dropped  int64
	status   Status
	exitCode int
}

// Snapshot is what a read of a job returns.
type Snapshot struct {
	ID       string
	Command  string
	Status   Status
	ExitCode int // valid when Status is not running
	// Output is the output written since the previous read (filtered, if a filter was given).
	Output string
	// Dropped counts bytes lost because more than 1 MiB piled up between reads.
	Dropped int64
}

// NewJobs returns an empty registry.
func NewJobs() *Jobs { return &Jobs{jobs: map[string]*job{}} }

// Start runs c in the background and returns its id ("bash_1", "bash_2", …). c.Timeout and
// c.OutputLimit are ignored: a job runs until it ends or is killed.
func (j *Jobs) Start(c Command) (string, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	if j.closed {
		return "", ErrClosed
	}
	j.next++
	jb := &job{id: fmt.Sprintf("bash_%d", j.next), seq: j.next, command: c.Script, started: time.Now(),
		status: StatusRunning, ended: make(chan struct{}), wrote: make(chan struct{})}
	p, err := start(c, jobWriter{jb}, os.DevNull)
	if err != nil {
		return "", err
	}
	jb.p = p
	j.jobs[jb.id] = jb
	go func() {
		<-p.done
		// What the sandbox disarmed as it let go of the job reaches the model with the job's
		// output, as it does in a Bash result.
		_, planted := p.release()
		for _, msg := range planted {
			jobWriter{jb}.Write([]byte("\n[Sandbox: " + msg + "]\n"))
		}
		jb.mu.Lock()
		defer jb.mu.Unlock()
		defer close(jb.ended)
		if jb.status == StatusRunning {
			jb.exitCode = exitCode(p.err)
			jb.status = StatusCompleted
			if jb.exitCode != 0 {
				jb.status = StatusFailed
			}
		}
	}()
	return jb.id, nil
}

type jobWriter struct{ j *job }

func (w jobWriter) Write(p []byte) (int, error) {
	w.j.mu.Lock()
	defer w.j.mu.Unlock()
	w.j.unread = append(w.j.unread, p...)
	if over := len(w.j.unread) - maxUnread; over > 0 {
		w.j.dropped += int64(over)
		w.j.unread = append(w.j.unread[:0], w.j.unread[over:]...)
	}
	close(w.j.wrote)
	w.j.wrote = make(chan struct{})
	return len(p), nil
}

func (j *Jobs) get(id string) (*job, error) {
	j.mu.Lock()
	defer j.mu.Unlock()
	jb, ok := j.jobs[id]
	if !ok {
		return nil, fmt.Errorf("%w: %s", ErrNoJob, id)
	}
	return jb, nil
}

// Read returns the job's output since the previous Read, trimmed (see [Trim]), and its status.
// With a filter, only the lines matching it are returned; the others are consumed all the same.
func (j *Jobs) Read(id string, filter *regexp.Regexp) (Snapshot, error) {
	jb, err := j.get(id)
	if err != nil {
		return Snapshot{}, err
	}
	jb.mu.Lock()
	defer jb.mu.Unlock()
	out := Trim(string(jb.unread))
	jb.unread = nil
	if filter != nil {
		out = strings.Join(slices.DeleteFunc(lines(out), func(l string) bool { return !filter.MatchString(l) }), "\n")
	}
	s := Snapshot{ID: jb.id, Command: jb.command, Status: jb.status, ExitCode: jb.exitCode, Output: out, Dropped: jb.dropped}
	jb.dropped = 0
	return s, nil
}

// Wait blocks until the job's shell exits or ctx is done.
func (j *Jobs) Wait(ctx context.Context, id string) error {
	jb, err := j.get(id)
	if err != nil {
		return err
	}
	select {
	case <-jb.ended:
		return nil
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}

// WaitOutput blocks until the job's unread output contains s, the job ends, or ctx is done
// (a caller waiting for a server's "listening" line, for one).
func (j *Jobs) WaitOutput(ctx context.Context, id, s string) error {
	jb, err := j.get(id)
	if err != nil {
		return err
	}
	for {
		jb.mu.Lock()
		has, wrote := strings.Contains(string(jb.unread), s), jb.wrote
		jb.mu.Unlock()
		if has {
			return nil
		}
		select {
		case <-wrote:
		case <-jb.ended:
			return nil
		case <-ctx.Done():
			return context.Cause(ctx)
		}
	}
}

// Kill stops the job's whole process group and waits until none of its processes runs.
// Killing a job that already ended is not an error; its status stays what it was.
func (j *Jobs) Kill(id string) (Snapshot, error) {
	jb, err := j.get(id)
	if err != nil {
		return Snapshot{}, err
	}
	jb.stop()
	jb.mu.Lock()
	defer jb.mu.Unlock()
	return Snapshot{ID: jb.id, Command: jb.command, Status: jb.status, ExitCode: jb.exitCode}, nil
}

func (jb *job) stop() {
	jb.mu.Lock()
	if jb.status == StatusRunning {
		jb.status = StatusKilled
		jb.exitCode = -1
	}
	jb.mu.Unlock()
	jb.p.kill()
	<-jb.ended
	jb.p.waitGone()
	jb.p.drain()
}

// IDs returns the ids of all jobs, oldest first.
func (j *Jobs) IDs() []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	ids := make([]string, 0, len(j.jobs))
	for id := range j.jobs {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return j.jobs[a].seq - j.jobs[b].seq })
	return ids
}

// Close kills every job and waits for them; later Starts fail with ErrClosed.
func (j *Jobs) Close() {
	j.mu.Lock()
	j.closed = true
	jobs := make([]*job, 0, len(j.jobs))
	for _, jb := range j.jobs {
		jobs = append(jobs, jb)
	}
	j.mu.Unlock()
	var wg sync.WaitGroup
	for _, jb := range jobs {
		wg.Go(jb.stop)
	}
	wg.Wait()
}
