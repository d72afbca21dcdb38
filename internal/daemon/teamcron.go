package daemon

import (
	"context"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/cron"
)

// TeamStore is the store of the user's teams when it is shared between machines (NATS): the
// supervisor runs the scheduled jobs every team on it keeps, so a job a team's session made
// runs in whichever supervisor reaches the server — this machine's or another's — and once
// per tick however many do (a tick's claim is a compare-and-set on the team's records).
type TeamStore interface {
	// ScheduledTeams lists the teams whose records hold scheduled jobs ([cron.ActiveKey]).
	ScheduledTeams(ctx context.Context) ([]string, error)
	// OpenTeam opens team name's backend; the caller closes it.
	OpenTeam(ctx context.Context, name string) (coord.Backend, error)
}

// teamRescan is how often the supervisor looks for teams that have begun to hold scheduled
// jobs. A session of this machine that schedules a team's job wakes it at once (it starts
// the supervisor, which scans at start); another machine's jobs wait at most this long.
const teamRescan = 30 * time.Second

// runTeamCron runs a scheduler over the records of every team of ts that holds scheduled
// jobs, until ctx ends. Runs are this supervisor's jobs, like its own records' (cronRunner);
// reports go to the team member that made the job, through the team's mailbox. Other
// machines' supervisors schedule the same records, so a claimed run is this supervisor's
// under a lease it renews (cron.SchedulerConfig.Lease).
func (s *supervisor) runTeamCron(ctx context.Context, ts TeamStore) {
	logger := s.logger.With("part", "team-cron")
	lease := s.cfg.TeamLease
	if lease <= 0 {
		lease = time.Minute
	}
	scheduled := map[string]bool{}
	// ended takes the name of a team whose scheduler returned (its watch failed): the next
	// scan starts it again.
	ended := make(chan string)
	tick := time.NewTicker(teamRescan)
	defer tick.Stop()
	wake, err := s.store.rec.Watch(ctx, cron.WakeKey)
	if err != nil {
		logger.Warn("watch for teams with new scheduled jobs", "err", err)
	}
	for scan := true; ; {
		if !scan {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
			case <-wake:
			case name := <-ended:
				delete(scheduled, name) // looked for again at the next scan, not at once
				continue
			}
		}
		scan = false
		names, err := ts.ScheduledTeams(ctx)
		if err != nil && ctx.Err() == nil {
			logger.Warn("list the teams with scheduled jobs", "err", err)
		}
		for _, name := range names {
			if scheduled[name] {
				continue
			}
			be, err := ts.OpenTeam(ctx, name)
			if err != nil {
				logger.Warn("open a team with scheduled jobs", "team", name, "err", err)
				continue
			}
			scheduled[name] = true
			logger.Info("scheduling the jobs of team", "team", name)
			s.wg.Go(func() {
				defer be.Close()
				mb := be.Mailbox()
				sched := cron.NewScheduler(cron.SchedulerConfig{Store: cron.NewStore(be.Records(), time.Now), Runner: cronRunner{s.store},
					Report: func(ctx context.Context, j cron.Job, r cron.Run, text string, runErr error) error {
						return cron.Mail(ctx, mb, j, r, text, runErr)
					},
					Lease: lease, Logger: logger.With("team", name)})
				if err := sched.Run(ctx); err != nil && ctx.Err() == nil {
					logger.Error("scheduled jobs of team", "team", name, "err", err)
				}
				select {
				case ended <- name:
				case <-ctx.Done():
				}
			})
		}
	}
}
