package main

import (
	"bufio"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/cli"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/waittest"
)

// TestControlStdinClosedMidTurn: the controlling program goes away while keel waits for its
// answer to a can_use_tool request. The turn is interrupted at once (the tool never runs),
// the result says why, keel exits 1, and the transcript is whole: the session continues.
func TestControlStdinClosedMidTurn(t *testing.T) {
	sc := &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{UserText: "make the file"}, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]string{"command": "touch made"})}},
		{Reply: []scripted.Block{scripted.Text("hello back")}},
	}}
	srv, err := scripted.Start(t.Context(), "", sc, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	dir, home := t.TempDir(), t.TempDir()
	t.Chdir(dir)
	env := map[string]string{"ANTHROPIC_BASE_URL": srv.URL(), "ANTHROPIC_API_KEY": "k", "KEEL_HOME": home, "HOME": home}
	getenv := func(k string) string { return env[k] }

	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	code := make(chan int, 1)
	go func() {
		code <- cli.Main([]string{"--input-format", "stream-json", "--output-format", "stream-json", "--permission-prompt-tool", "stdio"},
			cli.Streams{In: inR, Out: outW, Err: io.Discard}, getenv)
		outW.Close()
	}()
	lines := make(chan map[string]any)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) == nil {
				lines <- m
			}
		}
	}()
	next := func(what string, match func(map[string]any) bool) map[string]any {
		t.Helper()
		for {
			m := waittest.Recv(t, what, lines)
			if m == nil {
				t.Fatalf("keel's output ended before %s", what)
			}
			if match(m) {
				return m
			}
		}
	}
	if _, err := io.WriteString(inW, `{"type":"user","message":{"role":"user","content":"make the file"}}`+"\n"); err != nil {
		t.Fatal(err)
	}
	next("the can_use_tool request", func(m map[string]any) bool {
		req, _ := m["request"].(map[string]any)
		return m["type"] == "control_request" && req["subtype"] == "can_use_tool"
	})
	inW.Close()
	res := next("the result", func(m map[string]any) bool { return m["type"] == "result" })
	if res["subtype"] != "error_during_execution" || !strings.Contains(toJSON(res["errors"]), "closed stdin") {
		t.Errorf("result = %s %s, want error_during_execution saying stdin closed", res["subtype"], toJSON(res["errors"]))
	}
	for range lines {
	}
	if c := waittest.Recv(t, "keel's exit", code); c != 1 {
		t.Errorf("exit code %d, want 1 (the last turn failed)", c)
	}
	if _, err := os.Stat(filepath.Join(dir, "made")); err == nil {
		t.Error("the tool ran although nobody approved it")
	}

	var out strings.Builder
	if c := cli.Main([]string{"--continue", "-p", "hello", "--output-format", "json"}, cli.Streams{In: strings.NewReader(""), Out: &out, Err: io.Discard}, getenv); c != 0 {
		t.Fatalf("continue: exit %d: %s", c, out.String())
	}
	if !strings.Contains(out.String(), `"result":"hello back"`) {
		t.Errorf("continue: %s", out.String())
	}
}

func toJSON(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}
