package cli_test

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/cli"
	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/teamstore"
	"github.com/keel-dev/keel/internal/transcript"
)

// runKeel runs the command line in a keel directory of the test's own and returns its exit
// code and output.
func runKeel(t *testing.T, home string, args ...string) (int, string) {
	t.Helper()
	return runKeelEnv(t, map[string]string{"KEEL_HOME": home, "HOME": t.TempDir()}, args...)
}

// runKeelEnv runs the command line in the environment env and returns its exit code and
// output.
func runKeelEnv(t *testing.T, env map[string]string, args ...string) (int, string) {
	t.Helper()
	var out bytes.Buffer
	code := cli.Main(args, cli.Streams{In: strings.NewReader(""), Out: &out, Err: &out}, func(k string) string { return env[k] })
	return code, out.String()
}

// storedSession writes a session of one exchange for the working directory.
func storedSession(t *testing.T, home, id, prompt, reply string) {
	t.Helper()
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	w, err := transcript.Create(t.Context(), transcript.SessionPath(home, cwd, id), transcript.Options{SessionID: id, CWD: cwd})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range []message.Message{message.User(message.Text(prompt)), message.Assistant(message.Text(reply))} {
		if _, err := w.Append(t.Context(), transcript.Entry{Type: transcript.TypeUser, Message: &m}); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
}

// keel sessions list, show, export and rm on this directory's sessions.
func TestSessionsCommands(t *testing.T) {
	t.Chdir(t.TempDir())
	home := t.TempDir()
	const id = "6a1c0000-0000-4000-8000-000000000001"
	storedSession(t, home, id, "fix the parser", "the parser is fixed")

	if code, out := runKeel(t, home, "sessions", "list"); code != 0 || !strings.Contains(out, id) || !strings.Contains(out, "fix the parser") {
		t.Errorf("sessions list exited %d:\n%s", code, out)
	}
	code, out := runKeel(t, home, "sessions", "list", "--json")
	var sums []map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &sums) != nil || len(sums) != 1 {
		t.Errorf("sessions list --json exited %d:\n%s", code, out)
	}
	if code, out := runKeel(t, home, "sessions", "show", id); code != 0 || !strings.Contains(out, "the parser is fixed") {
		t.Errorf("sessions show exited %d:\n%s", code, out)
	}
	if code, out := runKeel(t, home, "sessions", "export", id, "--format", "yaml"); code != 2 || !strings.Contains(out, "not one of markdown, json") {
		t.Errorf("export --format yaml exited %d:\n%s\nwant a usage error naming the formats", code, out)
	}
	if code, out := runKeel(t, home, "sessions", "export", id); code != 0 || !strings.Contains(out, "fix the parser") {
		t.Errorf("sessions export exited %d:\n%s", code, out)
	}
	if code, out := runKeel(t, home, "sessions", "rm", id); code != 0 || !strings.Contains(out, "removed "+id) {
		t.Errorf("sessions rm exited %d:\n%s", code, out)
	}
	if code, out := runKeel(t, home, "sessions", "show", id); code == 0 {
		t.Errorf("a removed session still shows:\n%s", out)
	}
}

// keel team tasks, send and messages on a team of the filesystem backend.
func TestTeamCommands(t *testing.T) {
	t.Chdir(t.TempDir())
	home := t.TempDir()
	if code, out := runKeel(t, home, "team", "tasks"); code == 0 || !strings.Contains(out, "there are no teams") {
		t.Errorf("team tasks without a team exited %d:\n%s", code, out)
	}
	be, err := fscoord.Open(teamstore.TeamDirOf(home, "crew"), fscoord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	if _, err := be.Board().Create(t.Context(), coord.Task{Subject: "write the docs"}); err != nil {
		t.Fatal(err)
	}
	if _, err := be.Records().Put(t.Context(), "members/alice", json.RawMessage(`{"name":"alice","state":"idle","runner":"in-process"}`)); err != nil {
		t.Fatal(err)
	}
	if code, out := runKeel(t, home, "team", "tasks"); code != 0 || !strings.Contains(out, "write the docs") {
		t.Errorf("team tasks exited %d:\n%s", code, out)
	}
	if code, out := runKeel(t, home, "team", "send", "alice", "please review"); code != 0 || !strings.Contains(out, "sent to alice in team crew") {
		t.Errorf("team send exited %d:\n%s", code, out)
	}
	if code, out := runKeel(t, home, "team", "messages", "alice"); code != 0 || !strings.Contains(out, "please review") || !strings.Contains(out, "unread") {
		t.Errorf("team messages exited %d:\n%s", code, out)
	}
	code, out := runKeel(t, home, "team", "--json", "list")
	var all map[string]any
	if code != 0 || json.Unmarshal([]byte(out), &all) != nil || !strings.Contains(out, `"alice"`) {
		t.Errorf("team list --json exited %d:\n%s", code, out)
	}
}
