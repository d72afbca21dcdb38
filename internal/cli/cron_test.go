package cli_test

import (
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/cron"
	"github.com/keel-dev/keel/internal/daemon"
)

// scheduleJob records a durable job for directory cwd in the supervisor's records under home,
// as CronCreate does.
func scheduleJob(t *testing.T, home, cwd, prompt string) cron.Job {
	t.Helper()
	c := daemon.NewClient(daemon.ClientConfig{Home: home})
	defer c.Close()
	store, err := c.CronStore()
	if err != nil {
		t.Fatal(err)
	}
	j, err := store.Create(t.Context(), cron.Spec{Cron: "0 9 * * 1", Prompt: prompt, Recurring: true, Durable: true,
		Origin: cron.Origin{SessionID: "6a1c0000-0000-4000-8000-000000000002", Cwd: cwd}})
	if err != nil {
		t.Fatal(err)
	}
	return j
}

// keel cron list shows this directory's scheduled jobs (--all: every project's) as text and
// JSON, and keel cron delete deletes one; all from the supervisor's records, which need no
// running supervisor.
func TestCronListDelete(t *testing.T) {
	here := t.TempDir()
	t.Chdir(here)
	cwd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	home := t.TempDir()
	if code, out := runKeel(t, home, "cron", "list", "--json"); code != 0 || !strings.Contains(out, `"jobs": []`) {
		t.Errorf("keel cron list --json without jobs exited %d:\n%s", code, out)
	}
	mine := scheduleJob(t, home, cwd, "check the deploy")
	other := scheduleJob(t, home, t.TempDir(), "water the plants")

	code, out := runKeel(t, home, "cron", "list")
	if code != 0 || !strings.Contains(out, mine.ID) || !strings.Contains(out, "check the deploy") || strings.Contains(out, other.ID) {
		t.Errorf("keel cron list exited %d:\n%s\nwant %s and not the other project's %s", code, out, mine.ID, other.ID)
	}
	code, out = runKeel(t, home, "cron", "list", "--all", "--json")
	var listed struct {
		Jobs []map[string]any `json:"jobs"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &listed) != nil || len(listed.Jobs) != 2 {
		t.Errorf("keel cron list --all --json exited %d:\n%s\nwant both jobs", code, out)
	}

	if code, out := runKeel(t, home, "cron", "delete", mine.ID); code != 0 || !strings.Contains(out, "deleted scheduled job "+mine.ID+` ("check the deploy")`) {
		t.Errorf("keel cron delete exited %d:\n%s", code, out)
	}
	if code, out := runKeel(t, home, "cron", "list", "--all"); code != 0 || strings.Contains(out, mine.ID) || !strings.Contains(out, other.ID) {
		t.Errorf("after deleting %s keel cron list --all exited %d:\n%s", mine.ID, code, out)
	}
	if code, out := runKeel(t, home, "cron", "rm", mine.ID); code != 1 || !strings.Contains(out, "no scheduled job "+mine.ID) {
		t.Errorf("deleting %s again exited %d:\n%s\nwant an error saying there is no such job", mine.ID, code, out)
	}
}
