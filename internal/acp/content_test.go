package acp

import (
	"encoding/json"
	"testing"
	"time"

	sdk "github.com/coder/acp-go-sdk"
	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel"
)

// TestPromptContent: text, resource links and embedded text join the prompt's text in order;
// images (inline or embedded) become attachments; audio and an empty prompt are refused.
func TestPromptContent(t *testing.T) {
	text, att, err := promptContent([]sdk.ContentBlock{
		sdk.TextBlock("/compact keep the tests"),
		sdk.ResourceLinkBlock("main.go", "file:///src/app/main.go"),
		sdk.ResourceLinkBlock("issue", "https://example.com/issues/1"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{TextResourceContents: &sdk.TextResourceContents{Uri: "file:///src/app/a.txt", Text: "alpha"}}),
		sdk.ImageBlock("aGVsbG8=", "image/png"),
		sdk.ResourceBlock(sdk.EmbeddedResourceResource{BlobResourceContents: &sdk.BlobResourceContents{Uri: "file:///x.jpg", Blob: "eA==", MimeType: sdk.Ptr("image/jpeg")}}),
	})
	if err != nil {
		t.Fatal(err)
	}
	want := "/compact keep the tests\n@/src/app/main.go\n[issue](https://example.com/issues/1)\n<context ref=\"file:///src/app/a.txt\">\nalpha\n</context>"
	if diff := cmp.Diff(want, text); diff != "" {
		t.Errorf("text mismatch (-want +got):\n%s", diff)
	}
	if len(att) != 2 || att[0].Source.MediaType != "image/png" || att[0].Source.Data != "aGVsbG8=" || att[1].Source.MediaType != "image/jpeg" {
		t.Errorf("attachments = %+v", att)
	}
	if _, _, err := promptContent([]sdk.ContentBlock{sdk.AudioBlock("AA==", "audio/wav")}); err == nil {
		t.Error("audio accepted")
	}
	if _, _, err := promptContent(nil); err == nil {
		t.Error("an empty prompt accepted")
	}
}

// TestMCPConfig: the client's servers in keel's MCP configuration shape.
func TestMCPConfig(t *testing.T) {
	got, err := mcpConfig([]sdk.McpServer{
		{Stdio: &sdk.McpServerStdio{Name: "files", Command: "npx", Args: []string{"-y", "srv"}, Env: []sdk.EnvVariable{{Name: "TOKEN", Value: "t"}}}},
		{Http: &sdk.McpServerHttpInline{Name: "web", Url: "https://mcp.example.com", Headers: []sdk.HttpHeader{{Name: "Authorization", Value: "Bearer x"}}, Type: "http"}},
		{Sse: &sdk.McpServerSseInline{Name: "old", Url: "https://sse.example.com", Headers: []sdk.HttpHeader{}, Type: "sse"}},
	})
	if err != nil {
		t.Fatal(err)
	}
	var cfg map[string]map[string]map[string]any
	if err := json.Unmarshal([]byte(got), &cfg); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]any{
		"files": {"type": "stdio", "command": "npx", "args": []any{"-y", "srv"}, "env": map[string]any{"TOKEN": "t"}},
		"web":   {"type": "http", "url": "https://mcp.example.com", "headers": map[string]any{"Authorization": "Bearer x"}},
		"old":   {"type": "sse", "url": "https://sse.example.com"},
	}
	if diff := cmp.Diff(want, cfg["mcpServers"]); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	if _, err := mcpConfig([]sdk.McpServer{{Stdio: &sdk.McpServerStdio{Name: "a", Command: "x"}}, {Stdio: &sdk.McpServerStdio{Name: "a", Command: "y"}}}); err == nil {
		t.Error("two servers with one name accepted")
	}
}

// TestListPage: newest first, pages of listPageSize with a cursor, a bad cursor refused.
func TestListPage(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var infos []keel.SessionInfo
	for i := range listPageSize + 3 {
		infos = append(infos, keel.SessionInfo{ID: string(rune('a'+i%26)) + time.Duration(i).String(), Updated: base.Add(time.Duration(i) * time.Minute), FirstPrompt: "p"})
	}
	first, err := listPage(infos, "/w", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(first.Sessions) != listPageSize || first.NextCursor == nil || *first.Sessions[0].UpdatedAt != base.Add(time.Duration(listPageSize+2)*time.Minute).Format(time.RFC3339) {
		t.Fatalf("first page: %d sessions, cursor %v, first %v", len(first.Sessions), first.NextCursor, *first.Sessions[0].UpdatedAt)
	}
	second, err := listPage(infos, "/w", first.NextCursor)
	if err != nil {
		t.Fatal(err)
	}
	if len(second.Sessions) != 3 || second.NextCursor != nil {
		t.Fatalf("second page: %d sessions, cursor %v", len(second.Sessions), second.NextCursor)
	}
	if _, err := listPage(infos, "/w", sdk.Ptr("zz")); err == nil {
		t.Error("a bad cursor accepted")
	}
}
