package daemon

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/subagent"
)

// CronStore returns the scheduled jobs kept in the supervisor's records (cron/jobs/<id>),
// which the supervisor's scheduler runs: what CronCreate, CronList, CronDelete and
// `keel cron` read and change.
func (c *Client) CronStore() (*cron.Store, error) {
	st, err := c.store()
	if err != nil {
		return nil, err
	}
	return cron.NewStore(st.rec, time.Now), nil
}

// cronRunner runs a scheduled job's run as a job of the supervisor: a process of its own
// (`keel supervisor run-job`) that opens a session configured as the job's origin was and runs
// the prompt as a general-purpose agent, so a run survives the supervisor's death like any
// background agent. The job's id is the run's id, so a scheduler that calls RunJob again for
// a run a killed supervisor left pending finds the job it recorded and waits for it instead of
// starting a second. The job queues no notification itself (no NotifyDir): the scheduler
// reports the run, under the run's id, with what the job missed.
type cronRunner struct{ st *store }

var _ cron.Runner = cronRunner{}

func (r cronRunner) RunJob(ctx context.Context, j cron.Job, run cron.Run) (string, error) {
	var launch runconfig.Config
	if len(j.Origin.Launch) > 0 {
		if err := json.Unmarshal(j.Origin.Launch, &launch); err != nil {
			return "", fmt.Errorf("scheduled job %s: its session's configuration: %w", j.ID, err)
		}
	}
	if launch.Cwd == "" {
		launch.Cwd = j.Origin.Cwd
	}
	job := Job{Agent: subagent.DetachedAgent{ID: run.ID, AgentType: "general-purpose", Description: "scheduled job " + j.ID,
		Prompt: j.Prompt, SessionID: j.Origin.SessionID, SessionPath: j.Origin.SessionPath},
		Launch: launch, State: StateQueued, Created: time.Now()}
	if err := r.st.create(ctx, job); err != nil && !errors.Is(err, coord.ErrExists) {
		return "", err
	}
	wake, err := r.st.watch(ctx)
	if err != nil {
		return "", err
	}
	for {
		got, _, err := r.st.get(ctx, run.ID)
		if err != nil {
			return "", err
		}
		if got.State.Terminal() {
			if got.State != StateCompleted {
				return got.Result, fmt.Errorf("%s: %s", got.State, got.Error)
			}
			return got.Result, nil
		}
		select {
		case <-ctx.Done():
			return "", context.Cause(ctx)
		case <-wake:
		}
	}
}

// runCron runs the scheduler of the jobs in the supervisor's records until ctx ends.
func (s *supervisor) runCron(ctx context.Context) {
	sched := cron.NewScheduler(cron.SchedulerConfig{Store: cron.NewStore(s.store.rec, time.Now), Runner: cronRunner{s.store},
		Logger: s.logger.With("part", "cron")})
	if err := sched.Run(ctx); err != nil && ctx.Err() == nil {
		s.logger.Error("scheduled jobs", "err", err)
	}
}
