package permission

import (
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/toolpath"
)

// maxGlobMatches caps the files one glob argument is expanded to for Read rules.
const maxGlobMatches = 256

// hasReadRestrictions reports whether a deny or ask rule for reading exists in pol or any
// ceiling over it: only then are a command's arguments resolved as paths.
func hasReadRestrictions(pol Policy) bool {
	for _, layer := range append([]Policy{pol}, pol.Ceilings...) {
		for _, r := range layer.Rules {
			if r.Behavior != Allow && r.path != nil && r.toolMatches("Read", KindRead) {
				return true
			}
		}
	}
	return false
}

// maxCdBases caps the directories a relative argument is resolved against in a line that
// changes directory.
const maxCdBases = 16

// argPaths resolves the arguments of a command line that may name files, as bash would pass
// them: "~" and "$HOME" expanded, a glob expanded against the filesystem (a superset of what
// bash matches: Go's * also matches leading dots). In a line that changes directory a
// relative argument is resolved against every directory it may be in; afterCd reports that
// those are not all known (cd -, a computed target).
func argPaths(a shellAnalysis, cwd, home string, resolve func(string) preparedPath) (out []preparedPath, afterCd bool) {
	bases := []string{cwd}
	for _, t := range a.cdTargets {
		for _, b := range bases {
			if len(bases) >= maxCdBases {
				afterCd = true
				break
			}
			bases = append(bases, toolpath.Resolve(t, b, home).Real)
		}
	}
	for _, arg := range a.args {
		p := toolpath.Expand(arg, home)
		var cands []string
		switch {
		case filepath.IsAbs(p):
			cands = []string{p}
		case a.cdUnknown:
			afterCd = true
			continue
		default:
			for _, b := range bases {
				cands = append(cands, filepath.Join(b, p))
			}
		}
		for _, c := range cands {
			out = append(out, resolve(c))
			if strings.ContainsAny(c, "*?[") {
				matches, _ := filepath.Glob(c)
				for _, m := range matches[:min(len(matches), maxGlobMatches)] {
					out = append(out, resolve(m))
				}
			}
		}
	}
	return out, afterCd
}
