package permission

import (
	"net/url"
	"strings"
)

// Explicit reports whether allow rules name the target of req explicitly, in this policy and
// in every ceiling over it: for WebFetch, a WebFetch(domain:…) rule covering the URL's host.
// A tool asks it before doing what no mode, no bare tool rule and no one-time answer may
// allow — WebFetch connecting to a private, loopback or link-local address — so "allowed"
// alone is not enough. Deny rules are not consulted: Check already applied them.
func (c *Checker) Explicit(req Request) bool {
	if req.kind() != KindFetch {
		return false
	}
	u, err := url.Parse(req.URL)
	if err != nil || u.Hostname() == "" {
		return false
	}
	p := &prepared{req: req, tool: canonicalTool(req.Tool), kind: KindFetch, host: strings.ToLower(u.Hostname())}
	pol := c.Policy()
	if !namesHost(pol.Rules, p) {
		return false
	}
	for _, ceil := range pol.Ceilings {
		if !namesHost(ceil.Rules, p) {
			return false
		}
	}
	return true
}

func namesHost(rules []Rule, p *prepared) bool {
	for i := range rules {
		r := &rules[i]
		if r.Behavior == Allow && r.domain != "" && r.toolMatches(p.tool, p.kind) && r.matchesOther(p) {
			return true
		}
	}
	return false
}
