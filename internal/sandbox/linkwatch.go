package sandbox

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
// writable roots. With no other command running they are as the user left them, and become
// what s keeps; while one runs (in the background) it may have replaced one, so s keeps what
// it knew and makes such a link again before this command starts.
func (w *plantWatch) noteLinks(s *Sandbox, p Policy) {
	cur := currentLinks(p)
	s.disarmMu.Lock()
	defer s.disarmMu.Unlock()
	if len(s.watches) == 0 {
		s.links = cur
		return
	}
	if s.links == nil {
		s.links = map[string]linkMark{}
	}
	for loc, m := range cur {
		if _, ok := s.links[loc]; !ok {
			s.links[loc] = m
		}
	}
	w.found = append(w.found, restoreLinks(s.links)...)
}

// currentLinks are the links on the way to p's read-only and masked paths inside the writable
// roots, as the settings spelled those paths (p holds them resolved).
func currentLinks(p Policy) map[string]linkMark {
	links := map[string]linkMark{}
	inRoot := func(d string) bool {
		return !slices.Contains(p.Writable, d) && withinAny(d, p.Writable)
	}
	// Paths share their ancestors: where each name stands, and the link there if any, is
	// looked up once.
	locs, looked := map[string]string{}, map[string]bool{}
	// A link's target may pass through more links (.claude -> config/claude, config -> shared):
	// each target, with the rest of the path, joins the paths walked, so every link of the
	// chain is kept.
	queued := map[string]bool{}
	queue := slices.Clone(p.viaLinks)
	for _, r := range queue {
		queued[r] = true
	}
	for len(queue) > 0 && len(queued) < maxLinkWalk {
		r := queue[0]
		queue = queue[1:]
		for d := r; d != filepath.Dir(d); d = filepath.Dir(d) {
			// Where the name d stands: its directory resolved, itself not. A name outside the
			// writable roots is no command's to replace, but one above it may be.
			loc, ok := locs[d]
			if !ok {
				loc = filepath.Join(resolvePath(filepath.Dir(d)), filepath.Base(d))
				locs[d] = loc
			}
			if slices.Contains(p.Writable, loc) {
				break
			}
			if !inRoot(loc) {
				continue
			}
			if !looked[loc] {
				looked[loc] = true
				if fi, err := os.Lstat(loc); err == nil && fi.Mode()&os.ModeSymlink != 0 {
					if target, err := os.Readlink(loc); err == nil {
						links[loc] = linkMark{target: target, id: statString(loc)}
					}
				}
			}
			m, ok := links[loc]
			if !ok {
				continue
			}
			next := m.target
			if !filepath.IsAbs(next) {
				next = filepath.Join(filepath.Dir(loc), next)
			}
			if next = filepath.Join(next, strings.TrimPrefix(r, d)); !queued[next] {
				queued[next] = true
				queue = append(queue, next)
			}
		}
	}
	return links
}

// maxLinkWalk bounds the names noteLinks looks at, whatever loops the links make.
const maxLinkWalk = 4096

// restoreLinks makes again each of links that is gone or leads elsewhere, and says so. Call
// with s.disarmMu held.
func restoreLinks(links map[string]linkMark) []string {
	var said []string
	for _, path := range slices.Sorted(maps.Keys(links)) {
		m := links[path]
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
