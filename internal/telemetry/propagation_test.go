package telemetry_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/telemetry"
	"github.com/keel-dev/keel/internal/telemetry/oteltest"
	"github.com/keel-dev/keel/internal/waittest"
)

// Hooks run under the TRACEPARENT of what they are about: a PreToolUse hook under its tool
// call's span, a UserPromptSubmit hook under the prompt's interaction span, so the spans a
// hook exports join the session's trace where they belong.
func TestHooksGetTheTraceparentOfTheirSpan(t *testing.T) {
	bin := keel(t)
	// The model server lives as long as the test; keel's run, expected to finish, has one time limit.
	srv, err := scripted.Start(t.Context(), "", &scripted.Scenario{Rules: []scripted.Rule{
		{When: scripted.Match{ToolResult: "Bash"}, Reply: []scripted.Block{scripted.Text("noted")}},
		{When: scripted.Match{UserText: "trace the hooks"}, Reply: []scripted.Block{scripted.ToolUse("Bash", map[string]any{"command": "true"})}},
	}}, scripted.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	recv := oteltest.Start(t)
	dir, home := t.TempDir(), t.TempDir()
	record := func(name string) string {
		return `printf %s \"$TRACEPARENT\" > ` + filepath.Join(dir, name)
	}
	settings := `{"hooks": {
	  "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "` + record("pre.txt") + `"}]}],
	  "UserPromptSubmit": [{"hooks": [{"type": "command", "command": "` + record("prompt.txt") + `"}]}]}}`
	if err := os.WriteFile(filepath.Join(home, "settings.json"), []byte(settings), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(waittest.Context(t), bin, "-p", "trace the hooks", "--allowedTools", "Bash")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "KEEL_HOME="+home, "HOME="+t.TempDir(), "ANTHROPIC_BASE_URL="+srv.URL(), "ANTHROPIC_API_KEY=test-key",
		"CLAUDE_CODE_ENABLE_TELEMETRY=1", "OTEL_TRACES_EXPORTER=otlp", "OTEL_EXPORTER_OTLP_PROTOCOL=grpc", "OTEL_EXPORTER_OTLP_ENDPOINT="+recv.GRPCEndpoint(),
		"TRACEPARENT=00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")
	if out, err := cmd.CombinedOutput(); err != nil || !strings.Contains(string(out), "noted") {
		t.Fatalf("keel: %v\n%s", err, out)
	}
	spans := map[string]oteltest.Span{}
	for _, s := range recv.Data().Spans() {
		spans[s.ID] = s
	}
	for file, want := range map[string]string{"pre.txt": "claude_code.tool", "prompt.txt": "claude_code.interaction"} {
		b, err := os.ReadFile(filepath.Join(dir, file))
		if err != nil {
			t.Fatalf("the hook did not run: %v", err)
		}
		trace, span, _, err := telemetry.ParseTraceparent(string(b))
		if err != nil {
			t.Fatalf("%s: %v", file, err)
		}
		if trace != "0af7651916cd43dd8448eb211c80319c" {
			t.Errorf("%s: the hook ran in trace %s, want the session's", file, trace)
		}
		if got := spans[span]; got.Name != want || (want == "claude_code.tool" && got.Attrs["tool_name"] != "Bash") {
			t.Errorf("%s: the hook's parent span %s is %q %v, want %s", file, span, got.Name, got.Attrs, want)
		}
	}
}
