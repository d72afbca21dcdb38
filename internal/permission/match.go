package permission

import (
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/toolpath"
)

// hasRestrictions reports whether deny or ask rules exist that a shell command could evade
// by running what keel cannot read: Bash rules, and Read or Edit rules (redirections).
func hasRestrictions(rules []Rule) bool {
	return slices.ContainsFunc(rules, func(r Rule) bool {
		return r.Behavior != Allow && (r.bash != nil || r.path != nil)
	})
}

// firstMatch finds a deny or ask rule covering any part of the call: any
// path (as written or resolved), any sub-command or wrapped command, and for a command line
// the files its redirections read (Read rules) and write (Edit rules).
func firstMatch(rules []Rule, b Behavior, p *prepared, cwd string) *Rule {
	for i := range rules {
		r := &rules[i]
		if r.Behavior != b {
			continue
		}
		if r.toolMatches(p.tool, p.kind) && (r.Specifier == "" || r.matchesAny(p, cwd)) {
			return r
		}
		if p.kind == KindShell && r.path != nil {
			if r.toolMatches("Read", KindRead) && r.matchesPaths(p.files.reads, p.home, cwd) ||
				r.toolMatches("Edit", KindEdit) && r.matchesPaths(p.files.writes, p.home, cwd) {
				return r
			}
		}
	}
	return nil
}

// Root is the directory a path rule's relative specifier is anchored at when the working
// directory is cwd: the rule's settings directory for /path, cwd for path and ./path. The
// sandbox masks a Read deny rule's paths from it, so the two read a rule alike.
func (r *Rule) Root(cwd string) string { return r.root(cwd) }

func (r *Rule) root(cwd string) string {
	if r.path != nil && r.path.anchor == anchorSettings && r.Source.Dir != "" {
		return r.Source.Dir
	}
	return cwd
}

func (r *Rule) matchesAny(p *prepared, cwd string) bool {
	switch {
	case r.path != nil:
		return r.matchesPaths(p.paths, p.home, cwd)
	case r.bash != nil:
		return slices.ContainsFunc(p.shell.deny, r.bash.matchDeny)
	}
	return r.matchesOther(p)
}

// matchesPaths reports whether a path rule covers any of paths, as written or resolved.
func (r *Rule) matchesPaths(paths []preparedPath, home, cwd string) bool {
	root := r.root(cwd)
	rroot := toolpath.Real(root)
	for _, path := range paths {
		if r.path.match(path.clean, root, home) || r.path.match(path.resolved, rroot, resolveHome(home)) {
			return true
		}
	}
	return false
}

func (r *Rule) matchesOther(p *prepared) bool {
	switch {
	case r.domain != "":
		if d, ok := strings.CutPrefix(r.domain, "*."); ok {
			return strings.HasSuffix(p.host, "."+d)
		}
		return p.host == r.domain
	case r.path != nil || r.bash != nil:
		return false
	}
	return p.req.Argument == r.Specifier
}

func resolveHome(home string) string {
	if home == "" {
		return ""
	}
	return toolpath.Real(home)
}

// allowMatch finds allow rules covering every part of the call: every
// resolved path, or every sub-command of a command line with nothing
// opaque in it. It returns the first rule used.
func allowMatch(rules []Rule, p *prepared, cwd string, dirs []string) (*Rule, string) {
	var used *Rule
	covers := func(pred func(r *Rule) bool) *Rule {
		for i := range rules {
			r := &rules[i]
			if r.Behavior == Allow && r.toolMatches(p.tool, p.kind) && pred(r) {
				return r
			}
		}
		return nil
	}
	if r := covers(func(r *Rule) bool { return r.Specifier == "" }); r != nil {
		return r, ""
	}
	switch p.kind {
	case KindShell:
		if len(p.shell.opaque) > 0 {
			return nil, ""
		}
		cds := newCdTracker(p.req.Cwd, cwd, dirs)
		for i, cmd := range p.shell.allow {
			if cds.inside(p.shell.cmds[i]) {
				continue
			}
			// A rule covers the command unless the command uses an option that runs code or
			// writes files and the rule does not name it (dangerous.go).
			danger := ""
			r := covers(func(r *Rule) bool {
				if r.bash == nil || !r.bash.match(cmd) {
					return false
				}
				if why := r.bash.dangerousIn(cmd); why != "" {
					danger = why
					return false
				}
				return true
			})
			if r == nil {
				return nil, danger
			}
			if used == nil {
				used = r
			}
		}
		// A redirection that reads outside the working directories is a Read there.
		for _, path := range p.files.redirectReads {
			if outside([]preparedPath{path}, dirs) == "" {
				continue
			}
			if !slices.ContainsFunc(rules, func(r Rule) bool {
				return r.Behavior == Allow && r.toolMatches("Read", KindRead) && r.path != nil &&
					r.path.match(path.resolved, toolpath.Real(r.root(cwd)), resolveHome(p.home))
			}) {
				return nil, ""
			}
		}
		return used, ""
	case KindRead, KindEdit:
		for _, path := range p.paths {
			r := covers(func(r *Rule) bool {
				return r.path != nil && r.path.match(path.resolved, toolpath.Real(r.root(cwd)), resolveHome(p.home))
			})
			if r == nil {
				return nil, ""
			}
			if used == nil {
				used = r
			}
		}
		return used, ""
	}
	return covers(func(r *Rule) bool { return r.matchesOther(p) }), ""
}
