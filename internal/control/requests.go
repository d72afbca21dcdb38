package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
)

// handler answers one control request subtype. It runs on the dispatcher unless the subtype
// is marked slow, so requests apply in the order they arrived.
type handler struct {
	fn func(c *controller, ctx context.Context, req json.RawMessage) (any, error)
	// slow handlers (network, servers) run in their own goroutine, cancellable by a
	// control_cancel_request, so they hold nothing else up.
	slow bool
	// beforeOpen handlers can answer before the session is open.
	beforeOpen bool
}

// handlers lists every subtype keel answers; anything else gets an error at once.
var handlers = map[string]handler{
	"interrupt":               {fn: (*controller).onInterrupt, beforeOpen: true},
	"set_permission_mode":     {fn: (*controller).onSetPermissionMode},
	"set_model":               {fn: (*controller).onSetModel},
	"set_max_thinking_tokens": {fn: (*controller).onSetMaxThinkingTokens},
	"mcp_status":              {fn: (*controller).onMCPStatus},
	"mcp_message":             {fn: (*controller).onMCPMessage, beforeOpen: true},
	"mcp_reconnect":           {fn: (*controller).onMCPReconnect, slow: true},
	"mcp_toggle":              {fn: (*controller).onMCPToggle, slow: true},
	"mcp_set_servers":         {fn: (*controller).onMCPSetServers, slow: true},
	"get_context_usage":       {fn: (*controller).onGetContextUsage},
	"rewind_files":            {fn: (*controller).onRewindFiles, slow: true},
	"stop_task":               {fn: (*controller).onStopTask},
	"get_settings":            {fn: (*controller).onGetSettings},
	"apply_flag_settings":     {fn: (*controller).onApplyFlagSettings},
	"update_settings":         {fn: (*controller).onUpdateSettings},
	"reload_skills":           {fn: (*controller).onReloadSkills},
}

// handleRequest answers one control_request from the SDK.
func (c *controller) handleRequest(ctx context.Context, l inLine) {
	var head struct {
		Subtype string `json:"subtype"`
	}
	if l.RequestID == "" {
		c.notice("error", "control_request without a request_id; ignored")
		return
	}
	if err := json.Unmarshal(l.Request, &head); err != nil || head.Subtype == "" {
		_ = c.w.failure(l.RequestID, errors.New("malformed control request: want a request object with a subtype"))
		return
	}
	if head.Subtype == "initialize" {
		c.onInitialize(ctx, l)
		return
	}
	h, ok := handlers[head.Subtype]
	if !ok {
		_ = c.w.failure(l.RequestID, fmt.Errorf("keel does not implement the %q control request (it answers: initialize, %s)", head.Subtype, strings.Join(handlerNames(), ", ")))
		return
	}
	if !h.beforeOpen {
		if err := c.ensureOpen(ctx, nil); err != nil {
			_ = c.w.failure(l.RequestID, err)
			return
		}
	}
	run := func(ctx context.Context) {
		resp, err := h.fn(c, ctx, l.Request)
		if err != nil {
			_ = c.w.failure(l.RequestID, err)
			return
		}
		if resp == noResponse {
			return
		}
		_ = c.w.success(l.RequestID, resp)
	}
	if !h.slow {
		run(ctx)
		return
	}
	hctx, cancel := context.WithCancel(ctx)
	c.mu.Lock()
	c.handlers[l.RequestID] = cancel
	c.mu.Unlock()
	go func() {
		defer func() {
			c.mu.Lock()
			delete(c.handlers, l.RequestID)
			c.mu.Unlock()
			cancel()
		}()
		run(hctx)
	}()
}

// noResponse is returned by a handler that answers (or not) by itself.
var noResponse = &struct{ none bool }{}

func handlerNames() []string {
	names := make([]string, 0, len(handlers))
	for n := range handlers {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

func (c *controller) onInitialize(ctx context.Context, l inLine) {
	select {
	case <-c.opened:
		if c.openErr != nil {
			_ = c.w.failure(l.RequestID, c.openErr)
			return
		}
		// reinitialize: the session is open; say what it is, and that what this request
		// carries (hooks, servers, prompts) was not applied.
		resp := c.initializeResponse()
		resp["hooks_applied"] = false
		_ = c.w.success(l.RequestID, resp)
		return
	default:
	}
	init, err := parseInit(l.Request)
	if err != nil {
		_ = c.w.failure(l.RequestID, err)
		return
	}
	if err := c.ensureOpen(ctx, init); err != nil {
		_ = c.w.failure(l.RequestID, err)
		return
	}
	if len(init.Ignored) > 0 {
		c.cfg.Notices = append(c.cfg.Notices, event.Notice{Level: "info",
			Text: "initialize: keel accepts but does not use " + strings.Join(init.Ignored, ", ")})
	}
	_ = c.w.success(l.RequestID, c.initializeResponse())
}

func (c *controller) onInterrupt(context.Context, json.RawMessage) (any, error) {
	c.interrupt(interruptedCause)
	still := []string{}
	for _, p := range c.prompts.snapshot() {
		if p.uuid != "" {
			still = append(still, p.uuid)
		}
	}
	return map[string]any{"still_queued": still}, nil
}

func (c *controller) onSetPermissionMode(_ context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Mode string `json:"mode"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.Mode == "" {
		return nil, errors.New("set_permission_mode: want {\"mode\": …}")
	}
	if err := c.sess.SetPermissionMode(req.Mode); err != nil {
		return nil, err
	}
	c.status()
	return map[string]any{"mode": c.sess.PermissionMode()}, nil
}

// status tells the SDK the permission mode changed, as a system status line.
func (c *controller) status() { c.renderStatus(c.sess.PermissionMode()) }

func (c *controller) renderStatus(mode string) {
	if err := c.r.Render(event.Status{PermissionMode: mode}); err != nil {
		c.logger.Warn("write output", "err", err)
	}
}

// modelSwitcher is a session whose model switch can be vetoed and observed by hooks.
type modelSwitcher interface {
	SwitchModel(ctx context.Context, model, source string) error
}

func (c *controller) onSetModel(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Model *string `json:"model"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, errors.New("set_model: want {\"model\": …}")
	}
	model := ""
	if req.Model != nil {
		model = *req.Model
	}
	if model == "" || model == "default" {
		model = c.defaultModel()
	}
	if s, ok := c.sess.(modelSwitcher); ok {
		if err := s.SwitchModel(ctx, model, "sdk"); err != nil {
			return nil, err
		}
	} else {
		c.sess.SetModel(model)
	}
	return map[string]any{"model": c.sess.Model()}, nil
}

// defaultModel is the model the session opened with.
func (c *controller) defaultModel() string {
	if c.initialModel != "" {
		return c.initialModel
	}
	return c.sess.Model()
}

// thinker is a session whose thinking budget can change between turns.
type thinker interface {
	SetMaxThinkingTokens(n int64)
}

func (c *controller) onSetMaxThinkingTokens(_ context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Max *int64 `json:"max_thinking_tokens"`
	}
	if err := json.Unmarshal(raw, &req); err != nil {
		return nil, errors.New("set_max_thinking_tokens: want {\"max_thinking_tokens\": N or null}")
	}
	t, ok := c.sess.(thinker)
	if !ok {
		return nil, errors.New("set_max_thinking_tokens: this session has no thinking setting")
	}
	var n int64
	if req.Max != nil {
		n = *req.Max
	}
	t.SetMaxThinkingTokens(n)
	return map[string]any{}, nil
}

// mcpSession is a session with MCP servers.
type mcpSession interface {
	MCPStatus() []mcphost.ServerStatus
	ReconnectMCP(ctx context.Context, name string) error
}

// mcpServerStatus is the SDK's McpServerStatus.
type mcpServerStatus struct {
	Name       string          `json:"name"`
	Status     string          `json:"status"`
	ServerInfo *mcpServerInfo  `json:"serverInfo,omitempty"`
	Error      string          `json:"error,omitempty"`
	Scope      string          `json:"scope,omitempty"`
	Tools      []mcpStatusTool `json:"tools,omitempty"`
}

type mcpServerInfo struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

type mcpStatusTool struct {
	Name string `json:"name"`
}

func (c *controller) onMCPStatus(context.Context, json.RawMessage) (any, error) {
	out := []mcpServerStatus{}
	if m, ok := c.sess.(mcpSession); ok {
		for _, st := range m.MCPStatus() {
			s := mcpServerStatus{Name: st.Name, Status: string(st.Status), Error: st.Reason, Scope: string(st.Scope)}
			if name, version, ok := strings.Cut(st.Server, " "); ok {
				s.ServerInfo = &mcpServerInfo{Name: name, Version: version}
			} else if st.Server != "" {
				s.ServerInfo = &mcpServerInfo{Name: st.Server}
			}
			if st.Type == mcphost.TypeSDK && s.Scope == string(mcphost.ScopeCLI) {
				s.Scope = "sdk"
			}
			out = append(out, s)
		}
	}
	return map[string]any{"mcpServers": out}, nil
}

func (c *controller) onMCPReconnect(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		ServerName string `json:"serverName"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.ServerName == "" {
		return nil, errors.New("mcp_reconnect: want {\"serverName\": …}")
	}
	m, ok := c.sess.(mcpSession)
	if !ok {
		return nil, fmt.Errorf("mcp_reconnect: no MCP server named %q", req.ServerName)
	}
	if err := m.ReconnectMCP(ctx, req.ServerName); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// mcpToggler is a session whose MCP servers can be switched off and on, and replaced.
type mcpToggler interface {
	ToggleMCP(ctx context.Context, name string, enabled bool) error
}

type mcpReplacer interface {
	SetMCPServers(ctx context.Context, config string) (added, removed []string, errs map[string]string, err error)
}

func (c *controller) onMCPToggle(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		ServerName string `json:"serverName"`
		Enabled    *bool  `json:"enabled"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.ServerName == "" || req.Enabled == nil {
		return nil, errors.New("mcp_toggle: want {\"serverName\": …, \"enabled\": true|false}")
	}
	t, ok := c.sess.(mcpToggler)
	if !ok {
		return nil, errors.New("mcp_toggle: this session cannot switch MCP servers")
	}
	if err := t.ToggleMCP(ctx, req.ServerName, *req.Enabled); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

func (c *controller) onMCPSetServers(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Servers json.RawMessage `json:"servers"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || len(req.Servers) == 0 {
		return nil, errors.New("mcp_set_servers: want {\"servers\": {name: config, …}}")
	}
	r, ok := c.sess.(mcpReplacer)
	if !ok {
		return nil, errors.New("mcp_set_servers: keel cannot change the MCP servers of a running session; start a new query with the servers in mcpServers")
	}
	cfg, err := json.Marshal(map[string]json.RawMessage{"mcpServers": req.Servers})
	if err != nil {
		return nil, err
	}
	added, removed, errs, err := r.SetMCPServers(ctx, string(cfg))
	if err != nil {
		return nil, err
	}
	if errs == nil {
		errs = map[string]string{}
	}
	return map[string]any{"added": nonNil(added), "removed": nonNil(removed), "errors": errs}, nil
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// ContextCategory is one part of the context window, as get_context_usage reports it.
type ContextCategory struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Tokens int64  `json:"tokens"`
	Kind   string `json:"kind"` // used, free, buffer, deferred
}

// ContextUsage is what the next request would carry, by part.
type ContextUsage struct {
	Categories []ContextCategory
	Window     int64
	Model      string
	Memory     []MemoryUsage
}

// MemoryUsage is one memory file's share.
type MemoryUsage struct {
	Path   string `json:"path"`
	Type   string `json:"type"`
	Tokens int64  `json:"tokens"`
}

type contextUser interface {
	ContextUsage(ctx context.Context) ContextUsage
}

// categoryColors are the colours Claude Code's /context grid uses, which SDK UIs reuse.
var categoryColors = map[string]string{
	"system_prompt": "promptBorder", "system_tools": "inactive", "mcp_tools": "cyan_FOR_SUBAGENTS_ONLY",
	"memory_files": "claude", "skills": "warning", "messages": "purple_FOR_SUBAGENTS_ONLY", "free_space": "promptBorder",
	"autocompact_buffer": "inactive",
}

func (c *controller) onGetContextUsage(ctx context.Context, _ json.RawMessage) (any, error) {
	u, ok := c.sess.(contextUser)
	if !ok {
		return nil, errors.New("get_context_usage: this session cannot measure its context")
	}
	cu := u.ContextUsage(ctx)
	type category struct {
		ContextCategory
		Color string `json:"color"`
	}
	var cats []category
	var total int64
	for _, cat := range cu.Categories {
		cats = append(cats, category{cat, categoryColors[cat.ID]})
		if cat.Kind == "used" {
			total += cat.Tokens
		}
	}
	pct := 0
	if cu.Window > 0 {
		pct = int(total * 100 / cu.Window)
	}
	memory := cu.Memory
	if memory == nil {
		memory = []MemoryUsage{}
	}
	return map[string]any{
		"categories": cats, "totalTokens": total, "maxTokens": cu.Window, "rawMaxTokens": cu.Window,
		"percentage": pct, "gridRows": [][]any{}, "model": cu.Model, "memoryFiles": memory, "mcpTools": []any{},
	}, nil
}

// fileRewinder is a session that can put files back as they were before a prompt.
type fileRewinder interface {
	RewindFiles(ctx context.Context, userMessageID string, dryRun bool) (changed []string, err error)
}

func (c *controller) onRewindFiles(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		UserMessageID string `json:"user_message_id"`
		DryRun        bool   `json:"dry_run"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.UserMessageID == "" {
		return nil, errors.New("rewind_files: want {\"user_message_id\": …}")
	}
	r, ok := c.sess.(fileRewinder)
	if !ok {
		return map[string]any{"canRewind": false, "error": "this session keeps no file history"}, nil
	}
	changed, err := r.RewindFiles(ctx, req.UserMessageID, req.DryRun)
	if err != nil {
		return map[string]any{"canRewind": false, "error": err.Error()}, nil
	}
	return map[string]any{"canRewind": true, "filesChanged": nonNil(changed)}, nil
}

// taskStopper is a session whose background tasks can be stopped.
type taskStopper interface {
	StopTask(ctx context.Context, id string) error
}

func (c *controller) onStopTask(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		TaskID string `json:"task_id"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || req.TaskID == "" {
		return nil, errors.New("stop_task: want {\"task_id\": …}")
	}
	s, ok := c.sess.(taskStopper)
	if !ok {
		return nil, fmt.Errorf("stop_task: no task %q", req.TaskID)
	}
	if err := s.StopTask(ctx, req.TaskID); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// settingsSession is a session whose merged settings can be read and changed.
type settingsSession interface {
	// EffectiveSettings returns the merged settings and each source that contributed.
	EffectiveSettings() (effective json.RawMessage, sources []SettingsSource)
	// ApplyFlagSettings layers settings over the command line's for the rest of the session.
	ApplyFlagSettings(ctx context.Context, settings json.RawMessage) error
	// UpdateSettings writes settings into a file (localSettings or userSettings) and reloads.
	UpdateSettings(ctx context.Context, destination string, settings json.RawMessage) error
}

// SettingsSource is one settings source in get_settings' answer.
type SettingsSource struct {
	Source   string          `json:"source"`
	Path     string          `json:"path,omitempty"`
	Settings json.RawMessage `json:"settings"`
}

func (c *controller) settings() (settingsSession, error) {
	s, ok := c.sess.(settingsSession)
	if !ok {
		return nil, errors.New("this session cannot read or change its settings")
	}
	return s, nil
}

func (c *controller) onGetSettings(context.Context, json.RawMessage) (any, error) {
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	eff, sources := s.EffectiveSettings()
	if sources == nil {
		sources = []SettingsSource{}
	}
	return map[string]any{"effective": eff, "sources": sources}, nil
}

func (c *controller) onApplyFlagSettings(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Settings json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || len(req.Settings) == 0 {
		return nil, errors.New("apply_flag_settings: want {\"settings\": {…}}")
	}
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	if err := s.ApplyFlagSettings(ctx, req.Settings); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

func (c *controller) onUpdateSettings(ctx context.Context, raw json.RawMessage) (any, error) {
	var req struct {
		Source   string          `json:"source"`
		Settings json.RawMessage `json:"settings"`
	}
	if err := json.Unmarshal(raw, &req); err != nil || len(req.Settings) == 0 {
		return nil, errors.New("update_settings: want {\"source\": \"localSettings\"|\"userSettings\", \"settings\": {…}}")
	}
	if req.Source != "localSettings" && req.Source != "userSettings" {
		return nil, fmt.Errorf("update_settings: source %q is not one of localSettings, userSettings", req.Source)
	}
	s, err := c.settings()
	if err != nil {
		return nil, err
	}
	if err := s.UpdateSettings(ctx, req.Source, req.Settings); err != nil {
		return nil, err
	}
	return map[string]any{}, nil
}

// skillReloader is a session that can pick up skills changed on disk.
type skillReloader interface {
	ReloadSkills(ctx context.Context) error
}

func (c *controller) onReloadSkills(ctx context.Context, _ json.RawMessage) (any, error) {
	r, ok := c.sess.(skillReloader)
	if !ok {
		return nil, errors.New("reload_skills: this session cannot reload skills")
	}
	if err := r.ReloadSkills(ctx); err != nil {
		return nil, err
	}
	commands := slices.Clone(builtinCommands)
	if s, ok := c.sess.(skiller); ok {
		for _, sk := range s.Skills() {
			if sk.UserInvocable {
				commands = append(commands, slashCommand{Name: sk.Name, Description: sk.Description, ArgumentHint: sk.ArgumentHint})
			}
		}
	}
	return map[string]any{"commands": commands}, nil
}
