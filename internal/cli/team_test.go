package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/cli"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/waittest"
)

// `keel team list` lists the teams of the store settings choose: on NATS, the teams on the
// server (it used to read only the filesystem backend's directories, and saw nothing).
func TestTeamListOnNATS(t *testing.T) {
	// keel lists the teams on NATS through keel-nats coord, found on PATH here.
	t.Setenv("PATH", filepath.Dir(buildtest.Companion(t, "keel-nats"))+string(filepath.ListSeparator)+os.Getenv("PATH"))
	nsrv := natstest.Start(t)
	ctx := waittest.Context(t)
	be, err := natscoord.Open(ctx, natscoord.Options{URL: nsrv.URL(), Team: "far-crew"})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if _, err := be.Records().Put(ctx, "members/team-lead", json.RawMessage(`{"name":"team-lead","state":"idle","runner":"lead"}`)); err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	env := map[string]string{"KEEL_HOME": home, "HOME": t.TempDir(), "KEEL_NATS_URL": nsrv.URL()}
	var out, errOut bytes.Buffer
	code := cli.Main([]string{"team", "list"}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &errOut}, func(k string) string { return env[k] })
	if code != 0 || !strings.Contains(out.String(), "far-crew") || !strings.Contains(out.String(), "team-lead") {
		t.Errorf("keel team list exited %d:\n%s%s\nwant far-crew and its lead", code, out.String(), errOut.String())
	}
}
