package permission

import (
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/toolpath"
)

// MaskRule is the Read deny rule that a path the sandbox masks stands for — setting names
// where it is masked (sandbox.filesystem.denyRead) —: the absolute path and everything below
// it, except below unless (absolute: filesystem.allowRead, which the sandbox leaves readable
// inside a mask). The user asked for the file to be hidden, so keel's own Read, Grep and Glob
// refuse it as commands cannot read it — with the sandbox off too. src places the setting
// for the denial's reason.
func MaskRule(path string, unless []string, setting string, src Source) (Rule, error) {
	spec := "/" + filepath.ToSlash(filepath.Clean(path))
	r, err := ParseRule("Read("+escapeGlob(spec)+")", Deny, src)
	if err != nil {
		return Rule{}, err
	}
	pp := *r.path
	pp.mask = setting
	for _, u := range unless {
		u = filepath.Clean(u)
		pp.except = append(pp.except, u)
		if real := toolpath.Real(u); real != u {
			pp.except = append(pp.except, real)
		}
	}
	r.path = &pp
	return r, nil
}

// Mask is the setting a rule of [MaskRule] stands for; "" for any other rule.
func (r *Rule) Mask() string {
	if r.path == nil {
		return ""
	}
	return r.path.mask
}

// withoutMasks is pol without the rules of [MaskRule], in it and its ceilings: a command's
// reads are the sandbox's to mask (inside, the file reads as empty), and as a Read rule's
// they would turn every grep -r or git log -p over the workspace into a question.
func withoutMasks(pol Policy) Policy {
	strip := func(rules []Rule) []Rule {
		if !slices.ContainsFunc(rules, func(r Rule) bool { return r.Mask() != "" }) {
			return rules
		}
		return slices.DeleteFunc(slices.Clone(rules), func(r Rule) bool { return r.Mask() != "" })
	}
	pol.Rules = strip(pol.Rules)
	if len(pol.Ceilings) > 0 {
		ceilings := make([]Policy, len(pol.Ceilings))
		for i, c := range pol.Ceilings {
			c.Rules = strip(c.Rules)
			ceilings[i] = c
		}
		pol.Ceilings = ceilings
	}
	return pol
}

// escapeGlob makes a path's glob characters match themselves.
func escapeGlob(s string) string {
	var b strings.Builder
	for _, c := range s {
		if strings.ContainsRune(`*?[]{}\`, c) {
			b.WriteByte('\\')
		}
		b.WriteRune(c)
	}
	return b.String()
}
