package natscoord_test

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/jwt/v2"
	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nkeys"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/waittest"
)

// operatorServer is a nats-server in decentralized-JWT mode, the way shared NATS deployments
// run: it trusts one operator, finds accounts in a memory resolver and admits only users
// whose JWT an account it knows has signed.
type operatorServer struct {
	srv *server.Server
	// accounts are the account key pairs by name: "KEEL" has JetStream, "NOJS" does not.
	accounts map[string]nkeys.KeyPair
}

// startOperatorServer runs such a server on a random loopback port with JetStream on, a
// system account, and the accounts KEEL (JetStream limits that let a team create its streams
// and buckets) and NOJS (no JetStream).
func startOperatorServer(t *testing.T) *operatorServer {
	t.Helper()
	okp, err := nkeys.CreateOperator()
	if err != nil {
		t.Fatal(err)
	}
	opub, _ := okp.PublicKey()
	s := &operatorServer{accounts: map[string]nkeys.KeyPair{}}
	resolver := &server.MemAccResolver{}
	newAccount := func(name string, js bool) string {
		akp := newAccountKey(t)
		apub, _ := akp.PublicKey()
		ac := jwt.NewAccountClaims(apub)
		ac.Name = name
		if js {
			ac.Limits.JetStreamLimits = jwt.JetStreamLimits{MemoryStorage: jwt.NoLimit, DiskStorage: jwt.NoLimit,
				Streams: jwt.NoLimit, Consumer: jwt.NoLimit}
		}
		tok, err := ac.Encode(okp)
		if err != nil {
			t.Fatal(err)
		}
		if err := resolver.Store(apub, tok); err != nil {
			t.Fatal(err)
		}
		s.accounts[name] = akp
		return apub
	}
	sys := newAccount("SYS", false)
	newAccount("KEEL", true)
	newAccount("NOJS", false)
	oc := jwt.NewOperatorClaims(opub)
	oc.Name = "keel-test"
	oc.SystemAccount = sys
	tok, err := oc.Encode(okp)
	if err != nil {
		t.Fatal(err)
	}
	// Decoded from its signed form, as the server reads an operator file.
	op, err := jwt.DecodeOperatorClaims(tok)
	if err != nil {
		t.Fatal(err)
	}
	s.srv, err = server.NewServer(&server.Options{
		ServerName: "creds", Host: "127.0.0.1", Port: server.RANDOM_PORT,
		JetStream: true, StoreDir: t.TempDir(), NoSigs: true, NoLog: true,
		TrustedOperators: []*jwt.OperatorClaims{op}, AccountResolver: resolver, SystemAccount: sys,
	})
	if err != nil {
		t.Fatal(err)
	}
	s.srv.Start()
	t.Cleanup(func() {
		s.srv.Shutdown()
		s.srv.WaitForShutdown()
	})
	if !s.srv.ReadyForConnections(waittest.Timeout()) {
		t.Fatal("nats-server in operator mode: not ready for connections")
	}
	return s
}

func newAccountKey(t *testing.T) nkeys.KeyPair {
	t.Helper()
	kp, err := nkeys.CreateAccount()
	if err != nil {
		t.Fatal(err)
	}
	return kp
}

// writeCreds writes a credentials file for a new user signed by account, as `nsc generate
// creds` does, and returns its path. edit, when set, changes the user's claims first.
func writeCreds(t *testing.T, account nkeys.KeyPair, name string, edit func(*jwt.UserClaims)) string {
	t.Helper()
	ukp, err := nkeys.CreateUser()
	if err != nil {
		t.Fatal(err)
	}
	upub, _ := ukp.PublicKey()
	uc := jwt.NewUserClaims(upub)
	uc.Name = name
	if edit != nil {
		edit(uc)
	}
	tok, err := uc.Encode(account)
	if err != nil {
		t.Fatal(err)
	}
	seed, err := ukp.Seed()
	if err != nil {
		t.Fatal(err)
	}
	creds, err := jwt.FormatUserConfig(tok, seed)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), name+".creds")
	if err := os.WriteFile(path, creds, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// Two members, each with a credentials file of their own for the same account, share a team
// on a server that admits only signed users: mail goes from one to the other and is acked,
// a task one creates the other claims and the first sees claimed, and the team's streams and
// buckets live in that account's JetStream.
func TestCredsFile(t *testing.T) {
	s := startOperatorServer(t)
	ctx := waittest.Context(t)
	url := s.srv.ClientURL()
	lead := open(t, natscoord.Options{URL: url, Team: "signed", CredsFile: writeCreds(t, s.accounts["KEEL"], "lead", nil)})
	// A path with an environment variable, which nats.go expands: keel's own check of the
	// file must read the same one.
	t.Setenv("KEEL_TEST_CREDS", writeCreds(t, s.accounts["KEEL"], "worker", nil))
	worker := open(t, natscoord.Options{URL: url, Team: "signed", CredsFile: "${KEEL_TEST_CREDS}"})

	msg := coord.Message{ID: coord.NewID(), From: "lead", To: "worker", Text: "take task 1"}
	if err := lead.Mailbox().Send(ctx, msg); err != nil {
		t.Fatal(err)
	}
	got, err := worker.Mailbox().Fetch(ctx, "worker", 0)
	if err != nil || len(got) != 1 || got[0].ID != msg.ID || got[0].Text != msg.Text {
		t.Fatalf("worker fetched %+v, %v; want the lead's message", got, err)
	}
	if err := worker.Mailbox().Ack(ctx, "worker", msg.ID); err != nil {
		t.Fatal(err)
	}
	if got, err := lead.Mailbox().Fetch(ctx, "worker", 0); err != nil || len(got) != 0 {
		t.Errorf("after the ack the inbox holds %+v, %v; want it empty", got, err)
	}

	task, err := lead.Board().Create(ctx, coord.Task{Subject: "ship it"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := worker.Board().Claim(ctx, task.ID, "worker", time.Minute); err != nil {
		t.Fatalf("worker claims task %s: %v", task.ID, err)
	}
	if _, err := lead.Board().Claim(ctx, task.ID, "lead", time.Minute); !errors.Is(err, coord.ErrClaimed) {
		t.Errorf("lead claims the worker's task: %v; want ErrClaimed", err)
	}
	seen, err := lead.Board().Get(ctx, task.ID)
	if err != nil || seen.Owner != "worker" || seen.Status != coord.StatusInProgress {
		t.Errorf("lead sees task %+v, %v; want it in progress, owned by worker", seen, err)
	}

	acc, err := s.srv.LookupAccount(mustPub(t, s.accounts["KEEL"]))
	if err != nil {
		t.Fatal(err)
	}
	if n := acc.JetStreamUsage().Streams; n < 4 {
		t.Errorf("account KEEL holds %d streams; want the team's mail and event streams and its two buckets", n)
	}
}

func mustPub(t *testing.T, kp nkeys.KeyPair) string {
	t.Helper()
	pub, err := kp.PublicKey()
	if err != nil {
		t.Fatal(err)
	}
	return pub
}

// What a signed-users server refuses, and what the error says: each names the server (never
// a password in its URL) and what to fix; a file problem names the file.
func TestCredsFileRefused(t *testing.T) {
	s := startOperatorServer(t)
	url := s.srv.ClientURL()
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.creds")
	if err := os.WriteFile(garbage, []byte("user: keel\npassword: hunter2\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.creds")
	// A file with the user's JWT but not the seed that signs the server's challenge.
	full, err := os.ReadFile(writeCreds(t, s.accounts["KEEL"], "full", nil))
	if err != nil {
		t.Fatal(err)
	}
	cut := strings.Index(string(full), "-----BEGIN USER NKEY SEED-----")
	if cut < 0 {
		t.Fatalf("no seed in the credentials file:\n%s", full)
	}
	jwtOnly := filepath.Join(dir, "jwt-only.creds")
	if err := os.WriteFile(jwtOnly, full[:cut], 0o600); err != nil {
		t.Fatal(err)
	}
	stranger := writeCreds(t, newAccountKey(t), "stranger", nil)
	expired := writeCreds(t, s.accounts["KEEL"], "expired", func(uc *jwt.UserClaims) {
		uc.Expires = time.Now().Add(-time.Hour).Unix()
	})
	for _, tc := range []struct {
		name      string
		url       string
		creds     string
		is        error
		want      []string
		notWanted string
	}{
		{name: "no creds", url: url, is: nats.ErrAuthorization,
			want: []string{url, "authorization failed", "coordination.credsFile"}},
		{name: "password in the URL", url: strings.Replace(url, "nats://", "nats://keel:s3cret@", 1), is: nats.ErrAuthorization,
			want:      []string{strings.Replace(url, "nats://", "nats://keel:REDACTED@", 1), "authorization failed", "user or token in the URL"},
			notWanted: "s3cret"},
		{name: "missing file", url: url, creds: missing, is: fs.ErrNotExist,
			want: []string{url, missing, "credentials file"}},
		{name: "not a creds file", url: url, creds: garbage,
			want: []string{url, garbage, "not a NATS user credentials file"}, notWanted: "hunter2"},
		{name: "no seed", url: url, creds: jwtOnly,
			want: []string{url, jwtOnly, "not a NATS user credentials file", "user seed"}},
		{name: "account unknown to the server", url: url, creds: stranger, is: nats.ErrAuthorization,
			want: []string{url, "authorization failed", stranger, "operator and account"}},
		{name: "expired user", url: url, creds: expired, is: nats.ErrAuthorization,
			want: []string{url, "authorization failed", expired, "expired at"}},
		{name: "account without JetStream", url: url, creds: writeCreds(t, s.accounts["NOJS"], "nojs", nil),
			is: jetstream.ErrJetStreamNotEnabledForAccount, want: []string{url, "JetStream is not enabled"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := natscoord.Open(waittest.Context(t), natscoord.Options{URL: tc.url, Team: "refused", CredsFile: tc.creds})
			if err == nil {
				_ = b.Close()
				t.Fatal("open succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
			if tc.notWanted != "" && strings.Contains(err.Error(), tc.notWanted) {
				t.Errorf("error %q gives away %q", err, tc.notWanted)
			}
			if tc.is != nil && !errors.Is(err, tc.is) {
				t.Errorf("error %v is not %v", err, tc.is)
			}
			t.Log(err)
		})
	}
}
