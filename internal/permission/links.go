package permission

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"

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
// links ran past its budget.
func otherNames(paths []preparedPath, pol Policy, cwd, home string) (extra []preparedPath, why string) {
	var linked []fileID
	for _, p := range paths {
		for _, a := range mountAliases(p.resolved) {
			extra = append(extra, preparedPath{clean: a, resolved: a})
		}
		if id, links, ok := identity(p.resolved); ok && links > 1 && !slices.Contains(linked, id) {
			linked = append(linked, id)
		}
	}
	if len(linked) == 0 {
		return extra, ""
	}
	budget := maxTreeEntries
	seen := map[string]bool{}
	for _, layer := range append([]Policy{pol}, pol.Ceilings...) {
		for i := range layer.Rules {
			r := &layer.Rules[i]
			if r.Behavior == Allow || r.path == nil {
				continue
			}
			root, rhome := toolpath.Real(r.root(cwd)), resolveHome(home)
			base := r.path.base(root, rhome)
			if base == "" {
				continue
			}
			scope := filepath.Join(append([]string{base}, r.path.literalSegments()...)...)
			if seen[scope] {
				continue
			}
			seen[scope] = true
			err := filepath.WalkDir(scope, func(p string, d fs.DirEntry, err error) error {
				if budget--; budget < 0 {
					return fs.ErrInvalid
				}
				if err != nil || !d.Type().IsRegular() {
					return nil
				}
				if id, links, ok := identity(p); ok && links > 1 && slices.Contains(linked, id) {
					extra = append(extra, preparedPath{clean: p, resolved: p})
				}
				return nil
			})
			if err != nil && budget < 0 {
				return extra, fmt.Sprintf("%s has other names (hard links), and keel could not search all of %s for them", paths[0].resolved, scope)
			}
		}
	}
	return extra, ""
}

// identity returns a file's identity and its number of hard links; ok is false when p is not
// a regular file (or the platform has no inodes).
func identity(p string) (id fileID, links uint64, ok bool) {
	fi, err := os.Stat(p)
	if err != nil || !fi.Mode().IsRegular() {
		return fileID{}, 0, false
	}
	return statIdentity(fi)
}
