package session

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/team"
)

// CoordinationOptions say how teams reach the NATS backend when settings choose it
// (coordination.backend "nats", or KEEL_NATS_URL). The filesystem backend needs nothing.
type CoordinationOptions struct {
	// NATSURL is KEEL_NATS_URL: it overrides coordination.url and, unless
	// coordination.backend says otherwise, selects nats.
	NATSURL string
	// LocalNATS returns the URL of the supervisor's embedded nats-server, starting the
	// supervisor when needed: the server used when the nats backend names none. Nil makes
	// such a configuration an error.
	LocalNATS func(ctx context.Context) (string, error)
	// Name is the NATS connection's name (shown by the server's monitoring).
	Name string
}

// coordination is which backend a team uses and how to reach it: the one decision of the
// backend for every team of this process (sessions, `keel team`, workers).
type coordination struct {
	backend string
	nats    settings.NATS
	opts    CoordinationOptions
}

func pickCoordination(st *settings.Settings, opts CoordinationOptions) coordination {
	backend, n := st.CoordinationBackend(settings.Env{NATSURL: opts.NATSURL})
	return coordination{backend: backend, nats: n, opts: opts}
}

// open opens team name's store: the directory dir (fs) or the team's streams on NATS. A
// NATS server that cannot be reached is an error naming it; nothing falls back to files.
func (c coordination) open(ctx context.Context, name, dir string, cfg coord.Config, onState func(natscoord.State)) (coord.Backend, error) {
	if c.backend != "nats" {
		be, err := fscoord.Open(dir, fscoord.Options{Config: cfg})
		if err != nil {
			return nil, fmt.Errorf("open team %s: %w", name, err)
		}
		return be, nil
	}
	url := c.nats.URL
	if url == "" {
		if c.opts.LocalNATS == nil {
			return nil, fmt.Errorf("open team %s: coordination.backend is nats but no server is named: set coordination.url or KEEL_NATS_URL", name)
		}
		var err error
		if url, err = c.opts.LocalNATS(ctx); err != nil {
			return nil, fmt.Errorf("open team %s on the supervisor's embedded NATS server: %w", name, err)
		}
	}
	be, err := natscoord.Open(ctx, natscoord.Options{
		Config: cfg, URL: url, Team: name, CredsFile: c.nats.CredsFile, Replicas: c.nats.Replicas,
		TLS:  natscoord.TLS{CAFile: c.nats.CAFile, CertFile: c.nats.CertFile, KeyFile: c.nats.KeyFile},
		Name: c.opts.Name, OnState: onState,
	})
	if err != nil {
		return nil, fmt.Errorf("open team %s: %w", name, err)
	}
	return be, nil
}

// openTeamBackend opens this session's team store and reports the NATS connection's state
// as notices (a lost connection, its return).
func (s *Session) openTeamBackend(ctx context.Context, name, dir string) (coord.Backend, error) {
	c := pickCoordination(s.settings, s.opts.Coordination)
	return c.open(ctx, name, dir, coord.Config{Logger: s.logger}, func(st natscoord.State) {
		if st.Connected {
			s.emitAgent(event.Notice{Level: "info", Text: fmt.Sprintf("team %s: connected to NATS at %s again", name, st.URL)})
			return
		}
		text := fmt.Sprintf("team %s: lost the connection to NATS", name)
		if st.Err != nil {
			text += fmt.Sprintf(" (%v)", st.Err)
		}
		s.emitAgent(event.Notice{Level: "warn", Text: text + "; reconnecting — nothing is lost meanwhile"})
	})
}

// coordinationBackend names the backend this session's teams use, for the team file.
func (s *Session) coordinationBackend() string {
	return pickCoordination(s.settings, s.opts.Coordination).backend
}

// OpenTeamOptions say which team `keel team` looks at and how to reach its store.
type OpenTeamOptions struct {
	Home, Name string
	// ProjectDir is the project whose settings apply (coordination may be set there).
	ProjectDir   string
	Coordination CoordinationOptions
}

// OpenTeamWith opens a team for a look from outside its sessions, on the backend settings
// choose. Close it with the returned function.
func OpenTeamWith(ctx context.Context, o OpenTeamOptions) (*team.Team, func(), error) {
	if err := coord.CheckName(o.Name); err != nil {
		return nil, nil, fmt.Errorf("team: %w", err)
	}
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: o.Home, NATSURL: o.Coordination.NATSURL}, ProjectDir: o.ProjectDir})
	c := pickCoordination(st, o.Coordination)
	dir := filepath.Join(TeamsDir(o.Home), o.Name)
	if c.backend != "nats" {
		if _, err := os.Stat(filepath.Join(dir, "records")); err != nil {
			return nil, nil, fmt.Errorf("no team %s in %s (teams: %s)", o.Name, TeamsDir(o.Home), strings.Join(TeamNames(o.Home), ", "))
		}
	}
	be, err := c.open(ctx, o.Name, dir, coord.Config{}, nil)
	if err != nil {
		return nil, nil, err
	}
	t, err := team.Open(ctx, team.Config{Name: o.Name, Backend: be})
	if err != nil {
		return nil, nil, errors.Join(err, be.Close())
	}
	return t, func() { _ = t.Close(); _ = be.Close() }, nil
}
