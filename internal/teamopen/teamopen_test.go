package teamopen

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/coordpipe"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/teamstore"
	"github.com/keel-dev/keel/internal/transcript"
	"github.com/keel-dev/keel/internal/waittest"
)

// loadSettings reads the settings of a session with keel's directory home and the given
// --settings objects, and nothing of this machine's.
func loadSettings(t *testing.T, home string, args ...string) *settings.Settings {
	t.Helper()
	st, err := settings.Load(settings.Options{Env: settings.Env{Home: home}, ManagedPath: filepath.Join(t.TempDir(), "none"), SettingsArgs: args})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// open opens a handle on cfg's team and closes it with the test.
func open(t *testing.T, cfg Config, resumed bool) *Handle {
	t.Helper()
	h := New(cfg)
	t.Cleanup(h.Close)
	tm, err := h.Open(waittest.Context(t), resumed, nil)
	if err != nil {
		t.Fatal(err)
	}
	if tm == nil || h.Current() != tm {
		t.Fatalf("open returned team %v, handle holds %v; want the same team", tm, h.Current())
	}
	return h
}

// A session has a team when it is asked to, by its options, by the teams setting or by the
// agent-teams variable in settings' env, or when it hosts a worker; a supervisor's job for
// another session never leads one, whatever the settings say.
func TestEnabled(t *testing.T) {
	home := t.TempDir()
	plain := loadSettings(t, home)
	teams := loadSettings(t, home, `{"teams":true}`)
	env := loadSettings(t, home, `{"env":{"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS":"1"}}`)
	envOff := loadSettings(t, home, `{"env":{"CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS":"0"}}`)
	worker := &Worker{Team: "crew", Member: "ann"}
	for _, tc := range []struct {
		name string
		cfg  Config
		want bool
	}{
		{"off", Config{Settings: plain}, false},
		{"option", Config{Options: Options{Enabled: true}, Settings: plain}, true},
		{"setting", Config{Settings: teams}, true},
		{"settings env", Config{Settings: env}, true},
		{"settings env off", Config{Settings: envOff}, false},
		{"worker", Config{Options: Options{Worker: worker}, Settings: plain}, true},
		{"detached job with the setting", Config{Settings: teams, Detached: true}, false},
		{"detached job asked", Config{Options: Options{Enabled: true}, Settings: plain, Detached: true}, false},
		{"detached worker", Config{Options: Options{Worker: worker}, Settings: plain, Detached: true}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := New(tc.cfg)
			if got := h.Enabled(); got != tc.want {
				t.Errorf("Enabled() = %v, want %v", got, tc.want)
			}
			if !tc.want {
				tm, err := h.Open(waittest.Context(t), false, nil)
				if tm != nil || err != nil || h.Current() != nil {
					t.Errorf("a session without a team opened %v, %v", tm, err)
				}
			}
		})
	}
}

// The backend is the one teamstore chooses: files under keel's directory unless NATS is
// configured — by KEEL_NATS_URL or by the coordination settings — and the session's note of
// its team, beside its transcript, names the backend.
func TestBackendChoice(t *testing.T) {
	nsrv := natstest.Start(t)
	nats := buildtest.Companion(t, "keel-nats")
	for _, tc := range []struct {
		name string
		opts teamstore.Options
		args []string
		want string
	}{
		{"files by default", teamstore.Options{NATSBinary: nats}, nil, teamstore.FS},
		{"nats by KEEL_NATS_URL", teamstore.Options{NATSURL: nsrv.URL(), NATSBinary: nats}, nil, teamstore.NATS},
		{"nats by settings", teamstore.Options{NATSBinary: nats}, []string{fmt.Sprintf(`{"coordination":{"backend":"nats","url":%q}}`, nsrv.URL())}, teamstore.NATS},
		{"files by settings despite KEEL_NATS_URL", teamstore.Options{NATSURL: nsrv.URL(), NATSBinary: nats}, []string{`{"coordination":{"backend":"fs"}}`}, teamstore.FS},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home := t.TempDir()
			tpath := filepath.Join(t.TempDir(), "session.jsonl")
			name := "crew-" + strings.ReplaceAll(coord.NewID(), "-", "")[:8]
			h := open(t, Config{Options: Options{Enabled: true, Name: name}, Settings: loadSettings(t, home, tc.args...),
				Home: home, Coordination: tc.opts, TranscriptPath: tpath}, false)
			be := h.Current().Backend()
			_, onFiles := be.(*fscoord.Backend)
			// keel reaches NATS through keel-nats coord.
			_, onNATS := be.(*coordpipe.Client)
			if (tc.want == teamstore.FS) != onFiles || (tc.want == teamstore.NATS) != onNATS {
				t.Errorf("backend %T, want %s", be, tc.want)
			}
			_, err := os.Stat(filepath.Join(teamstore.TeamDirOf(home, name), "records"))
			if onFiles != (err == nil) {
				t.Errorf("team directory under keel's directory: %v; want it only on files", err)
			}
			var f teamFile
			b, err := os.ReadFile(filepath.Join(transcript.SessionDir(tpath), "team.json"))
			if err != nil || json.Unmarshal(b, &f) != nil || f.Name != name || f.Backend != tc.want {
				t.Errorf("team.json %s (%v); want team %s on %s", b, err, name, tc.want)
			}
		})
	}
}

// ListAgents' peers, besides the session's subagents, are the leads of the store's other
// teams, found through the backend's listing on either backend: a lead sees the other, not
// itself, and no longer sees a lead whose session closed.
func TestPeersThroughTheBackend(t *testing.T) {
	nsrv := natstest.Start(t)
	nats := buildtest.Companion(t, "keel-nats")
	for _, tc := range []struct {
		name string
		opts teamstore.Options
	}{
		{"fs", teamstore.Options{}},
		{"nats", teamstore.Options{NATSURL: nsrv.URL(), NATSBinary: nats}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := waittest.Context(t)
			home := t.TempDir()
			id := strings.ReplaceAll(coord.NewID(), "-", "")[:8]
			first, second := "first-"+id, "second-"+id
			lead := func(name string) *Handle {
				return open(t, Config{Options: Options{Enabled: true, Name: name}, Settings: loadSettings(t, home), Home: home,
					Coordination: tc.opts, Subagents: func() []string { return []string{"subagent of " + name} }}, false)
			}
			a, b := lead(first), lead(second)
			peers := strings.Join(b.Peers(ctx), "\n")
			if !strings.Contains(peers, "subagent of "+second) || !strings.Contains(peers, "leading team "+first) ||
				strings.Contains(peers, "leading team "+second) || strings.Contains(peers, "subagent of "+first) {
				t.Errorf("%s's peers:\n%s\nwant its own subagent and %s's lead, not itself", second, peers, first)
			}
			if peers := strings.Join(a.Peers(ctx), "\n"); !strings.Contains(peers, "leading team "+second) {
				t.Errorf("%s's peers:\n%s\nwant %s's lead", first, peers, second)
			}
			a.Close()
			if peers := strings.Join(b.Peers(ctx), "\n"); strings.Contains(peers, "leading team "+first) {
				t.Errorf("after %s's session closed, %s's peers:\n%s\nstill list its lead", first, second, peers)
			}
		})
	}
}

// A new team is named after the session; a resumed session finds the team its note names
// again (its id is a new one), and a session not resumed starts its own.
func TestResumedSessionFindsItsTeam(t *testing.T) {
	home := t.TempDir()
	tpath := filepath.Join(t.TempDir(), "session.jsonl")
	cfg := func(id string) Config {
		return Config{Options: Options{Enabled: true}, Settings: loadSettings(t, home), Home: home, SessionID: id, TranscriptPath: tpath}
	}
	h := open(t, cfg("0123abcd-4567-89ab-cdef-0123456789ab"), false)
	if got := h.Current().Name(); got != "team-0123abcd" {
		t.Fatalf("new team %s, want team-0123abcd", got)
	}
	h.Close()
	if got := open(t, cfg("fedcba98-7654-3210-fedc-ba9876543210"), true).Current().Name(); got != "team-0123abcd" {
		t.Errorf("resumed session opened %s, want its team team-0123abcd", got)
	}
	if got := open(t, cfg("fedcba98-7654-3210-fedc-ba9876543210"), false).Current().Name(); got != "team-fedcba98" {
		t.Errorf("a new session opened %s, want team-fedcba98", got)
	}
}

// Names are checked before anything is opened.
func TestBadNames(t *testing.T) {
	home := t.TempDir()
	for _, o := range []Options{
		{Enabled: true, Name: "bad name!"},
		{Worker: &Worker{Team: "../escape", Member: "ann"}},
	} {
		h := New(Config{Options: o, Settings: loadSettings(t, home), Home: home})
		if tm, err := h.Open(waittest.Context(t), false, nil); err == nil || tm != nil {
			t.Errorf("options %+v opened %v, %v; want an error", o, tm, err)
		}
		h.Close()
	}
	if entries, _ := os.ReadDir(teamstore.Dir(home)); len(entries) != 0 {
		t.Errorf("a team directory was made anyway: %v", entries)
	}
}

// Without keel's directory the team is kept in a temporary one, removed when the session
// closes.
func TestNoHomeKeepsTheTeamInATemporaryDirectory(t *testing.T) {
	h := open(t, Config{Options: Options{Enabled: true, Name: "crew"}, Settings: loadSettings(t, "")}, false)
	if h.temp == "" {
		t.Fatal("no temporary directory")
	}
	if _, err := os.Stat(teamstore.TeamDirOf(h.temp, "crew")); err != nil {
		t.Fatalf("team not in the temporary directory: %v", err)
	}
	h.Close()
	if _, err := os.Stat(h.temp); !os.IsNotExist(err) {
		t.Errorf("temporary directory left behind: %v", err)
	}
}

// A lead started with a worker command launches process teammates from its run
// configuration, written beside the team as launch.json.
func TestLaunchConfiguration(t *testing.T) {
	home := t.TempDir()
	h := open(t, Config{Options: Options{Enabled: true, Name: "crew", WorkerCommand: []string{"keel", "team", "worker"}},
		Settings: loadSettings(t, home), Home: home}, false)
	if _, err := os.Stat(filepath.Join(teamstore.TeamDirOf(home, "crew"), "launch.json")); err != nil {
		t.Errorf("no launch configuration: %v", err)
	}
	if h.RunTeammate(waittest.Context(t)) == nil {
		t.Error("a lead ran a teammate as if it were a worker")
	}
}

// The lead's inbox is reconciled with the history on open, the worker's transcript goes
// beside its lead's, and a team without a lead inbox has nothing to wait for.
func TestWorkerSession(t *testing.T) {
	home := t.TempDir()
	open(t, Config{Options: Options{Enabled: true, Name: "crew"}, Settings: loadSettings(t, home), Home: home}, false)
	lead := filepath.Join(t.TempDir(), "lead.jsonl")
	var notices []event.Event
	w := open(t, Config{Options: Options{Worker: &Worker{Team: "crew", Member: "ann", LeadTranscript: lead}},
		Settings: loadSettings(t, home), Home: home, TranscriptPath: filepath.Join(t.TempDir(), "own.jsonl"),
		Notify: func(e event.Event) { notices = append(notices, e) }}, false)
	if got := w.AgentTranscript(); got != lead {
		t.Errorf("worker's agents' transcripts beside %s, want the lead's %s", got, lead)
	}
	if w.Current().LeadInbox() != nil {
		t.Error("a worker has the lead's inbox")
	}
	if n, err := w.Wait(waittest.Context(t)); n != 0 || err != nil || len(notices) != 0 {
		t.Errorf("worker's wait: %d, %v, notices %v; want nothing to wait for", n, err, notices)
	}
	if n := w.LeadUnread(waittest.Context(t)); n != 0 {
		t.Errorf("worker's lead unread %d", n)
	}
	if got := w.Resume(waittest.Context(t)); got != nil {
		t.Errorf("a worker resumed teammates: %v", got)
	}
	var nilHandle *Handle
	if nilHandle.Current() != nil || nilHandle.LeadUnread(waittest.Context(t)) != 0 {
		t.Error("a nil handle has a team")
	}
	nilHandle.Close()
}
