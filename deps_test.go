package keel_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// TestDependencyRules holds the real import graph to keel's dependency rules: the layer table
// below (no arrow runs back up), the leaves, who may import the session and NATS, test
// packages for tests only, and what the keel binary and an embedder must not link.
func TestDependencyRules(t *testing.T) {
	const mod = "github.com/keel-dev/keel"
	out, err := exec.Command("go", "list", "-f", "{{.ImportPath}}|{{join .Imports \" \"}}|{{join .Deps \" \"}}", "./...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	type pkg struct{ imports, deps []string }
	pkgs := map[string]pkg{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		parts := strings.SplitN(sc.Text(), "|", 3)
		pkgs[parts[0]] = pkg{strings.Fields(parts[1]), strings.Fields(parts[2])}
	}
	rel := func(p string) string { return strings.TrimPrefix(strings.TrimPrefix(p, mod), "/") }
	hasPrefix := func(p string, prefixes ...string) bool {
		for _, x := range prefixes {
			if p == x || strings.HasPrefix(p, x+"/") {
				return true
			}
		}
		return false
	}
	uiLibraries := []string{"charm.land", "github.com/charmbracelet", "github.com/alecthomas/chroma"}
	terminalUI := append([]string{"github.com/spf13/cobra"}, uiLibraries...)
	for path, p := range pkgs {
		name := rel(path)
		for _, imp := range p.imports {
			internal := strings.HasPrefix(imp, mod)
			iname := rel(imp)
			if (name == "internal/message" || name == "internal/event") && internal && iname != "internal/message" {
				t.Errorf("%s imports %s: message and event are leaves", name, iname)
			}
			if name == "internal/session" && hasPrefix(iname, "internal/provider/anthropic", "internal/provider/openai") {
				t.Errorf("internal/session imports %s: a session knows providers by their capabilities (provider.NativeToolSearch, HelperModel), not their adapters", iname)
			}
			if iname == "internal/session" && internal && !(name == "" || hasPrefix(name, "internal/cli", "internal/daemon")) {
				t.Errorf("%s imports internal/session: only cli, daemon and the root package may", name)
			}
			if strings.HasPrefix(imp, "github.com/nats-io/") && !hasPrefix(name, "internal/coord/natscoord") {
				t.Errorf("%s imports %s: only natscoord and natstest may import NATS", name, imp)
			}
			// The building blocks of work that outlasts a prompt (scheduled jobs, fan-outs, the
			// shadow repository) declare what they need (cron.Runner, fanout.ItemRunner) and never
			// import the session, supervisor or agent code that consumes them.
			if hasPrefix(name, "internal/cron", "internal/fanout", "internal/shadow") && internal &&
				hasPrefix(iname, "internal/session", "internal/daemon", "internal/subagent", "internal/loop", "internal/cli") {
				t.Errorf("%s imports %s: it is consumed by that code, not the other way round", name, iname)
			}
			// A *test package may build on another (a conformance suite takes its time limits
			// from waittest): both are still for tests only.
			if internal && strings.HasSuffix(iname, "test") && strings.Contains(iname, "/") && !strings.HasSuffix(name, "test") {
				t.Errorf("%s imports %s outside a _test.go file: *test packages are for tests only", name, iname)
			}
		}
		// The keel binary stays free of the UI libraries: their start-up cost (syntax-highlighter
		// registries) would be paid by every headless run; keel-tui links them.
		if hasPrefix(name, "cmd/keel", "internal/cli") {
			for _, d := range p.deps {
				if hasPrefix(d, uiLibraries...) {
					t.Errorf("%s depends on %s: the UI belongs in keel-tui (internal/interactive)", name, d)
				}
			}
		}
		// Nor does it link the nats-server: every keel process would pay for its init and pages,
		// though only the supervisor runs one, in keel-nats.
		if (name == "" || hasPrefix(name, "cmd/keel", "internal/cli", "internal/daemon", "internal/coord/natscoord")) &&
			!hasPrefix(name, "internal/coord/natscoord/natsserver", "internal/coord/natscoord/natstest") {
			for _, d := range p.deps {
				if hasPrefix(d, "github.com/nats-io/nats-server") {
					t.Errorf("%s depends on %s: the embedded server belongs in keel-nats (natscoord/natsserver)", name, d)
					break
				}
			}
		}
		// Nor the NATS client (nats.go, jetstream, nkeys, jwt, its compression and gob): keel
		// reaches a team on NATS through `keel-nats coord` (coordpipe), so that every keel start
		// does not pay for their package init and pages.
		if (name == "" || hasPrefix(name, "cmd/keel", "cmd/keel-tui", "internal/cli", "internal/session", "internal/daemon",
			"internal/teamstore", "internal/teamopen", "internal/coord/coordpipe")) && !strings.HasSuffix(name, "test") {
			for _, d := range p.deps {
				if hasPrefix(d, "github.com/nats-io") {
					t.Errorf("%s depends on %s: keel reaches NATS through keel-nats coord (coordpipe); the client belongs in keel-nats", name, d)
					break
				}
			}
		}
		// Nor the OpenTelemetry SDK and its exporters (gRPC, protobuf registries, the
		// Prometheus client): their package init would cost every keel start, telemetry on or
		// off. keel-otel links them; keel only talks to it (internal/telemetry).
		if (name == "" || hasPrefix(name, "cmd/keel", "internal/cli", "internal/telemetry", "internal/dashboard")) &&
			!hasPrefix(name, "internal/telemetry/otelexport", "internal/telemetry/oteltest") {
			for _, d := range p.deps {
				if hasPrefix(d, "go.opentelemetry.io", "google.golang.org/grpc", "github.com/prometheus") {
					t.Errorf("%s depends on %s: the OpenTelemetry SDK belongs in keel-otel (internal/telemetry/otelexport)", name, d)
					break
				}
			}
		}
		// Nor the HTML → Markdown converter, the HTML parser and the charset indexes: their
		// package init would cost every keel start, and only WebFetch needs them. keel-web
		// links them (internal/webfetch/htmltext); keel only talks to it (webfetch.Companion).
		if (name == "" || hasPrefix(name, "cmd/keel", "internal/cli", "internal/session", "internal/builtin", "internal/webfetch")) &&
			!hasPrefix(name, "internal/webfetch/htmltext") {
			for _, d := range p.deps {
				if hasPrefix(d, "github.com/JohannesKaufmann", "golang.org/x/net/html") {
					t.Errorf("%s depends on %s: the HTML converter belongs in keel-web (internal/webfetch/htmltext)", name, d)
					break
				}
			}
		}
		if name == "" || hasPrefix(name, "internal/loop", "internal/provider", "internal/tool", "internal/coord", "internal/acp") {
			for _, d := range p.deps {
				if hasPrefix(d, terminalUI...) {
					t.Errorf("%s depends on %s: embedding keel must not pull in a terminal UI", name, d)
				}
			}
		}
	}
	if len(pkgs) < 5 {
		t.Fatalf("go list found only %d packages; the test is not looking at the module", len(pkgs))
	}
	imports := map[string][]string{}
	for path, p := range pkgs {
		imports[path] = p.imports
	}
	checkLayers(t, imports, rel)
}

// layers places every package of the module, lowest first; a package imports only packages
// of its own layer or a lower one, so no arrow runs back up. A new package gets a row here
// (the test fails until it has one). Test doubles and test tools are apart: they may import
// anything, and only tests import them.
var layers = []struct {
	name     string
	packages []string
}{
	{"leaves: types and helpers that import nothing of keel's", []string{"internal/message", "internal/effort", "internal/atomicfile",
		"internal/frontmatter", "internal/editdist", "internal/procgroup", "internal/companion", "internal/toolpath", "internal/browser", "internal/coord",
		"internal/coord/natscoord/natsserver", "internal/gitexec", "internal/egress", "internal/lazy", "internal/envvar", "internal/hostexec"}},
	{"vocabulary: events, tools, providers, settings, stores", []string{"internal/event", "internal/cost", "internal/provider",
		"internal/tool", "internal/models", "internal/settings", "internal/trust", "internal/snapshot", "internal/transcript",
		"internal/memory", "internal/permission", "internal/outputstyle", "internal/sandbox"}},
	{"capabilities: what an agent uses, and how runs are configured and shown", []string{"internal/provider/anthropic",
		"internal/provider/openai", "internal/provider/connect", "internal/provider/scripted", "internal/prompt", "internal/cachewatch",
		"internal/clearing",
		"internal/hooks", "internal/shell", "internal/lsp", "internal/webfetch", "internal/webfetch/htmltext", "internal/websearch", "internal/mcphost", "internal/skill",
		"internal/agentdef", "internal/background", "internal/worktree", "internal/toolsearch", "internal/builtin",
		"internal/coord/fscoord", "internal/coord/natscoord", "internal/coord/coordpipe", "internal/runconfig", "internal/render", "internal/mcpserve",
		"internal/settingsedit", "internal/plugin", "internal/telemetry", "internal/telemetry/otelexport", "internal/cron",
		"internal/fanout", "internal/shadow", "internal/toolgate", "internal/skillset", "internal/pluginset",
		"internal/switchset", "internal/undo", "internal/inspect", "internal/mainworktree"}},
	{"the engine: the loop every agent runs, and compaction", []string{"internal/loop", "internal/compact"}},
	{"agents: children, teams, where teams are kept and how a session opens its team and its transcript, fires its hooks and compacts its main thread", []string{"internal/subagent", "internal/team", "internal/teamstore",
		"internal/teamopen", "internal/sessionlog", "internal/sessionhooks", "internal/maincompact"}},
	{"composition: a session, and the supervisor that runs its agents beyond it", []string{"internal/session", "internal/daemon"}},
	{"frontends and the public API", []string{"", "keeltest", "internal/control", "internal/tui", "internal/interactive",
		"internal/cli", "internal/cli/demo", "internal/acp", "internal/dashboard"}},
	{"commands", []string{"cmd/keel", "cmd/keel-tui", "cmd/keel-nats", "cmd/keel-otel", "cmd/keel-sandbox", "cmd/keel-web", "scripts/costbench"}},
}

// testOnly are the packages for tests only (doubles, helpers, test commands): outside the
// layers.
var testOnly = []string{"internal/waittest", "internal/porttest", "internal/buildtest", "internal/gittest", "internal/goldentest", "internal/compattest",
	"internal/testreport", "internal/mcpconform", "internal/coord/coordtest", "internal/coord/natscoord/natstest",
	"internal/mcphost/mcptest", "internal/lsp/lsptest", "internal/telemetry/oteltest", "internal/swaptest"}

func checkLayers(t *testing.T, imports map[string][]string, rel func(string) string) {
	t.Helper()
	const mod = "github.com/keel-dev/keel"
	layer := map[string]int{}
	for i, l := range layers {
		for _, p := range l.packages {
			layer[p] = i
		}
	}
	for _, p := range testOnly {
		layer[p] = -1
	}
	for path, imps := range imports {
		name := rel(path)
		from, ok := layer[name]
		if !ok {
			t.Errorf("%q is in no layer of deps_test.go: give it a row", name)
			continue
		}
		if from < 0 {
			continue
		}
		for _, imp := range imps {
			if !strings.HasPrefix(imp, mod) {
				continue
			}
			to, ok := layer[rel(imp)]
			if ok && to > from {
				t.Errorf("%s (%s) imports %s (%s): an arrow back up", name, layers[from].name, rel(imp), layers[to].name)
			}
		}
	}
}
