package settings

import (
	"path/filepath"
	"strings"
)

// Env holds the KEEL_* environment knobs. It is built once, by [EnvFrom] over os.Environ(),
// and passed down; nothing below the CLI reads the environment itself.
type Env struct {
	// Home is keel's directory for user settings, trust records and logs: $KEEL_HOME, else
	// $HOME/.keel; empty when neither is set.
	Home string
	// NATSURL is KEEL_NATS_URL: the NATS server(s) of the coordination backend; set, it
	// overrides coordination.url and, unless coordination.backend says otherwise, selects nats.
	NATSURL string
	// Debug is KEEL_DEBUG set to anything but "", "0" or "false".
	Debug bool
	// Vars is every KEEL_* variable, including those no field names yet.
	Vars map[string]string
}

// EnvFrom reads the knobs from environ, a list of "KEY=value" as os.Environ returns. The managed
// settings path is deliberately not a knob: a user who can set environment variables must not
// be able to swap out the administrator's policy.
func EnvFrom(environ []string) Env {
	e := Env{Vars: map[string]string{}}
	var home string
	for _, kv := range environ {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue
		}
		if k == "HOME" {
			home = v
		}
		if strings.HasPrefix(k, "KEEL_") {
			e.Vars[k] = v
		}
	}
	switch {
	case e.Vars["KEEL_HOME"] != "":
		e.Home = e.Vars["KEEL_HOME"]
	case home != "":
		e.Home = filepath.Join(home, ".keel")
	}
	e.NATSURL = strings.TrimSpace(e.Vars["KEEL_NATS_URL"])
	switch strings.ToLower(e.Vars["KEEL_DEBUG"]) {
	case "", "0", "false":
	default:
		e.Debug = true
	}
	return e
}
