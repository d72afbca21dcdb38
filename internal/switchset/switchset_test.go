package switchset

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/effort"
	"github.com/keel-dev/keel/internal/hooks"
	"github.com/keel-dev/keel/internal/models"
	"github.com/keel-dev/keel/internal/outputstyle"
	"github.com/keel-dev/keel/internal/prompt"
)

// runner answers the model-switch hooks with pre and post, and keeps what each was told.
type runner struct {
	pre, post hooks.Outcome
	told      []hooks.Input
}

func (r *runner) Run(_ context.Context, ev hooks.Event, in hooks.Input) hooks.Outcome {
	r.told = append(r.told, in)
	if ev == hooks.PreModelSwitch {
		return r.pre
	}
	return r.post
}

func TestModelFollowsPlanMode(t *testing.T) {
	planning := true
	w := New(Config{Model: "sonnet-x", PlanModel: "opus-x", Planning: func() bool { return planning }})
	if got := w.Model(); got != "opus-x" {
		t.Errorf("planning: model %q, want the plan model", got)
	}
	planning = false
	if got := w.Model(); got != "sonnet-x" {
		t.Errorf("not planning: model %q", got)
	}
	planning = true
	w.SetBase("haiku-x")
	if got, base := w.Model(), w.Base(); got != "opus-x" || base != "haiku-x" {
		t.Errorf("after SetBase: model %q, base %q; the plan model should stay", got, base)
	}
	w.SetModel("other")
	if got := w.Model(); got != "other" {
		t.Errorf("after SetModel while planning: model %q; SetModel ends the plan switching", got)
	}
}

func TestContextWindow(t *testing.T) {
	cat := models.Builtins()
	id := cat.Resolve("sonnet")
	var forced int64
	w := New(Config{Model: id, Window: func() int64 { return forced }})
	if got, want := w.ContextWindow(), cat.ContextWindow(id); got != want || got == 0 {
		t.Errorf("window %d, want the catalog's %d", got, want)
	}
	forced = 12_345
	if got := w.ContextWindow(); got != forced {
		t.Errorf("window %d, want the forced %d", got, forced)
	}
}

func TestSwitchModelHooks(t *testing.T) {
	r := &runner{pre: hooks.Outcome{Decision: hooks.DecisionBlock, Reason: "too dear"}}
	var added []string
	w := New(Config{Model: "a", Hooks: r, CacheWarm: func() bool { return true }, ContextTokens: func() int64 { return 42 },
		Cwd:        func() string { return "/project" },
		HookInput:  func(cwd string, in hooks.Input) hooks.Input { in.Cwd = cwd; return in },
		AddContext: func(c []string) { added = append(added, c...) }})
	err := w.SwitchModel(t.Context(), "b", "set_model")
	if err == nil || !strings.Contains(err.Error(), "too dear") || w.Model() != "a" {
		t.Fatalf("refused switch: %v, model %q", err, w.Model())
	}
	r.pre, r.post = hooks.Outcome{}, hooks.Outcome{AdditionalContext: []string{"now on b"}}
	if err := w.SwitchModel(t.Context(), "b", "set_model"); err != nil || w.Model() != "b" {
		t.Fatalf("switch: %v, model %q", err, w.Model())
	}
	if !slices.Equal(added, []string{"now on b"}) {
		t.Errorf("context added %v", added)
	}
	in := r.told[len(r.told)-1]
	if in.Cwd != "/project" || in.Source != "set_model" || in.Extra["from_model"] != "a" || in.Extra["to_model"] != "b" ||
		in.Extra["context_tokens"] != int64(42) || in.Extra["prompt_cache_warm"] != true {
		t.Errorf("hook input %+v", in)
	}
}

func TestEffortAndThinking(t *testing.T) {
	w := New(Config{})
	if w.Thinking() != nil {
		t.Fatal("thinking on without being set")
	}
	if err := w.SetEffort("high"); err != nil {
		t.Fatal(err)
	}
	want, _ := effort.Budget("high")
	if th := w.Thinking(); th == nil || th.BudgetTokens != want {
		t.Errorf("thinking after effort high: %+v, want %d", th, want)
	}
	if err := w.SetEffort("enormous"); err == nil || w.Thinking().BudgetTokens != want {
		t.Errorf("a bad level: %v, thinking %+v", err, w.Thinking())
	}
	if err := w.SetEffort("off"); err != nil || w.Thinking() != nil {
		t.Errorf("effort off: %v, thinking %+v", err, w.Thinking())
	}
	w.SetMaxThinkingTokens(2048)
	if th := w.Thinking(); th == nil || th.BudgetTokens != 2048 {
		t.Errorf("thinking %+v", th)
	}
}

// styleFixture is switches over one style folder holding pirate, with the prompt each build
// put in place and the cache announcements.
type styleFixture struct {
	w         *Switches
	settings  string
	prompts   []prompt.Options
	announced []string
	busy      bool
}

func newStyleFixture(t *testing.T) *styleFixture {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "pirate.md"), []byte("---\ndescription: Arr\n---\nAnswer like a pirate.\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	f := &styleFixture{settings: filepath.Join(t.TempDir(), "settings.local.json")}
	f.w = New(Config{
		StyleDirs: []outputstyle.Dir{{Path: dir}}, LocalSettings: f.settings,
		PluginStyles: func() []outputstyle.Style { return []outputstyle.Style{{Name: "kit:terse", Prompt: "Be terse."}} },
		SetPrompt:    func(o prompt.Options) { f.prompts = append(f.prompts, o) },
		Acquire: func() (func(), error) {
			if f.busy {
				return nil, errors.New("busy")
			}
			return func() {}, nil
		},
		Announce: func(r string) { f.announced = append(f.announced, r) },
	})
	return f
}

func TestBuildPromptWithStyle(t *testing.T) {
	f := newStyleFixture(t)
	base := prompt.Options{SystemPrompt: "BASE"}
	if errs := f.w.BuildPrompt(base, "pirate", "settings.json"); len(errs) != 0 {
		t.Fatal(errs)
	}
	if o := f.prompts[0]; o.SystemPrompt != "BASE" || !strings.Contains(o.OutputStyle, "like a pirate") || f.w.OutputStyle() != "pirate" {
		t.Errorf("prompt %+v, style %q", o, f.w.OutputStyle())
	}
	errs := f.w.BuildPrompt(base, "shakespeare", "settings.json")
	if len(errs) != 1 || !strings.Contains(errs[0].Error(), `settings.json: outputStyle "shakespeare" is not one of`) {
		t.Errorf("problems %v", errs)
	}
	if o := f.prompts[1]; o.OutputStyle != "" || f.w.OutputStyle() != outputstyle.Default {
		t.Errorf("an unknown style: prompt %+v, style %q; want keel's own", o, f.w.OutputStyle())
	}
}

func TestSetOutputStyle(t *testing.T) {
	f := newStyleFixture(t)
	f.w.BuildPrompt(prompt.Options{SystemPrompt: "BASE"}, "default", "")
	if err := f.w.SetOutputStyle(t.Context(), "shakespeare"); err == nil || !strings.Contains(err.Error(), "kit:terse") {
		t.Errorf("an unknown style: %v; want the list, the plugins' among it", err)
	}
	f.busy = true
	if err := f.w.SetOutputStyle(t.Context(), "pirate"); err == nil || f.w.OutputStyle() != outputstyle.Default {
		t.Errorf("switching while busy: %v, style %q", err, f.w.OutputStyle())
	}
	f.busy = false
	if err := f.w.SetOutputStyle(t.Context(), "kit:terse"); err != nil {
		t.Fatal(err)
	}
	last := f.prompts[len(f.prompts)-1]
	if last.SystemPrompt != "BASE" || last.OutputStyle != "Be terse." || !slices.Equal(f.announced, []string{"output style"}) {
		t.Errorf("prompt %+v, announced %v", last, f.announced)
	}
	if b, err := os.ReadFile(f.settings); err != nil || !strings.Contains(string(b), `"outputStyle": "kit:terse"`) {
		t.Errorf("local settings %q, %v", b, err)
	}
	if err := f.w.SetOutputStyle(t.Context(), "default"); err != nil {
		t.Fatal(err)
	}
	if b, _ := os.ReadFile(f.settings); strings.Contains(string(b), "outputStyle") {
		t.Errorf("the default style is kept as the absence of the key: %s", b)
	}
}
