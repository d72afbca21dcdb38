package permission

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/toolpath"
)

// A file has one identity (device and inode) and may have several names: hard links, and the
// same directory mounted at two places (a bind mount). Read and Edit rules name paths, so
// keel finds the other names of what a call touches and checks them too: `deny
// Read(./secrets/**)` covers a hard link to secrets/token.txt made elsewhere.

// fileID is a file's identity.
type fileID struct{ dev, ino uint64 }

// multiLinked returns the first of paths that is a regular file with other hard links.
func multiLinked(paths []preparedPath) string {
	for _, p := range paths {
		if _, links, ok := identity(p.resolved); ok && links > 1 {
			return p.resolved
		}
	}
	return ""
}

// otherNames returns the other names of paths that the deny and ask path rules of pol (and
// its ceilings) could cover: the same place seen through another mount, and, for a file with
// several hard links, the links found below the rules' scopes. why is set when a search for
// links ran past its budget without finding them.
func otherNames(paths []preparedPath, pol Policy, cwd, home string) (extra []preparedPath, why string) {
	var (
		idx    *linkIndex
		mounts = readMounts()
	)
	for _, p := range paths {
		for _, a := range aliasesIn(mounts, p.resolved) {
			extra = append(extra, preparedPath{clean: a, resolved: a})
		}
		id, links, ok := identity(p.resolved)
		if !ok || links < 2 {
			continue
		}
		if idx == nil {
			idx = newLinkIndex(restrictingRules(pol), cwd, home)
		}
		names, complete := idx.names(id)
		for _, n := range names {
			extra = append(extra, preparedPath{clean: n, resolved: n})
		}
		if !complete && len(names) == 0 && why == "" {
			why = fmt.Sprintf("%s has other names (hard links), and keel could not search everything its rules cover for them", p.resolved)
		}
	}
	return extra, why
}

// restrictingRules are the deny and ask path rules of pol and its ceilings.
func restrictingRules(pol Policy) []*Rule {
	var out []*Rule
	for _, layer := range append([]Policy{pol}, pol.Ceilings...) {
		for i := range layer.Rules {
			if r := &layer.Rules[i]; r.Behavior != Allow && r.path != nil {
				out = append(out, r)
			}
		}
	}
	return out
}

// linkIndex maps the identities of multiply-linked files below some rules' scopes to their
// paths, built once by walking those scopes within a budget.
type linkIndex struct {
	byID     map[fileID][]string
	complete bool
}

func newLinkIndex(rules []*Rule, cwd, home string) *linkIndex {
	idx := &linkIndex{byID: map[fileID][]string{}, complete: true}
	budget := maxTreeEntries
	seen := map[string]bool{}
	for _, r := range rules {
		base := r.path.base(toolpath.Real(r.root(cwd)), resolveHome(home))
		if base == "" {
			continue
		}
		scope := filepath.Join(append([]string{base}, r.path.literalSegments()...)...)
		if seen[scope] {
			continue
		}
		seen[scope] = true
		_ = filepath.WalkDir(scope, func(p string, d fs.DirEntry, err error) error {
			if budget--; budget < 0 {
				idx.complete = false
				return filepath.SkipAll
			}
			if err != nil || !d.Type().IsRegular() {
				return nil
			}
			if id, links, ok := identity(p); ok && links > 1 {
				idx.byID[id] = append(idx.byID[id], p)
			}
			return nil
		})
	}
	return idx
}

// names returns the indexed paths of a file, and whether the index is complete.
func (x *linkIndex) names(id fileID) ([]string, bool) { return x.byID[id], x.complete }

// identity returns a file's identity and its number of hard links; ok is false when p is not
// a regular file (or the platform has no inodes).
func identity(p string) (id fileID, links uint64, ok bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return fileID{}, 0, false
	}
	return statIdentity(fi)
}
