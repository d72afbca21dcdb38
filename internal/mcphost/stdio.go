package mcphost

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/hostexec"
	"github.com/keel-dev/keel/internal/procgroup"
)

// stdioTransport starts a server process in its own process group, talks newline-delimited
// JSON over its stdin and stdout, and sends its stderr to the logger. Closing it closes stdin,
// waits grace for the server to exit, then sends SIGTERM to the group, then SIGKILL.
type stdioTransport struct {
	cfg     ServerConfig
	environ []string // the base environment; cfg.Env is added on top
	dir     string
	grace   time.Duration
	logger  *slog.Logger
	// onStart receives the process once it runs, so the owner can watch it exit.
	onStart func(*process)
	// confine runs the server inside the sandbox (Options.Confine); nil runs it as is.
	confine func(*exec.Cmd) (Confined, error)
}

// process is one running server.
type process struct {
	cmd *exec.Cmd
	// kill kills the process group led by the server (through its sandbox when it has one).
	kill   func(pgid int) error
	stdin  *os.File
	stdout *os.File
	grace  time.Duration
	// done is closed when the process has exited; err is then its Wait error.
	done chan struct{}
	err  error
	// stderr keeps the last lines of stderr for the failure reason.
	stderr *tail
	// mu guards recent, the start of the last chunk read from stdout: what to show when
	// it is not JSON-RPC.
	mu     sync.Mutex
	recent []byte

	closeOnce sync.Once
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	p, err := startProcess(t.cfg, t.environ, t.dir, t.grace, t.logger, t.confine)
	if err != nil {
		return nil, err
	}
	if t.onStart != nil {
		t.onStart(p)
	}
	conn, err := (&mcp.IOTransport{Reader: p, Writer: p}).Connect(ctx)
	if err != nil {
		return nil, err
	}
	return &stdioConn{Connection: conn, p: p}, nil
}

// stdioConn explains output that is not JSON-RPC: most often a server that prints its logs
// or a banner to stdout.
type stdioConn struct {
	mcp.Connection
	p *process
}

func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	var se *json.SyntaxError
	if errors.As(err, &se) {
		return nil, fmt.Errorf("the server wrote %s to stdout, which is not JSON-RPC (%w); a stdio server must write only JSON-RPC messages there, and its logs to stderr", c.p.lastOutput(), err)
	}
	return msg, err
}

func startProcess(cfg ServerConfig, environ []string, dir string, grace time.Duration, logger *slog.Logger, confine func(*exec.Cmd) (Confined, error)) (*process, error) {
	cmd := exec.Command(cfg.Command, cfg.Args...)
	cmd.Dir = dir
	env := slices.Clone(environ)
	for _, k := range slices.Sorted(maps.Keys(cfg.Env)) {
		env = append(env, k+"="+cfg.Env[k])
	}
	cmd.Env = env
	release, kill := func() {}, procgroup.Kill
	if confine == nil {
		// Outside, Python keeps its bytecode where no sandboxed command plants any.
		cmd.Env = hostexec.PythonEnv(env)
	} else {
		c, err := confine(cmd)
		if err != nil {
			return nil, fmt.Errorf("start %s in the sandbox: %w", cfg.Command, err)
		}
		release, kill = func() { c.Release() }, c.Kill
	}
	procgroup.Own(cmd)
	// Own pipes rather than StdoutPipe: Wait must not close our end while reads are pending.
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = inR, outW, errW
	err = cmd.Start()
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		release()
		return nil, fmt.Errorf("start %s: %w", cfg.Command, err)
	}
	p := &process{cmd: cmd, kill: kill, stdin: inW, stdout: outR, grace: grace, done: make(chan struct{}), stderr: &tail{max: 20}}
	stderrDone := make(chan struct{})
	go func() {
		defer close(stderrDone)
		defer errR.Close()
		sc := bufio.NewScanner(errR)
		sc.Buffer(make([]byte, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			p.stderr.add(line)
			logger.Debug("mcp server stderr", "server", cfg.Name, "line", line)
		}
	}()
	go func() {
		err := cmd.Wait()
		// The group may outlive the leader; its stderr closes when the last writer does. Wait
		// for it only briefly, so the reason includes the final lines.
		select {
		case <-stderrDone:
		case <-time.After(100 * time.Millisecond):
		}
		p.err = err
		release()
		close(p.done)
	}()
	return p, nil
}

func (p *process) Read(b []byte) (int, error) {
	n, err := p.stdout.Read(b)
	if n > 0 {
		p.mu.Lock()
		p.recent = append(p.recent[:0], b[:min(n, 200)]...)
		p.mu.Unlock()
	}
	return n, err
}

// lastOutput quotes the first line of the last chunk read from stdout, shortened.
func (p *process) lastOutput() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	line, _, _ := strings.Cut(strings.TrimSpace(string(p.recent)), "\n")
	if r := []rune(line); len(r) > 80 {
		line = string(r[:80]) + "…"
	}
	return strconv.Quote(line)
}
func (p *process) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close shuts the server down the way the MCP spec asks: close stdin, wait, SIGTERM, SIGKILL
// (to the whole process group, so helpers the server started die too).
func (p *process) Close() error {
	p.closeOnce.Do(func() {
		p.stdin.Close()
		select {
		case <-p.done:
		case <-time.After(p.grace):
			_ = procgroup.Terminate(p.cmd.Process.Pid)
			select {
			case <-p.done:
			case <-time.After(p.grace):
				_ = p.kill(p.cmd.Process.Pid)
				<-p.done
			}
		}
		// Kill stragglers in the group that ignored stdin closing.
		_ = p.kill(p.cmd.Process.Pid)
		p.stdout.Close()
	})
	return nil
}

// exitReason describes how the process ended, with the end of its stderr.
func (p *process) exitReason() string {
	var b strings.Builder
	if p.err != nil {
		b.WriteString("process exited: " + p.err.Error())
	} else {
		b.WriteString("process exited")
	}
	if t := p.stderr.String(); t != "" {
		b.WriteString("; stderr: " + t)
	}
	return b.String()
}

// tail keeps the last max lines written to it.
type tail struct {
	max int
	// mu guards lines.
	mu    sync.Mutex
	lines []string
}

func (t *tail) add(line string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(line) > 500 {
		line = line[:500] + "…"
	}
	t.lines = append(t.lines, line)
	if len(t.lines) > t.max {
		t.lines = t.lines[len(t.lines)-t.max:]
	}
}

func (t *tail) String() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return strings.Join(t.lines, " | ")
}

var _ io.ReadWriteCloser = (*process)(nil)
