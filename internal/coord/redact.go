package coord

import (
	"net/url"
	"strings"
)

// RedactURL removes passwords and tokens from a server URL (or comma-separated URLs), so that
// errors and logs can name the server.
func RedactURL(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		p = strings.TrimSpace(p)
		u, err := url.Parse(p)
		if err != nil || u.User == nil {
			parts[i] = p
			continue
		}
		if _, hasPass := u.User.Password(); hasPass {
			u.User = url.UserPassword(u.User.Username(), "REDACTED")
		} else {
			u.User = url.User("REDACTED") // a bare token
		}
		parts[i] = u.String()
	}
	return strings.Join(parts, ",")
}
