package mcpserve_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/keel-dev/keel/internal/buildtest"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/waittest"
)

// serveKeel builds keel and runs `keel mcp serve --http 127.0.0.1:0` in a fresh workspace,
// returning the endpoint and the workspace.
func serveKeel(t *testing.T) (url, ws string) {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the keel binary; skipped in -short mode")
	}
	bin := buildtest.Keel(t, buildtest.Options{})
	ws = t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	serve := exec.CommandContext(ctx, bin, "mcp", "serve", "--http", "127.0.0.1:0")
	serve.Dir = ws
	serve.Env = append(os.Environ(), "KEEL_HOME="+t.TempDir())
	stderr, err := serve.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := serve.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cancel()
		serve.Wait()
	})
	urls := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if _, u, ok := strings.Cut(sc.Text(), "listening on "); ok {
				urls <- u
			}
		}
	}()
	return waittest.Recv(t, "keel mcp serve listening", urls), ws
}

// TestServeHTTPEndToEnd drives the real `keel mcp serve --http` with the go-sdk's client:
// a call that carries a progress token gets the command's output lines as progress
// notifications before its result; cancelling a call stops the command it runs; and the
// lists do not claim to announce changes, since they never change.
func TestServeHTTPEndToEnd(t *testing.T) {
	url, ws := serveKeel(t)
	var mu sync.Mutex
	var progress []*mcp.ProgressNotificationParams
	c := mcp.NewClient(&mcp.Implementation{Name: "e2e", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			mu.Lock()
			defer mu.Unlock()
			progress = append(progress, req.Params)
		},
	})
	sess, err := c.Connect(waittest.Context(t), &mcp.StreamableClientTransport{Endpoint: url}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer sess.Close()

	caps := sess.InitializeResult().Capabilities
	if caps.Tools == nil || caps.Tools.ListChanged || caps.Prompts == nil || caps.Prompts.ListChanged || caps.Resources == nil || caps.Resources.ListChanged {
		t.Errorf("capabilities = tools %+v, prompts %+v, resources %+v; want each declared, none with listChanged", caps.Tools, caps.Prompts, caps.Resources)
	}

	// Progress: the command's lines come as notifications for the call's token.
	params := &mcp.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "for i in 1 2 3 4; do echo step $i; sleep 0.3; done"}}
	params.SetProgressToken("tok-1")
	res, err := sess.CallTool(waittest.Context(t), params)
	if err != nil {
		t.Fatal(err)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; res.IsError || !strings.Contains(text, "step 4") {
		t.Fatalf("Bash result = %q (error %v)", text, res.IsError)
	}
	mu.Lock()
	got := progress
	mu.Unlock()
	if len(got) < 2 {
		t.Fatalf("progress notifications = %d, want one per output line (at least 2 of 4)", len(got))
	}
	for i, p := range got {
		if p.ProgressToken != "tok-1" || !strings.HasPrefix(p.Message, "step ") || i > 0 && p.Progress <= got[i-1].Progress {
			t.Errorf("progress %d = %+v, want token tok-1, a step line, rising progress", i, p)
		}
	}

	// Cancellation: the call's context ends, keel kills the command.
	pidFile := filepath.Join(ws, "pid")
	ctx, cancel := context.WithCancel(waittest.Context(t))
	done := make(chan error, 1)
	go func() {
		_, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "echo $$ > pid; exec sleep 120"}})
		done <- err
	}()
	var pid int
	waittest.Until(t, "the command to start", func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(strings.TrimSpace(string(b)))
		return err == nil && pid > 0
	})
	cancel()
	if err := waittest.Recv(t, "the cancelled call to return", done); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled call = %v, want context.Canceled", err)
	}
	waittest.Until(t, "the cancelled command to be killed", func() bool { return !alive(pid) })

	// The session is still usable after the cancellation.
	res, err = sess.CallTool(waittest.Context(t), &mcp.CallToolParams{Name: "Bash", Arguments: map[string]any{"command": "echo after"}})
	if err != nil || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "after") {
		t.Errorf("call after the cancellation = %+v, %v", res, err)
	}
}

// alive reports whether pid is a running process (a zombie counts as gone).
func alive(pid int) bool {
	if err := syscall.Kill(pid, 0); err != nil {
		return false
	}
	stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return false
	}
	_, rest, _ := strings.Cut(string(stat), ") ")
	return !strings.HasPrefix(rest, "Z")
}
