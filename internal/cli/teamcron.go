package cli

import (
	"context"
	"errors"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/daemon"
	"github.com/keel-dev/keel/internal/teamstore"
)

// supervisorTeams is the user's team store when it is NATS (settings' coordination, or
// KEEL_NATS_URL from the settings' env, which is the supervisor's environment), whose teams'
// scheduled jobs the supervisor runs; nil for the filesystem backend, whose teams' jobs live
// in the supervisor's own records. embedded is the URL of the nats-server the supervisor
// runs, the server when the settings name none.
func (a *app) supervisorTeams(embedded string) daemon.TeamStore {
	local := func(context.Context) (string, error) {
		if embedded == "" {
			return "", errors.New("the supervisor runs no embedded nats-server")
		}
		return embedded, nil
	}
	st := teamstore.Choose(a.userSettings(), a.env.Home, teamstore.Options{NATSURL: a.env.NATSURL, LocalNATS: local, Name: "keel-supervisor"})
	if st.Backend != teamstore.NATS {
		return nil
	}
	return teamCron{st}
}

// teamCron is a team store as the supervisor's team scheduling reads it.
type teamCron struct{ st teamstore.Store }

func (t teamCron) ScheduledTeams(ctx context.Context) ([]string, error) {
	teams, err := t.st.Teams(ctx, cron.ActiveKey)
	var out []string
	for _, tm := range teams {
		if tm.Record.Revision != 0 {
			out = append(out, tm.Name)
		}
	}
	return out, err
}

func (t teamCron) OpenTeam(ctx context.Context, name string) (coord.Backend, error) {
	return t.st.Open(ctx, name, coord.Config{}, nil)
}

// teamCronStores are the job stores of the teams on NATS, as `keel team` reaches them, that
// hold scheduled jobs: `keel cron` lists and deletes those too. On the filesystem backend
// there are none (its teams' jobs are the supervisor's). release closes what was opened.
func (a *app) teamCronStores(ctx context.Context) ([]*cron.Store, func(), error) {
	var closers []func() error
	release := func() {
		for _, c := range closers {
			_ = c()
		}
	}
	st, _, err := a.teams(ctx)
	if err != nil || st.Backend != teamstore.NATS {
		return nil, release, err
	}
	names, err := teamCron{st}.ScheduledTeams(ctx)
	var stores []*cron.Store
	for _, name := range names {
		be, oerr := st.Open(ctx, name, coord.Config{}, nil)
		if oerr != nil {
			err = errors.Join(err, oerr)
			continue
		}
		closers = append(closers, be.Close)
		stores = append(stores, cron.NewStore(be.Records(), nil))
	}
	return stores, release, err
}
