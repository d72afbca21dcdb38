package dashboard_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/fscoord"
	"github.com/keel-dev/keel/internal/dashboard"
	"github.com/keel-dev/keel/internal/team"
)

// fakeTeams serves one team over a real file backend and records the actions the page takes.
type fakeTeams struct {
	be *fscoord.Backend

	mu      sync.Mutex
	actions []string
}

func (f *fakeTeams) Names(context.Context) []string { return []string{"crew"} }
func (f *fakeTeams) Open(context.Context, string) (dashboard.Team, error) {
	return fakeTeam{f}, nil
}

type fakeTeam struct{ f *fakeTeams }

func (t fakeTeam) Members(context.Context) ([]team.MemberInfo, error) {
	return []team.MemberInfo{{Name: "team-lead"}, {Name: "alice", Color: "blue", State: team.StateWorking}}, nil
}
func (t fakeTeam) Backend() coord.Backend { return t.f.be }
func (t fakeTeam) SendFromUser(_ context.Context, to, text string) (string, error) {
	t.f.record("send " + to + ": " + text)
	return "m1", nil
}
func (t fakeTeam) Answer(_ context.Context, id string, allow bool, reason string) error {
	if id == "gone" {
		return errors.New("permission request gone is not open")
	}
	t.f.record("answer " + id + map[bool]string{true: " allow", false: " deny: " + reason}[allow])
	return nil
}
func (t fakeTeam) Close() error { return nil }

func (f *fakeTeams) record(s string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.actions = append(f.actions, s)
}

type fakeJobs struct{ stopped []string }

func (j *fakeJobs) List(context.Context) ([]dashboard.Job, error) {
	return []dashboard.Job{{ID: "j1", Description: "survey", State: "running"}}, nil
}
func (j *fakeJobs) Stop(_ context.Context, id string) error {
	j.stopped = append(j.stopped, id)
	return nil
}

func post(t *testing.T, s *dashboard.Server, path, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, "http://"+s.Addr().String()+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Keel-Token", "t")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var b strings.Builder
	_, _ = io.Copy(&b, resp.Body)
	return resp.StatusCode, b.String()
}

// The page's actions reach the team and the supervisor; bad requests get a clear error.
func TestActions(t *testing.T) {
	be, err := fscoord.Open(t.TempDir(), fscoord.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer be.Close()
	teams, jobs := &fakeTeams{be: be}, &fakeJobs{}
	s := start(t, dashboard.Config{Home: t.TempDir(), Token: "t", Teams: teams, Jobs: jobs})
	// The view opens the team.
	if code, body := get(t, "http://"+s.Addr().String()+"/api/view?token=t", nil); code != http.StatusOK || !strings.Contains(body, `"name":"crew"`) {
		t.Fatalf("view %d: %s", code, body)
	}
	tests := []struct {
		path, contentType, body string
		want                    int
		error                   string
	}{
		{"/api/message", "application/json", `{"team":"crew","to":"alice","text":"also the docs"}`, http.StatusOK, ""},
		{"/api/answer", "application/json", `{"team":"crew","id":"r1","allow":true}`, http.StatusOK, ""},
		{"/api/answer", "application/json", `{"team":"crew","id":"r2","allow":false}`, http.StatusOK, ""},
		{"/api/answer", "application/json", `{"team":"crew","id":"gone","allow":true}`, http.StatusConflict, "is not open"},
		{"/api/stop", "application/json", `{"id":"j1"}`, http.StatusOK, ""},
		{"/api/message", "application/json", `{"team":"nope","to":"alice","text":"x"}`, http.StatusNotFound, `is open here`},
		{"/api/message", "application/json", `{"team":"crew","to":"alice","text":"  "}`, http.StatusBadRequest, "empty"},
		{"/api/message", "application/json", `{"team":`, http.StatusBadRequest, "read the request"},
		{"/api/message", "text/plain", `{"team":"crew","to":"alice","text":"x"}`, http.StatusUnsupportedMediaType, "application/json"},
	}
	for _, tt := range tests {
		code, body := post(t, s, tt.path, tt.contentType, tt.body)
		if code != tt.want || (tt.error != "" && !strings.Contains(body, tt.error)) {
			t.Errorf("POST %s %s: %d %s; want %d with %q", tt.path, tt.body, code, strings.TrimSpace(body), tt.want, tt.error)
		}
	}
	want := []string{"send alice: also the docs", "answer r1 allow", "answer r2 deny: denied from the dashboard"}
	if strings.Join(teams.actions, "|") != strings.Join(want, "|") {
		t.Errorf("team actions %q, want %q", teams.actions, want)
	}
	if len(jobs.stopped) != 1 || jobs.stopped[0] != "j1" {
		t.Errorf("stopped %v, want j1", jobs.stopped)
	}
}
