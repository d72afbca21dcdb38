package teamstore

import (
	"context"
	"encoding/json"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/waittest"
)

// A team opened on either backend is listed by the store, with its lead's record, and a
// look at a team the store lacks names those it has.
func TestTeamsOnEitherBackend(t *testing.T) {
	nsrv := natstest.Start(t)
	nats := buildtest.Companion(t, "keel-nats")
	for _, tc := range []struct {
		name string
		opts Options
		want string
	}{
		{"fs", Options{}, FS},
		{"nats", Options{NATSURL: nsrv.URL(), NATSBinary: nats}, NATS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := waittest.Context(t)
			home := t.TempDir()
			st, _ := settings.Load(settings.Options{Env: settings.Env{Home: home}})
			store := Choose(st, home, tc.opts)
			if store.Backend != tc.want {
				t.Fatalf("backend %s, want %s", store.Backend, tc.want)
			}
			name := "crew-" + tc.name
			be, err := store.Open(ctx, name, coord.Config{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer be.Close()
			if _, err := be.Records().Put(ctx, "members/team-lead", json.RawMessage(`{"pid":42}`)); err != nil {
				t.Fatal(err)
			}
			for _, list := range []func() ([]coord.TeamInfo, error){
				func() ([]coord.TeamInfo, error) { return store.Teams(ctx, "members/team-lead") },
				func() ([]coord.TeamInfo, error) { return be.Teams(ctx, "members/team-lead") },
			} {
				teams, err := list()
				if err != nil {
					t.Fatal(err)
				}
				var found bool
				for _, tm := range teams {
					found = found || (tm.Name == name && string(tm.Record.Value) == `{"pid":42}`)
				}
				if !found {
					t.Errorf("teams %+v; want %s with its lead's record", teams, name)
				}
			}
			_, _, err = Look(ctx, LookOptions{Home: home, Name: "missing", Options: tc.opts})
			if tc.want == FS && (err == nil || !strings.Contains(err.Error(), name)) {
				t.Errorf("a look at a missing team: %v; want an error naming %s", err, name)
			}
			t2, done, err := Look(ctx, LookOptions{Home: home, Name: name, Options: tc.opts})
			if err != nil {
				t.Fatal(err)
			}
			defer done()
			if t2.Name() != name {
				t.Errorf("looked at %s, want %s", t2.Name(), name)
			}
		})
	}
}

// The nats backend without a server named asks the supervisor's; without one it is an error.
func TestEmbeddedServer(t *testing.T) {
	home := t.TempDir()
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: home},
		SettingsArgs: []string{`{"coordination":{"backend":"nats"}}`}})
	if _, err := Choose(st, home, Options{}).Open(t.Context(), "x", coord.Config{}, nil); err == nil || !strings.Contains(err.Error(), "no server is named") {
		t.Errorf("nats without a server: %v", err)
	}
	nsrv := natstest.Start(t)
	asked := false
	store := Choose(st, home, Options{LocalNATS: func(context.Context) (string, error) { asked = true; return nsrv.URL(), nil },
		NATSBinary: buildtest.Companion(t, "keel-nats")})
	be, err := store.Open(waittest.Context(t), "x", coord.Config{}, nil)
	if err != nil || !asked {
		t.Fatalf("open on the embedded server: %v (asked %v)", err, asked)
	}
	_ = be.Close()
}

// Without keel-nats, a team on NATS is an error that names the companion, where it was
// looked for and how to install it.
func TestNATSCompanionMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	home := t.TempDir()
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: home}})
	store := Choose(st, home, Options{NATSURL: "nats://127.0.0.1:1"})
	_, err := store.Open(t.Context(), "crew", coord.Config{}, nil)
	_, lerr := store.Teams(t.Context(), "")
	for _, err := range []error{err, lerr} {
		if err == nil {
			t.Fatal("a team on NATS opened without keel-nats")
		}
		for _, want := range []string{"nats://127.0.0.1:1", "keel-nats not found in", "on PATH", "make build", "go install ./cmd/..."} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not say %q", err, want)
			}
		}
	}
}
