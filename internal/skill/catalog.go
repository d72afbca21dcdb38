package skill

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/editdist"
)

// Catalog is the loaded set of skills and commands, plus the MCP prompts its PromptSource
// lists at the time of each call. It is safe for concurrent use; only [Catalog.Replace]
// changes it after [Load].
type Catalog struct {
	opts Options
	// mu guards byName.
	mu     sync.RWMutex
	byName map[string]*Skill
}

// Replace gives c the entries of other, loaded anew with the same options but other plugins
// (one was enabled or disabled): every holder of c — the Skill tool, /commands, subagents —
// sees them from then on.
func (c *Catalog) Replace(other *Catalog) {
	other.mu.RLock()
	byName := other.byName
	other.mu.RUnlock()
	c.mu.Lock()
	c.byName = byName
	c.mu.Unlock()
}

// Invoker says who invoked an entry; the rules differ (see [Catalog.Invoke]).
type Invoker int

// Invokers.
const (
	ByUser Invoker = iota
	ByModel
)

// Invocation is an entry expanded for one use.
type Invocation struct {
	Skill Skill
	Args  string
	// Text is the prompt: for an inline skill, what joins the current loop (as the user's
	// message for /name, as the Skill tool's result for the model); for a fork skill, the
	// subagent's task.
	Text string
	// Fork is set for context: fork; run Text through a [ForkRunner] (see [RunFork]).
	Fork bool
	// Shell lists the "!" commands met, run or denied.
	Shell []ShellRun
}

// All returns every entry, file-based ones and the MCP prompts listed now, in name order.
func (c *Catalog) All() []Skill {
	var out []Skill
	for _, s := range c.sorted() {
		out = append(out, *s)
	}
	out = append(out, c.mcpPrompts()...)
	slices.SortStableFunc(out, func(a, b Skill) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// Lookup finds an entry by name; a leading "/" is ignored. A plugin's entry is also found by
// its name without the plugin's namespace, while no other plugin has that name.
func (c *Catalog) Lookup(name string) (Skill, bool) {
	name = strings.TrimPrefix(strings.TrimSpace(name), "/")
	c.mu.RLock()
	found, ok := c.byName[name]
	c.mu.RUnlock()
	if ok {
		return *found, true
	}
	if s, ok := c.bareLookup(name); ok {
		return *s, true
	}
	if strings.HasPrefix(name, "mcp__") {
		for _, s := range c.mcpPrompts() {
			if s.Name == name {
				return s, true
			}
		}
	}
	return Skill{}, false
}

// Expand reads a user's input line. A line that is not "/name args" (no slash, or a path
// such as /usr/bin) gives ok false and the line goes to the model unchanged. An unknown
// /name is an error listing close matches.
func (c *Catalog) Expand(ctx context.Context, line string) (inv Invocation, ok bool, err error) {
	trimmed := strings.TrimSpace(line)
	rest, isCmd := strings.CutPrefix(trimmed, "/")
	if !isCmd {
		return Invocation{}, false, nil
	}
	name, args, _ := strings.Cut(rest, " ")
	if name == "" || strings.ContainsAny(name, "/\\\t\n") {
		return Invocation{}, false, nil
	}
	inv, err = c.Invoke(ctx, name, strings.TrimSpace(args), ByUser, c.opts.Cwd)
	return inv, true, err
}

// body reads s's text; a file is read as at discovery ([entryFiles]), so a file Refuse keeps
// from the model, or one swapped for a link to it since, is never read.
func (c *Catalog) body(s Skill) (string, error) {
	if !filepath.IsAbs(s.Path) {
		body, err := s.read()
		if err != nil {
			return "", fmt.Errorf("read skill %s: %w", s.Name, err)
		}
		return body, nil
	}
	data, err := c.opts.entries().read(s.Path)
	if err != nil {
		return "", fmt.Errorf("read skill %s: %w", s.Name, err)
	}
	return splitFile(s.Path, data).body, nil
}

// Invoke expands the entry name with args for one use. cwd is where shell commands run and
// @paths resolve. The model may not invoke an entry with disable-model-invocation (nor an MCP
// prompt); the user may not invoke one with user-invocable: false.
func (c *Catalog) Invoke(ctx context.Context, name, args string, by Invoker, cwd string) (Invocation, error) {
	s, ok := c.Lookup(name)
	if !ok {
		return Invocation{}, c.unknown(name, by)
	}
	switch {
	case by == ByModel && !s.ModelInvocable():
		return Invocation{}, fmt.Errorf("skill %s can only be invoked by the user (/%s)", s.Name, s.Name)
	case by == ByUser && !s.UserInvocable:
		return Invocation{}, fmt.Errorf("/%s is not user-invocable (user-invocable: false); the model loads it when relevant", s.Name)
	}
	inv := Invocation{Skill: s, Args: args, Fork: s.Context == ContextFork}
	if s.Kind == KindMCPPrompt {
		text, err := c.getPrompt(ctx, s, args)
		if err != nil {
			return Invocation{}, err
		}
		inv.Text = text
		return inv, nil
	}
	if s.Untrusted && !insideProject(c.opts.ProjectRoot, s.Path) {
		return Invocation{}, fmt.Errorf("skill %s: %s leads outside the project, and the workspace is not trusted (keel trust, or --trust)", s.Name, s.Path)
	}
	body, err := c.body(s)
	if err != nil {
		return Invocation{}, err
	}
	if cwd == "" {
		cwd = c.opts.Cwd
	}
	body = strings.TrimLeft(body, "\n")
	if s.pluginVars != nil {
		body = s.pluginVars.Replace(body)
	}
	e := &expander{opts: c.opts, cwd: cwd, allowed: s.Grants(), untrusted: s.Untrusted,
		origin: ShellCommand{Name: s.Name, Source: s.Source, By: by}}
	if by == ByModel {
		e.onlyRefs = authorRefs(body, s.Dir)
	}
	text := e.expand(ctx, Substitute(body, args, s.Dir))
	if s.Dir != "" {
		text = "Base directory for this skill: " + s.Dir + "\n" +
			"Files it mentions by relative path are in that directory.\n\n" + text
	}
	inv.Text = strings.TrimRight(text, "\n")
	inv.Shell = e.runs
	return inv, nil
}

// RunFork runs a fork invocation through runner: as the skill's agent (or [DefaultAgent]),
// with its allowed tools and model.
func RunFork(ctx context.Context, runner ForkRunner, inv Invocation) (string, error) {
	if runner == nil {
		return "", errors.New("fork skills need a subagent runner, and none is configured")
	}
	agent := cmp.Or(inv.Skill.Agent, DefaultAgent)
	model := inv.Skill.Model
	if model == "inherit" {
		model = ""
	}
	return runner.RunFork(ctx, agent, inv.Text, inv.Skill.Grants(), model)
}

// unknown builds the error for a name nobody defined, naming up to five close matches the
// invoker may use.
func (c *Catalog) unknown(name string, by Invoker) error {
	type cand struct {
		name string
		d    int
	}
	var cands []cand
	for _, s := range c.All() {
		if by == ByModel && !s.ModelInvocable() || by == ByUser && !s.UserInvocable {
			continue
		}
		d := editdist.Distance(strings.ToLower(name), strings.ToLower(s.Name))
		if d <= max(2, len(name)/3) || strings.Contains(s.Name, name) || strings.Contains(name, s.Name) {
			cands = append(cands, cand{s.Name, d})
		}
	}
	slices.SortFunc(cands, func(a, b cand) int { return cmp.Or(cmp.Compare(a.d, b.d), cmp.Compare(a.name, b.name)) })
	prefix := "/"
	if by == ByModel {
		prefix = ""
	}
	msg := fmt.Sprintf("unknown skill or command %s%s", prefix, name)
	if len(cands) == 0 {
		return errors.New(msg)
	}
	var names []string
	for _, c := range cands[:min(5, len(cands))] {
		names = append(names, prefix+c.name)
	}
	return fmt.Errorf("%s; did you mean %s?", msg, strings.Join(names, ", "))
}
