package permission

import (
	"github.com/keel-dev/keel/internal/toolpath"
)

// ReadFilter returns the test a search tool applies to each file it finds ([tool.Env.Hidden]):
// true when a deny rule for reading covers the file, in this policy or any ceiling over it, in
// every mode. The path is absolute with symlinks resolved. It is nil when no such rule
// exists, so a search without deny rules pays nothing. The filter is a snapshot: rules added
// later apply to later calls.
func (c *Checker) ReadFilter() func(path string) bool {
	pol := c.Policy()
	var rules []Rule
	for _, layer := range append([]Policy{pol}, pol.Ceilings...) {
		for _, r := range layer.Rules {
			if r.Behavior == Deny && r.toolMatches("Read", KindRead) {
				rules = append(rules, r)
			}
		}
	}
	if len(rules) == 0 {
		return nil
	}
	var cwd string
	if len(pol.Dirs) > 0 {
		cwd = pol.Dirs[0]
	}
	// Rule anchors are resolved once here, not once per file found.
	type anchored struct {
		r           Rule
		root, rroot string
	}
	home, rhome := c.home, resolveHome(c.home)
	list := make([]anchored, len(rules))
	for i, r := range rules {
		root := r.root(cwd)
		list[i] = anchored{r, root, toolpath.Real(root)}
	}
	return func(path string) bool {
		for _, a := range list {
			if a.r.Specifier == "" || a.r.path != nil && (a.r.path.match(path, a.root, home) || a.r.path.match(path, a.rroot, rhome)) {
				return true
			}
		}
		return false
	}
}
