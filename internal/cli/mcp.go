package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/keel-dev/keel/internal/browser"
	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/mcpserve"
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/skill"
	"github.com/keel-dev/keel/internal/tool"
)

// mcpFlags are the run flags about MCP servers.
type mcpFlags struct {
	configs              []string
	strict               bool
	toolSearch           string
	permissionPromptTool string
}

func (f *mcpFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.StringArrayVar(&f.configs, "mcp-config", nil, "MCP servers from JSON files or JSON texts ({\"mcpServers\":{…}}; takes every argument up to the next flag)")
	fl.BoolVar(&f.strict, "strict-mcp-config", false, "use only the servers of --mcp-config")
	fl.StringVar(&f.toolSearch, "tool-search", "auto", "defer MCP tool schemas behind ToolSearch: on, off or auto")
	fl.StringVar(&f.permissionPromptTool, "permission-prompt-tool", "", "MCP tool (mcp__server__tool) that answers permission questions")
}

// mcpOptions turns flags and the MCP_* environment into the MCP options of `keel mcp`.
func (a *app) mcpOptions(f *mcpFlags) (session.MCPOptions, error) {
	if err := a.env.Check(runconfig.MCPKeys...); err != nil {
		return session.MCPOptions{}, usageError{err}
	}
	return session.MCPOptions{Configs: f.configs, Strict: f.strict, ToolSearch: f.toolSearch,
		ConnectTimeout: a.env.MCPConnectTimeout, ToolTimeout: a.env.MCPToolTimeout, MaxOutputTokens: a.env.MCPMaxOutputTokens,
		ClientSecret: a.env.MCPClientSecret}, nil
}

// mcpCommand is `keel mcp`: the MCP servers configured for this directory.
func (a *app) mcpCommand() *cobra.Command {
	cmd := &cobra.Command{Use: "mcp", Short: "configure and inspect MCP servers"}
	cmd.AddCommand(a.mcpListCmd(), a.mcpGetCmd(), a.mcpReconnectCmd(), a.mcpLoginCmd(),
		a.mcpAddCommand(), a.mcpAddJSONCommand(), a.mcpRemoveCommand(), a.mcpServeCommand())
	return cmd
}

// mcpOpen connects the servers configured for this directory (and the flags'); nil when none
// is. Problems go to stderr.
func (a *app) mcpOpen(ctx context.Context, f *mcpFlags) (*mcphost.Manager, error) {
	cwd, root, err := workDirs()
	if err != nil {
		return nil, err
	}
	o, err := a.mcpOptions(f)
	if err != nil {
		return nil, err
	}
	st, _ := settings.Load(settings.Options{Env: settings.Env{Home: a.env.Home}, ProjectDir: root})
	m, notices := session.OpenMCP(ctx, o, session.MCPSetup{Home: a.env.Home, ProjectDir: root, Cwd: cwd, Settings: st, Version: Version,
		Plugins: a.sessionPlugins(ctx, cwd, root).MCPServers()})
	for _, n := range notices {
		fmt.Fprintf(a.std.Err, "%s: %s\n", n.Level, n.Text)
	}
	return m, nil
}

// mcpOpenNamed connects the servers when name is among them.
func (a *app) mcpOpenNamed(ctx context.Context, f *mcpFlags, name string) (*mcphost.Manager, error) {
	m, err := a.mcpOpen(ctx, f)
	if err != nil {
		return nil, err
	}
	if m == nil {
		return nil, fmt.Errorf("no MCP server named %q is configured", name)
	}
	return m, nil
}

// mcpServerOptions are what the `keel mcp` commands about configured servers take.
type mcpServerOptions struct {
	mcpFlags
	// Name is the server the command is about; JSON prints JSON (list).
	Name string
	JSON bool
}

// mcpServerCmd builds one of those commands: flags registered, the server's name taken from
// the arguments when it has one.
func (a *app) mcpServerCmd(cmd *cobra.Command, run func(context.Context, *mcpServerOptions) error) *cobra.Command {
	opts := &mcpServerOptions{}
	opts.register(cmd)
	cmd.RunE = func(cmd *cobra.Command, args []string) error {
		if len(args) > 0 {
			opts.Name = args[0]
		}
		return run(cmd.Context(), opts)
	}
	if cmd.Use == "list" {
		cmd.Flags().BoolVar(&opts.JSON, "json", false, "print JSON")
	}
	return cmd
}

func (a *app) mcpListCmd() *cobra.Command {
	return a.mcpServerCmd(&cobra.Command{Use: "list", Short: "every configured server and its status", Args: cobra.NoArgs}, a.runMCPList)
}

func (a *app) runMCPList(ctx context.Context, opts *mcpServerOptions) error {
	m, err := a.mcpOpen(ctx, &opts.mcpFlags)
	if err != nil {
		return err
	}
	var status []mcphost.ServerStatus
	if m != nil {
		defer m.Close()
		status = m.Status()
	}
	return mcphost.List(a.std.Out, status, opts.JSON)
}

func (a *app) mcpGetCmd() *cobra.Command {
	return a.mcpServerCmd(&cobra.Command{Use: "get NAME", Short: "one server's configuration and status", Args: cobra.ExactArgs(1)}, a.runMCPGet)
}

func (a *app) runMCPGet(ctx context.Context, opts *mcpServerOptions) error {
	m, err := a.mcpOpenNamed(ctx, &opts.mcpFlags, opts.Name)
	if err != nil {
		return err
	}
	defer m.Close()
	for _, st := range m.Status() {
		if st.Name == opts.Name {
			_, root, _ := workDirs()
			cfg := mcphost.Load(mcphost.LoadOptions{Home: a.env.Home, ProjectDir: root, CLIConfigs: opts.configs, Strict: opts.strict})
			c, _ := cfg.Server(opts.Name)
			return mcphost.Get(a.std.Out, c, &st)
		}
	}
	return fmt.Errorf("no MCP server named %q is configured", opts.Name)
}

func (a *app) mcpReconnectCmd() *cobra.Command {
	return a.mcpServerCmd(&cobra.Command{Use: "reconnect NAME", Short: "restart a server and show its status", Args: cobra.ExactArgs(1)}, a.runMCPReconnect)
}

func (a *app) runMCPReconnect(ctx context.Context, opts *mcpServerOptions) error {
	m, err := a.mcpOpenNamed(ctx, &opts.mcpFlags, opts.Name)
	if err != nil {
		return err
	}
	defer m.Close()
	if err := m.Reconnect(ctx, opts.Name); err != nil {
		return err
	}
	return mcphost.List(a.std.Out, m.Status(), false)
}

func (a *app) mcpLoginCmd() *cobra.Command {
	return a.mcpServerCmd(&cobra.Command{Use: "login NAME", Short: "authorize keel with an HTTP server that asks for OAuth", Args: cobra.ExactArgs(1),
		Long: `login runs the server's OAuth authorization once: it prints the authorization page's
address (and opens it with $BROWSER when that is set), waits for the browser to come back to
keel's loopback redirect, and stores the tokens under $KEEL_HOME. Scopes the server asked for
before (a step-up) are requested too.`}, a.runMCPLogin)
}

func (a *app) runMCPLogin(ctx context.Context, opts *mcpServerOptions) error {
	m, err := a.mcpOpenNamed(ctx, &opts.mcpFlags, opts.Name)
	if err != nil {
		return err
	}
	defer m.Close()
	authorize := func(_ context.Context, authURL string) error {
		fmt.Fprintf(a.std.Out, "Open this page to authorize keel with %s:\n\n  %s\n\nWaiting for the browser to come back…\n", opts.Name, authURL)
		return browser.Open(a.env.Browser, authURL)
	}
	err = m.Login(ctx, opts.Name, authorize)
	if errors.Is(err, mcphost.ErrNoAuthorizationAsked) {
		fmt.Fprintf(a.std.Out, "%s did not ask for authorization; it is connected\n", opts.Name)
		return nil
	}
	if err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "authorized; tokens are stored under %s\n", a.env.Home)
	return nil
}

func parseScope(s string) (mcphost.Scope, error) {
	switch s {
	case "local", "project", "user":
		return mcphost.Scope(s), nil
	}
	return "", usageError{fmt.Errorf("--scope %q is not one of local, project, user", s)}
}

func (a *app) mcpAddCommand() *cobra.Command {
	opts := &mcpAddOptions{}
	cmd := &cobra.Command{
		Use:   "add NAME [--scope local|project|user] [--transport stdio|http|sse] -- COMMAND [ARGS…] | URL",
		Short: "add a server",
		Args:  cobra.MinimumNArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name, opts.Target, opts.Args = args[0], args[1], args[2:]
			return a.runMCPAdd(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Scope, "scope", "local", "local (private to you, this project), project (.mcp.json) or user")
	cmd.Flags().StringVar(&opts.Transport, "transport", "stdio", "stdio, http or sse")
	cmd.Flags().StringArrayVarP(&opts.Env, "env", "e", nil, "environment variable KEY=value for a stdio server")
	cmd.Flags().StringArrayVarP(&opts.Headers, "header", "H", nil, "HTTP header 'Name: value'")
	cmd.Flags().StringVar(&opts.OAuth.ClientID, "client-id", "", "OAuth client ID registered with the server's authorization server (or the HTTPS URL of a client ID metadata document)")
	cmd.Flags().BoolVar(&opts.ClientSecret, "client-secret", false, "store the OAuth client secret given in MCP_CLIENT_SECRET (kept under the keel home, not in the config)")
	cmd.Flags().IntVar(&opts.OAuth.CallbackPort, "callback-port", 0, "fixed loopback port for the OAuth redirect (as registered with the client)")
	cmd.Flags().StringVar(&opts.OAuth.GrantType, "grant-type", "", "OAuth grant: authorization_code (default) or client_credentials (no user)")
	cmd.Flags().StringVar(&opts.OAuth.PrivateKeyFile, "private-key-file", "", "PEM private key for private_key_jwt client authentication")
	cmd.Flags().StringVar(&opts.OAuth.SigningAlgorithm, "signing-algorithm", "", "JWS algorithm of --private-key-file (default ES256)")
	return cmd
}

// mcpAddOptions are `keel mcp add`'s.
type mcpAddOptions struct {
	Scope, Transport string
	Env, Headers     []string
	OAuth            mcphost.OAuthConfig
	// ClientSecret stores MCP_CLIENT_SECRET as the server's OAuth client secret.
	ClientSecret bool
	// Name is the server's; Target its command (stdio) or URL; Args the command's arguments.
	Name, Target string
	Args         []string
}

func (a *app) runMCPAdd(_ context.Context, opts *mcpAddOptions) error {
	sc, err := parseScope(opts.Scope)
	if err != nil {
		return err
	}
	cfg, err := opts.server()
	if err != nil {
		return err
	}
	secret := a.env.MCPClientSecret
	if opts.ClientSecret && secret == "" {
		return usageError{fmt.Errorf("--client-secret reads the secret from MCP_CLIENT_SECRET, which is not set")}
	}
	_, root, _ := workDirs()
	if err := mcphost.Add(sc, a.env.Home, root, cfg); err != nil {
		return err
	}
	if opts.ClientSecret {
		// The secret stays out of the configuration file, which a project may commit.
		if err := mcphost.SaveClientSecret(a.env.Home, cfg, secret); err != nil {
			return err
		}
	}
	file, _ := mcphost.ConfigFile(sc, a.env.Home, root)
	fmt.Fprintf(a.std.Out, "added %s (%s) to %s\n", opts.Name, sc, file)
	return nil
}

// server is the configuration entry the options describe.
func (opts *mcpAddOptions) server() (mcphost.ServerConfig, error) {
	cfg := mcphost.ServerConfig{Name: opts.Name, Type: opts.Transport}
	switch opts.Transport {
	case "stdio":
		cfg.Command, cfg.Args = opts.Target, opts.Args
	case "http", "sse":
		cfg.URL = opts.Target
	default:
		return cfg, usageError{fmt.Errorf("--transport %q is not one of stdio, http, sse", opts.Transport)}
	}
	var err error
	if cfg.Env, err = keyValues(opts.Env, "="); err != nil {
		return cfg, err
	}
	if cfg.Headers, err = keyValues(opts.Headers, ":"); err != nil {
		return cfg, err
	}
	oauth := opts.OAuth
	if oauth.ClientID != "" || oauth.CallbackPort != 0 || oauth.GrantType != "" || oauth.PrivateKeyFile != "" || opts.ClientSecret {
		if oauth.ClientID == "" {
			return cfg, usageError{fmt.Errorf("--client-secret, --callback-port, --grant-type and --private-key-file need --client-id")}
		}
		cfg.OAuth = &oauth
	}
	return cfg, nil
}

func keyValues(pairs []string, sep string) (map[string]string, error) {
	if len(pairs) == 0 {
		return nil, nil
	}
	out := map[string]string{}
	for _, p := range pairs {
		k, v, ok := strings.Cut(p, sep)
		if !ok {
			return nil, usageError{fmt.Errorf("%q is not of the form KEY%sVALUE", p, sep)}
		}
		out[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return out, nil
}

func (a *app) mcpAddJSONCommand() *cobra.Command {
	opts := &mcpAddJSONOptions{}
	cmd := &cobra.Command{
		Use: "add-json NAME JSON", Short: "add a server from its JSON entry", Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name, opts.JSON = args[0], args[1]
			return a.runMCPAddJSON(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Scope, "scope", "local", "local, project or user")
	return cmd
}

// mcpAddJSONOptions are `keel mcp add-json`'s: the scope, the server's name and its entry.
type mcpAddJSONOptions struct{ Scope, Name, JSON string }

func (a *app) runMCPAddJSON(_ context.Context, opts *mcpAddJSONOptions) error {
	sc, err := parseScope(opts.Scope)
	if err != nil {
		return err
	}
	_, root, _ := workDirs()
	if err := mcphost.AddJSON(sc, a.env.Home, root, opts.Name, opts.JSON); err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "added %s (%s)\n", opts.Name, sc)
	return nil
}

func (a *app) mcpRemoveCommand() *cobra.Command {
	opts := &mcpRemoveOptions{}
	cmd := &cobra.Command{
		Use: "remove NAME", Short: "remove a server", Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			opts.Name = args[0]
			return a.runMCPRemove(cmd.Context(), opts)
		},
	}
	cmd.Flags().StringVar(&opts.Scope, "scope", "local", "local, project or user")
	return cmd
}

// mcpRemoveOptions are `keel mcp remove`'s: the scope and the server's name.
type mcpRemoveOptions struct{ Scope, Name string }

func (a *app) runMCPRemove(_ context.Context, opts *mcpRemoveOptions) error {
	sc, err := parseScope(opts.Scope)
	if err != nil {
		return err
	}
	_, root, _ := workDirs()
	if err := mcphost.Remove(sc, a.env.Home, root, opts.Name); err != nil {
		return err
	}
	fmt.Fprintf(a.std.Out, "removed %s (%s)\n", opts.Name, sc)
	return nil
}

// mcpServeCommand serves keel's built-in tools, skills and workspace files over MCP, on stdio
// or streamable HTTP, so other agents can use them. The caller's own permission system decides
// what runs; keel adds none here.
func (a *app) mcpServeCommand() *cobra.Command {
	opts := &mcpServeOptions{}
	cmd := &cobra.Command{
		Use: "serve [--http ADDR [--token-file FILE]]", Short: "serve keel's tools, skills and workspace files as an MCP server (stdio, or streamable HTTP)", Args: cobra.NoArgs,
		Long: `serve offers keel's built-in tools, its skills and custom commands (as prompts, whose
arguments complete to workspace paths) and the workspace's files (as file:// resources) to
another agent over MCP. Without --http it speaks over stdin and stdout. With --http ADDR it
serves streamable HTTP at http://ADDR/mcp: requests whose Host or Origin is not this machine
are refused, and an address beyond loopback needs --token-file, whose token every request
must carry as "Authorization: Bearer TOKEN".`,
		RunE: func(cmd *cobra.Command, _ []string) error { return a.runMCPServe(cmd.Context(), opts) },
	}
	cmd.Flags().StringVar(&opts.Addr, "http", "", "serve streamable HTTP on ADDR (e.g. 127.0.0.1:8080) instead of stdio")
	cmd.Flags().StringVar(&opts.TokenFile, "token-file", "", "require the bearer token in FILE on every HTTP request")
	return cmd
}

// mcpServeOptions are `keel mcp serve`'s: the HTTP address (empty: stdio) and token file.
type mcpServeOptions struct{ Addr, TokenFile string }

func (a *app) runMCPServe(ctx context.Context, opts *mcpServeOptions) error {
	cwd, err := os.Getwd()
	if err != nil {
		return err
	}
	jobs := shell.NewJobs()
	defer jobs.Close()
	files := tool.NewFileState()
	cat, _ := skill.Load(skill.Options{Cwd: cwd, Home: userHomeDir(), KeelHome: a.env.Home, NoBundled: true})
	srv := mcpserve.New(mcpserve.Options{Name: "keel", Version: Version,
		Tools: builtin.Tools(builtin.Options{Jobs: jobs}),
		Env: func() *tool.Env {
			return &tool.Env{State: tool.State{Cwd: cwd}, Files: files, Progress: func(string) {}, Logger: discardLogger()}
		},
		Prompts: skillPrompts{cat: cat, cwd: cwd}, Root: cwd})
	if opts.Addr == "" {
		if opts.TokenFile != "" {
			return usageError{fmt.Errorf("--token-file needs --http")}
		}
		return srv.Run(ctx, &mcp.StdioTransport{})
	}
	o := mcpserve.HTTPOptions{Addr: opts.Addr, Ready: func(url string) { fmt.Fprintf(a.std.Err, "keel mcp serve: listening on %s\n", url) }}
	if opts.TokenFile != "" {
		if o.Token, err = mcpserve.ReadTokenFile(opts.TokenFile); err != nil {
			return usageError{err}
		}
	}
	return mcpserve.ServeHTTP(ctx, srv, o)
}

// skillPrompts offers the user-invocable skills and custom commands as MCP prompts.
type skillPrompts struct {
	cat *skill.Catalog
	cwd string
}

func (p skillPrompts) Prompts() []mcpserve.Prompt {
	var out []mcpserve.Prompt
	for _, s := range p.cat.All() {
		if !s.UserInvocable || strings.HasPrefix(s.Name, "mcp__") {
			continue
		}
		out = append(out, mcpserve.Prompt{Name: s.Name, Description: s.Description, ArgumentHint: s.ArgumentHint})
	}
	return out
}

func (p skillPrompts) Render(ctx context.Context, name, args string) (string, error) {
	inv, err := p.cat.Invoke(ctx, name, args, skill.ByUser, p.cwd)
	if err != nil {
		return "", err
	}
	return inv.Text, nil
}
