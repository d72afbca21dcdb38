package permission

import (
	"os/exec"
	"path/filepath"

	"github.com/keel-dev/keel/internal/toolpath"
)

// maxIdentityLookups caps the program lookups one line costs.
const maxIdentityLookups = 64

// hasBashRestrictions reports whether a Bash deny or ask rule exists in pol or any ceiling.
func hasBashRestrictions(pol Policy) bool {
	for _, layer := range append([]Policy{pol}, pol.Ceilings...) {
		for _, r := range layer.Rules {
			if r.Behavior != Allow && r.bash != nil {
				return true
			}
		}
	}
	return false
}

// programIdentities returns, for commands whose program is another one under a new name, a
// spelling with that program's name, so deny rules see through links: ./x when x links to
// /bin/rm, a PATH entry del that links to rm. A name with a slash is resolved against cwd,
// a bare one is looked up on PATH as the shell would (keel's own environment is the shell's).
func programIdentities(views []simpleCmd, cwd string) []simpleCmd {
	var out []simpleCmd
	seen := map[string]string{}
	for _, v := range views {
		name := v.name()
		if name == "" {
			continue
		}
		real, ok := seen[name]
		if !ok {
			if len(seen) >= maxIdentityLookups {
				break
			}
			real = programPath(name, cwd)
			seen[name] = real
		}
		if real == "" {
			continue
		}
		if base := filepath.Base(real); base != baseName(name) {
			out = append(out, simpleCmd{words: append([]shellWord{{value: base, static: true}}, v.words[1:]...)})
		}
	}
	return out
}

func programPath(name, cwd string) string {
	if filepath.Base(name) != name {
		return toolpath.Resolve(name, cwd, "").Real
	}
	p, err := exec.LookPath(name)
	if err != nil {
		return ""
	}
	return toolpath.Real(p)
}
