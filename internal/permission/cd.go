package permission

import (
	"slices"

	"github.com/keel-dev/keel/internal/toolpath"
)

// cdTracker lets `cd DIR` through when DIR is a working directory or below one, as Claude
// Code does, so `cd sub && go test ./...` needs only the go test rule. It follows the line's
// cds in order: each target is resolved from every directory the shell may be in by then
// (an earlier cd may have failed, or run in a subshell), and all must be inside.
type cdTracker struct {
	bases, dirs []string
	// lost is set after a cd keel cannot follow (cd "$X", cd -, pushd, popd): from then on
	// no cd is exempt.
	lost bool
}

const maxCdTracked = 16

func newCdTracker(reqCwd, cwd string, dirs []string) *cdTracker {
	base := reqCwd
	if base == "" {
		base = cwd
	}
	t := &cdTracker{bases: []string{base}}
	for _, d := range dirs {
		t.dirs = append(t.dirs, toolpath.Real(d))
	}
	return t
}

func (t *cdTracker) inside(cmd simpleCmd) bool {
	switch name := cmd.name(); {
	case name == "pushd" || name == "popd":
		t.lost = true
		return false
	case name != "cd":
		return false
	case len(cmd.words) != 2 || !cmd.words[1].static || cmd.words[1].value == "-" || len(t.bases) > maxCdTracked:
		t.lost = true
		return false
	case t.lost:
		return false
	}
	ok := true
	var targets []string
	for _, b := range t.bases {
		target := toolpath.Resolve(cmd.words[1].value, b, "").Real
		targets = append(targets, target)
		if !slices.ContainsFunc(t.dirs, func(d string) bool { return toolpath.Within(target, d) }) {
			ok = false
		}
	}
	t.bases = append(t.bases, targets...)
	return ok
}
