package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"io"
	"net"
	"path/filepath"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"

	"github.com/keel-dev/keel/internal/waittest"
)

// Bad flags: exit 2 and a line that says what is wrong; --help is no error.
func TestFlags(t *testing.T) {
	for _, tc := range []struct {
		args []string
		code int
		want string
	}{
		{[]string{"--help"}, 0, "usage: keel-nats --store DIR"},
		{nil, 2, "--store DIR is required"},
		{[]string{"--store", t.TempDir(), "--host", "0.0.0.0"}, 2, `--host "0.0.0.0": want a loopback address`},
		{[]string{"--store", t.TempDir(), "--port", "70000"}, 2, "--port 70000: want 0 to 65535"},
		{[]string{"--store", t.TempDir(), "extra"}, 2, `unexpected argument "extra"`},
		{[]string{"--no-such-flag"}, 2, "flag provided but not defined"},
	} {
		var stdout, stderr bytes.Buffer
		code := run(tc.args, strings.NewReader(""), &stdout, &stderr)
		if code != tc.code || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("keel-nats %v: exit %d, stderr %q; want exit %d and %q", tc.args, code, stderr.String(), tc.code, tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("keel-nats %v printed %q on stdout; the URL line is all it prints there", tc.args, stdout.String())
		}
	}
}

// start runs keel-nats in-process with args; it returns the URL it reported, the writer of
// its stdin and the channel its exit code arrives on.
func start(t *testing.T, args ...string) (string, io.WriteCloser, <-chan int) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	exit := make(chan int, 1)
	go func() {
		code := run(args, inR, outW, io.Discard)
		_ = outW.Close()
		exit <- code
	}()
	t.Cleanup(func() { _ = inW.Close() })
	line := make(chan string, 1)
	go func() {
		s, _ := bufio.NewReader(outR).ReadString('\n')
		line <- s
		_, _ = io.Copy(io.Discard, outR)
	}()
	var msg struct {
		URL string `json:"url"`
	}
	if s := waittest.Recv(t, "keel-nats's URL line", line); json.Unmarshal([]byte(s), &msg) != nil || msg.URL == "" {
		t.Fatalf("keel-nats printed %q; want {\"url\": ...}", s)
	}
	return msg.URL, inW, exit
}

// The URL line comes once JetStream serves; closing stdin stops the server, store flushed.
func TestServeUntilStdinCloses(t *testing.T) {
	store := filepath.Join(t.TempDir(), "store")
	url, stdin, exit := start(t, "--store", store, "--name", "t")
	if !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Errorf("URL %q; want one on 127.0.0.1", url)
	}
	nc, err := nats.Connect(url)
	if err != nil {
		t.Fatal(err)
	}
	defer nc.Close()
	js, err := nc.JetStream()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := js.AccountInfo(); err != nil {
		t.Errorf("JetStream is not serving when the URL is reported: %v", err)
	}
	_ = stdin.Close()
	if code := waittest.Recv(t, "keel-nats's exit after stdin closed", exit); code != 0 {
		t.Errorf("exit %d after stdin closed; want 0", code)
	}
}

// A taken port fails unless --port-fallback asks for a free one instead.
func TestPortFallback(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	taken := l.Addr().(*net.TCPAddr).Port
	port := strings.TrimPrefix(l.Addr().String(), "127.0.0.1:")

	var stderr bytes.Buffer
	if code := run([]string{"--store", t.TempDir(), "--port", port}, strings.NewReader(""), io.Discard, &stderr); code != 1 {
		t.Errorf("on a taken port: exit %d; want 1 (stderr %s)", code, stderr.String())
	}
	url, _, _ := start(t, "--store", t.TempDir(), "--port", port, "--port-fallback")
	if strings.HasSuffix(url, ":"+port) || !strings.HasPrefix(url, "nats://127.0.0.1:") {
		t.Errorf("with --port-fallback and %d taken: URL %q; want another loopback port", taken, url)
	}
}
