package session

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/mcphost"
)

// sdkEntry is the canonical entry of a server in the driving program: one with the name is
// the same server, whatever its settings.
const sdkEntry = `{"type":"sdk"}`

// SetServers replaces the MCP servers the driving program manages (the Agent SDK's
// setMcpServers): servers is name → configuration (.mcp.json's shape, or {"type":"sdk"} for
// one of the program's in-process servers, reached through transports[name]). Servers of
// the previous set that servers leaves out are removed (the program's in-process servers
// from the start count as set); new ones are added, changed ones replaced, unchanged ones
// left alone. A server the settings or --mcp-config configured is replaced when servers
// names it, and from then on belongs to the set; otherwise it stays. New servers connect in
// parallel, and SetMCPServers returns once each has connected or failed, so the next request
// sees the new set. errs holds, by name, entries that are not valid and servers that did not
// connect (these are listed in added too: they stay configured, and mcp_reconnect may
// retry them); an invalid entry leaves a server of that name as it was.
func (c *MCP) SetServers(ctx context.Context, servers map[string]json.RawMessage, transports map[string]mcp.Transport) (added, removed []string, errs map[string]string, err error) {
	if c.m == nil {
		return nil, nil, nil, fmt.Errorf("this session cannot change its MCP servers (it was opened without an MCP manager)")
	}
	c.dynamic.mu.Lock()
	defer c.dynamic.mu.Unlock()
	if c.dynamic.entries == nil {
		c.dynamic.entries = map[string]string{}
		for name := range c.opts.Transports {
			c.dynamic.entries[name] = sdkEntry
		}
	}
	errs = map[string]string{}
	want, problems := c.parse(servers, transports)
	maps.Copy(errs, problems)

	for _, name := range slices.Sorted(maps.Keys(c.dynamic.entries)) {
		if _, named := servers[name]; named {
			continue
		}
		delete(c.dynamic.entries, name)
		if err := c.m.Remove(ctx, name); err != nil {
			errs[name] = err.Error()
		}
		removed = append(removed, name)
	}
	var todo []dynamicServer
	for _, name := range slices.Sorted(maps.Keys(want)) {
		d := want[name]
		if c.dynamic.entries[name] == d.canon {
			if _, ok := c.m.Config(name); ok {
				continue
			}
		}
		if _, ok := c.m.Config(name); ok {
			if err := c.m.Remove(ctx, name); err != nil {
				errs[name] = err.Error()
				continue
			}
		}
		c.dynamic.entries[name] = d.canon
		todo = append(todo, d)
		added = append(added, name)
	}
	results := make([]error, len(todo))
	var wg sync.WaitGroup
	for i, d := range todo {
		wg.Go(func() { results[i] = c.m.Add(ctx, d.cfg, d.tr) })
	}
	wg.Wait()
	for i, d := range todo {
		if results[i] != nil {
			errs[d.cfg.Name] = results[i].Error()
		}
	}
	c.logger.Info("mcp servers set", "added", added, "removed", removed, "errors", len(errs))
	return added, removed, errs, nil
}

// parse reads SetServers' entries as the --mcp-config ones are read (${VAR}
// expansion, validation), under the session's MCP policy; problems are by server name.
func (c *MCP) parse(servers map[string]json.RawMessage, transports map[string]mcp.Transport) (map[string]dynamicServer, map[string]string) {
	want := map[string]dynamicServer{}
	problems := map[string]string{}
	process := map[string]json.RawMessage{}
	for name, raw := range servers {
		var head struct {
			Type string `json:"type"`
		}
		if err := json.Unmarshal(raw, &head); err != nil {
			problems[name] = fmt.Sprintf("mcp_set_servers: %s: want an object: %v", name, err)
			continue
		}
		if head.Type != mcphost.TypeSDK {
			process[name] = raw
			continue
		}
		tr := transports[name]
		if tr == nil {
			problems[name] = fmt.Sprintf("mcp_set_servers: %s: no in-process server of that name in the controlling program", name)
			continue
		}
		want[name] = dynamicServer{cfg: mcphost.ServerConfig{Name: name, Type: mcphost.TypeSDK, Scope: mcphost.ScopeDynamic}, tr: tr, canon: sdkEntry}
	}
	if len(process) == 0 {
		return want, problems
	}
	doc, err := json.Marshal(map[string]any{"mcpServers": process})
	if err != nil {
		for name := range process {
			problems[name] = err.Error()
		}
		return want, problems
	}
	_, env := mcpEnviron(c.opts)
	cfg := mcphost.Load(mcphost.LoadOptions{CLIConfigs: []string{string(doc)}, Strict: true, Env: env})
	for _, p := range cfg.Problems {
		if !p.Warning {
			problems[p.Server] = "mcp_set_servers: " + p.Path + ": " + p.Msg
		}
	}
	for i := range cfg.Servers {
		cfg.Servers[i].Scope, cfg.Servers[i].File = mcphost.ScopeDynamic, "mcp_set_servers"
	}
	for _, sc := range c.policy().Apply(cfg.Servers) {
		want[sc.Name] = dynamicServer{cfg: sc, canon: string(compactJSON(process[sc.Name]))}
	}
	return want, problems
}
