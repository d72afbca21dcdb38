package session

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/team"
)

// Scheduler is the supervisor as the session's scheduled jobs need it: the store of the
// jobs, and a way to make sure a supervisor runs them (daemon.Client).
type Scheduler interface {
	CronStore() (*cron.Store, error)
	Ensure(ctx context.Context) (daemon.Info, error)
}

// buildCron adds CronCreate, CronList and CronDelete when the session reaches a supervisor.
// A job's origin is this session: its reports go to the main thread's notification queue,
// which the next request boundary drains (at once when the session is open, else when it is
// resumed), and its runs open a session configured as this one. The jobs this session made
// with durable false end with it.
func (s *Session) buildCron(ctx context.Context) {
	// The main session's worktree tools join here too: both are main-session tools built
	// after the agents, appended to the fixed built-ins (deferred: their names only reach
	// the first request).
	if s.opts.DetachedFrom == "" {
		s.builtins = append(s.builtins, s.worktreeTools()...)
	}
	if s.opts.Scheduler == nil || s.opts.DetachedFrom != "" {
		return // a supervisor job's session schedules nothing of its own
	}
	store, err := s.opts.Scheduler.CronStore()
	if err != nil {
		s.logger.Warn("scheduled jobs", "err", err)
		return
	}
	store = store.WithMinInterval(s.opts.Run.CronMinInterval) // tests only: seconds-long intervals
	launch, err := json.Marshal(s.opts.Run)
	if err != nil {
		s.logger.Warn("scheduled jobs: encode the session's configuration", "err", err)
		return
	}
	origin := cron.Origin{SessionID: s.id, SessionPath: s.TranscriptPath(), NotifyDir: s.agents.tasks.QueueDir(background.MainOwner),
		Cwd: s.opts.Cwd, Launch: launch}
	local := cron.Place{Store: store, Origin: origin}
	teamPlace := sync.OnceValue(func() cron.Place { return s.teamCronPlace(store, origin) })
	place := func() cron.Place {
		if p := teamPlace(); p.Store != nil {
			return p
		}
		return local
	}
	ensure := func(ctx context.Context) error {
		if _, err := s.opts.Scheduler.Ensure(ctx); err != nil {
			return err
		}
		if place().Origin.Team != "" {
			// A supervisor that ran before the team held jobs looks for it now.
			return store.Wake(ctx)
		}
		return nil
	}
	// The tools are built before the session joins its team: each call looks up where the
	// jobs go.
	s.builtins = append(s.builtins, cron.ToolsAt(place, ensure)...)
	// Jobs outlive the supervisor's host: after a reboot nothing runs them until a
	// supervisor starts, so a session that finds jobs makes sure one runs.
	if jobs, err := store.List(ctx); err == nil && len(jobs) > 0 {
		if err := ensure(ctx); err != nil {
			s.notices = append(s.notices, event.Notice{Level: "warn",
				Text: fmt.Sprintf("%d scheduled jobs wait for the keel supervisor, which could not be started: %v", len(jobs), err)})
		}
	}
	// A team's jobs made with durable false stay until they expire: the team's store is
	// closed before the session's closers run.
	s.closers = append(s.closers, func() error { return store.EndSession(context.Background(), s.id) })
}

// teamCronPlace is where the jobs of a session in a team on NATS go: the team's records, so
// that any machine's supervisor that reaches the server runs them, each run reported to this
// session's member through the team's mailbox. Elsewhere (no team, or a team on files, which
// only this machine reaches) it is the zero Place, and jobs stay in the supervisor's records.
// local is the supervisor's store, whose test-only minimum interval the team's store keeps.
func (s *Session) teamCronPlace(local *cron.Store, origin cron.Origin) cron.Place {
	if s.team == nil {
		return cron.Place{}
	}
	if _, ok := s.teamBackend.(*natscoord.Backend); !ok {
		return cron.Place{}
	}
	origin.Team, origin.Member = s.team.Name(), team.LeadAlias
	if w := s.opts.Team.Worker; w != nil {
		origin.Member = w.Member
	}
	return cron.Place{Store: cron.NewStore(s.teamBackend.Records(), nil).WithMinInterval(s.opts.Run.CronMinInterval), Origin: origin}
}
