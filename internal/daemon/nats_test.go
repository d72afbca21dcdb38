package daemon

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"
	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/coord/natscoord"
	"github.com/keel-dev/keel/internal/waittest"
)

// binDir holds the binaries the tests build, once per test binary.
var binDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "keel-daemon-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	binDir = dir
	code := m.Run()
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

var (
	natsOnce sync.Once
	natsBin  string
	natsErr  error
)

// keelNATS builds cmd/keel-nats once and returns its path.
func keelNATS(t *testing.T) string {
	t.Helper()
	natsOnce.Do(func() { natsBin, natsErr = buildtest.CompanionInto(binDir, "keel-nats") })
	if natsErr != nil {
		t.Fatal(natsErr)
	}
	return natsBin
}

// syncBuffer is a log destination the supervisor's goroutines share with the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// running is a supervisor run in this process.
type running struct {
	home   string
	log    *syncBuffer
	cancel context.CancelFunc
	done   chan error
	client *Client
	// once guards err, what Run returned.
	once sync.Once
	err  error
}

// wait waits until Run has returned and returns what it did.
func (r *running) wait(t *testing.T) error {
	t.Helper()
	r.once.Do(func() { r.err = waittest.Recv(t, "the supervisor's return", r.done) })
	return r.err
}

func runSupervisor(t *testing.T, cfg Config) *running {
	t.Helper()
	r := &running{home: cfg.Home, log: &syncBuffer{}, done: make(chan error, 1), client: NewClient(ClientConfig{Home: cfg.Home})}
	cfg.Logger = slog.New(slog.NewTextHandler(r.log, nil))
	if cfg.Exe == "" {
		cfg.Exe = filepath.Join(t.TempDir(), "keel") // runs no job here
	}
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- Run(ctx, cfg) }()
	t.Cleanup(func() {
		cancel()
		_ = r.wait(t)
		_ = r.client.Close()
		if t.Failed() {
			t.Logf("supervisor log:\n%s", r.log)
		}
	})
	return r
}

// info waits until the supervisor has recorded itself with an embedded server for which ok
// holds.
func (r *running) info(t *testing.T, ok func(Info) bool) Info {
	t.Helper()
	var info Info
	waittest.Until(t, "the supervisor records its embedded nats-server", func() bool {
		st, err := r.client.Status(context.Background())
		if err != nil || st.Info == nil || st.Info.NATSURL == "" {
			return false
		}
		info = *st.Info
		return ok(info)
	})
	return info
}

// gone reports whether process pid has exited (a zombie no one reaped has).
func gone(pid int) bool {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return syscall.Kill(pid, 0) != nil
	}
	// pid (comm) STATE ...; comm may hold spaces and parentheses.
	s := string(b)
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	return len(fields) > 0 && fields[0] == "Z"
}

func useBoard(t *testing.T, url, subject string) []coord.Task {
	t.Helper()
	ctx := waittest.Context(t)
	b, err := natscoord.Open(ctx, natscoord.Options{URL: url, Team: "local"})
	if err != nil {
		t.Fatal(err)
	}
	defer b.Close()
	if subject != "" {
		if _, err := b.Board().Create(ctx, coord.Task{Subject: subject}); err != nil {
			t.Fatal(err)
		}
	}
	tasks, err := b.Board().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return tasks
}

// The supervisor runs keel-nats as its child: a JetStream server on loopback whose store is
// under the keel home. A child that dies is started again on the same URL, with what was
// stored; when the supervisor stops, so does the child.
func TestEmbeddedNATSChild(t *testing.T) {
	bin := keelNATS(t)
	r := runSupervisor(t, Config{Home: t.TempDir(), NATS: true, NATSBinary: bin})
	first := r.info(t, func(Info) bool { return true })
	if !strings.HasPrefix(first.NATSURL, "nats://127.0.0.1:") || first.NATSPID <= 0 || first.NATSPID == os.Getpid() {
		t.Fatalf("embedded server at %q, pid %d; want one on loopback in a process of its own", first.NATSURL, first.NATSPID)
	}
	useBoard(t, first.NATSURL, "kept across a crash")
	if _, err := os.Stat(filepath.Join(r.home, "supervisor", "nats", "jetstream")); err != nil {
		t.Errorf("the JetStream store is not under the keel home: %v", err)
	}

	if err := syscall.Kill(first.NATSPID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	again := r.info(t, func(i Info) bool { return i.NATSPID != first.NATSPID })
	if again.NATSURL != first.NATSURL {
		t.Errorf("after its crash the embedded server is at %s, was %s", again.NATSURL, first.NATSURL)
	}
	if tasks := useBoard(t, again.NATSURL, ""); len(tasks) != 1 {
		t.Errorf("after its crash the board holds %v; want the task", tasks)
	}
	if log := r.log.String(); !strings.Contains(log, "the embedded nats-server died") {
		t.Errorf("the crash is not in the supervisor's log:\n%s", log)
	}

	r.cancel()
	if err := r.wait(t); err != nil {
		t.Fatalf("supervisor: %v", err)
	}
	if !gone(again.NATSPID) {
		t.Errorf("keel-nats (pid %d) still runs after the supervisor stopped", again.NATSPID)
	}
	if log := r.log.String(); !strings.Contains(log, "stdin closed; stopping") {
		t.Errorf("keel-nats did not stop on its closed stdin:\n%s", log)
	}
}

// keel-nats missing: the supervisor does not start, and says what is missing and how to
// install it.
func TestEmbeddedNATSMissing(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	for name, cfg := range map[string]Config{
		"not found": {},
		"not there": {NATSBinary: filepath.Join(t.TempDir(), "keel-nats")},
	} {
		t.Run(name, func(t *testing.T) {
			cfg.Home, cfg.NATS = t.TempDir(), true
			r := runSupervisor(t, cfg)
			err := r.wait(t)
			if err == nil {
				t.Fatal("the supervisor started without keel-nats")
			}
			msg := err.Error()
			for _, want := range []string{"keel-nats", "embedded nats-server"} {
				if !strings.Contains(msg, want) {
					t.Errorf("error %q does not say %q", msg, want)
				}
			}
			if cfg.NATSBinary == "" {
				for _, want := range []string{"go install github.com/keel-dev/keel/cmd/keel-nats@latest", "make build", "PATH"} {
					if !strings.Contains(msg, want) {
						t.Errorf("error %q does not say %q", msg, want)
					}
				}
			} else if !errors.Is(err, os.ErrNotExist) {
				t.Errorf("error %q: want one wrapping ErrNotExist", msg)
			}
			if r.client.Running() {
				t.Error("the supervisor's lock is held after it failed to start")
			}
		})
	}
}

// keel-nats that cannot start (its store is a file) stops the supervisor's start with its
// own words, rather than a supervisor without the server its teams need.
func TestEmbeddedNATSFailsToStart(t *testing.T) {
	home := t.TempDir()
	l := NewLayout(home)
	if err := os.MkdirAll(l.Dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(l.NATS, []byte("not a directory"), 0o600); err != nil {
		t.Fatal(err)
	}
	r := runSupervisor(t, Config{Home: home, NATS: true, NATSBinary: keelNATS(t)})
	err := r.wait(t)
	if err == nil || !strings.Contains(err.Error(), "exited") || !strings.Contains(err.Error(), "store directory") {
		t.Fatalf("start with a file for a store: %v; want keel-nats's exit and its reason", err)
	}
}
