package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/subagent"
)

// ClientConfig configures a [Client].
type ClientConfig struct {
	// Home is keel's directory (KEEL_HOME); required.
	Home string
	// Exe is the keel binary that runs the supervisor when none is running.
	Exe string
	// Env is the environment a started supervisor gets, built from settings ([Environ]).
	Env []string
	// NATS makes a started supervisor run the embedded nats-server.
	NATS bool
	// Launch is this session's configuration, recorded in the jobs it submits.
	Launch runconfig.Config
	Logger *slog.Logger
}

// Client talks to the supervisor through its records: it submits jobs, starts the supervisor
// when none runs, waits for results and asks for stops. It is the session's
// [subagent.Detacher]. Safe for concurrent use.
type Client struct {
	cfg ClientConfig
	l   Layout

	// mu guards st, opened on first use.
	mu sync.Mutex
	st *store
}

var _ subagent.Detacher = (*Client)(nil)

// NewClient makes a client; nothing is opened or started until it is used.
func NewClient(cfg ClientConfig) *Client {
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	return &Client{cfg: cfg, l: NewLayout(cfg.Home)}
}

func (c *Client) store() (*store, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st != nil {
		return c.st, nil
	}
	if err := os.MkdirAll(c.l.Jobs, 0o700); err != nil {
		return nil, fmt.Errorf("supervisor directory: %w", err)
	}
	st, err := openStore(c.l)
	if err != nil {
		return nil, err
	}
	c.st = st
	return st, nil
}

// Close releases the client's handle on the records.
func (c *Client) Close() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.st == nil {
		return nil
	}
	err := c.st.close()
	c.st = nil
	return err
}

// Running reports whether a supervisor runs for this user.
func (c *Client) Running() bool { return locked(c.l.Lock) }

// Ensure starts the supervisor unless one runs, and returns its record.
func (c *Client) Ensure(ctx context.Context) (Info, error) {
	st, err := c.store()
	if err != nil {
		return Info{}, err
	}
	if c.Running() {
		return c.waitInfo(ctx, st, 0, nil)
	}
	if c.cfg.Exe == "" {
		return Info{}, errors.New("start the keel supervisor: no keel binary to run it with")
	}
	logf, err := os.OpenFile(c.l.Log, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return Info{}, fmt.Errorf("start the keel supervisor: %w", err)
	}
	defer logf.Close()
	args := []string{"supervisor", "run"}
	if c.cfg.NATS {
		args = append(args, "--nats")
	}
	cmd := exec.Command(c.cfg.Exe, args...)
	cmd.Env = c.cfg.Env
	cmd.Dir = c.cfg.Home
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = detachAttr()
	if err := cmd.Start(); err != nil {
		return Info{}, fmt.Errorf("start the keel supervisor (%s): %w", c.cfg.Exe, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // reaps it if it exits while this process lives
		close(exited)
	}()
	c.cfg.Logger.Info("supervisor starting", "pid", cmd.Process.Pid)
	return c.waitInfo(ctx, st, cmd.Process.Pid, exited)
}

// waitInfo waits until a supervisor holds the lock and has recorded itself (pid, when not
// 0, is the one just started: another that won the race is as good).
func (c *Client) waitInfo(ctx context.Context, st *store, pid int, exited <-chan struct{}) (Info, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	delay := 2 * time.Millisecond
	for {
		if c.Running() {
			// The record may still be the last supervisor's: while the one just started runs,
			// only its own record will do.
			if info, err := st.info(ctx); err == nil && alive(info.PID) && (pid == 0 || info.PID == pid) {
				return info, nil
			}
		}
		select {
		case <-exited:
			exited = nil
			if c.Running() {
				pid = 0 // another supervisor won the race
				continue
			}
			return Info{}, fmt.Errorf("the keel supervisor (pid %d) exited at start: %s", pid, c.logTail())
		case <-ctx.Done():
			return Info{}, fmt.Errorf("wait for the keel supervisor to start: %w; its log: %s", context.Cause(ctx), c.logTail())
		case <-time.After(delay):
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
}

// logTail returns the last lines of the supervisor's log, for errors.
func (c *Client) logTail() string {
	b, err := os.ReadFile(c.l.Log)
	if err != nil || len(bytes.TrimSpace(b)) == 0 {
		return "(empty)"
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(lines[max(0, len(lines)-5):], " | ")
}

// Detach records a (queued) job for agent a and makes sure a supervisor runs it.
func (c *Client) Detach(ctx context.Context, a subagent.DetachedAgent) error {
	st, err := c.store()
	if err != nil {
		return err
	}
	// The job runs where this session does: an empty Cwd means this process's, which the
	// supervisor's process does not share.
	launch := c.cfg.Launch
	if launch.Cwd == "" {
		if wd, err := os.Getwd(); err == nil {
			launch.Cwd = wd
		}
	}
	if err := st.create(ctx, Job{Agent: a, Launch: launch, State: StateQueued, Created: time.Now()}); err != nil {
		return err
	}
	_, err = c.Ensure(ctx)
	return err
}

// Wait blocks until job id has ended and its notification is queued, and returns its result.
func (c *Client) Wait(ctx context.Context, id string) (string, error) {
	j, err := c.waitFor(ctx, id, func(j Job) bool { return j.State.Terminal() && j.Delivered })
	if err != nil {
		return "", err
	}
	switch j.State {
	case StateFailed:
		return j.Result, errors.New(j.Error)
	case StateKilled:
		return j.Result, background.ErrKilled
	}
	return j.Result, nil
}

func (c *Client) waitFor(ctx context.Context, id string, done func(Job) bool) (Job, error) {
	st, err := c.store()
	if err != nil {
		return Job{}, err
	}
	wake, err := st.watch(ctx)
	if err != nil {
		return Job{}, err
	}
	for {
		j, _, err := st.get(ctx, id)
		if err != nil {
			return Job{}, err
		}
		if done(j) {
			return j, nil
		}
		select {
		case <-ctx.Done():
			return j, context.Cause(ctx)
		case <-wake:
		}
	}
}

// Stop asks for job id to be stopped and waits until it was.
func (c *Client) Stop(ctx context.Context, id string) error {
	st, err := c.store()
	if err != nil {
		return err
	}
	if _, err := st.update(ctx, id, func(j *Job) error {
		if j.State.Terminal() {
			return errSkip
		}
		j.Stop = true
		return nil
	}); err != nil && !errors.Is(err, errSkip) {
		return err
	}
	if _, err := c.Ensure(ctx); err != nil {
		return err
	}
	_, err = c.waitFor(ctx, id, func(j Job) bool { return j.State.Terminal() && j.Delivered })
	return err
}

// RunningAgents lists the agents of session sessionID whose results are not delivered yet.
func (c *Client) RunningAgents(ctx context.Context, sessionID string) ([]subagent.DetachedAgent, error) {
	if _, err := os.Stat(c.l.Records); err != nil {
		return nil, nil // no supervisor ever ran: nothing to open
	}
	st, err := c.store()
	if err != nil {
		return nil, err
	}
	jobs, err := st.list(ctx)
	var out []subagent.DetachedAgent
	for _, j := range jobs {
		if j.Agent.SessionID == sessionID && !j.Delivered {
			out = append(out, j.Agent)
		}
	}
	return out, err
}

// Status is what `keel supervisor status` shows.
type Status struct {
	Running bool   `json:"running"`
	Info    *Info  `json:"supervisor,omitempty"`
	Jobs    []Job  `json:"jobs"`
	Log     string `json:"log"`
}

// Status reads the supervisor's state without starting it.
func (c *Client) Status(ctx context.Context) (Status, error) {
	st, err := c.store()
	if err != nil {
		return Status{}, err
	}
	s := Status{Running: c.Running(), Log: c.l.Log}
	if s.Running {
		if info, err := st.info(ctx); err == nil {
			s.Info = &info
		}
	}
	s.Jobs, err = st.list(ctx)
	if s.Jobs == nil {
		s.Jobs = []Job{}
	}
	return s, err
}

// Shutdown stops the running supervisor (its running agents go on and are adopted by the
// next one) and waits until it has stopped.
func (c *Client) Shutdown(ctx context.Context) (bool, error) {
	if !c.Running() {
		return false, nil
	}
	st, err := c.store()
	if err != nil {
		return false, err
	}
	// Without a live record the lock's holder is on its way out (a killed supervisor's
	// threads still ending): wait for the lock as for one asked to stop.
	info, err := st.info(ctx)
	recorded := err == nil && alive(info.PID)
	if recorded {
		if err := terminateOne(info.PID); err != nil {
			return false, fmt.Errorf("stop the supervisor (pid %d): %w", info.PID, err)
		}
	}
	delay := 2 * time.Millisecond
	for c.Running() {
		select {
		case <-ctx.Done():
			if !recorded {
				return false, fmt.Errorf("the supervisor holds its lock but has no record; stop it by hand (see %s)", c.l.Log)
			}
			return false, fmt.Errorf("wait for the supervisor (pid %d) to stop: %w", info.PID, context.Cause(ctx))
		case <-time.After(delay):
		}
		delay = min(2*delay, 100*time.Millisecond)
	}
	return true, nil
}
