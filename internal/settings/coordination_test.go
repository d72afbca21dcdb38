package settings

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestCoordination(t *testing.T) {
	l := newLayout(t)
	f := l.files()
	l.write(t, f["project"], `{"coordination": {"backend": "nats", "url": "nats://a:4222,tls://b:4222", "credsFile": "team.creds",
  "tls": {"caFile": "/etc/ca.pem"}, "replicas": 3}}`)
	s, err := Load(l.options())
	if err != nil {
		t.Fatal(err)
	}
	backend, n := s.CoordinationBackend(Env{})
	want := NATS{URL: "nats://a:4222,tls://b:4222", CredsFile: filepath.Join(filepath.Dir(f["project"]), "team.creds"), CAFile: "/etc/ca.pem", Replicas: 3}
	if backend != "nats" {
		t.Errorf("backend %q, want nats", backend)
	}
	if diff := cmp.Diff(want, n); diff != "" {
		t.Errorf("nats settings mismatch (-want +got):\n%s", diff)
	}
	if s.Coordination.URL.From.Line != 1 || s.Coordination.URL.From.Path != f["project"] {
		t.Errorf("url's origin = %+v", s.Coordination.URL.From)
	}
	// KEEL_NATS_URL overrides the file's URL.
	if _, n := s.CoordinationBackend(Env{NATSURL: "nats://env:4222"}); n.URL != "nats://env:4222" {
		t.Errorf("KEEL_NATS_URL did not override: %q", n.URL)
	}
}

// A creds path from ~ or $VAR is left for the opener to expand, not joined to the settings
// file's folder (which made "~/team.creds" a path under .claude/).
func TestCoordinationCredsFileExpandedLater(t *testing.T) {
	for _, p := range []string{"~/team.creds", "$HOME/team.creds", "${CREDS}"} {
		l := newLayout(t)
		l.write(t, l.files()["project"], `{"coordination": {"backend": "nats", "url": "nats://a:4222", "credsFile": "`+p+`"}}`)
		s, err := Load(l.options())
		if err != nil {
			t.Fatal(err)
		}
		if _, n := s.CoordinationBackend(Env{}); n.CredsFile != p {
			t.Errorf("credsFile %q became %q, want it as written", p, n.CredsFile)
		}
	}
}

func TestCoordinationDefault(t *testing.T) {
	s := &Settings{}
	if b, _ := s.CoordinationBackend(Env{}); b != "fs" {
		t.Errorf("default backend %q, want fs", b)
	}
	if b, n := s.CoordinationBackend(Env{NATSURL: "nats://x:1"}); b != "nats" || n.URL != "nats://x:1" {
		t.Errorf("KEEL_NATS_URL alone: %q %+v, want nats at its URL", b, n)
	}
	s.Coordination.Backend = Value[string]{V: "fs", From: Origin{Scope: ScopeUser}}
	if b, _ := s.CoordinationBackend(Env{NATSURL: "nats://x:1"}); b != "fs" {
		t.Errorf("an explicit fs backend lost to KEEL_NATS_URL: %q", b)
	}
	if e := EnvFrom([]string{"KEEL_NATS_URL= nats://h:4222 "}); e.NATSURL != "nats://h:4222" {
		t.Errorf("EnvFrom NATSURL = %q", e.NATSURL)
	}
}

func TestCoordinationProblems(t *testing.T) {
	l := newLayout(t)
	f := l.files()
	l.write(t, f["project"], "{\"coordination\": {\n  \"backend\": \"redis\",\n  \"url\": \"http://x:80\",\n  \"replicas\": 2.5,\n  \"tls\": {\"caFile\": \"\"},\n  \"credsFile\": 7,\n  \"nkey\": \"x\"\n}}")
	s, _ := Load(l.options())
	var got []string
	for _, p := range s.Problems {
		got = append(got, strings.ReplaceAll(p.Error(), filepath.Dir(f["project"])+string(filepath.Separator), ""))
	}
	want := []string{
		`settings.json:2:14: coordination.backend "redis" is not one of fs, nats`,
		`settings.json:3:10: coordination.url "http://x:80" is not a NATS server URL: want nats://host:port (or tls://, ws://, wss://), several separated by commas`,
		`settings.json:4:15: coordination.replicas 2.5 is not a whole number`,
		`settings.json:5:21: coordination.tls.caFile is an empty string`,
		`settings.json:6:16: coordination.credsFile is a number, want a string`,
		`settings.json:7:3: unknown key coordination.nkey (kept, not used by keel)`,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("problems mismatch (-want +got):\n%s", diff)
	}
}
