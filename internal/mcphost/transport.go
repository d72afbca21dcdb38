package mcphost

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/keel-dev/keel/internal/hostexec"
)

// transport builds the SDK transport for the server's type.
func (c *conn) transport(ctx context.Context) (mcp.Transport, error) {
	switch c.cfg.Type {
	case TypeStdio:
		environ := c.m.opts.Environ
		if c.m.opts.Traceparent != nil {
			if tp := c.m.opts.Traceparent(); tp != "" {
				if environ == nil {
					environ = os.Environ()
				}
				environ = append(environ[:len(environ):len(environ)], "TRACEPARENT="+tp)
			}
		}
		return &stdioTransport{cfg: c.cfg, environ: environ, dir: c.m.opts.Dir, grace: c.m.opts.ShutdownGrace, logger: c.logger, confine: c.m.opts.Confine,
			onStart: func(p *process) {
				c.m.mu.Lock()
				c.proc = p
				c.m.mu.Unlock()
			}}, nil
	case TypeSDK:
		if c.tr != nil {
			return c.tr, nil
		}
		srv := c.m.opts.InProcess[c.cfg.Name]
		if srv == nil {
			return nil, fmt.Errorf("no in-process server called %s", c.cfg.Name)
		}
		ct, st := mcp.NewInMemoryTransports()
		if _, err := srv.Connect(ctx, st, nil); err != nil {
			return nil, fmt.Errorf("start in-process server: %w", err)
		}
		return ct, nil
	case TypeHTTP, TypeSSE:
		hc, err := httpClient(ctx, c.cfg, c.m.opts.Environ, c.m.opts.Dir)
		if err != nil {
			return nil, err
		}
		if c.cfg.Type == TypeSSE {
			return &mcp.SSEClientTransport{Endpoint: c.cfg.URL, HTTPClient: hc}, nil
		}
		return &mcp.StreamableClientTransport{Endpoint: c.cfg.URL, HTTPClient: hc, OAuthHandler: c.oauthHandler(hc), MaxRetries: 2}, nil
	}
	return nil, fmt.Errorf("transport type %q is not one of %s", c.cfg.Type, strings.Join(Types, ", "))
}

// httpClient returns a client that sends the server's headers, those of its headersHelper
// winning.
func httpClient(ctx context.Context, cfg ServerConfig, environ []string, dir string) (*http.Client, error) {
	headers := cfg.Headers
	if cfg.HeadersHelper != "" {
		h, err := runHeadersHelper(ctx, cfg, environ, dir)
		if err != nil {
			return nil, err
		}
		merged := map[string]string{}
		for k, v := range headers {
			merged[k] = v
		}
		for k, v := range h {
			merged[k] = v
		}
		headers = merged
	}
	return &http.Client{Transport: &headerTransport{headers: headers, base: http.DefaultTransport}, CheckRedirect: secureRedirect}, nil
}

// secureRedirect follows a redirect only to HTTPS, or to plain HTTP on this machine: a
// server, or its OAuth metadata, must not move keel (and the tokens it sends) to a plain
// connection elsewhere.
func secureRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return fmt.Errorf("stopped after 10 redirects")
	}
	if req.URL.Scheme != "https" && !(req.URL.Scheme == "http" && isLoopbackHost(req.URL.Hostname())) {
		return fmt.Errorf("refusing the redirect from %s to %s: not HTTPS", via[len(via)-1].URL, req.URL)
	}
	return nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// headerTransport adds configured headers to every request.
type headerTransport struct {
	headers map[string]string
	base    http.RoundTripper
}

func (t *headerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if len(t.headers) > 0 {
		r = r.Clone(r.Context())
		for k, v := range t.headers {
			r.Header.Set(k, v)
		}
	}
	return t.base.RoundTrip(r)
}

// runHeadersHelper runs the server's headersHelper command, whose stdout is a JSON object of
// headers. It runs only for servers that passed the trust gate.
func runHeadersHelper(ctx context.Context, cfg ServerConfig, environ []string, dir string) (map[string]string, error) {
	hctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := hostexec.Command(hctx, "sh", "-c", cfg.HeadersHelper)
	cmd.Dir = dir
	cmd.Env = hostexec.PythonEnv(append(append([]string{}, environ...), "KEEL_MCP_SERVER_NAME="+cfg.Name, "KEEL_MCP_SERVER_URL="+cfg.URL))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("headersHelper: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var h map[string]string
	if err := json.Unmarshal(out, &h); err != nil {
		return nil, fmt.Errorf("headersHelper: output is not a JSON object of strings: %w", err)
	}
	return h, nil
}

// clientOptions wires the server's notifications and requests to the manager. watched says
// the session's connection is a watchedConn, which already recorded list_changed.
func (c *conn) clientOptions(epoch int, watched bool) *mcp.ClientOptions {
	changed := func(kind listKind) {
		if !watched {
			c.changed(epoch, kind)
		}
		c.kickRelist()
	}
	opts := &mcp.ClientOptions{
		Logger: c.logger,
		// watchedConn marks the relist pending as the notification is read; these handlers,
		// which run after the SDK invalidated its list caches, start it.
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { changed(listTools) },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { changed(listPrompts) },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { changed(listResources) },
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			p := req.Params
			if f, ok := c.m.progress.Load(fmt.Sprint(p.ProgressToken)); ok {
				f.(func(string))(progressText(p))
			}
		},
		LoggingMessageHandler: func(_ context.Context, req *mcp.LoggingMessageRequest) {
			c.logger.Debug("mcp server log", "level", req.Params.Level, "data", req.Params.Data)
		},
	}
	if c.m.opts.Elicit != nil {
		// Setting the handler is what advertises the capability: only where someone answers.
		opts.ElicitationHandler = c.elicit
	}
	return opts
}

func progressText(p *mcp.ProgressNotificationParams) string {
	var b strings.Builder
	b.WriteString(p.Message)
	switch {
	case p.Total > 0:
		fmt.Fprintf(&b, " (%g/%g)", p.Progress, p.Total)
	default:
		fmt.Fprintf(&b, " (%g)", p.Progress)
	}
	return strings.TrimSpace(b.String())
}

// elicit passes a server's question to Options.Elicit. An accepted form without content
// gets an empty object, so the SDK fills in the schema's defaults.
func (c *conn) elicit(ctx context.Context, req *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
	res, err := c.m.opts.Elicit(ctx, c.cfg.Name, req.Params)
	if err != nil {
		c.logger.Info("mcp elicitation failed", "err", err)
		return nil, err
	}
	if res == nil {
		res = &mcp.ElicitResult{Action: "decline"}
	}
	if res.Action == "accept" && res.Content == nil && req.Params.Mode != "url" {
		res.Content = map[string]any{}
	}
	c.logger.Info("mcp elicitation answered", "action", res.Action)
	return res, nil
}
