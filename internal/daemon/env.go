package daemon

import (
	"maps"
	"slices"
)

// defaultPath is the PATH of the supervisor and its jobs unless settings set one: the shell
// that started the supervisor may have had anything on its PATH (a virtualenv, a project's
// bin directory) that must not leak into every later background agent.
const defaultPath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// identity are the variables that say who the user is and where their files are; they are
// the same whichever shell of that user starts the supervisor.
var identity = []string{"HOME", "USER", "LOGNAME", "SHELL", "TMPDIR", "LANG", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_RUNTIME_DIR"}

// Environ builds the environment of the supervisor and its jobs: the user's identity
// variables, KEEL_HOME, a standard PATH, and then every variable of the settings' env key
// (user and managed settings), which wins. Nothing else of the launching shell is inherited.
func Environ(getenv func(string) string, keelHome string, settingsEnv map[string]string) []string {
	env := map[string]string{"PATH": defaultPath, "KEEL_HOME": keelHome}
	for _, k := range identity {
		if v := getenv(k); v != "" {
			env[k] = v
		}
	}
	maps.Copy(env, settingsEnv)
	var out []string
	for _, k := range slices.Sorted(maps.Keys(env)) {
		out = append(out, k+"="+env[k])
	}
	return out
}
