package session

import (
	"fmt"
	"log/slog"
	"os"
	"strings"

	"github.com/keel-dev/keel/internal/builtin"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/mcphost"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/webfetch"
	"github.com/keel-dev/keel/internal/websearch"
)

// webSetup is what WebFetch and WebSearch are built from: pages are read by the small model,
// searches go to the backend settings name (or the provider's own search).
type webSetup struct {
	provider provider.Provider
	// model is the session's current model.
	model func() string
	// usage counts what the helpers' requests cost.
	usage   func(model string, u message.Usage)
	search  settings.WebSearch
	trusted bool
	environ []string // nil: keel's own
	// webBinary is keel-web's path; empty finds it ([webfetch.Companion]).
	webBinary string
	logger    *slog.Logger
	notices   []event.Notice
}

// newWebSetup is s's web setup.
func newWebSetup(s *Session) *webSetup {
	return &webSetup{provider: s.opts.Provider, model: s.switches.Model, usage: s.acct.helperUsed, search: s.settings.WebSearch,
		trusted: s.conf.trusted(), environ: s.opts.MCP.Environ, webBinary: s.opts.WebBinary, logger: s.logger}
}

// configure fills in opts' web tools; the notices say what settings were ignored.
func (w *webSetup) configure(opts *builtin.Options) []event.Notice {
	opts.Fetcher = webfetch.New(webfetch.Options{Logger: w.logger, Converter: &webfetch.Companion{Path: w.webBinary}})
	opts.Reader = builtin.ModelReader{Provider: w.provider, Model: w.smallModel, Usage: w.usage}
	opts.Search = w.searchBackend()
	return w.notices
}

// smallModel is the model helpers such as WebFetch ask: the provider's helper model (the
// haiku-class one on the Anthropic API), else the session's own (an OpenAI-compatible server
// has none).
func (w *webSetup) smallModel() string {
	if m := provider.HelperModel(w.provider); m != "" {
		return m
	}
	return w.model()
}

func (w *webSetup) warn(format string, args ...any) {
	w.notices = append(w.notices, event.Notice{Level: "warn", Text: fmt.Sprintf(format, args...)})
}

// searchBackend picks WebSearch's backend from the webSearch settings; nil means off.
// Settings from the project itself are used only once the workspace is trusted: they could
// send the user's queries — and keys from the environment — anywhere.
func (w *webSetup) searchBackend() websearch.Backend {
	ws := w.search
	for _, v := range []settings.Origin{ws.Backend.From, ws.URL.From, ws.APIKey.From} {
		if v.Scope.ProjectProvided() && !w.trusted {
			w.warn("webSearch in %s is ignored until this workspace is trusted (keel trust)", v.Path)
			ws = settings.WebSearch{}
			break
		}
	}
	server := func() websearch.Backend {
		return &websearch.Server{Provider: w.provider, Model: w.model, Usage: w.usage}
	}
	native := provider.SupportsServerWebSearch(w.provider)
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
		w.warn("webSearch.backend is anthropic (%s), but this provider has no server-side web search; WebSearch is off", ws.Backend.From)
		return nil
	default:
		env := environMap(w.environ)
		expand := func(v string) string {
			out, missing := mcphost.Expand(v, env)
			if len(missing) > 0 {
				w.warn("webSearch: %s is not set in the environment", strings.Join(missing, ", "))
			}
			return out
		}
		return &websearch.Service{Kind: kind, URL: expand(ws.URL.V), APIKey: expand(string(ws.APIKey.V)), MaxResults: int(ws.MaxResults.V)}
	}
}

// environMap is the environment ${VAR} references in settings expand from: list, or keel's
// own when list is nil.
func environMap(list []string) map[string]string {
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
