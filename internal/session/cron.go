package session

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/background"
	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/coordpipe"
	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/team"
	"github.com/keel-dev/keel/internal/teamstore"
)

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
		s.builtins = append(s.builtins, s.wtree.Tools()...)
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
	teamPlace := &teamJobs{s: s, origin: origin}
	place := func() cron.Place {
		if p := teamPlace.place(); p.Store != nil {
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
		if _, err := s.opts.Scheduler.Ensure(ctx); err != nil {
			s.notices = append(s.notices, event.Notice{Level: "warn",
				Text: fmt.Sprintf("%d scheduled jobs wait for the keel supervisor, which could not be started: %v", len(jobs), err)})
		}
	}
	s.closers = append(s.closers, func() error { return store.EndSession(context.Background(), s.id) }, teamPlace.close)
}

// teamJobs is where the jobs of a session in a team on NATS go: the team's records, so that
// any machine's supervisor that reaches the server runs them, each run reported to this
// session's member through the team's mailbox. It is looked up at the first cron call — the
// session joins its team after its tools are built — on a handle of its own, which outlives
// the team's (closed before the session's closers run) so that the jobs this session made
// with durable false end with it there too. Elsewhere (no team, or a team on files, which
// only this machine reaches) the place is zero and jobs stay in the supervisor's records.
type teamJobs struct {
	s      *Session
	origin cron.Origin

	// mu guards looked, at and be: whether the place was looked up, the place, and the
	// handle it opened.
	mu     sync.Mutex
	looked bool
	at     cron.Place
	be     coord.Backend
}

func (t *teamJobs) place() cron.Place {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.looked {
		return t.at
	}
	t.looked = true
	s := t.s
	tm := s.teams.Current()
	if tm == nil {
		return t.at
	}
	if _, ok := tm.Backend().(*coordpipe.Client); !ok {
		return t.at
	}
	origin := t.origin
	origin.Team, origin.Member = tm.Name(), team.LeadAlias
	if w := s.opts.Team.Worker; w != nil {
		origin.Member = w.Member
	}
	rec := tm.Backend().Records()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if be, err := teamstore.Choose(s.settings, s.opts.Home, s.opts.Coordination).Open(ctx, origin.Team, coord.Config{Logger: s.logger}, nil); err == nil {
		t.be, rec = be, be.Records()
	} else {
		s.logger.Warn("scheduled jobs of the team: no handle of their own; the team's serves, and jobs with durable false outlive the session", "err", err)
	}
	t.at = cron.Place{Store: cron.NewStore(rec, nil).WithMinInterval(s.opts.Run.CronMinInterval), Origin: origin}
	return t.at
}

// close ends the team's jobs this session made with durable false and releases the handle.
func (t *teamJobs) close() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.be == nil {
		return nil
	}
	err := t.at.Store.EndSession(context.Background(), t.s.id)
	return errors.Join(err, t.be.Close())
}
