package sandbox

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// A read-only or masked path that is a symbolic link, or lies below one inside a writable
// root, is protected where the link leads: a mount lands on the link's target, not on the
// link. The link itself is a name in a writable directory, which a command can remove and
// replace with a directory or file of its own — a .claude/ of its making where the user's
// linked one was, read by keel's next session outside the sandbox; and the next command's
// mask would cover that instead of the secret. So as a command is released, every such link
// noted at its start that is no longer there as it was is made again, what took its place
// moved aside.

// linkMark is a link as a command found it: its target and its identity.
type linkMark struct{ target, id string }

// noteLinks records the links on the way to p's read-only and masked paths inside the
// writable roots, as the settings spelled them (p holds them resolved).
func (w *plantWatch) noteLinks(p Policy) {
	w.links = map[string]linkMark{}
	seen := map[string]bool{}
	inRoot := func(d string) bool {
		return !slices.Contains(p.Writable, d) && slices.ContainsFunc(p.Writable, func(r string) bool { return within(d, r) })
	}
	for _, r := range p.viaLinks {
		for d := r; ; d = filepath.Dir(d) {
			// Where the name d stands: its directory resolved, itself not.
			loc := filepath.Join(resolvePath(filepath.Dir(d)), filepath.Base(d))
			if !inRoot(loc) || seen[loc] {
				break
			}
			seen[loc] = true
			fi, err := os.Lstat(loc)
			if err != nil || fi.Mode()&os.ModeSymlink == 0 {
				continue
			}
			if target, err := os.Readlink(loc); err == nil {
				w.links[loc] = linkMark{target: target, id: statString(loc)}
			}
		}
	}
}

// restoreLinks makes again each link noteLinks recorded that is gone or leads elsewhere, and
// says so. Call with s.disarmMu held.
func (w *plantWatch) restoreLinks() []string {
	var said []string
	for _, path := range slices.Sorted(maps.Keys(w.links)) {
		m := w.links[path]
		if statString(path) == m.id {
			continue
		}
		if target, err := os.Readlink(path); err == nil && target == m.target {
			continue // made again as it was
		}
		msg, err := restoreLink(path, m.target)
		if err != nil {
			msg = fmt.Sprintf("the command replaced %s, a link to %s that keel keeps read-only where it leads, and keel could not make the link again (%v): check it before keel or git uses it outside the sandbox.", path, m.target, err)
		}
		slog.Warn("sandbox: a command replaced a link to a read-only path", "path", path, "target", m.target, "err", err)
		said = append(said, msg)
	}
	return said
}

// restoreLink moves what is at path aside and makes path a link to target again, in path's
// directory held open.
func restoreLink(path, target string) (string, error) {
	dir, err := holdDir(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	defer dir.close()
	name, aside := filepath.Base(path), ""
	if dir.exists(name) {
		aside = freeHeldName(dir, name+refusedSuffix)
		if err := dir.moveTo(name, dir, aside); err != nil {
			return "", err
		}
	}
	if err := dir.symlink(target, name); err != nil {
		return "", err
	}
	if aside == "" {
		return fmt.Sprintf("the command removed %s, a link to %s that keel keeps read-only where it leads; keel made the link again.", path, target), nil
	}
	return fmt.Sprintf("the command replaced %s, a link to %s that keel keeps read-only where it leads, with something of its own; keel moved that to %s and made the link again.",
		path, target, filepath.Join(filepath.Dir(path), aside)), nil
}
