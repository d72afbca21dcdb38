package permission

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
)

// DirectoryRules are the allow rules that let an agent read and change the files under dir
// (absolute) with Read, Write and Edit without asking: the rights keel itself gives an agent
// over its own memory — a subagent's memory directory, the project's auto memory — passed to
// [Checker.Grant]. Deny and ask rules that match still win, and Bash is not covered: a
// command writing there is judged like any other. A dir whose name holds glob characters is
// refused rather than granted as a pattern that means something else.
func DirectoryRules(dir string, src Source) ([]Rule, error) {
	if !filepath.IsAbs(dir) {
		return nil, fmt.Errorf("grant %s: the directory must be absolute", dir)
	}
	slash := filepath.ToSlash(filepath.Clean(dir))
	if strings.ContainsAny(slash, `*?[]{}\`) {
		return nil, fmt.Errorf("grant %s: the path holds glob characters, which a rule would read as a pattern", dir)
	}
	pattern := "//" + strings.TrimLeft(slash, "/") + "/**"
	rules, errs := ParseRules([]string{"Read(" + pattern + ")", "Write(" + pattern + ")", "Edit(" + pattern + ")"}, Allow, src)
	if len(errs) > 0 {
		return nil, fmt.Errorf("grant %s: %w", dir, errors.Join(errs...))
	}
	return rules, nil
}
