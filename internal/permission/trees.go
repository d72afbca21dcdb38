package permission

import (
	"fmt"
	"io/fs"
	"path/filepath"

	"github.com/keel-dev/keel/internal/toolpath"
)

// maxTreeEntries bounds the directory entries one check walks to find whether a tree a
// command reads holds a file a rule covers; past it the tree is taken to hold one.
const maxTreeEntries = 20000

// pathAsk returns why a layer with these rules asks about what a call does with files beyond
// the paths it names: files keel could not resolve, trees holding covered files, files with
// other names it could not all find. The rule is the one a tree meets, if any.
func (p *prepared) pathAsk(rules []Rule, cwd string) (string, *Rule) {
	restricted := hasPathRestrictions(Policy{Rules: rules})
	if !restricted {
		return "", nil
	}
	if p.otherNames != "" {
		return p.otherNames + ", so the Read and Edit rules cannot be checked against all its names", nil
	}
	if p.kind != KindShell {
		return "", nil
	}
	if p.files.unresolved != "" {
		return fmt.Sprintf("the command uses %s, so the Read and Edit deny and ask rules cannot be checked against the files it names", p.files.unresolved), nil
	}
	budget := maxTreeEntries
	for i := range rules {
		r := &rules[i]
		if r.Behavior == Allow || r.path == nil {
			continue
		}
		if r.toolMatches("Read", KindRead) {
			for _, t := range p.files.readTrees {
				if f := r.coversBelow(t, cwd, p.home, true, &budget); f != "" {
					return fmt.Sprintf("the command reads every file below %s, which holds %s (rule %q from %s)", t.resolved, f, r.String(), r.Source), r
				}
			}
			for _, t := range p.files.repoTrees {
				if f := r.coversBelow(t, cwd, p.home, false, &budget); f != "" {
					return fmt.Sprintf("the command reads the git repository at %s, history included, where rule %q from %s covers %s", t.resolved, r.String(), r.Source, f), r
				}
			}
			for _, t := range p.files.trackedTrees {
				if f := r.coversTracked(t, cwd, p.home, &budget); f != "" {
					return fmt.Sprintf("the command reads the files git tracks below %s, among them %s (rule %q from %s)", t.tree.resolved, f, r.String(), r.Source), r
				}
			}
		}
		if r.toolMatches("Edit", KindEdit) {
			for _, t := range p.files.writeTrees {
				if f := r.coversBelow(t, cwd, p.home, false, &budget); f != "" {
					return fmt.Sprintf("the command may write any file below %s, where rule %q from %s covers %s", t.resolved, r.String(), r.Source, f), r
				}
			}
		}
	}
	return "", nil
}

// coversBelow returns a path at or below the tree t that r covers, or "". With exists, the
// path must exist now (found by walking, within budget: past it the tree counts as holding
// one); without, it is enough that the rule's scope meets the tree (history, or files a
// write could create).
func (r *Rule) coversBelow(t preparedPath, cwd, home string, exists bool, budget *int) string {
	root := r.root(cwd)
	for _, v := range []struct{ tree, root, home string }{
		{t.clean, root, home}, {t.resolved, toolpath.Real(root), resolveHome(home)},
	} {
		base := r.path.base(v.root, v.home)
		if base == "" {
			continue
		}
		scope := filepath.Join(append([]string{base}, r.path.literalSegments()...)...)
		var start string
		switch {
		case toolpath.Within(scope, v.tree):
			start = scope // the rule's scope lies in the tree
		case toolpath.Within(v.tree, scope):
			start = v.tree // the tree lies in the rule's scope
		default:
			continue
		}
		if !exists {
			return start
		}
		if f := r.walkFor(start, v.root, v.home, budget); f != "" {
			return f
		}
	}
	return ""
}

// coversTracked returns a file git tracks below t.tree that r covers, or "". When keel cannot
// read the index, every file of the repository counts (history included).
func (r *Rule) coversTracked(t trackedTree, cwd, home string, budget *int) string {
	paths, ok := trackedPaths(t.root)
	if !ok {
		return r.coversBelow(t.tree, cwd, home, false, budget)
	}
	root, rroot := r.root(cwd), toolpath.Real(r.root(cwd))
	for _, rel := range paths {
		abs := filepath.Join(t.root, filepath.FromSlash(rel))
		if *budget--; *budget < 0 {
			return t.tree.resolved + " (too many tracked files to check)"
		}
		if !toolpath.Within(abs, t.tree.resolved) && !toolpath.Within(abs, t.tree.clean) {
			continue
		}
		if r.path.match(abs, root, home) || r.path.match(abs, rroot, resolveHome(home)) {
			return abs
		}
	}
	return ""
}

// walkFor walks dir for a path r covers.
func (r *Rule) walkFor(dir, root, home string, budget *int) string {
	found := ""
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if *budget--; *budget < 0 {
			found = dir + " (too large to search)"
			return filepath.SkipAll
		}
		if err != nil {
			return nil
		}
		if r.path.match(p, root, home) {
			found = p
			return filepath.SkipAll
		}
		return nil
	})
	return found
}
