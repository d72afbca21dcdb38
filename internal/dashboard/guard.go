package dashboard

import (
	"crypto/subtle"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
)

// allowed are the Host values (host:port) a request may name: the listening address and, on
// loopback, localhost. A wildcard address (0.0.0.0, ::) accepts any Host: the token still
// guards it.
type allowed struct {
	hosts     map[string]bool
	any       bool
	canonical string
}

func allowedHosts(a *net.TCPAddr) allowed {
	port := strconv.Itoa(a.Port)
	al := allowed{hosts: map[string]bool{}}
	host := a.IP.String()
	if a.IP.To4() == nil {
		host = "[" + host + "]"
	}
	al.canonical = host + ":" + port
	al.hosts[al.canonical] = true
	switch {
	case a.IP.IsUnspecified():
		al.any = true
		al.canonical = "127.0.0.1:" + port
	case a.IP.IsLoopback():
		for _, h := range []string{"localhost", "127.0.0.1", "[::1]"} {
			al.hosts[h+":"+port] = true
		}
	}
	return al
}

func (a allowed) host(h string) bool { return a.any || a.hosts[strings.ToLower(h)] }

// guard refuses a request whose Host or Origin is foreign (DNS rebinding, a page of another
// site) and one without the token: in the query (the page, its event stream) or the
// X-Keel-Token header (the page's actions).
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.allow.host(r.Host) {
			http.Error(w, "forbidden: this dashboard answers only to its own address", http.StatusForbidden)
			return
		}
		if o := r.Header.Get("Origin"); o != "" {
			u, err := url.Parse(o)
			if err != nil || u.Scheme != "http" || !s.allow.host(u.Host) {
				http.Error(w, "forbidden: requests from other origins are refused", http.StatusForbidden)
				return
			}
		}
		if strings.HasPrefix(r.URL.Path, "/assets/") && r.Method == http.MethodGet {
			// The page's script, styles and chart library hold no data; script tags cannot
			// send the token.
			next.ServeHTTP(w, r)
			return
		}
		token := r.URL.Query().Get("token")
		if h := r.Header.Get("X-Keel-Token"); h != "" {
			token = h
		}
		if subtle.ConstantTimeCompare([]byte(token), []byte(s.cfg.Token)) != 1 {
			http.Error(w, "forbidden: open the address keel dashboard printed, token included", http.StatusForbidden)
			return
		}
		w.Header().Set("X-Content-Type-Options", "nosniff")
		w.Header().Set("Referrer-Policy", "no-referrer")
		w.Header().Set("Content-Security-Policy", "default-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data:")
		w.Header().Set("X-Frame-Options", "DENY")
		next.ServeHTTP(w, r)
	})
}
