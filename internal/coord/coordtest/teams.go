package coordtest

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/waittest"
)

// OpenTeam returns a new handle on team name of one store. The suite closes what it opens.
type OpenTeam func(t *testing.T, name string) coord.Backend

// RunTeams runs the suite's part about the store beyond one team: [coord.Backend.Teams]
// lists every team of the store, its own among them, with the record asked for. newStore is
// called once per subtest; other teams may share the store (a NATS server), so the listing
// is checked for the teams the test made.
func RunTeams(t *testing.T, newStore func(t *testing.T) OpenTeam) {
	t.Run("teams/list", func(t *testing.T) {
		t.Parallel()
		ctx := waittest.Context(t)
		open := newStore(t)
		// Unique names: other tests' teams may share the store.
		id := strings.ReplaceAll(coord.NewID(), "-", "")[:8]
		redName, blueName := "red-"+id, "blue-"+id
		red, blue := open(t, redName), open(t, blueName)
		defer red.Close()
		defer blue.Close()
		if _, err := blue.Records().Put(ctx, "members/team-lead", json.RawMessage(`{"pid":7}`)); err != nil {
			t.Fatal(err)
		}
		for _, h := range []coord.Backend{red, blue} {
			teams, err := h.Teams(ctx, "members/team-lead")
			if err != nil {
				t.Fatal(err)
			}
			byName := map[string]coord.TeamInfo{}
			for _, tm := range teams {
				byName[tm.Name] = tm
			}
			r, okRed := byName[redName]
			b, okBlue := byName[blueName]
			if !okRed || !okBlue {
				t.Fatalf("teams %+v; want red and blue among them", teams)
			}
			if r.Record.Revision != 0 || b.Record.Revision != 1 || string(b.Record.Value) != `{"pid":7}` {
				t.Errorf("records: red %+v, blue %+v; want none for red and blue's lead", r.Record, b.Record)
			}
			if b.Updated.IsZero() {
				t.Error("blue's listing says nothing of when it changed")
			}
		}
		names, err := red.Teams(ctx, "")
		if err != nil || len(names) < 2 || names[0].Record.Revision != 0 {
			t.Errorf("listing without a key: %+v, %v", names, err)
		}
		if _, err := red.Teams(ctx, "bad key!"); err == nil {
			t.Error("an invalid key was accepted")
		}
		if err := red.Close(); err != nil {
			t.Fatal(err)
		}
		if _, err := red.Teams(ctx, ""); err == nil {
			t.Error("a closed handle listed teams")
		}
	})
}
