package acp

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"time"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/keel-dev/keel"
	"github.com/keel-dev/keel/internal/mcphost"
)

// mcpConfig turns the client's MCP servers into one MCP configuration text for the session,
// connected alongside the project's and the user's under keel's usual rules; "" for none.
func mcpConfig(servers []sdk.McpServer) (string, error) {
	if len(servers) == 0 {
		return "", nil
	}
	out := map[string]mcphost.ServerConfig{}
	add := func(name string, s mcphost.ServerConfig) error {
		if name == "" {
			return sdk.NewInvalidParams(map[string]any{"error": "an MCP server has no name"})
		}
		if _, dup := out[name]; dup {
			return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("two MCP servers are named %q", name)})
		}
		out[name] = s
		return nil
	}
	for _, s := range servers {
		var err error
		switch {
		case s.Stdio != nil:
			env := map[string]string{}
			for _, e := range s.Stdio.Env {
				env[e.Name] = e.Value
			}
			err = add(s.Stdio.Name, mcphost.ServerConfig{Type: "stdio", Command: s.Stdio.Command, Args: s.Stdio.Args, Env: env})
		case s.Http != nil:
			err = add(s.Http.Name, mcphost.ServerConfig{Type: "http", URL: s.Http.Url, Headers: headers(s.Http.Headers)})
		case s.Sse != nil:
			err = add(s.Sse.Name, mcphost.ServerConfig{Type: "sse", URL: s.Sse.Url, Headers: headers(s.Sse.Headers)})
		default:
			err = sdk.NewInvalidParams(map[string]any{"error": "an MCP server's transport is not one keel speaks (stdio, http, sse)"})
		}
		if err != nil {
			return "", err
		}
	}
	b, err := json.Marshal(map[string]any{"mcpServers": out})
	return string(b), err
}

func headers(hs []sdk.HttpHeader) map[string]string {
	out := map[string]string{}
	for _, h := range hs {
		out[h.Name] = h.Value
	}
	return out
}

// unstableServers reads fork's MCP servers, which the SDK types apart, as the stable kind.
func unstableServers(in []sdk.UnstableMcpServer) ([]sdk.McpServer, error) {
	var out []sdk.McpServer
	if len(in) == 0 {
		return nil, nil
	}
	if err := convert(in, &out); err != nil {
		return nil, sdk.NewInvalidParams(map[string]any{"error": err.Error()})
	}
	return out, nil
}

// convert copies a value into a type with the same JSON shape (the SDK's stable and unstable
// twins).
func convert(from, to any) error {
	b, err := json.Marshal(from)
	if err != nil {
		return err
	}
	return json.Unmarshal(b, to)
}

// listPageSize is how many sessions one session/list answer holds.
const listPageSize = 50

// listPage answers session/list from keel's stored sessions (newest first); the cursor is
// the offset of the next page.
func listPage(infos []keel.SessionInfo, cwd string, cursor *string) (sdk.ListSessionsResponse, error) {
	start := 0
	if cursor != nil && *cursor != "" {
		n, err := strconv.Atoi(*cursor)
		if err != nil || n < 0 || n > len(infos) {
			return sdk.ListSessionsResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("cursor %q is not one keel gave", *cursor)})
		}
		start = n
	}
	sort.SliceStable(infos, func(i, j int) bool { return infos[i].Updated.After(infos[j].Updated) })
	resp := sdk.ListSessionsResponse{Sessions: []sdk.SessionInfo{}}
	end := min(start+listPageSize, len(infos))
	for _, in := range infos[start:end] {
		title := in.Title
		if title == "" {
			title = in.FirstPrompt
		}
		info := sdk.SessionInfo{SessionId: sdk.SessionId(in.ID), Cwd: cwd, UpdatedAt: sdk.Ptr(in.Updated.UTC().Format(time.RFC3339))}
		if title != "" {
			info.Title = sdk.Ptr(title)
		}
		resp.Sessions = append(resp.Sessions, info)
	}
	if end < len(infos) {
		resp.NextCursor = sdk.Ptr(strconv.Itoa(end))
	}
	return resp, nil
}
