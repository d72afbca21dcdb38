package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/cachewatch"
	"github.com/keel-dev/keel/internal/event"
	"github.com/keel-dev/keel/internal/loop"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/settings"
	"github.com/keel-dev/keel/internal/trust"
)

// ProjectRoot is the nearest directory at or above dir holding .git, else dir itself.
func ProjectRoot(dir string) string {
	for d := dir; ; {
		if _, err := os.Stat(filepath.Join(d, ".git")); err == nil {
			return d
		}
		parent := filepath.Dir(d)
		if parent == d {
			return dir
		}
		d = parent
	}
}

// loadSettings reads every settings source; problems become notices. A file that cannot be
// read or parsed at all is an error unless Options.IgnoreSettingsErrors says to go on without
// it: its deny rules must never vanish silently. An untrusted workspace's own files may only
// narrow what keel may do (settings.Load applies trust.Decide itself).
func (c *configWiring) loadSettings() error {
	s := c.s
	st, _ := settings.Load(c.settingsOptions())
	s.settings = st
	if bad := st.Unreadable(); len(bad) > 0 && !s.opts.IgnoreSettingsErrors {
		return unreadableError(bad)
	}
	for _, p := range st.Problems {
		s.notices = append(s.notices, event.Notice{Level: string(p.Severity), Text: p.Error()})
	}
	return nil
}

// settingsOptions says where the session's settings come from.
func (c *configWiring) settingsOptions() settings.Options {
	s := c.s
	return settings.Options{
		Env:          settings.Env{Home: s.opts.Home},
		ProjectDir:   s.projectDir,
		ManagedPath:  s.opts.ManagedSettingsPath,
		Flags:        s.opts.SettingsFlags,
		SettingsArgs: s.opts.SettingsArgs,
		FileScopes:   s.opts.SDK.fileScopes(),
		Trust:        s.opts.Trust,
	}
}

// permissionPolicy turns settings and flags into the main agent's policy.
func (c *configWiring) permissionPolicy() (permission.Policy, []event.Notice) {
	s := c.s
	var problems []event.Notice
	mode := s.opts.PermissionMode
	if mode == "" && s.settings.Permissions.DefaultMode.IsSet() {
		mode = s.settings.Permissions.DefaultMode.V
	}
	m, err := permission.ParseMode(mode)
	if err != nil {
		problems = append(problems, event.Notice{Level: "warn", Text: err.Error()})
		m = permission.ModeDefault
	}
	pol := permission.Policy{Mode: m, Dirs: []string{s.opts.Cwd}, Protected: s.protectedPaths()}
	for _, d := range s.settings.Permissions.AdditionalDirectories {
		dir := d.V
		if !filepath.IsAbs(dir) {
			dir = filepath.Join(s.opts.ruleDir(d.From), dir)
		}
		pol.Dirs = append(pol.Dirs, filepath.Clean(dir))
	}
	add := func(vals []settings.Value[string], b permission.Behavior) {
		for _, v := range vals {
			src := permission.Source{Name: string(v.From.Scope), Path: v.From.Path, Dir: s.opts.ruleDir(v.From), Line: v.From.Line, Col: v.From.Col}
			r, err := permission.ParseRule(v.V, b, src)
			if err != nil {
				// The file parsed, so its other rules still load; this one is an error.
				problems = append(problems, event.Notice{Level: "error", Text: err.Error()})
				continue
			}
			pol.Rules = append(pol.Rules, r)
		}
	}
	add(s.settings.Permissions.Deny, permission.Deny)
	masks, bad := s.maskRules()
	pol.Rules, problems = append(pol.Rules, masks...), append(problems, bad...)
	add(s.settings.Permissions.Ask, permission.Ask)
	add(s.settings.Permissions.Allow, permission.Allow)
	return pol, problems
}

// protectedPaths are the files whose edits ask in every mode but bypassPermissions, besides
// the names the permission package protects itself (.git, .keel, .claude…): every settings
// file keel reads, keel's own directory (trust records, user settings, sessions), the
// scripts hooks run and the plugin files that say which hooks run ([Session.hookPaths]).
// They are read once: the permission policy and the sandbox are built from the same list.
func (s *Session) protectedPaths() []string {
	s.protectedOnce.Do(func() { s.protected = slices.Clip(s.readProtected()) })
	return s.protected
}

func (s *Session) readProtected() []string {
	var out []string
	for _, f := range s.settings.Files {
		if filepath.IsAbs(f.Path) {
			out = append(out, f.Path)
		}
	}
	if s.opts.Home != "" {
		out = append(out, s.opts.Home)
	}
	return append(out, s.hookPaths()...)
}

// ruleDir is the directory of a settings file as its rules read it: where a /path rule is
// anchored (Claude Code: relative to the settings file) and additionalDirectories resolve —
// the project directory for files in .keel/ or .claude/, else the file's own directory.
// path and ./path rules are anchored at the working directory whatever the file
// ([permission.Rule.Root]).
func (o *Options) ruleDir(from settings.Origin) string {
	if !filepath.IsAbs(from.Path) { // flags and inline --settings
		return o.Cwd
	}
	dir := filepath.Dir(from.Path)
	if base := filepath.Base(dir); base == ".keel" || base == ".claude" {
		return filepath.Dir(dir)
	}
	return dir
}

// trusted says whether the workspace is trusted — --trust, or a recorded trust of the
// project — and so whether what it provides may widen what keel does: its allow rules and
// mode, hooks, MCP servers, skill shell lines and allowed-tools, memory includes outside it.
// It is decided once, when the session opens.
func (c *configWiring) trusted() bool {
	s := c.s
	c.trustOnce.Do(func() { c.isTrusted = trust.Decide(s.opts.Home, s.projectDir, s.opts.Trust) })
	return c.isTrusted
}

// untrustedNotice is the one notice that says what an untrusted workspace provided and keel
// ignored, and how to trust it.
func (c *configWiring) untrustedNotice() {
	s := c.s
	if c.trusted() {
		return
	}
	var parts []string
	if s.settings != nil {
		byKey := map[string][]string{}
		var keys []string
		for _, v := range s.settings.Ignored {
			if _, ok := byKey[v.V]; !ok {
				keys = append(keys, v.V)
			}
			byKey[v.V] = append(byKey[v.V], v.From.String())
		}
		for _, k := range keys {
			parts = append(parts, k+" ("+strings.Join(byKey[k], ", ")+")")
		}
	}
	if s.memory != nil {
		for _, e := range s.memory.External() {
			parts = append(parts, "memory include "+e.String()+", outside the project")
		}
	}
	if len(parts) == 0 {
		return
	}
	s.notices = append(s.notices, event.Notice{Level: "warn", Text: fmt.Sprintf(
		"this workspace (%s) is not trusted, so what it provides may only narrow what keel does; ignored: %s. "+
			"Trust it with `keel trust`, or run with --trust, if you trust its files.",
		s.projectDir, strings.Join(parts, "; "))})
}

// systemPrompt renders the main agent's prompt for the next request.
func (c *configWiring) systemPrompt(context.Context) loop.System {
	s := c.s
	r := s.prompt.Render()
	return loop.System{Blocks: r.Blocks, Names: r.Names}
}

func (o *Options) now() time.Time {
	if o.Now != nil {
		return o.Now()
	}
	return time.Now()
}

func cacheStats(t cachewatch.Totals) event.CacheStats {
	return event.CacheStats{Hits: t.Hits, Misses: t.Misses, Breaks: t.Breaks, BreaksByReason: t.ByKind}
}

// unreadableError names every settings file that could not be read or parsed at all.
func unreadableError(bad []settings.Problem) error {
	var lines []string
	for _, p := range bad {
		p.Msg = strings.TrimSuffix(p.Msg, " (file ignored)")
		lines = append(lines, p.Error())
	}
	return fmt.Errorf("%s; fix it, or pass --ignore-settings-errors to run without that file", strings.Join(lines, "; "))
}
