package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/loop"
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
var handlers = lazy.Value[map[string]handler]{New: func() map[string]handler {
	return map[string]handler{
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
}}

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
	h, ok := handlers.Get()[head.Subtype]
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
	names := make([]string, 0, len(handlers.Get()))
	for n := range handlers.Get() {
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
	if len(init.Ignored) > 0 {
		// Before the session opens: the turn loop reads the notices once it is open.
		c.cfg.Notices = append(c.cfg.Notices, event.Notice{Level: "info",
			Text: "initialize: keel accepts but does not use " + strings.Join(init.Ignored, ", ")})
	}
	if err := c.ensureOpen(ctx, init); err != nil {
		_ = c.w.failure(l.RequestID, err)
		return
	}
	_ = c.w.success(l.RequestID, c.initializeResponse())
}

func (c *controller) onInterrupt(context.Context, json.RawMessage) (any, error) {
	c.interrupt(loop.ErrInterrupted)
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
