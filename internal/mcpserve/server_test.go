package mcpserve

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
	"github.com/keel-dev/keel/internal/waittest"
)

var png = []byte("\x89PNG\r\n\x1a\nfake")

type prompts struct{}

func (prompts) Prompts() []Prompt {
	return []Prompt{{Name: "review", Description: "Review a file", ArgumentHint: "[file]"}}
}
func (prompts) Render(_ context.Context, name, args string) (string, error) {
	return "please " + name + " " + args, nil
}

// connect serves a test server over streamable HTTP on loopback and connects a client.
func connect(t *testing.T, root, token string) (*mcp.ClientSession, string) {
	img := tool.New(tool.Spec[struct{}]{Name: "Shot", Description: "Return an image.", Schema: json.RawMessage(`{"type":"object"}`),
		Run: func(context.Context, *tool.Env, struct{}) tool.Result {
			return tool.Result{Content: []message.Block{{Type: "image", Source: &message.ImageSource{Type: "base64", MediaType: "image/png", Data: base64.StdEncoding.EncodeToString(png)}}}}
		}})
	srv := New(Options{Name: "keel", Version: "test", Tools: []tool.Tool{img}, Env: func() *tool.Env { return &tool.Env{} }, Prompts: prompts{}, Root: root})
	ctx, cancel := context.WithCancel(context.Background())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() {
		done <- ServeHTTP(ctx, srv, HTTPOptions{Addr: "127.0.0.1:0", Token: token, Ready: func(u string) { urls <- u }})
	}()
	url := waittest.Recv(t, "server listening", urls)
	t.Cleanup(func() { cancel(); <-done })
	var hc *http.Client
	if token != "" {
		hc = &http.Client{Transport: bearer(token)}
	}
	c := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	sess, err := c.Connect(waittest.Context(t), &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: hc}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sess.Close() })
	return sess, url
}

type bearer string

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+string(b))
	return http.DefaultTransport.RoundTrip(r)
}

func TestServeContentPromptsResources(t *testing.T) {
	root := t.TempDir()
	os.WriteFile(filepath.Join(root, "main.go"), []byte("package main\n"), 0o644)
	os.MkdirAll(filepath.Join(root, "docs"), 0o755)
	outside := filepath.Join(t.TempDir(), "secret.txt")
	os.WriteFile(outside, []byte("secret"), 0o644)
	os.Symlink(outside, filepath.Join(root, "link.txt"))
	sess, _ := connect(t, root, "")
	ctx := waittest.Context(t)

	res, err := sess.CallTool(ctx, &mcp.CallToolParams{Name: "Shot", Arguments: map[string]any{}})
	if err != nil {
		t.Fatal(err)
	}
	if im, ok := res.Content[0].(*mcp.ImageContent); !ok || im.MIMEType != "image/png" || string(im.Data) != string(png) {
		t.Errorf("image result = %#v, want the PNG as image content", res.Content[0])
	}

	p, err := sess.GetPrompt(ctx, &mcp.GetPromptParams{Name: "review", Arguments: map[string]string{"arguments": "main.go"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Messages[0].Content.(*mcp.TextContent).Text; got != "please review main.go" {
		t.Errorf("prompt text = %q", got)
	}
	comp, err := sess.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "review"},
		Argument: mcp.CompleteParamsArgument{Name: "arguments", Value: "m"}})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(comp.Completion.Values, ",") != "main.go" {
		t.Errorf("completion of %q = %v, want main.go", "m", comp.Completion.Values)
	}

	rr, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: fileURI(filepath.Join(root, "main.go"))})
	if err != nil || rr.Contents[0].Text != "package main\n" {
		t.Errorf("read main.go = %+v, %v", rr, err)
	}
	for _, uri := range []string{fileURI(outside), fileURI(filepath.Join(root, "link.txt")), fileURI(filepath.Join(root, "..", filepath.Base(filepath.Dir(outside)), "secret.txt"))} {
		if _, err := sess.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err == nil {
			t.Errorf("read %s outside the workspace succeeded", uri)
		}
	}
}

func TestServeHTTPGuards(t *testing.T) {
	_, url := connect(t, "", "s3cret")
	body := `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tc := range []struct {
		name   string
		header map[string]string
		want   int
	}{
		{"no token", map[string]string{}, http.StatusUnauthorized},
		{"wrong token", map[string]string{"Authorization": "Bearer nope"}, http.StatusUnauthorized},
		{"foreign origin", map[string]string{"Authorization": "Bearer s3cret", "Origin": "https://evil.example"}, http.StatusForbidden},
		{"rebound host", map[string]string{"Authorization": "Bearer s3cret", "Host": "evil.example"}, http.StatusForbidden},
	} {
		req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		for k, v := range tc.header {
			if k == "Host" {
				req.Host = v
			} else {
				req.Header.Set(k, v)
			}
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s: status %d, want %d", tc.name, resp.StatusCode, tc.want)
		}
	}
	if err := ServeHTTP(context.Background(), nil, HTTPOptions{Addr: "0.0.0.0:0"}); err == nil || !strings.Contains(err.Error(), "--token-file") {
		t.Errorf("non-loopback without a token = %v, want refused naming --token-file", err)
	}
}
