package acp

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/keel-dev/keel"
)

// apiKeyMethod is the one authentication method: a key in the environment keel starts with.
const apiKeyMethod = "anthropic-api-key"

// agent implements the protocol's agent side over keel sessions.
type agent struct {
	cfg  Config
	g    *guard
	conn *sdk.AgentSideConnection

	// mu guards caps, sessions and stopped.
	mu       sync.Mutex
	caps     sdk.ClientCapabilities
	sessions map[string]*session
	stopped  bool
}

var (
	_ sdk.Agent       = (*agent)(nil)
	_ sdk.AgentLoader = (*agent)(nil)
)

func newAgent(cfg Config, g *guard) *agent {
	return &agent{cfg: cfg, g: g, sessions: map[string]*session{}}
}

// stop refuses new sessions and hands over the open ones, for shutdown to close.
func (a *agent) stop() []*session {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.stopped = true
	sessions := make([]*session, 0, len(a.sessions))
	for _, s := range a.sessions {
		sessions = append(sessions, s)
	}
	a.sessions = map[string]*session{}
	return sessions
}

func (a *agent) Initialize(_ context.Context, p sdk.InitializeRequest) (sdk.InitializeResponse, error) {
	a.mu.Lock()
	a.caps = p.ClientCapabilities
	a.mu.Unlock()
	a.g.initialized.Store(true)
	desc := "Set ANTHROPIC_API_KEY (or ANTHROPIC_AUTH_TOKEN for a gateway) in the environment the editor starts keel with."
	return sdk.InitializeResponse{
		// keel speaks version 1 only: a client that asked for another one learns it from
		// this answer and may disconnect.
		ProtocolVersion: sdk.ProtocolVersionNumber,
		AgentInfo:       &sdk.Implementation{Name: "keel", Title: sdk.Ptr("keel"), Version: a.cfg.Version},
		AgentCapabilities: sdk.AgentCapabilities{
			LoadSession:        true,
			McpCapabilities:    sdk.McpCapabilities{Http: true, Sse: true},
			PromptCapabilities: sdk.PromptCapabilities{Image: true, EmbeddedContext: true},
			SessionCapabilities: sdk.SessionCapabilities{
				List:   &sdk.SessionListCapabilities{},
				Resume: &sdk.SessionResumeCapabilities{},
				Fork:   &sdk.SessionForkCapabilities{},
				Close:  &sdk.SessionCloseCapabilities{},
			},
		},
		AuthMethods: []sdk.AuthMethod{{Agent: &sdk.AuthMethodAgent{Id: apiKeyMethod, Name: "Anthropic API key", Description: &desc}}},
	}, nil
}

func (a *agent) Authenticate(_ context.Context, p sdk.AuthenticateRequest) (sdk.AuthenticateResponse, error) {
	if p.MethodId != apiKeyMethod {
		return sdk.AuthenticateResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("unknown authentication method %q; keel offers %q", p.MethodId, apiKeyMethod)})
	}
	if a.getenv("ANTHROPIC_API_KEY") == "" && a.getenv("ANTHROPIC_AUTH_TOKEN") == "" && a.cfg.Options.APIKey == "" {
		return sdk.AuthenticateResponse{}, authRequired()
	}
	return sdk.AuthenticateResponse{}, nil
}

// getenv reads the environment as the sessions do: through Options.Getenv, which the CLI
// always sets; a library caller without one has the process's environment.
func (a *agent) getenv(k string) string {
	if a.cfg.Options.Getenv != nil {
		return a.cfg.Options.Getenv(k)
	}
	return os.Getenv(k)
}

func authRequired() error {
	return &sdk.RequestError{Code: -32000, Message: "Authentication required: set ANTHROPIC_API_KEY in the environment the editor starts keel with"}
}

func (a *agent) NewSession(ctx context.Context, p sdk.NewSessionRequest) (sdk.NewSessionResponse, error) {
	s, err := a.open(ctx, openRequest{cwd: p.Cwd, dirs: p.AdditionalDirectories, mcp: p.McpServers})
	if err != nil {
		return sdk.NewSessionResponse{}, err
	}
	// The commands go out once the response is written (the request's context ends then):
	// clients that route updates by session id may not know the session before.
	go func() {
		<-ctx.Done()
		s.announceCommands()
	}()
	return sdk.NewSessionResponse{SessionId: sdk.SessionId(s.id), Modes: s.modes(), ConfigOptions: s.configOptions(), Models: s.models()}, nil
}

func (a *agent) LoadSession(ctx context.Context, p sdk.LoadSessionRequest) (sdk.LoadSessionResponse, error) {
	s, err := a.open(ctx, openRequest{cwd: p.Cwd, dirs: p.AdditionalDirectories, mcp: p.McpServers, resume: string(p.SessionId)})
	if err != nil {
		return sdk.LoadSessionResponse{}, err
	}
	// The conversation is replayed before the response, as the protocol says.
	s.replay(ctx)
	s.announceCommands()
	return sdk.LoadSessionResponse{Modes: s.modes(), ConfigOptions: s.configOptions(), Models: s.models()}, nil
}

func (a *agent) ResumeSession(ctx context.Context, p sdk.ResumeSessionRequest) (sdk.ResumeSessionResponse, error) {
	s, err := a.open(ctx, openRequest{cwd: p.Cwd, dirs: p.AdditionalDirectories, mcp: p.McpServers, resume: string(p.SessionId)})
	if err != nil {
		return sdk.ResumeSessionResponse{}, err
	}
	go func() {
		<-ctx.Done()
		s.announceCommands()
	}()
	return sdk.ResumeSessionResponse{Modes: s.modes(), ConfigOptions: s.configOptions(), Models: s.models()}, nil
}

func (a *agent) UnstableForkSession(ctx context.Context, p sdk.UnstableForkSessionRequest) (sdk.UnstableForkSessionResponse, error) {
	servers, err := unstableServers(p.McpServers)
	if err != nil {
		return sdk.UnstableForkSessionResponse{}, err
	}
	s, err := a.open(ctx, openRequest{cwd: p.Cwd, dirs: p.AdditionalDirectories, mcp: servers, resume: string(p.SessionId), fork: true})
	if err != nil {
		return sdk.UnstableForkSessionResponse{}, err
	}
	go func() {
		<-ctx.Done()
		s.announceCommands()
	}()
	resp := sdk.UnstableForkSessionResponse{SessionId: sdk.SessionId(s.id), Modes: s.modes()}
	if err := convert(s.configOptions(), &resp.ConfigOptions); err != nil {
		return resp, err
	}
	if m := s.models(); m != nil {
		resp.Models = new(sdk.UnstableSessionModelState)
		if err := convert(m, resp.Models); err != nil {
			return resp, err
		}
	}
	return resp, nil
}

func (a *agent) CloseSession(_ context.Context, p sdk.CloseSessionRequest) (sdk.CloseSessionResponse, error) {
	a.mu.Lock()
	s := a.sessions[string(p.SessionId)]
	delete(a.sessions, string(p.SessionId))
	a.mu.Unlock()
	if s == nil {
		return sdk.CloseSessionResponse{}, notFound(string(p.SessionId))
	}
	return sdk.CloseSessionResponse{}, s.close()
}

func (a *agent) ListSessions(_ context.Context, p sdk.ListSessionsRequest) (sdk.ListSessionsResponse, error) {
	cwd := a.cfg.Options.Cwd
	if p.Cwd != nil {
		if err := absolute("cwd", *p.Cwd); err != nil {
			return sdk.ListSessionsResponse{}, err
		}
		cwd = *p.Cwd
	}
	if cwd == "" {
		return sdk.ListSessionsResponse{}, sdk.NewInvalidParams(map[string]any{"error": "cwd is required: keel keeps sessions per project directory"})
	}
	infos, err := keel.ListSessions(a.cfg.Options.Home, cwd)
	if err != nil {
		return sdk.ListSessionsResponse{}, fmt.Errorf("list sessions of %s: %w", cwd, err)
	}
	return listPage(infos, cwd, p.Cursor)
}

func (a *agent) Prompt(ctx context.Context, p sdk.PromptRequest) (sdk.PromptResponse, error) {
	s, err := a.session(string(p.SessionId))
	if err != nil {
		return sdk.PromptResponse{}, err
	}
	return s.prompt(ctx, p.Prompt)
}

func (a *agent) Cancel(_ context.Context, p sdk.CancelNotification) error {
	// The SDK has already cancelled the prompt's context; this also covers a turn that
	// runs for a prompt this connection did not send (a teammate's report).
	if s, err := a.session(string(p.SessionId)); err == nil {
		s.cancelTurn()
	}
	return nil
}

func (a *agent) SetSessionMode(_ context.Context, p sdk.SetSessionModeRequest) (sdk.SetSessionModeResponse, error) {
	s, err := a.session(string(p.SessionId))
	if err != nil {
		return sdk.SetSessionModeResponse{}, err
	}
	return sdk.SetSessionModeResponse{}, s.setMode(string(p.ModeId))
}

func (a *agent) SetSessionConfigOption(_ context.Context, p sdk.SetSessionConfigOptionRequest) (sdk.SetSessionConfigOptionResponse, error) {
	var id, value string
	switch {
	case p.ValueId != nil:
		id, value = string(p.ValueId.ConfigId), string(p.ValueId.Value)
		s, err := a.session(string(p.ValueId.SessionId))
		if err != nil {
			return sdk.SetSessionConfigOptionResponse{}, err
		}
		if err := s.setOption(id, value); err != nil {
			return sdk.SetSessionConfigOptionResponse{}, err
		}
		return sdk.SetSessionConfigOptionResponse{ConfigOptions: s.configOptions()}, nil
	case p.Boolean != nil:
		return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("config option %q is not a boolean", p.Boolean.ConfigId)})
	}
	return sdk.SetSessionConfigOptionResponse{}, sdk.NewInvalidParams(map[string]any{"error": "configId and value are required"})
}

func (a *agent) UnstableSetSessionModel(_ context.Context, p sdk.UnstableSetSessionModelRequest) (sdk.UnstableSetSessionModelResponse, error) {
	s, err := a.session(string(p.SessionId))
	if err != nil {
		return sdk.UnstableSetSessionModelResponse{}, err
	}
	return sdk.UnstableSetSessionModelResponse{}, s.setOption(optionModel, string(p.ModelId))
}

func (a *agent) session(id string) (*session, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	s := a.sessions[id]
	if s == nil {
		return nil, notFound(id)
	}
	return s, nil
}

func notFound(id string) error {
	return &sdk.RequestError{Code: -32002, Message: "Resource not found", Data: map[string]any{"error": fmt.Sprintf("no session %q is open on this connection", id)}}
}

// absolute refuses a relative path from the client, which has no working directory keel
// could resolve it against.
func absolute(field, path string) error {
	if !filepath.IsAbs(path) {
		return sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("%s must be an absolute path, not %q", field, path)})
	}
	return nil
}

// openRequest is what session/new, load, resume and fork have in common.
type openRequest struct {
	cwd    string
	dirs   []string
	mcp    []sdk.McpServer
	resume string
	fork   bool
}

// open starts a keel session for the client and registers it.
func (a *agent) open(ctx context.Context, r openRequest) (*session, error) {
	if err := absolute("cwd", r.cwd); err != nil {
		return nil, err
	}
	for _, d := range r.dirs {
		if err := absolute("additionalDirectories", d); err != nil {
			return nil, err
		}
	}
	mcpConfig, err := mcpConfig(r.mcp)
	if err != nil {
		return nil, err
	}
	a.mu.Lock()
	if a.stopped {
		a.mu.Unlock()
		return nil, errors.New("keel is shutting down")
	}
	caps := a.caps
	if r.resume != "" && a.sessions[r.resume] != nil && !r.fork {
		a.mu.Unlock()
		return nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("session %q is already open on this connection", r.resume)})
	}
	a.mu.Unlock()

	s := &session{a: a, caps: caps, cwd: r.cwd}
	opts := a.cfg.Options
	opts.Cwd, opts.Resume, opts.ForkSession = r.cwd, r.resume, r.fork
	opts.AddDirs = append(append([]string(nil), opts.AddDirs...), r.dirs...)
	if mcpConfig != "" {
		opts.MCPConfig = append(append([]string(nil), opts.MCPConfig...), mcpConfig)
	}
	opts.Ask = s.ask
	ks, err := keel.New(ctx, opts)
	if err != nil {
		if strings.Contains(err.Error(), "API key") {
			return nil, authRequired()
		}
		if r.resume != "" {
			return nil, &sdk.RequestError{Code: -32002, Message: "Resource not found", Data: map[string]any{"error": err.Error()}}
		}
		return nil, fmt.Errorf("open a keel session in %s: %w", r.cwd, err)
	}
	s.init(ks)
	a.mu.Lock()
	a.sessions[s.id] = s
	a.mu.Unlock()
	return s, nil
}
