// Package teamstore is where agent teams are kept: the one decision of the coordination
// backend for every team of a process — a session's, `keel team`'s, a worker's — from the
// settings and the environment (coordination.backend, coordination.url, KEEL_NATS_URL), the
// opening of a team's store on it, and the listing of the teams a store holds
// ([coord.Backend.Teams]), which both backends offer.
//
// The filesystem backend keeps team name under $KEEL_HOME/teams/<name>; the NATS backend
// keeps it on the configured server, or on the keel supervisor's embedded one when the
// settings name none. keel reaches NATS through its companion `keel-nats coord` (a
// coordpipe client of the natscoord backend it serves), so that keel does not link the NATS
// client. A NATS server that cannot be reached is an error naming it: nothing falls back to
// files.
package teamstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/companion"
	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/coordpipe"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/team"
)

// Backend names.
const (
	FS   = "fs"
	NATS = "nats"
)

// Options say how teams reach the NATS backend when settings choose it. The filesystem
// backend needs nothing.
type Options struct {
	// NATSURL is KEEL_NATS_URL: it overrides coordination.url and, unless
	// coordination.backend says otherwise, selects nats.
	NATSURL string
	// LocalNATS returns the URL of the supervisor's embedded nats-server, starting the
	// supervisor when needed: the server used when the nats backend names none. Nil makes
	// such a configuration an error.
	LocalNATS func(ctx context.Context) (string, error)
	// Name is the NATS connection's name (shown by the server's monitoring).
	Name string
	// NATSBinary is the keel-nats companion's path; empty finds it beside keel, beside this
	// executable, then on PATH ([companion.Find]).
	NATSBinary string
}

// Dir is where the filesystem backend keeps teams under keel's directory home.
func Dir(home string) string { return filepath.Join(home, "teams") }

// TeamDirOf is the directory of team name under keel's directory home.
func TeamDirOf(home, name string) string { return filepath.Join(Dir(home), name) }

// Store is one process's choice of backend for its teams.
type Store struct {
	// Backend is FS or NATS.
	Backend string
	home    string
	nats    settings.NATS
	opts    Options
}

// Choose picks the backend the settings and opts ask for; home is keel's directory.
func Choose(st *settings.Settings, home string, opts Options) Store {
	backend, n := st.CoordinationBackend(settings.Env{NATSURL: opts.NATSURL})
	if backend != NATS {
		backend = FS
	}
	return Store{Backend: backend, home: home, nats: n, opts: opts}
}

// natsOptions are the options of a connection to the chosen NATS server.
func (s Store) natsOptions(ctx context.Context, what string) (coordpipe.NATS, error) {
	url := s.nats.URL
	if url == "" {
		if s.opts.LocalNATS == nil {
			return coordpipe.NATS{}, fmt.Errorf("%s: coordination.backend is nats but no server is named: set coordination.url or KEEL_NATS_URL", what)
		}
		var err error
		if url, err = s.opts.LocalNATS(ctx); err != nil {
			return coordpipe.NATS{}, fmt.Errorf("%s on the supervisor's embedded NATS server: %w", what, err)
		}
	}
	return coordpipe.NATS{URL: url, CredsFile: s.nats.CredsFile, Replicas: s.nats.Replicas,
		CAFile: s.nats.CAFile, CertFile: s.nats.CertFile, KeyFile: s.nats.KeyFile,
		Name: s.opts.Name}, nil
}

// natsCompanion is how keel reaches NATS: `keel-nats coord`, found beside keel (or as
// Options.NATSBinary says). Missing, it is an error that says where it was looked for and
// how to install it.
func (s Store) natsCompanion(what, url string, cfg coord.Config, onState func(coordpipe.State)) (coordpipe.Process, error) {
	path := s.opts.NATSBinary
	if path == "" {
		var err error
		if path, err = companion.Find(companion.KeelNATS, companion.Self()); err != nil {
			return coordpipe.Process{}, fmt.Errorf("%s: keel reaches NATS at %s through its companion %s: %w; install it beside keel with "+
				"`make build` or `go install ./cmd/...` (go install github.com/keel-dev/keel/cmd/keel-nats@latest)",
				what, coord.RedactURL(url), companion.KeelNATS, err)
		}
	}
	return coordpipe.Process{Path: path, Args: []string{"coord"}, Logger: cfg.Logger, OnState: onState}, nil
}

// TeamDir is the directory of team name: the filesystem backend's store, and on any backend
// where its process teammates' logs and launch configuration are kept.
func (s Store) TeamDir(name string) string { return TeamDirOf(s.home, name) }

// Open opens team name's store; onState, on NATS, is told when the connection drops and
// comes back. On NATS, cfg's clock (Now) stays keel's: the companion keeps its own.
func (s Store) Open(ctx context.Context, name string, cfg coord.Config, onState func(coordpipe.State)) (coord.Backend, error) {
	what := "open team " + name
	if err := coord.CheckName(name); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	if s.Backend != NATS {
		be, err := fscoord.Open(s.TeamDir(name), fscoord.Options{Config: cfg})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		return be, nil
	}
	o, err := s.natsOptions(ctx, what)
	if err != nil {
		return nil, err
	}
	o.Team, o.Limits = name, cfg.Limits
	p, err := s.natsCompanion(what, o.URL, cfg, onState)
	if err != nil {
		return nil, err
	}
	be, err := coordpipe.Start(ctx, p, o)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return be, nil
}

// Teams lists the teams of the store, newest first, each with its record at key ("" reads
// none), without opening any.
func (s Store) Teams(ctx context.Context, key string) ([]coord.TeamInfo, error) {
	if s.Backend != NATS {
		return fscoord.ListTeams(Dir(s.home), key)
	}
	o, err := s.natsOptions(ctx, "list teams")
	if err != nil {
		return nil, err
	}
	o.List, o.ListKey = true, key
	p, err := s.natsCompanion("list teams", o.URL, coord.Config{}, nil)
	if err != nil {
		return nil, err
	}
	var teams []coord.TeamInfo
	err = coordpipe.Query(ctx, p, o, &teams)
	return teams, err
}

// Where says where the store keeps its teams, for messages.
func (s Store) Where() string {
	if s.Backend == NATS {
		if s.nats.URL == "" {
			return "the supervisor's embedded NATS server"
		}
		return "NATS at " + coord.RedactURL(s.nats.URL)
	}
	return Dir(s.home)
}

// Names lists the names of teams, as Teams gives them.
func Names(teams []coord.TeamInfo) []string {
	out := make([]string, 0, len(teams))
	for _, t := range teams {
		out = append(out, t.Name)
	}
	return out
}

// LookOptions say which team `keel team` looks at and how to reach its store.
type LookOptions struct {
	Home, Name string
	// ProjectDir is the project whose settings apply (coordination may be set there).
	ProjectDir string
	Options    Options
}

// Look opens a team for a look from outside its sessions (`keel team`): a handle that is
// neither lead nor member, on the backend settings choose. Close it with the returned
// function. A team the store does not hold is an error naming those it does.
func Look(ctx context.Context, o LookOptions) (*team.Team, func(), error) {
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: o.Home, NATSURL: o.Options.NATSURL}, ProjectDir: o.ProjectDir})
	s := Choose(st, o.Home, o.Options)
	if err := coord.CheckName(o.Name); err != nil {
		return nil, nil, fmt.Errorf("team: %w", err)
	}
	if s.Backend != NATS {
		if _, err := os.Stat(filepath.Join(s.TeamDir(o.Name), "records")); err != nil {
			teams, _ := s.Teams(ctx, "")
			return nil, nil, fmt.Errorf("no team %s in %s (teams: %s)", o.Name, s.Where(), strings.Join(Names(teams), ", "))
		}
	}
	be, err := s.Open(ctx, o.Name, coord.Config{}, nil)
	if err != nil {
		return nil, nil, err
	}
	t, err := team.Open(ctx, team.Config{Name: o.Name, Backend: be})
	if err != nil {
		return nil, nil, errors.Join(err, be.Close())
	}
	return t, func() { _ = t.Close(); _ = be.Close() }, nil
}

// Lister is a store's listing of its teams, as `keel team list` reads it.
func Lister(ctx context.Context, home, projectDir string, opts Options) (Store, []coord.TeamInfo, error) {
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: home, NATSURL: opts.NATSURL}, ProjectDir: projectDir})
	s := Choose(st, home, opts)
	teams, err := s.Teams(ctx, "")
	return s, teams, err
}
