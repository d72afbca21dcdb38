package sandbox

import (
	"os"
	"path/filepath"
	"slices"
)

// plan is what the helper sets up inside the namespaces, as the parent computed it from a
// [Policy] for one command: only paths that exist (absent always-read-only ones have their
// placeholder by then). It travels to the helper as JSON in its arguments.
type plan struct {
	// Dir is the command's working directory, entered again once the mounts are in place.
	Dir string `json:"dir"`
	// Writable are bound read-write over a read-only root.
	Writable []string `json:"writable,omitempty"`
	// Overlays are the writable paths mounted as overlays instead of bound: the toolchain
	// caches. Under bubblewrap the helper mounts them, with the CAP_SYS_ADMIN bubblewrap
	// leaves it for that, on CacheState, which bubblewrap binds writable and the helper makes
	// read-only again once they are mounted.
	Overlays   []overlay `json:"overlays,omitempty"`
	CacheState string    `json:"cacheState,omitempty"`
	// ReadOnly are bound read-only again inside the writable roots.
	ReadOnly []string `json:"readOnly,omitempty"`
	// Held are the placeholders among ReadOnly ([Sandbox.hold]) that the helper binds
	// read-only under bubblewrap, rather than bubblewrap itself: bubblewrap reads the whole
	// mount table again after each bind it makes, which for the dozen or so a workspace has
	// cost more than the rest of its work; the helper binds them with the CAP_SYS_ADMIN
	// bubblewrap leaves it for that (not setuid, and only where the overlays' probe saw it
	// mount: bubblewrap binds them all otherwise). An empty
	// placeholder holds nothing, so the order of the binds does not matter for them.
	Held []string `json:"held,omitempty"`
	// HelperPins are the directories among Pinned that the helper pins under bubblewrap, for
	// the same reason and with the same capability as Held. Each is bound onto itself
	// recursively, as bubblewrap's --bind would have: what bubblewrap mounted inside it since
	// (read-only paths, copies of packs, masks) comes along.
	HelperPins []string `json:"helperPins,omitempty"`
	// Pinned are bound onto themselves, writable: a mount point cannot be renamed or
	// removed, so a command cannot move a repository's .git aside and plant another.
	Pinned []string `json:"pinned,omitempty"`
	// Masked are covered with an empty file or directory; Unmasked bound back inside them.
	Masked   []string `json:"masked,omitempty"`
	Unmasked []string `json:"unmasked,omitempty"`
	// Objects are copies of packs without the blobs of masked files, bound read-only over the
	// originals; Unreadable are covered with an empty file no one can open: those blobs'
	// loose objects, and what indexes the original packs ([Sandbox.HideObjects]).
	Objects    []objBind `json:"objects,omitempty"`
	Unreadable []string  `json:"unreadable,omitempty"`
	// Proxy makes the helper listen on the sandbox's loopback and hand the listener to the
	// parent, which serves the egress proxy on it.
	Proxy bool `json:"proxy,omitempty"`
	// Sockets are the Unix sockets the command may reach (allowUnixSockets): with any, it
	// may create Unix sockets, and Landlock (ABI 9 and later) limits connections to these.
	Sockets []string `json:"sockets,omitempty"`
	// Terminal is a command the user runs in the foreground of their own terminal (`keel
	// sandbox -- bash` typed there): it stays in keel's session, with the terminal, and its
	// shell may move its jobs to the terminal's foreground. Every other command runs in a
	// session of its own, with no controlling terminal to read the user's keys from.
	Terminal bool `json:"terminal,omitempty"`
	// Landlock adds Landlock's rules where the kernel has it.
	Landlock bool `json:"landlock,omitempty"`
	// Visible are directories under /tmp the command's PATH names (a plugin's programs): bound
	// read-only into the private /tmp, so that what keel put on PATH runs inside too.
	Visible []string `json:"visible,omitempty"`
	// LandlockOnly is the fallback where user namespaces are blocked: no namespaces, no
	// mounts; Landlock, seccomp and no_new_privs only. Tmp is then the command's private
	// TMPDIR, ProxyPort the proxy's port on the host's loopback, Bind lets it listen.
	LandlockOnly bool   `json:"landlockOnly,omitempty"`
	Tmp          string `json:"tmp,omitempty"`
	ProxyPort    int    `json:"proxyPort,omitempty"`
	Bind         bool   `json:"bind,omitempty"`
	// Bwrap says bubblewrap made the namespaces and mounts: the helper only checks them —
	// that its namespaces differ from OuterNS, keel's own (by name, "net": "net:[…]") — and
	// goes on with the network and its own confinement.
	Bwrap   bool              `json:"bwrap,omitempty"`
	OuterNS map[string]string `json:"outerNS,omitempty"`
	// Argv is the command: its program is looked up on the sandbox's PATH.
	Argv []string `json:"argv"`
}

// newPlan is the plan of p for a command run in dir with argv and the search path path;
// extra are more paths the command may write (the file its shell reports the final directory
// in).
func (p Policy) newPlan(dir string, argv []string, path string, extra []string) plan {
	pl := plan{Dir: dir, Argv: argv, Proxy: p.Network.Proxy, Sockets: p.UnixSockets, Landlock: true}
	exists := func(path string) bool { _, err := os.Lstat(path); return err == nil }
	for _, w := range append(slices.Clone(p.Writable), extra...) {
		if exists(w) {
			pl.Writable = append(pl.Writable, w)
		}
	}
	if !slices.Contains(pl.Writable, "/tmp") {
		for _, d := range filepath.SplitList(path) {
			d = filepath.Clean(d)
			if !filepath.IsAbs(d) || d == "/tmp" || !within(d, "/tmp") || slices.Contains(pl.Visible, d) ||
				withinAny(d, pl.Writable) {
				continue
			}
			if fi, err := os.Lstat(d); err == nil && fi.IsDir() {
				pl.Visible = append(pl.Visible, d)
			}
		}
	}
	for _, r := range p.ReadOnly {
		if exists(r) && withinAny(r, pl.Writable) {
			pl.ReadOnly = append(pl.ReadOnly, r)
		}
	}
	for _, g := range p.Pinned {
		if fi, err := os.Lstat(g); err == nil && fi.IsDir() && !slices.Contains(pl.Writable, g) &&
			withinAny(g, pl.Writable) {
			pl.Pinned = append(pl.Pinned, g)
		}
	}
	for _, m := range p.Masked {
		if exists(m) {
			pl.Masked = append(pl.Masked, m)
		}
	}
	for _, u := range p.Unmasked {
		if exists(u) && slices.ContainsFunc(pl.Masked, func(m string) bool { return within(u, m) && u != m }) {
			pl.Unmasked = append(pl.Unmasked, u)
		}
	}
	for _, b := range p.objBinds {
		if exists(b.Dest) && exists(b.Src) {
			pl.Objects = append(pl.Objects, b)
		}
	}
	for _, u := range p.unreadable {
		if fi, err := os.Lstat(u); err == nil && fi.Mode().IsRegular() {
			pl.Unreadable = append(pl.Unreadable, u)
		}
	}
	pl.Pinned = append(pl.Pinned, pl.ancestorsToPin()...)
	// Parents before children: a bind inside another must come after it.
	for _, l := range [][]string{pl.Writable, pl.Visible, pl.Pinned, pl.ReadOnly, pl.Masked, pl.Unmasked, pl.Unreadable} {
		slices.SortFunc(l, func(a, b string) int { return len(filepath.Clean(a)) - len(filepath.Clean(b)) })
	}
	return pl
}

// heldByHelper are the placeholders among held that the helper can bind itself under
// bubblewrap ([plan.Held]): those pl binds read-only, but none a mask covers (the path is not
// there to bind on) and none inside an overlay, which the helper binds again on top anyway.
func (pl plan) heldByHelper(held []string) []string {
	var out []string
	for _, h := range held {
		if slices.Contains(pl.ReadOnly, h) && !withinAny(h, pl.Masked) && !pl.underOverlay(h) {
			out = append(out, h)
		}
	}
	return out
}

// pinsByHelper are the directories among pl.Pinned the helper can pin itself under
// bubblewrap ([plan.HelperPins]): none a mask covers (not there to bind on once masked), none
// inside a read-only path (bubblewrap's read-only bind of it, which comes after the pins,
// makes them read-only too) and none inside an overlay, which the helper pins again on top.
func (pl plan) pinsByHelper() []string {
	var out []string
	for _, g := range pl.Pinned {
		if !withinAny(g, pl.Masked) && !withinAny(g, pl.ReadOnly) && !pl.underOverlay(g) {
			out = append(out, g)
		}
	}
	return out
}

// ancestorsToPin are the directories between a writable root and each read-only or masked
// path in it. A mount point cannot be renamed, but its parent can, and the mount goes with
// it: the path is then free to be made again, writable, and what a mask hid lies on disk
// under a name no rule names, for the next command to read. So each such directory is pinned
// as well — up to a pinned directory (a gitdir may move whole: its protection moves with it,
// and the release finds it where it went) and not inside a read-only or masked path, which
// nothing can rename in and where a writable pin would lift the protection.
func (pl plan) ancestorsToPin() []string {
	done := map[string]bool{}
	for _, g := range pl.Pinned {
		done[g] = true
	}
	var out []string
	hidden := append(append(slices.Clone(pl.ReadOnly), pl.Masked...), pl.Unreadable...)
	for _, b := range pl.Objects {
		hidden = append(hidden, b.Dest)
	}
	for _, r := range hidden {
		for d := filepath.Dir(r); !done[d] && !slices.Contains(pl.Writable, d) && withinAny(d, pl.Writable); d = filepath.Dir(d) {
			done[d] = true
			if withinAny(d, pl.ReadOnly) || withinAny(d, pl.Masked) {
				continue
			}
			fi, err := os.Lstat(d)
			if err != nil {
				break
			}
			if fi.IsDir() { // a link on the way is kept by restoreLinks; its parent pinned
				out = append(out, d)
			}
		}
	}
	return out
}

// absentReadOnly are the always-read-only paths of p that do not exist inside a writable
// root: each gets a placeholder for the command's life, so that it cannot be created. A
// missing parent inside a writable root is made for it (~/.config for ~/.config/git): a
// placeholder needs a directory to sit in — but not a repository's that was deleted since
// the search found it (a pinned directory gone), which would come back as empty directories.
func (p Policy) absentReadOnly() []string {
	var out []string
	for _, r := range p.ReadOnly {
		if fi, err := os.Lstat(r); err == nil && !isPlaceholder(r, fi) {
			continue
		}
		if slices.ContainsFunc(p.ReadOnly, func(o string) bool { return o != r && within(r, o) }) {
			continue // read-only with its ancestor: a placeholder inside that one's would keep it from being removed
		}
		if slices.ContainsFunc(p.Pinned, func(d string) bool { _, err := os.Lstat(d); return err != nil && within(r, d) }) {
			continue // its repository was deleted: not made again; one planted there is disarmed (plantWatch)
		}
		parent := filepath.Dir(r)
		for {
			fi, err := os.Lstat(parent)
			if err == nil || filepath.Dir(parent) == parent {
				if err != nil || !fi.IsDir() {
					parent = "" // a file stands in the way: nothing can be created below it
				}
				break
			}
			parent = filepath.Dir(parent)
		}
		if parent == "" {
			continue
		}
		if slices.ContainsFunc(p.Writable, func(w string) bool {
			_, err := os.Lstat(w)
			return err == nil && within(parent, w)
		}) {
			out = append(out, r)
		}
	}
	return out
}

// filePlaceholder says whether the placeholder at path must be a file, and what it holds: git dies on
// a commondir it cannot read, and "." names the gitdir itself, as no commondir does; an empty
// config.worktree, or an empty file a configuration includes ([includePlaceholder]), is an
// empty configuration, and an empty info/attributes or alternates file lists none (git reads a
// directory there as an error). Every other placeholder is a directory.
func filePlaceholder(path string) (content string, ok bool) {
	if includePlaceholder(path) {
		return "", true
	}
	switch filepath.Base(path) {
	case "commondir":
		return ".\n", true
	case "config.worktree", "attributes", "alternates", "http-alternates":
		return "", true
	}
	return "", false
}

// isPlaceholder reports whether fi, the file at path, is a placeholder keel made for an
// absent always-read-only path: an empty directory without write permission (a directory a
// user makes has it), or for the paths filePlaceholder knows a file without write permission
// holding just what keel puts there.
func isPlaceholder(path string, fi os.FileInfo) bool {
	if fi.Mode().Perm()&0o222 != 0 {
		return false
	}
	if want, ok := filePlaceholder(path); ok && fi.Mode().IsRegular() {
		b, err := os.ReadFile(path)
		return err == nil && string(b) == want
	}
	if !fi.IsDir() {
		return false
	}
	entries, err := os.ReadDir(path)
	return err == nil && len(entries) == 0
}
