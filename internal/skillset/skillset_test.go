package skillset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/skill"
)

// fakeHooks answers each hook event with the outcome decide gives, and records the inputs.
type fakeHooks struct {
	decide func(ev hooks.Event, in hooks.Input) hooks.Outcome
	mu     sync.Mutex
	ran    []hooks.Event
}

func (h *fakeHooks) Run(_ context.Context, ev hooks.Event, in hooks.Input) hooks.Outcome {
	h.mu.Lock()
	h.ran = append(h.ran, ev)
	h.mu.Unlock()
	if h.decide == nil {
		return hooks.Outcome{}
	}
	return h.decide(ev, in)
}

// fixture is a project directory and a set over it.
type fixture struct {
	dir   string
	hooks *fakeHooks
	warns []string
}

func newFixture(t *testing.T, files map[string]string) *fixture {
	t.Helper()
	f := &fixture{dir: t.TempDir(), hooks: &fakeHooks{}}
	f.write(t, files)
	return f
}

func (f *fixture) write(t *testing.T, files map[string]string) {
	t.Helper()
	for name, body := range files {
		path := filepath.Join(f.dir, name)
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// config is a set over the project with the rules allow and deny, in default mode.
func (f *fixture) config(t *testing.T, allow, deny []string) Config {
	t.Helper()
	src := permission.Source{Name: "test", Dir: f.dir}
	a, errs := permission.ParseRules(allow, permission.Allow, src)
	d, errs2 := permission.ParseRules(deny, permission.Deny, src)
	if len(errs)+len(errs2) > 0 {
		t.Fatal(errs, errs2)
	}
	checker := permission.New(permission.Config{Policy: permission.Policy{
		Mode: permission.ModeDefault, Rules: append(a, d...), Dirs: []string{f.dir},
	}, Home: f.dir})
	return Config{
		Sources: func() skill.Options {
			return skill.Options{Cwd: f.dir, ProjectRoot: f.dir, NoBundled: true}
		},
		Checker: checker, Home: f.dir, RuleDir: f.dir,
		Hooks: f.hooks, Cwd: func() string { return f.dir },
		Warn: func(s string) { f.warns = append(f.warns, s) },
	}
}

func TestACommandExpandsWithItsArgumentsAndGrantsItsToolsForTheTurn(t *testing.T) {
	f := newFixture(t, map[string]string{
		".keel/commands/greet.md": "---\nallowed-tools: Bash(touch:*)\n---\nGreet $ARGUMENTS warmly.\n",
	})
	c := f.config(t, nil, nil)
	var source string
	c.Expanded = func(_ context.Context, prompt, text, src string) (string, error) {
		source = src
		return text + "\n\nHOOK-CONTEXT for " + prompt, nil
	}
	k := New(c)
	touch := permission.Request{Tool: "Bash", Command: "touch greeted.txt", Cwd: f.dir}
	if _, ok := k.Granted("", touch); ok {
		t.Fatal("a command's tools were granted before it was invoked")
	}
	text, ok, err := k.Expand(context.Background(), "/greet Ada Lovelace")
	if err != nil || !ok {
		t.Fatalf("Expand(/greet) = %q, %v, %v", text, ok, err)
	}
	if !strings.Contains(text, "Greet Ada Lovelace warmly.") {
		t.Errorf("expanded text %q lacks the arguments in place", text)
	}
	if !strings.Contains(text, "HOOK-CONTEXT for /greet Ada Lovelace") || source != string(skill.SourceProject) {
		t.Errorf("the expansion hook was not given the command (source %q): %q", source, text)
	}
	if d, ok := k.Granted("", touch); !ok || d.Behavior != permission.Allow {
		t.Errorf("during the turn the command's allowed-tools do not allow %q: %+v", touch.Command, d)
	}
	if _, ok := k.Granted("agent-1", touch); ok {
		t.Error("a /command's grant reached another agent")
	}
	k.EndTurn("")
	if _, ok := k.Granted("", touch); ok {
		t.Error("the grant outlived the turn")
	}
	if _, ok, err := k.Expand(context.Background(), "greet Ada"); ok || err != nil {
		t.Errorf("a prompt without / was taken as a command (ok %v, err %v)", ok, err)
	}
	if _, _, err := k.Expand(context.Background(), "/nosuchcommand"); err == nil || !strings.Contains(err.Error(), "nosuchcommand") {
		t.Errorf("unknown command: err %v, want one naming it", err)
	}
}

func TestShellLinesRunOnlyWhenTheRulesAllowThem(t *testing.T) {
	f := newFixture(t, map[string]string{
		".keel/commands/prep.md": "---\nallowed-tools: Bash(printf granted:*), Bash(printf denied:*)\n---\n" +
			"A: !`printf ruled-in`\nB: !`printf granted`\nC: !`printf denied`\nD: !`touch unasked`\nE: !`printf hooked`\n",
	})
	c := f.config(t, []string{"Bash(printf ruled-in)", "Bash(printf hooked)"}, []string{"Bash(printf denied:*)"})
	f.hooks.decide = func(ev hooks.Event, in hooks.Input) hooks.Outcome {
		if ev == hooks.PreSkillShellCommand && strings.Contains(string(in.ToolInput), "hooked") {
			return hooks.Outcome{Decision: hooks.DecisionBlock, Reason: "HOOK-REFUSED", SystemMessages: []string{"hook says no"}}
		}
		return hooks.Outcome{}
	}
	k := New(c)
	text, ok, err := k.Expand(context.Background(), "/prep")
	if err != nil || !ok {
		t.Fatalf("Expand(/prep) = %v, %v", ok, err)
	}
	for _, want := range []string{"A: ruled-in\n", "B: granted\n"} {
		if !strings.Contains(text, want) {
			t.Errorf("an allowed line did not run: no %q in\n%s", want, text)
		}
	}
	for _, refused := range []string{"printf denied", "touch unasked", "printf hooked"} {
		if !strings.Contains(text, "[shell command not run: "+refused+":") {
			t.Errorf("%q ran or was not reported refused:\n%s", refused, text)
		}
	}
	if !strings.Contains(text, "HOOK-REFUSED") || !slices.Contains(f.warns, "hook says no") {
		t.Errorf("the hook's refusal is not shown (warnings %q):\n%s", f.warns, text)
	}
	if _, err := os.Stat(filepath.Join(f.dir, "unasked")); err == nil {
		t.Error("a command no rule allows ran: nothing may ask for a skill's shell line")
	}
}

func TestReloadPicksUpANewSkillUnlessRefused(t *testing.T) {
	f := newFixture(t, map[string]string{".keel/commands/first.md": "First.\n"})
	c := f.config(t, nil, nil)
	reloaded := 0
	c.Reloaded = func() { reloaded++ }
	busy := true
	c.Acquire = func() (func(), error) {
		if busy {
			return nil, errors.New("busy")
		}
		return func() {}, nil
	}
	k := New(c)
	before := k.Catalog()
	f.write(t, map[string]string{".keel/skills/late/SKILL.md": "---\nname: late\ndescription: Came later.\n---\nLATE-BODY\n"})
	if err := k.Reload(context.Background()); err == nil || slices.Contains(k.Names(), "late") {
		t.Errorf("a reload while the session is busy: err %v, names %v", err, k.Names())
	}
	busy = false
	f.hooks.decide = func(ev hooks.Event, in hooks.Input) hooks.Outcome {
		if ev == hooks.ConfigChange && in.Source == "skills" {
			return hooks.Outcome{Decision: hooks.DecisionBlock, Reason: "frozen"}
		}
		return hooks.Outcome{}
	}
	if err := k.Reload(context.Background()); err == nil || !strings.Contains(err.Error(), "frozen") || slices.Contains(k.Names(), "late") {
		t.Errorf("a reload a ConfigChange hook refused: err %v, names %v", err, k.Names())
	}
	f.hooks.decide = nil
	if err := k.Reload(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(k.Names(), "late") || !slices.Contains(k.Names(), "first") {
		t.Errorf("after a reload the names are %v, want first and late", k.Names())
	}
	if reloaded != 1 {
		t.Errorf("Reloaded was told %d times, want once (the reload that happened)", reloaded)
	}
	if _, ok := before.Lookup("late"); ok {
		t.Error("the catalog subagents were built with changed: they keep the set they had")
	}
	if text, _, err := k.Expand(context.Background(), "/late"); err != nil || !strings.Contains(text, "LATE-BODY") {
		t.Errorf("/late after the reload: %q, %v", text, err)
	}
}

func TestRefreshChangesTheCatalogEveryAgentShares(t *testing.T) {
	f := newFixture(t, nil)
	k := New(f.config(t, nil, nil))
	shared := k.Catalog()
	f.write(t, map[string]string{".keel/commands/plugged.md": "Plugged.\n"})
	k.Refresh()
	if _, ok := shared.Lookup("plugged"); !ok || k.Catalog() != shared {
		t.Error("a refresh did not update the catalog in place")
	}
}

func TestTheListingHoldsWhatAUserCanInvoke(t *testing.T) {
	f := newFixture(t, map[string]string{
		".keel/commands/deploy.md":     "Deploy.\n",
		".keel/skills/style/SKILL.md":  "---\nname: style\ndescription: House style.\n---\nBody.\n",
		".keel/skills/inner/SKILL.md":  "---\nname: inner\ndescription: For the model only.\nuser-invocable: false\n---\nBody.\n",
		".keel/skills/spaced/SKILL.md": "---\nname: has space\ndescription: Named badly.\n---\nBody.\n",
	})
	k := New(f.config(t, nil, nil))
	var all []string
	for _, sk := range k.All() {
		all = append(all, sk.Name)
	}
	names := k.Names()
	slices.Sort(names)
	if want := []string{"deploy", "spaced", "style"}; !slices.Equal(names, want) {
		t.Errorf("Names() = %v, want %v (all: %v)", names, want, all)
	}
	if !slices.Contains(all, "inner") {
		t.Errorf("All() = %v lacks the model-only skill", all)
	}
	if len(f.warns) == 0 {
		t.Error("a skill's bad name was not reported")
	}
}

// forks is a fork runner that reports what it was asked.
type forks struct{ agent, prompt string }

func (r *forks) RunFork(_ context.Context, agentType, prompt string, _ []string, _ string) (string, error) {
	r.agent, r.prompt = agentType, prompt
	return "FORK-REPORT", nil
}

func TestAForkSkillRunsInASubagent(t *testing.T) {
	files := map[string]string{".keel/skills/survey/SKILL.md": "---\nname: survey\ndescription: Survey.\ncontext: fork\nagent: Explore\n---\nFORK-BODY $ARGUMENTS\n"}
	f := newFixture(t, files)
	if _, ok, err := New(f.config(t, nil, nil)).Expand(context.Background(), "/survey"); !ok || err == nil {
		t.Errorf("a fork skill without a runner: ok %v, err %v, want an error", ok, err)
	}
	c := f.config(t, nil, nil)
	r := &forks{}
	c.Forks = r
	text, ok, err := New(c).Expand(context.Background(), "/survey the docs")
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if r.agent != "Explore" || !strings.Contains(r.prompt, "FORK-BODY the docs") {
		t.Errorf("the subagent was asked as %q with %q", r.agent, r.prompt)
	}
	if !strings.Contains(text, "FORK-REPORT") || strings.Contains(text, "FORK-BODY") {
		t.Errorf("the prompt sent is %q, want the subagent's report and not the body", text)
	}
}
