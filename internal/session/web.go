package session

import (
	"fmt"
	"os"
	"strings"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/webfetch"
	"github.com/keel-dev/keel/internal/websearch"
)

// webTools configures WebFetch and WebSearch: pages are read by the small model, searches go
// to the backend settings name (or the provider's own search).
func (s *Session) webTools(opts *builtin.Options) {
	opts.Fetcher = webfetch.New(webfetch.Options{Logger: s.logger})
	opts.Reader = builtin.ModelReader{Provider: s.opts.Provider, Model: s.smallModel, Usage: s.helperUsed}
	opts.Search = s.searchBackend()
}

// smallModel is the model helpers such as WebFetch ask: the provider's helper model (the
// haiku-class one on the Anthropic API), else the session's own (an OpenAI-compatible server
// has none).
func (s *Session) smallModel() string {
	if m := provider.HelperModel(s.opts.Provider); m != "" {
		return m
	}
	return s.Model()
}

// searchBackend picks WebSearch's backend from the webSearch settings; nil means off.
// Settings from the project itself are used only once the workspace is trusted: they could
// send the user's queries — and keys from the environment — anywhere.
func (s *Session) searchBackend() websearch.Backend {
	ws := s.settings.WebSearch
	for _, v := range []settings.Origin{ws.Backend.From, ws.URL.From, ws.APIKey.From} {
		if v.Scope.ProjectProvided() && !s.trusted() {
			s.notices = append(s.notices, event.Notice{Level: "warn",
				Text: fmt.Sprintf("webSearch in %s is ignored until this workspace is trusted (keel trust)", v.Path)})
			ws = settings.WebSearch{}
			break
		}
	}
	server := func() websearch.Backend {
		return &websearch.Server{Provider: s.opts.Provider, Model: s.Model, Usage: s.helperUsed}
	}
	native := provider.SupportsServerWebSearch(s.opts.Provider)
	switch kind := ws.Backend.V; kind {
	case "", "auto":
		if native {
			return server()
		}
		return nil
	case "off":
		return nil
	case "anthropic":
		if native {
			return server()
		}
		s.notices = append(s.notices, event.Notice{Level: "warn",
			Text: fmt.Sprintf("webSearch.backend is anthropic (%s), but this provider has no server-side web search; WebSearch is off", ws.Backend.From)})
		return nil
	default:
		env := s.environ()
		expand := func(v string) string {
			out, missing := mcphost.Expand(v, env)
			if len(missing) > 0 {
				s.notices = append(s.notices, event.Notice{Level: "warn",
					Text: fmt.Sprintf("webSearch: %s is not set in the environment", strings.Join(missing, ", "))})
			}
			return out
		}
		return &websearch.Service{Kind: kind, URL: expand(ws.URL.V), APIKey: expand(string(ws.APIKey.V)), MaxResults: int(ws.MaxResults.V)}
	}
}

// environ is the environment ${VAR} references in settings expand from.
func (s *Session) environ() map[string]string {
	list := s.opts.MCP.Environ
	if list == nil {
		list = os.Environ()
	}
	env := map[string]string{}
	for _, kv := range list {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	return env
}
