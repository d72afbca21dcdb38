package coordpipe

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os/exec"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/coord"
)

// NATS is what `keel-nats coord` opens: the first line keel writes to its stdin. It goes
// there rather than on the command line, where a URL's credentials would show in the
// process list.
type NATS struct {
	// URL is the server, or several comma-separated.
	URL       string `json:"url"`
	CredsFile string `json:"credsFile,omitempty"`
	CAFile    string `json:"caFile,omitempty"`
	CertFile  string `json:"certFile,omitempty"`
	KeyFile   string `json:"keyFile,omitempty"`
	Replicas  int    `json:"replicas,omitempty"`
	// Name is the connection's name, shown by the server's monitoring.
	Name string `json:"name,omitempty"`
	// Team is the team to open; empty with List.
	Team string `json:"team,omitempty"`
	// Limits are the backend's size budgets (coord.Config.Limits).
	Limits coord.Limits `json:"limits,omitzero"`
	// List asks for the store's teams, each with its record at ListKey, instead of a team:
	// the one answer is the listing.
	List    bool   `json:"list,omitempty"`
	ListKey string `json:"listKey,omitempty"`
}

// Process says how to run a companion that serves a backend on its stdin and stdout.
type Process struct {
	// Path is the program, Args its arguments.
	Path string
	Args []string
	// Logger receives what the companion logs on stderr (slog JSON lines); nil discards.
	Logger *slog.Logger
	// OnState is told when the companion's connection to its store drops and comes back;
	// it must not block.
	OnState func(State)
}

// Start runs the companion, writes open as its first line and returns a client of the
// backend it serves. A companion that could not open it is the error it sent, with the
// last of what it logged.
func Start(ctx context.Context, p Process, open any) (*Client, error) {
	conn, logs, err := launch(p, open)
	if err != nil {
		return nil, err
	}
	c, err := Dial(ctx, conn, p.OnState)
	if err != nil {
		return nil, logs.explain(err)
	}
	return c, nil
}

// Query runs the companion for one answer (a listing) to open, decoded into out.
func Query(ctx context.Context, p Process, open any, out any) error {
	conn, logs, err := launch(p, open)
	if err != nil {
		return err
	}
	return logs.explain(Ask(ctx, conn, out))
}

// Ask reads the one answer of a server that serves no backend (a listing) from conn, into
// out; the server ends after it.
func Ask(ctx context.Context, conn Conn, out any) error {
	c, err := Dial(ctx, conn, nil)
	if err != nil {
		return err
	}
	answer := c.answer
	_ = c.Close()
	if err := json.Unmarshal(answer, out); err != nil {
		return fmt.Errorf("read the coordination server's answer: %v: %w", err, coord.ErrCorrupt)
	}
	return nil
}

// launch starts the companion with open on its stdin.
func launch(p Process, open any) (Conn, *tail, error) {
	logger := p.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	line, err := json.Marshal(open)
	if err != nil {
		return Conn{}, nil, fmt.Errorf("encode what %s opens: %w", p.Path, err)
	}
	cmd := exec.Command(p.Path, p.Args...)
	logs := &tail{logger: logger, program: p.Path}
	cmd.Stderr = logs
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return Conn{}, nil, fmt.Errorf("start %s: %w", p.Path, err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return Conn{}, nil, fmt.Errorf("start %s: %w", p.Path, err)
	}
	if err := cmd.Start(); err != nil {
		return Conn{}, nil, fmt.Errorf("start %s: %w", p.Path, err)
	}
	// The pipe's buffer takes one line; a companion that died first makes this fail, and
	// Dial reports its end.
	_, _ = stdin.Write(append(line, '\n'))
	conn := Conn{R: stdout, W: stdin,
		Stop: func() { _ = cmd.Process.Kill() },
		Wait: func() error {
			if err := cmd.Wait(); err != nil {
				return fmt.Errorf("%s: %w: %s", p.Path, err, logs.last())
			}
			return nil
		}}
	return conn, logs, nil
}

// tail passes the companion's log lines on to the logger and keeps the last few, for errors.
type tail struct {
	logger  *slog.Logger
	program string
	// mu guards partial and lines.
	mu      sync.Mutex
	partial []byte
	lines   []string
}

func (t *tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.partial = append(t.partial, p...)
	for {
		i := bytes.IndexByte(t.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := strings.TrimSpace(string(t.partial[:i]))
		t.partial = t.partial[i+1:]
		if line == "" {
			continue
		}
		var rec struct {
			Level string `json:"level"`
			Msg   string `json:"msg"`
			Err   string `json:"err"`
		}
		level := slog.LevelWarn
		if json.Unmarshal([]byte(line), &rec) == nil && rec.Msg != "" {
			_ = level.UnmarshalText([]byte(rec.Level))
			line = rec.Msg
			if rec.Err != "" {
				line += ": " + rec.Err
			}
		}
		t.logger.Log(context.Background(), level, line, "component", t.program)
		t.lines = append(t.lines, line)
		if len(t.lines) > 5 {
			t.lines = t.lines[1:]
		}
	}
}

func (t *tail) last() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.lines) == 0 {
		return "(nothing logged)"
	}
	return strings.Join(t.lines, " | ")
}

// explain adds what the companion logged to an error that came without its reason (it
// ended before it answered).
func (t *tail) explain(err error) error {
	if err == nil || !strings.Contains(err.Error(), "the coordination server ended") {
		return err
	}
	return fmt.Errorf("%w; %s logged: %s", err, t.program, t.last())
}
