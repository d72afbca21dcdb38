package session

import (
	"context"
	"encoding/json"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/coord/natscoord/natstest"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/provider/connect"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/teamstore"
	"github.com/keel-dev/keel/internal/waittest"
)

// remoteScenario: the lead puts one task on the board; the remote worker takes it, and its
// Bash call needs a permission that only the lead's UI can give.
func remoteScenario() *scripted.Scenario {
	worker := func(m scripted.Match) scripted.Match { m.System = mateIs("far").System; return m }
	return &scripted.Scenario{Rules: []scripted.Rule{
		{Name: "worker ready", When: worker(scripted.Match{UserText: "You joined team"}), Reply: []scripted.Block{scripted.Text("ready")}},
		{Name: "worker task", When: worker(scripted.Match{UserText: `<task-assignment id="1"`}), Reply: []scripted.Block{
			scripted.ToolUse("Bash", map[string]any{"command": "touch far.txt", "description": "make the file"}),
			scripted.ToolUse("TaskUpdate", map[string]any{"taskId": "1", "status": "completed"})}},
		{Name: "worker done", When: worker(scripted.Match{ToolResult: "TaskUpdate"}), Reply: []scripted.Block{scripted.Text("made it")}},
		{Name: "lead plans", When: leadTurn(scripted.Match{UserText: "make far.txt"}), Reply: []scripted.Block{
			scripted.ToolUse("TaskCreate", map[string]any{"subject": "make far.txt"})}},
		{Name: "lead waits", When: leadTurn(scripted.Match{ToolResult: "TaskCreate"}), Reply: []scripted.Block{scripted.Text("on the board")}},
	}, Fallback: &scripted.Rule{Reply: []scripted.Block{scripted.Text("noted")}}}
}

// A worker that joined the team by itself on another "host" (its own home and directory)
// reaches the lead through NATS: the lead lists it among its members, the worker's permission
// question comes up in the lead's UI labelled with the worker's name, and its task is done in
// the worker's own directory.
func TestRemoteWorkerThroughNATS(t *testing.T) {
	srv, coordOpts := onNATS(t)

	workerDir := t.TempDir()
	wctx, stopWorker := context.WithCancel(t.Context())
	defer stopWorker()
	w := newHarnessOn(t, srv, Options{Cwd: workerDir, Coordination: coordOpts,
		Team: TeamOptions{Worker: &TeamWorker{Team: "far-team", Member: "far", Remote: true}}})
	workerDone := make(chan error, 1)
	go func() { workerDone <- w.sess.Team().RunTeammate(wctx) }()

	var mu sync.Mutex
	var asks []permission.AskRequest
	asker := permission.AskerFunc(func(ctx context.Context, r permission.AskRequest) (permission.Answer, error) {
		mu.Lock()
		defer mu.Unlock()
		asks = append(asks, r)
		return permission.AllowOnce(), nil
	})
	lead := newHarnessOn(t, srv, Options{Asker: asker, Coordination: coordOpts,
		Team: TeamOptions{Enabled: true, Name: "far-team", ShutdownTimeout: waittest.Timeout()}})
	waittest.Until(t, "the lead to see the remote worker", func() bool {
		members, _ := lead.sess.Team().Current().Members(t.Context())
		for _, m := range members {
			if m.Name == "far" {
				return true
			}
		}
		return false
	})
	lead.send(t, "make far.txt")
	drain(t, lead.sess)

	mu.Lock()
	if len(asks) != 1 || asks[0].Agent.Name != "far" || asks[0].Request.Command != "touch far.txt" {
		t.Errorf("the lead's UI was asked %+v; want far's touch far.txt once", asks)
	}
	mu.Unlock()
	if _, err := os.Stat(filepath.Join(workerDir, "far.txt")); err != nil {
		t.Errorf("the worker did not make the file in its own directory: %v", err)
	}
	if _, err := os.Stat(filepath.Join(lead.sess.Cwd(), "far.txt")); err == nil {
		t.Error("the file was made in the lead's directory")
	}
	tk, err := lead.sess.Team().Current().Backend().Board().Get(t.Context(), "1")
	if err != nil || tk.Status != "completed" || tk.Owner != "far" {
		t.Errorf("task 1: %+v, %v; want completed by far", tk, err)
	}
	if err := waittest.Recv(t, "the worker to stop when the lead shut the team down", workerDone); err != nil {
		t.Errorf("worker: %v", err)
	}
}

// With the nats backend, an unreachable server fails the session's team with an error that
// names it; nothing falls back to files.
func TestNATSUnreachableIsAnError(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	url := "nats://" + l.Addr().String()
	_ = l.Close()
	srv, err := scripted.Start(t.Context(), "", remoteScenario(), scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	home := t.TempDir()
	settingsJSON, _ := json.Marshal(map[string]any{"coordination": map[string]any{"backend": "nats", "url": url}})
	if err := os.WriteFile(filepath.Join(home, "settings.json"), settingsJSON, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err = openForTest(t, srv, Options{Home: home, Team: TeamOptions{Enabled: true},
		Coordination: CoordinationOptions{NATSBinary: buildtest.Companion(t, "keel-nats")}})
	if err == nil || !strings.Contains(err.Error(), url) {
		t.Fatalf("open with an unreachable NATS: %v; want an error naming %s", err, url)
	}
	if entries, _ := os.ReadDir(teamstore.Dir(home)); len(entries) != 0 {
		t.Errorf("a team directory was made anyway: %v", entries)
	}
}

func openForTest(t *testing.T, srv *scripted.Server, opts Options) (*Session, error) {
	t.Helper()
	prov, model, err := connect.Open(connect.Config{BaseURL: srv.URL(), APIKey: "test", Model: "claude-sonnet-4-5"}, func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	opts.Provider, opts.Model, opts.Cwd = prov, model, t.TempDir()
	opts.ManagedSettingsPath, opts.ManagedMemoryPath = "-", "-"
	sess, err := New(t.Context(), opts)
	if err == nil {
		t.Cleanup(func() { sess.Close() })
	}
	return sess, err
}

// A lead sees the other teams' leads on the same NATS server (ListAgents' peers): the view
// goes through the backend's listing of teams, not the filesystem backend's files.
func TestTeamPeersOnNATS(t *testing.T) {
	srv, coordOpts := onNATS(t)
	newHarnessOn(t, srv, Options{Coordination: coordOpts, Team: TeamOptions{Enabled: true, Name: "first-crew"}})
	second := newHarnessOn(t, srv, Options{Coordination: coordOpts, Team: TeamOptions{Enabled: true, Name: "second-crew"}})
	peers := strings.Join(second.sess.Team().Peers(t.Context()), "\n")
	if !strings.Contains(peers, "leading team first-crew") || strings.Contains(peers, "second-crew") {
		t.Errorf("second-crew's lead sees peers:\n%s\nwant first-crew's lead, not its own", peers)
	}
}

// onNATS starts a NATS server and the scripted model of these tests, and returns the model
// and the coordination options that reach the server.
func onNATS(t *testing.T) (*scripted.Server, CoordinationOptions) {
	t.Helper()
	nsrv := natstest.Start(t)
	srv, err := scripted.Start(t.Context(), "", remoteScenario(), scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv, CoordinationOptions{NATSURL: nsrv.URL(), NATSBinary: buildtest.Companion(t, "keel-nats")}
}
