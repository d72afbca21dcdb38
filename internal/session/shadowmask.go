package session

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/toolpath"
)

// shadowExcludes is what the shadow repository of workTree leaves out, as gitignore lines
// anchored at it: what each Read deny rule covers there, and the sandbox's masked paths in it
// (filesystem.denyRead among them). The shadow lies under keel's home, which a sandboxed
// command could read but for its own mask; a copy of a masked file kept there would be a way
// round the mask, and one a Read deny rule covers a way round the rule. A rewind leaves such
// files as they are.
func (s *Session) shadowExcludes(workTree string) []string {
	var out []string
	add := func(lines ...string) {
		for _, l := range lines {
			if !slices.Contains(out, l) {
				out = append(out, l)
			}
		}
	}
	if s.checker != nil {
		pol := s.checker.Policy()
		cwd := s.opts.Cwd
		if len(pol.Dirs) > 0 {
			cwd = pol.Dirs[0]
		}
		home, rhome := userHome(), ""
		if home != "" {
			rhome = toolpath.Real(home)
		}
		for _, r := range pol.Rules {
			// A mask's rule may leave allowRead within it: the sandbox's masks, below, say it.
			if r.Behavior != permission.Deny || r.Tool != "Read" || r.Specifier == "" || r.Mask() != "" {
				continue
			}
			// The work tree is the resolved directory; a rule is read as written and resolved.
			add(r.GitignoreUnder(workTree, cwd, home)...)
			add(r.GitignoreUnder(workTree, toolpath.Real(cwd), rhome)...)
		}
	}
	if s.sandbox != nil {
		for _, m := range s.sandbox.Policy().Masked {
			rel, err := filepath.Rel(workTree, m)
			if err != nil || rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				continue
			}
			lit := "/" + permission.GitignoreLiteral(filepath.ToSlash(rel))
			add(lit, lit+"/**")
		}
	}
	return out
}
