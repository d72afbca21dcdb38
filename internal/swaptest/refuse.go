package swaptest

import (
	"path/filepath"
	"strings"
)

// RefuseUnder is a refusal, as the session's Read deny rules give the readers under test, of
// a path that is inside dir as given or with its links resolved.
func RefuseUnder(dir string) func(string) string {
	return func(path string) string {
		real, err := filepath.EvalSymlinks(path)
		if err != nil {
			real = path
		}
		for _, p := range []string{path, real} {
			if strings.HasPrefix(p, dir+string(filepath.Separator)) {
				return "a Read deny rule covers it"
			}
		}
		return ""
	}
}
