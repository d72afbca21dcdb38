package daemon

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/companion"
)

// NATSBinary is the program that runs the embedded nats-server: a binary of its own, so that
// keel does not link the server (see cmd/keel-nats).
const NATSBinary = companion.KeelNATS

const (
	// natsReadyLimit bounds the wait for keel-nats to report its URL; the server itself gives
	// up after 30 s.
	natsReadyLimit = 45 * time.Second
	// natsStopLimit is how long keel-nats gets to flush its store after stdin closes before
	// it is killed.
	natsStopLimit = 15 * time.Second
	// natsRestarts is how many times in a row a keel-nats that died is started again before
	// the supervisor gives up (and stops, as when the first start fails).
	natsRestarts = 3
)

// natsChild is a running keel-nats process.
type natsChild struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	url   string
	done  chan struct{} // closed once the process has exited; err is set then
	err   error
	// stderr keeps the last lines the child logged, for errors.
	stderr *logLines
}

// findNATS locates keel-nats: Config.NATSBinary, else beside the keel binary, this
// executable, then on PATH.
func (s *supervisor) findNATS() (string, error) {
	if p := s.cfg.NATSBinary; p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("the embedded nats-server: %w", err)
		}
		return p, nil
	}
	p, err := companion.Find(NATSBinary, s.cfg.Exe)
	if err != nil {
		return "", fmt.Errorf("the embedded nats-server is the %s binary: %w; install it beside keel with "+
			"`go install github.com/keel-dev/keel/cmd/keel-nats@latest` (or `make build`), "+
			"or point coordination.url at a NATS server", NATSBinary, err)
	}
	return p, nil
}

// startNATS runs keel-nats: JetStream on, its store under the supervisor's directory,
// loopback only, on the port it used last time unless that is taken now (so clients
// reconnect to the same URL after a restart), fsyncing every write. It returns once the
// server has reported its URL.
func (s *supervisor) startNATS(ctx context.Context) (*natsChild, error) {
	path, err := s.findNATS()
	if err != nil {
		return nil, err
	}
	portFile := s.l.NATS + ".port"
	port := 0
	if b, err := os.ReadFile(portFile); err == nil {
		_, _ = fmt.Sscan(string(b), &port)
	}
	c := &natsChild{done: make(chan struct{}), stderr: &logLines{logger: s.logger}}
	c.cmd = exec.Command(path, "--store", s.l.NATS, "--name", "keel-"+s.l.id(),
		"--port", fmt.Sprint(port), "--port-fallback")
	// Its stdin is its lifeline: closed by stop, or by the kernel when the supervisor dies.
	if c.stdin, err = c.cmd.StdinPipe(); err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	urls := make(chan string, 1)
	c.cmd.Stdout = &firstLine{ch: urls}
	c.cmd.Stderr = c.stderr
	c.cmd.SysProcAttr = childAttr()
	started := make(chan error, 1)
	go func() {
		// Pdeathsig fires when the thread that started the child ends, not the process: this
		// goroutine keeps its thread until the child has exited.
		runtime.LockOSThread()
		if err := c.cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		c.err = c.cmd.Wait()
		close(c.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("start %s: %w", path, err)
	}
	timer := time.NewTimer(natsReadyLimit)
	defer timer.Stop()
	select {
	case line := <-urls:
		var msg struct {
			URL string `json:"url"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil || msg.URL == "" {
			c.stop()
			return nil, fmt.Errorf("%s reported %q, not {\"url\": ...}", path, line)
		}
		c.url = msg.URL
	case <-c.done:
		return nil, fmt.Errorf("start the embedded nats-server: %s exited (%v): %s", path, c.err, c.stderr.tail())
	case <-timer.C:
		c.stop()
		return nil, fmt.Errorf("start the embedded nats-server: %s reported no URL in %s: %s", path, natsReadyLimit, c.stderr.tail())
	case <-ctx.Done():
		c.stop()
		return nil, fmt.Errorf("start the embedded nats-server: %w", context.Cause(ctx))
	}
	var p int
	if _, err := fmt.Sscanf(c.url, "nats://127.0.0.1:%d", &p); err == nil && p != port {
		_ = os.WriteFile(portFile, []byte(fmt.Sprint(p)), 0o600)
	}
	s.logger.Info("embedded nats-server started", "pid", c.cmd.Process.Pid, "url", c.url)
	return c, nil
}

// stop closes the child's stdin, which makes it flush its store and exit, and kills it if it
// has not exited after natsStopLimit. It returns once the process has exited.
func (c *natsChild) stop() {
	_ = c.stdin.Close()
	timer := time.NewTimer(natsStopLimit)
	defer timer.Stop()
	select {
	case <-c.done:
	case <-timer.C:
		_ = c.cmd.Process.Kill()
		<-c.done
	}
}

// exited says how the child ended, once it has.
func (c *natsChild) exited() error {
	return fmt.Errorf("%s (pid %d) exited: %v; its last words: %s", NATSBinary, c.cmd.Process.Pid, c.err, c.stderr.tail())
}

// keepNATS watches the embedded nats-server until ctx ends, then stops it. A child that dies
// meanwhile is logged and started again, on the same port when it is free, so clients
// reconnect to the same URL; after natsRestarts failed starts in a row it gives up and
// fails(err), as a first start that fails stops the supervisor. info is the supervisor's
// record, updated when the URL changes.
func (s *supervisor) keepNATS(ctx context.Context, c *natsChild, info Info, fail func(error)) {
	backoff := time.Second
	for {
		select {
		case <-ctx.Done():
			c.stop()
			s.logger.Info("embedded nats-server stopped")
			return
		case <-c.done:
		}
		s.logger.Error("the embedded nats-server died; starting it again", "err", c.exited())
		var err error
		for attempt := 1; ; attempt++ {
			var next *natsChild
			if next, err = s.startNATS(ctx); err == nil {
				c = next
				break
			}
			if ctx.Err() != nil {
				return
			}
			s.logger.Error("restart the embedded nats-server", "attempt", attempt, "err", err)
			if attempt == natsRestarts {
				fail(fmt.Errorf("the embedded nats-server died and did not start again: %w", err))
				return
			}
			timer := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			backoff = min(2*backoff, 30*time.Second)
		}
		if c.url != info.NATSURL || c.cmd.Process.Pid != info.NATSPID {
			info.NATSURL, info.NATSPID = c.url, c.cmd.Process.Pid
			if err := s.store.putInfo(ctx, info); err != nil {
				s.logger.Warn("record the embedded nats-server's new address", "err", err)
			}
		}
	}
}

// firstLine hands the first line written to it to ch and discards the rest.
type firstLine struct {
	ch   chan<- string
	buf  []byte
	sent bool
}

func (f *firstLine) Write(p []byte) (int, error) {
	if f.sent {
		return len(p), nil
	}
	f.buf = append(f.buf, p...)
	if i := bytes.IndexByte(f.buf, '\n'); i >= 0 {
		f.ch <- string(f.buf[:i])
		f.sent, f.buf = true, nil
	}
	return len(p), nil
}

// logLines passes the child's log (slog JSON lines) on to the supervisor's logger, at their
// own level, and keeps the last few lines for errors. A line that is not JSON (a panic's
// trace) is passed on as it is.
type logLines struct {
	logger *slog.Logger
	// mu guards partial and last.
	mu      sync.Mutex
	partial []byte
	last    []string
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.partial = append(l.partial, p...)
	for {
		i := bytes.IndexByte(l.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(bytes.TrimSpace(l.partial[:i]))
		l.partial = l.partial[i+1:]
		if line == "" {
			continue
		}
		msg := l.log(line)
		l.last = append(l.last, msg)
		if len(l.last) > 5 {
			l.last = l.last[1:]
		}
	}
}

// log logs one line and returns its message.
func (l *logLines) log(line string) string {
	var rec map[string]any
	if json.Unmarshal([]byte(line), &rec) != nil {
		l.logger.Warn(line)
		return line
	}
	var level slog.Level
	if s, ok := rec["level"].(string); !ok || level.UnmarshalText([]byte(s)) != nil {
		level = slog.LevelInfo
	}
	msg, _ := rec["msg"].(string)
	var attrs []any
	if _, ok := rec["component"]; !ok {
		attrs = append(attrs, "component", NATSBinary)
	}
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		if k != "time" && k != "level" && k != "msg" {
			attrs = append(attrs, k, rec[k])
		}
	}
	l.logger.Log(context.Background(), level, msg, attrs...)
	if e, ok := rec["err"]; ok {
		msg = fmt.Sprintf("%s: %v", msg, e)
	}
	return msg
}

func (l *logLines) tail() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.last) == 0 {
		return "(nothing logged)"
	}
	return strings.Join(l.last, " | ")
}
