package render

import (
	"encoding/json"
	"testing"

	"github.com/keel-dev/keel/internal/message"
)

func TestReadable(t *testing.T) {
	for _, tt := range []struct{ in, want string }{
		{"plain words stay", "plain words stay"},
		{"<system-reminder>\nThe skills are: a, b\n</system-reminder>\nfix the test", "fix the test"},
		{"<task-notification>\n<task-id>a1b2</task-id>\n<tool-use-id>toolu_1</tool-use-id>\n<status>completed</status>\n<summary>Agent \"scan\" completed</summary>\n<result>found 3 files</result>\n</task-notification>",
			`task a1b2 completed: Agent "scan" completed`},
		{"<task-notification>\n<task-id>b7</task-id>\n<status>failed</status>\n<summary>Shell \"make\" failed</summary>\n<error>exit status 2</error>\n</task-notification>",
			`task b7 failed: Shell "make" failed (exit status 2)`},
		{"<teammate-message teammate_id=\"alice\" color=\"blue\" summary=\"tests &amp; docs\" id=\"9f\">\nall tests pass\n</teammate-message>", "alice: all tests pass"},
		{"<teammate-message teammate_id=\"bob\" type=\"permission_request\" id=\"1\">\n{\"tool\":\"Bash\"}\n</teammate-message>", `bob (permission request): {"tool":"Bash"}`},
		{"<bash-input>ls</bash-input>\n<bash-output>a.go\nb.go</bash-output>\n\nwhich is newer?", "! ls\na.go\nb.go\n\nwhich is newer?"},
	} {
		if got := Readable(tt.in); got != tt.want {
			t.Errorf("Readable(%q)\n got %q\nwant %q", tt.in, got, tt.want)
		}
	}
}

func TestMessageText(t *testing.T) {
	for _, tt := range []struct {
		text, data, want string
	}{
		{"all tests pass", "", "all tests pass"},
		{"", `{"request":{"Tool":"Bash","Command":"rm -rf build","Input":{"command":"rm -rf build"}},"reason":"shell commands need approval","suggestions":["Bash(rm:*)"],"color":"red","agentId":"a1"}`,
			"Bash(rm -rf build); reason: shell commands need approval; would allow Bash(rm:*)"},
		{`{"type":"shutdown_response","request_id":"r1","approve":true}`, "", "approved"},
		{"please check", `{"behavior":"deny","reason":"not now"}`, "please check — denied; reason: not now"},
	} {
		if got := MessageText(tt.text, []byte(tt.data)); got != tt.want {
			t.Errorf("MessageText(%q, %s)\n got %q\nwant %q", tt.text, tt.data, got, tt.want)
		}
	}
}

func TestMessageWords(t *testing.T) {
	in, _ := json.Marshal(map[string]string{"command": "go test ./..."})
	for _, tt := range []struct {
		m    message.Message
		want string
	}{
		{message.User(message.Text("<system-reminder>\nskills: a\n</system-reminder>\nfix   the\ntest")), "fix the test"},
		{message.Assistant(message.Text("Running them."), message.ToolUse("t1", "Bash", in)), "Running them. · ● Bash(go test ./...)"},
		{message.User(message.ToolResult("t1", []message.Block{message.Text("FAIL x\nmore")}, true)), "error: FAIL x"},
	} {
		if got := MessageWords(tt.m); got != tt.want {
			t.Errorf("MessageWords = %q, want %q", got, tt.want)
		}
	}
}
