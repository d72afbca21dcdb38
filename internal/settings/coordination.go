package settings

import (
	"net/url"
	"path/filepath"
	"slices"
	"strings"
)

// CoordinationBackends are the values of coordination.backend.
var CoordinationBackends = []string{"fs", "nats"}

// Coordination is the coordination key: where a team's mailbox, task board, permission
// requests and background-task records live. fs (the default) keeps them in files under the
// keel directory, for one machine; nats keeps them in NATS JetStream, for teams and workers on
// several machines.
type Coordination struct {
	Backend Value[string]
	// URL is the NATS server, or several comma-separated. Unset with backend nats: the
	// supervisor's embedded server on this machine.
	URL Value[string]
	// CredsFile is a NATS credentials file; a relative path is relative to the settings
	// file's directory.
	CredsFile Value[string]
	TLS       CoordinationTLS
	// Replicas is how many copies of a team's streams the NATS cluster keeps (1–5).
	Replicas Value[float64]
}

// CoordinationTLS configures TLS to the NATS server; paths as for CredsFile.
type CoordinationTLS struct {
	CAFile   Value[string]
	CertFile Value[string]
	KeyFile  Value[string]
}

func coordinationKey() keyDef {
	field := func(get func(c *Coordination) *Value[string]) func(*Settings) *Value[string] {
		return func(s *Settings) *Value[string] { return get(&s.Coordination) }
	}
	return object("coordination",
		scalar("backend", field(func(c *Coordination) *Value[string] { return &c.Backend }), decOneOf(CoordinationBackends...)),
		scalar("url", field(func(c *Coordination) *Value[string] { return &c.URL }), decNATSURL),
		scalar("credsFile", field(func(c *Coordination) *Value[string] { return &c.CredsFile }), decFilePath),
		object("tls",
			scalar("caFile", field(func(c *Coordination) *Value[string] { return &c.TLS.CAFile }), decFilePath),
			scalar("certFile", field(func(c *Coordination) *Value[string] { return &c.TLS.CertFile }), decFilePath),
			scalar("keyFile", field(func(c *Coordination) *Value[string] { return &c.TLS.KeyFile }), decFilePath),
		),
		scalar("replicas", func(s *Settings) *Value[float64] { return &s.Coordination.Replicas }, decCount(1, 5, "a count of stream copies")),
	)
}

// natsSchemes are the URL schemes nats.go dials.
var natsSchemes = []string{"nats", "tls", "ws", "wss"}

// decNATSURL accepts one server URL or several comma-separated, as nats.go takes them;
// "host:port" without a scheme is nats://.
func decNATSURL(f *fileCtx, key string, n *node) (string, bool) {
	s, ok := decNonEmpty(f, key, n)
	if !ok {
		return "", false
	}
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		u := part
		if !strings.Contains(u, "://") {
			u = "nats://" + u
		}
		parsed, err := url.Parse(u)
		valid := err == nil && parsed.Host != "" && slices.Contains(natsSchemes, parsed.Scheme)
		if !valid {
			f.errorf(n.off, "%s %q is not a NATS server URL: want nats://host:port (or tls://, ws://, wss://), several separated by commas", key, part)
			return "", false
		}
	}
	return s, true
}

// decFilePath accepts a path; a relative one is made relative to the settings file.
func decFilePath(f *fileCtx, key string, n *node) (string, bool) {
	s, ok := decNonEmpty(f, key, n)
	if !ok {
		return "", false
	}
	// A path from "~" or "$VAR" is expanded where it is opened (as nats.go does), not here.
	expanded := strings.HasPrefix(s, "~") || strings.HasPrefix(s, "$")
	if !filepath.IsAbs(s) && !expanded && f.src.Path != "" && !f.src.flag && f.src.Inline == nil {
		s = filepath.Join(filepath.Dir(f.src.Path), s)
	}
	return s, true
}

// decCount accepts a whole number between lo and hi.
func decCount(lo, hi float64, what string) decoder[float64] {
	in := decNumberIn(lo, hi, what)
	return func(f *fileCtx, key string, n *node) (float64, bool) {
		v, ok := in(f, key, n)
		if ok && v != float64(int(v)) {
			f.errorf(n.off, "%s %v is not a whole number", key, v)
			return 0, false
		}
		return v, ok
	}
}

// NATS says how to reach NATS when the backend is nats: url from KEEL_NATS_URL, else from
// settings (empty: the supervisor's embedded server).
type NATS struct {
	URL       string
	CredsFile string
	CAFile    string
	CertFile  string
	KeyFile   string
	Replicas  int
}

// CoordinationBackend decides the backend: coordination.backend when set; otherwise nats when
// KEEL_NATS_URL is set, else fs. For nats it also returns the connection settings.
func (s *Settings) CoordinationBackend(env Env) (string, NATS) {
	c := s.Coordination
	backend := c.Backend.V
	if backend == "" {
		backend = "fs"
		if env.NATSURL != "" {
			backend = "nats"
		}
	}
	if backend != "nats" {
		return backend, NATS{}
	}
	n := NATS{URL: c.URL.V, CredsFile: c.CredsFile.V, CAFile: c.TLS.CAFile.V, CertFile: c.TLS.CertFile.V, KeyFile: c.TLS.KeyFile.V, Replicas: int(c.Replicas.V)}
	if env.NATSURL != "" {
		n.URL = env.NATSURL
	}
	return backend, n
}
