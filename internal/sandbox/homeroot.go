package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// homeRootWhy is the reason [Policy.Why] gives for the paths [homeRootProtected] adds.
const homeRootWhy = "keel's always-read-only paths (the home directory's dot-entries: a writable root holds the home directory)"

// homeRootProtected are what stays read-only when a writable root is the home directory or
// holds it (keel started in ~, --add-dir ~): every entry at the home directory's top level
// whose name starts with a dot, and the directories on PATH that hold the programs `go
// install` puts there ($GOBIN, each $GOPATH's bin/, ~/go/bin) and ~/bin. A list of start-up
// files ([homeProtected]) stays incomplete — a user site's .pth runs at every Python start,
// ~/.config/go/env can give every go build a -toolexec, ~/.bashrc.d is sourced by a shell —
// so here the whole dot-namespace is kept, less what must stay writable: the toolchain caches
// and what filesystem.allowWrite or another working directory names (exempt, real paths),
// with their ancestors opened only as far as the way to them (~/.local keeps its bin/ and
// lib/ read-only when pnpm's store lies in ~/.local/share). Dot-entries absent now are not
// protected beyond homeProtected's placeholders: each would cost a mount per command. A bin
// whose parent is absent is no mount's either: a command that makes it has it moved aside
// as it is released ([homeRootAbsentBins]).
// Ordinary entries (the projects below home) stay writable. roots are the writable roots
// (working directories and allowWrite), real paths; getenv reads the session's environment.
func homeRootProtected(home string, roots, exempt []string, getenv func(string) string) []string {
	if home == "" {
		return nil
	}
	home = resolvePath(home)
	if !slices.ContainsFunc(roots, func(r string) bool { return r != "" && r != "/" && within(home, r) }) {
		return nil
	}
	exempt = slices.DeleteFunc(slices.Clone(exempt), func(w string) bool { return within(home, w) })
	var out []string
	ents, _ := os.ReadDir(home)
	seen := map[string]bool{}
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, around(filepath.Join(home, e.Name()), home, exempt, seen)...)
		}
	}
	// Where a cache lies in ~/.local, ~/.local/lib (the user site) is kept even while absent.
	if local := filepath.Join(home, ".local"); !slices.Contains(out, local) && isDir(local) {
		out = append(out, filepath.Join(local, "lib"))
	}
	kept, _ := goBins(home, exempt, getenv)
	return append(out, kept...)
}

// homeRootAbsentBins are the directories `go install` writes to that homeRootProtected leaves
// writable because their parent is absent (~/go/bin with no ~/go): one a command makes is moved
// aside as it is released ([plantWatch.refuseMade]). nil where no writable root holds home.
func homeRootAbsentBins(home string, roots, exempt []string, getenv func(string) string) []string {
	if home == "" {
		return nil
	}
	home = resolvePath(home)
	if !slices.ContainsFunc(roots, func(r string) bool { return r != "" && r != "/" && within(home, r) }) {
		return nil
	}
	exempt = slices.DeleteFunc(slices.Clone(exempt), func(w string) bool { return within(home, w) })
	_, absent := goBins(home, exempt, getenv)
	return absent
}

// goBins are ~/bin and the directories `go install` puts programs in ($GOBIN, each $GOPATH's
// bin/, ~/go/bin), less the exempt ones: kept where their parent is there, absent where it is
// not — a placeholder there would make ~/go for one who has none, where the module cache may
// have to be made.
func goBins(home string, exempt []string, getenv func(string) string) (kept, absent []string) {
	bins := []string{filepath.Join(home, "bin"), filepath.Join(home, "go", "bin")}
	if g := getenv("GOBIN"); filepath.IsAbs(g) {
		bins = append(bins, filepath.Clean(g))
	}
	for _, g := range filepath.SplitList(getenv("GOPATH")) {
		if filepath.IsAbs(g) {
			bins = append(bins, filepath.Join(filepath.Clean(g), "bin"))
		}
	}
	for _, b := range bins {
		switch {
		case withinAny(resolvePath(b), exempt):
		case isDir(filepath.Dir(b)):
			kept = append(kept, b)
		case !slices.Contains(absent, resolvePath(b)):
			absent = append(absent, resolvePath(b))
		}
	}
	return kept, absent
}

// around is path when nothing of exempt lies in it; else, where an exempt path lies below it,
// around each of its entries, so that only the way to the exempt paths stays writable; nothing
// when it lies in an exempt path itself, or when it is a link to the home directory, to a
// directory holding it or to one of its ordinary entries (~/.w -> ~/proj): the projects stay
// writable whatever names them. seen are the directories opened already: a link back to one
// (~/.local/share/x -> ~/.local) is not followed again.
func around(path, home string, exempt []string, seen map[string]bool) []string {
	real := resolvePath(path)
	if withinAny(real, exempt) || within(home, real) {
		return nil
	}
	if rel, err := filepath.Rel(home, real); err == nil && within(real, home) && !strings.HasPrefix(rel, ".") {
		return nil
	}
	if !slices.ContainsFunc(exempt, func(w string) bool { return within(w, real) }) {
		return []string{path}
	}
	if seen[real] {
		return nil
	}
	seen[real] = true
	ents, err := os.ReadDir(real)
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		out = append(out, around(filepath.Join(real, e.Name()), home, exempt, seen)...)
	}
	return out
}

func isDir(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.IsDir()
}

// homeRootFinding says, for `keel doctor`, that a writable root holds the home directory and
// what keel keeps read-only there for it ([homeRootProtected]); false when none does.
func homeRootFinding(p Policy) (Finding, bool) {
	var present []string
	absent := 0
	for _, r := range p.ReadOnly {
		if p.why[r] != homeRootWhy {
			continue
		}
		if _, err := os.Lstat(r); err != nil {
			absent++
			continue
		}
		present = append(present, filepath.Base(r))
	}
	if len(present)+absent == 0 {
		return Finding{}, false
	}
	detail := fmt.Sprintf("a writable root holds the home directory: its dot-entries at the top level are read-only (%d, a mount each per command: %s), and the directories `go install` writes to and ~/bin",
		len(present), strings.Join(present, ", "))
	if absent > 0 {
		detail += fmt.Sprintf(" (%d of them not present now)", absent)
	}
	detail += "; the toolchain caches, the way to them, and what sandbox.filesystem.allowWrite names stay writable (name one there to open it, e.g. ~/.gradle); a dot-entry absent when the session started is not protected unless keel's list of start-up files names it"
	return Finding{Name: "home directory", Status: "info", Detail: detail}, true
}
