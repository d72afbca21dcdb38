// Package lsptest runs small language servers for tests, in a re-executed test binary: one
// that reports a diagnostic for every line with a marker word, and ones that hang, crash or
// exit, so the client's recovery can be tested without a real server's timing.
package lsptest

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"runtime"
	"strings"
	"sync"
	"syscall"

	"go.lsp.dev/jsonrpc2"
)

// ChildEnv is the variable that makes a re-executed test binary run a server instead of tests.
const ChildEnv = "KEEL_LSPTEST_SERVER"

// CrashFileEnv names a file: ModeCrashOnce crashes (and creates it) while it does not exist.
const CrashFileEnv = "KEEL_LSPTEST_CRASH_FILE"

// GateEnv names a FIFO: ModeGated answers initialize only once the test opens it for writing.
const GateEnv = "KEEL_LSPTEST_GATE"

// Modes a child server can run in.
const (
	// ModeMarkers reports, for every line of a synced file, an error where the line holds
	// BROKEN, a warning for WARN and a hint for HINT. Lines with LATE are reported only once
	// the server hears about a file named release.* — a slow second pass the test controls.
	ModeMarkers = "markers"
	// ModeHang never answers initialize.
	ModeHang = "hang"
	// ModeCrashOnce works like ModeMarkers, but the first process exits with status 3 on
	// its first change.
	ModeCrashOnce = "crash-once"
	// ModeExit exits at once with a message on stderr.
	ModeExit = "exit"
	// ModeDeaf answers initialize, then stops reading its input.
	ModeDeaf = "deaf"
	// ModeGated is ModeMarkers with a start-up that lasts until the test opens the FIFO
	// named by GateEnv: a server that loads a large workspace.
	ModeGated = "gated"
)

// RunIfChild runs the server the environment asks for and exits; call it first in TestMain.
func RunIfChild() {
	mode := os.Getenv(ChildEnv)
	if mode == "" {
		return
	}
	switch mode {
	case ModeHang:
		_, _ = io.Copy(io.Discard, os.Stdin)
	case ModeExit:
		fmt.Fprintln(os.Stderr, "lsptest: cannot find its runtime, giving up")
		os.Exit(2)
	case ModeMarkers, ModeCrashOnce, ModeDeaf, ModeGated:
		crash := false
		if mode == ModeCrashOnce {
			if f := os.Getenv(CrashFileEnv); f != "" {
				if _, err := os.Stat(f); err != nil {
					crash = true
					_ = os.WriteFile(f, []byte("crashed"), 0o644)
				}
			}
		}
		serve(crash, mode == ModeDeaf, mode == ModeGated)
	default:
		fmt.Fprintln(os.Stderr, "lsptest: unknown mode", mode)
		os.Exit(2)
	}
	os.Exit(0)
}

// Command returns the command, arguments and environment that run mode, re-executing the
// current test binary.
func Command(mode string) (command string, args []string, env map[string]string) {
	exe, err := os.Executable()
	if err != nil {
		exe = os.Args[0]
	}
	return exe, []string{"-test.run=^$"}, map[string]string{ChildEnv: mode}
}

type stdio struct{}

func (stdio) Read(p []byte) (int, error)  { return os.Stdin.Read(p) }
func (stdio) Write(p []byte) (int, error) { return os.Stdout.Write(p) }
func (stdio) Close() error                { return nil }

type server struct {
	conn  jsonrpc2.Conn
	crash bool
	deaf  bool
	gated bool
	// mu guards docs and released.
	mu       sync.Mutex
	docs     map[string]doc
	released bool
}

type doc struct {
	version int
	text    string
}

func serve(crash, deaf, gated bool) {
	s := &server{crash: crash, deaf: deaf, gated: gated, docs: map[string]doc{}}
	s.conn = jsonrpc2.NewConn(jsonrpc2.NewStream(stdio{}))
	s.conn.Go(context.Background(), s.handle)
	<-s.conn.Done()
}

func (s *server) handle(ctx context.Context, req *jsonrpc2.Request) (any, error) {
	var p struct {
		TextDocument struct {
			URI     string `json:"uri"`
			Version int    `json:"version"`
			Text    string `json:"text"`
		} `json:"textDocument"`
		ContentChanges []struct {
			Text string `json:"text"`
		} `json:"contentChanges"`
	}
	_ = json.Unmarshal(req.Params(), &p)
	switch req.Method() {
	case "initialize":
		// As vscode-languageserver's servers do (typescript-language-server, pyright…):
		// exit when the client process named cannot be signalled.
		var init struct {
			ProcessID *int `json:"processId"`
		}
		_ = json.Unmarshal(req.Params(), &init)
		if init.ProcessID != nil && !alive(*init.ProcessID) {
			fmt.Fprintf(os.Stderr, "lsptest: the client process %d is gone\n", *init.ProcessID)
			os.Exit(1)
		}
		if s.gated {
			if f, err := os.Open(os.Getenv(GateEnv)); err == nil { // blocks until the test opens it to write
				f.Close()
			}
		}
		return map[string]any{"capabilities": map[string]any{"textDocumentSync": 1}}, nil
	case "initialized":
		if s.deaf {
			select {} // stop reading: every later write of the client piles up
		}
	case "textDocument/didOpen":
		s.update(p.TextDocument.URI, p.TextDocument.Version, p.TextDocument.Text)
	case "textDocument/didChange":
		if s.crash {
			fmt.Fprintln(os.Stderr, "lsptest: fake crash")
			os.Exit(3)
		}
		if len(p.ContentChanges) > 0 {
			s.update(p.TextDocument.URI, p.TextDocument.Version, p.ContentChanges[len(p.ContentChanges)-1].Text)
		}
	case "shutdown":
		return nil, nil
	case "exit":
		os.Exit(0)
	}
	return nil, nil
}

// alive reports whether process pid can be signalled, as the client's watchdog checks.
func alive(pid int) bool {
	if runtime.GOOS == "windows" {
		return true // signal 0 is not there to ask with
	}
	p, err := os.FindProcess(pid)
	return err == nil && p.Signal(syscall.Signal(0)) == nil
}

func (s *server) update(uri string, version int, text string) {
	s.mu.Lock()
	s.docs[uri] = doc{version, text}
	release := strings.Contains(uri, "/release.") && !s.released
	if release {
		s.released = true
	}
	s.mu.Unlock()
	s.publish(uri)
	if release {
		s.mu.Lock()
		var others []string
		for u := range s.docs {
			if u != uri {
				others = append(others, u)
			}
		}
		s.mu.Unlock()
		for _, u := range others {
			s.publish(u)
		}
	}
}

func (s *server) publish(uri string) {
	s.mu.Lock()
	d := s.docs[uri]
	released := s.released
	s.mu.Unlock()
	diags := []map[string]any{}
	for i, line := range strings.Split(d.text, "\n") {
		add := func(sev int, msg string) {
			diags = append(diags, map[string]any{
				"range":    map[string]any{"start": map[string]int{"line": i, "character": 0}, "end": map[string]int{"line": i, "character": len(line)}},
				"severity": sev, "source": "lsptest", "code": "marker", "message": msg,
			})
		}
		switch {
		case strings.Contains(line, "BROKEN"):
			add(1, "broken: "+strings.TrimSpace(line))
		case strings.Contains(line, "WARN"):
			add(2, "suspicious: "+strings.TrimSpace(line))
		case strings.Contains(line, "HINT"):
			add(4, "could be simpler")
		case strings.Contains(line, "LATE") && released:
			add(1, "found later: "+strings.TrimSpace(line))
		}
	}
	_ = s.conn.Notify(context.Background(), "textDocument/publishDiagnostics",
		map[string]any{"uri": uri, "version": d.version, "diagnostics": diags})
}
