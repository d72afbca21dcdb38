package mcphost

import (
	"maps"
	"slices"
	"strings"
)

// Expand replaces ${VAR} and ${VAR:-default} in s from env. A variable that is unset (or empty,
// for the :- form) and has no default is left as written and returned in missing, so the
// failure shows the name rather than an empty string.
func Expand(s string, env map[string]string) (out string, missing []string) {
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), missing
		}
		j := strings.IndexByte(s[i:], '}')
		if j < 0 {
			b.WriteString(s)
			return b.String(), missing
		}
		b.WriteString(s[:i])
		expr := s[i+2 : i+j]
		name, def, hasDef := strings.Cut(expr, ":-")
		v, set := env[name]
		switch {
		case set && (v != "" || !hasDef):
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		default:
			b.WriteString(s[i : i+j+1])
			missing = append(missing, name)
		}
		s = s[i+j+1:]
	}
}

// expandServer expands the fields Claude Code expands: command, args, env, url, headers (and the
// headers helper). It returns the sorted names of variables that stayed unresolved.
func expandServer(s *ServerConfig, env map[string]string) []string {
	miss := map[string]bool{}
	ex := func(v string) string {
		out, m := Expand(v, env)
		for _, n := range m {
			miss[n] = true
		}
		return out
	}
	s.Command = ex(s.Command)
	s.URL = ex(s.URL)
	s.HeadersHelper = ex(s.HeadersHelper)
	if s.OAuth != nil {
		o := *s.OAuth
		o.ClientID, o.ClientSecret, o.PrivateKeyFile = ex(o.ClientID), ex(o.ClientSecret), ex(o.PrivateKeyFile)
		s.OAuth = &o
	}
	s.Args = slices.Clone(s.Args)
	for i, a := range s.Args {
		s.Args[i] = ex(a)
	}
	s.Env = maps.Clone(s.Env)
	for k, v := range s.Env {
		s.Env[k] = ex(v)
	}
	s.Headers = maps.Clone(s.Headers)
	for k, v := range s.Headers {
		s.Headers[k] = ex(v)
	}
	return slices.Sorted(maps.Keys(miss))
}
