// Package envvar reads keel's switches from the environment one way: every reader of an
// on/off variable (runconfig's, telemetry's) takes the same words for on.
package envvar

import "strings"

// Truthy reports whether s switches something on: 1, true, yes or on, in any case, with the
// white space around it ignored. Anything else, the empty string included, is off.
func Truthy(s string) bool {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "1", "true", "yes", "on":
		return true
	}
	return false
}
