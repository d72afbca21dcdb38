package mcphost

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestParsePlugin(t *testing.T) {
	env := map[string]string{"CLAUDE_PLUGIN_ROOT": "/plug", "TOKEN": "t"}
	tests := []struct {
		name, doc string
		want      []string
		problems  []string
	}{
		{"wrapped", `{"mcpServers": {"srv": {"command": "${CLAUDE_PLUGIN_ROOT}/bin/srv", "args": ["--cwd", "${CLAUDE_PLUGIN_ROOT}"]}}}`,
			[]string{"plugin_p_srv stdio /plug/bin/srv [--cwd /plug]"}, nil},
		{"bare map", `{"web": {"type": "http", "url": "https://example.com/mcp?t=${TOKEN}"}, "metadata": "v1"}`,
			[]string{"plugin_p_web http https://example.com/mcp?t=t"}, []string{"x.json: metadata: is not a server object (ignored)"}},
		{"missing variable", `{"mcpServers": {"k": {"command": "run", "env": {"KEY": "${user_config.key}"}}}}`,
			[]string{"plugin_p_k stdio run []"}, []string{"x.json: mcpServers.k: environment variables not set and without default: user_config.key"}},
		{"bad server", `{"mcpServers": {"b": {"type": "ws", "url": "x"}}}`,
			nil, []string{`x.json: mcpServers.b.type: "ws" is not one of stdio, http, sse`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			servers, problems := ParsePlugin("p", "x.json", []byte(tt.doc), env)
			var got []string
			for _, s := range servers {
				target := s.Command + " [" + strings.Join(s.Args, " ") + "]"
				if s.Type != TypeStdio {
					target = s.URL
				}
				if s.Scope != ScopePlugin {
					t.Errorf("%s scope = %s", s.Name, s.Scope)
				}
				got = append(got, s.Name+" "+s.Type+" "+target)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("servers mismatch (-want +got):\n%s", diff)
			}
			var probs []string
			for _, p := range problems {
				probs = append(probs, p.Error())
			}
			if diff := cmp.Diff(tt.problems, probs); diff != "" {
				t.Errorf("problems mismatch (-want +got):\n%s", diff)
			}
		})
	}
	cfg := Load(LoadOptions{Strict: true, Plugins: []ServerConfig{{Name: "plugin_p_x", Type: TypeStdio, Command: "x", Scope: ScopePlugin}}})
	if _, ok := cfg.Server("plugin_p_x"); !ok {
		t.Error("Load dropped a plugin server")
	}
}
