package mcphost

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// List writes `keel mcp list`: one line per server with its status, or JSON with asJSON.
func List(w io.Writer, status []ServerStatus, asJSON bool) error {
	if asJSON {
		if status == nil {
			status = []ServerStatus{}
		}
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		return enc.Encode(status)
	}
	if len(status) == 0 {
		_, err := fmt.Fprintln(w, "No MCP servers configured. Add one with `keel mcp add`.")
		return err
	}
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	for _, s := range status {
		state := string(s.Status)
		if s.Status == StatusConnected {
			state = fmt.Sprintf("connected (%d tools)", s.Tools)
		} else if s.Reason != "" {
			state += ": " + s.Reason
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\n", s.Name, s.Scope, s.Target, state)
	}
	return tw.Flush()
}

// Get writes `keel mcp get NAME`.
func Get(w io.Writer, cfg ServerConfig, st *ServerStatus) error {
	fmt.Fprintf(w, "%s:\n  Scope: %s (%s)\n  Type: %s\n", cfg.Name, cfg.Scope, cfg.File, cfg.Type)
	if cfg.Type == TypeStdio {
		fmt.Fprintf(w, "  Command: %s\n  Args: %s\n", cfg.Command, strings.Join(cfg.Args, " "))
		for _, k := range sortedKeys(cfg.Env) {
			fmt.Fprintf(w, "  Env: %s=%s\n", k, redact(cfg.Env[k]))
		}
	} else {
		fmt.Fprintf(w, "  URL: %s\n", cfg.URL)
		for _, k := range sortedKeys(cfg.Headers) {
			fmt.Fprintf(w, "  Header: %s: %s\n", k, redact(cfg.Headers[k]))
		}
	}
	if cfg.Disabled != "" {
		fmt.Fprintf(w, "  Disabled: %s\n", cfg.Disabled)
	}
	if st != nil {
		fmt.Fprintf(w, "  Status: %s", st.Status)
		if st.Reason != "" {
			fmt.Fprintf(w, " (%s)", st.Reason)
		}
		fmt.Fprintf(w, "\n  Tools: %d, prompts: %d, resources: %d\n", st.Tools, st.Prompts, st.Resources)
	}
	return nil
}

// redact hides secrets in output: values are shown only by length.
func redact(v string) string {
	if len(v) <= 4 {
		return "****"
	}
	return v[:2] + strings.Repeat("*", 6)
}

// ConfigFile returns the file a scope writes to. The local scope lives in $KEEL_HOME, keyed by
// project, so private entries never land in the repository.
func ConfigFile(scope Scope, home, projectDir string) (string, error) {
	switch scope {
	case ScopeUser:
		return filepath.Join(home, UserFile), nil
	case ScopeProject:
		return filepath.Join(projectDir, ProjectFile), nil
	case ScopeLocal:
		return filepath.Join(home, LocalFile), nil
	}
	return "", fmt.Errorf("scope %q is not one of local, project, user", scope)
}

// Add writes a server entry into the file of scope (`keel mcp add` and `keel mcp add-json`). An
// existing entry of that name in that scope is an error.
func Add(scope Scope, home, projectDir string, cfg ServerConfig) error {
	if p, ok := validate(&cfg); !ok {
		return fmt.Errorf("add %s: %s %s", cfg.Name, p.Path, p.Msg)
	}
	if p, ok := validateOAuth(&cfg); !ok {
		return fmt.Errorf("add %s: %s %s", cfg.Name, p.Path, p.Msg)
	}
	if cfg.Name == "" {
		return errors.New("add: the server needs a name")
	}
	return editServers(scope, home, projectDir, func(servers map[string]json.RawMessage) error {
		if _, ok := servers[cfg.Name]; ok {
			return fmt.Errorf("add %s: a server of that name exists in the %s scope; remove it first", cfg.Name, scope)
		}
		b, err := json.Marshal(cfg)
		if err != nil {
			return err
		}
		servers[cfg.Name] = b
		return nil
	})
}

// AddJSON adds a server from its JSON entry.
func AddJSON(scope Scope, home, projectDir, name, entry string) error {
	var cfg ServerConfig
	if err := json.Unmarshal([]byte(entry), &cfg); err != nil {
		return fmt.Errorf("add-json %s: %w", name, err)
	}
	cfg.Name = name
	return Add(scope, home, projectDir, cfg)
}

// Remove deletes the named server from the file of scope.
func Remove(scope Scope, home, projectDir, name string) error {
	return editServers(scope, home, projectDir, func(servers map[string]json.RawMessage) error {
		if _, ok := servers[name]; !ok {
			return fmt.Errorf("remove %s: no server of that name in the %s scope", name, scope)
		}
		delete(servers, name)
		return nil
	})
}

// editServers rewrites the mcpServers object of a scope's file, keeping its other keys.
func editServers(scope Scope, home, projectDir string, edit func(map[string]json.RawMessage) error) error {
	path, err := ConfigFile(scope, home, projectDir)
	if err != nil {
		return err
	}
	doc := map[string]json.RawMessage{}
	data, err := os.ReadFile(path)
	switch {
	case errors.Is(err, os.ErrNotExist):
	case err != nil:
		return err
	default:
		if err := json.Unmarshal(data, &doc); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
	}
	// holder is the object holding mcpServers: the file itself, or the project's entry.
	holder := doc
	var projects map[string]json.RawMessage
	key := projectKey(projectDir)
	if scope == ScopeLocal {
		projects = map[string]json.RawMessage{}
		if raw, ok := doc["projects"]; ok {
			if err := json.Unmarshal(raw, &projects); err != nil {
				return fmt.Errorf("%s: projects: %w", path, err)
			}
		}
		holder = map[string]json.RawMessage{}
		if raw, ok := projects[key]; ok {
			if err := json.Unmarshal(raw, &holder); err != nil {
				return fmt.Errorf("%s: projects.%s: %w", path, key, err)
			}
		}
	}
	servers := map[string]json.RawMessage{}
	if raw, ok := holder["mcpServers"]; ok {
		if err := json.Unmarshal(raw, &servers); err != nil {
			return fmt.Errorf("%s: mcpServers: %w", path, err)
		}
	}
	if err := edit(servers); err != nil {
		return err
	}
	holder["mcpServers"], _ = json.Marshal(servers)
	if scope == ScopeLocal {
		projects[key], _ = json.Marshal(holder)
		doc["projects"], _ = json.Marshal(projects)
	}
	out, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return err
	}
	perm := os.FileMode(0o644)
	if scope != ScopeProject {
		perm = 0o600 // entries in $KEEL_HOME may carry tokens
	}
	return atomicfile.WriteFile(path, append(out, '\n'), perm)
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
