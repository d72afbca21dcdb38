package settings

import (
	"encoding/json"
	"fmt"
	"path"
	"strings"
)

// Value is a setting with the place it came from.
type Value[T any] struct {
	V    T
	From Origin
}

// IsSet reports whether any source set the value.
func (v Value[T]) IsSet() bool { return v.From.Scope != "" }

// fileCtx is the state of applying one source.
type fileCtx struct {
	src      Source
	data     []byte
	problems *[]Problem
}

func (f *fileCtx) origin(n *node) Origin {
	o := Origin{Scope: f.src.Scope, Path: f.src.Path}
	if !f.src.flag && n != nil {
		o.Line, o.Col = lineCol(f.data, n.off)
	}
	return o
}

func (f *fileCtx) report(sev Severity, off int, format string, args ...any) {
	p := Problem{Severity: sev, Path: f.src.Path, Msg: fmt.Sprintf(format, args...)}
	if !f.src.flag {
		p.Line, p.Col = lineCol(f.data, off)
	}
	*f.problems = append(*f.problems, p)
}

func (f *fileCtx) warnf(off int, format string, args ...any) {
	f.report(SeverityWarning, off, format, args...)
}

func (f *fileCtx) errorf(off int, format string, args ...any) {
	f.report(SeverityError, off, format, args...)
}

// decoder turns a node into a T, reporting (as an error) why it cannot. key is the dotted key
// for messages.
type decoder[T any] func(f *fileCtx, key string, n *node) (T, bool)

func wrongType(f *fileCtx, key string, n *node, want string) {
	f.errorf(n.off, "%s is %s, want %s", key, n.kind, want)
}

func decString(f *fileCtx, key string, n *node) (string, bool) {
	var s string
	if n.kind != kindString || json.Unmarshal(n.raw, &s) != nil {
		wrongType(f, key, n, "a string")
		return "", false
	}
	return s, true
}

func decNonEmpty(f *fileCtx, key string, n *node) (string, bool) {
	s, ok := decString(f, key, n)
	if ok && strings.TrimSpace(s) == "" {
		f.errorf(n.off, "%s is an empty string", key)
		return "", false
	}
	return s, ok
}

func decBool(f *fileCtx, key string, n *node) (bool, bool) {
	if n.kind != kindBool {
		wrongType(f, key, n, "true or false")
		return false, false
	}
	return string(n.raw) == "true", true
}

// decClearing reads clearToolResults: true or false, or "provider" for the provider's own
// clearing ("keel" and "off" say true and false in words).
func decClearing(f *fileCtx, key string, n *node) (string, bool) {
	const valid = `true, false or "provider"`
	switch n.kind {
	case kindBool:
		if string(n.raw) == "true" {
			return ClearingKeel, true
		}
		return ClearingOff, true
	case kindString:
		var s string
		if json.Unmarshal(n.raw, &s) == nil {
			switch s {
			case ClearingProvider, ClearingKeel, ClearingOff:
				return s, true
			}
		}
		f.errorf(n.off, "%s %s is not one of %s", key, n.raw, valid)
		return "", false
	}
	wrongType(f, key, n, valid)
	return "", false
}

func decNumberIn(lo, hi float64, what string) decoder[float64] {
	return func(f *fileCtx, key string, n *node) (float64, bool) {
		var v float64
		if n.kind != kindNumber || json.Unmarshal(n.raw, &v) != nil {
			wrongType(f, key, n, "a number")
			return 0, false
		}
		if v < lo || v > hi {
			f.errorf(n.off, "%s %v is not %s between %v and %v", key, v, what, lo, hi)
			return 0, false
		}
		return v, true
	}
}

func decOneOf(options ...string) decoder[string] {
	return func(f *fileCtx, key string, n *node) (string, bool) {
		s, ok := decString(f, key, n)
		if !ok {
			return "", false
		}
		for _, o := range options {
			if s == o {
				return s, true
			}
		}
		f.errorf(n.off, "%s %q is not one of %s", key, s, strings.Join(options, ", "))
		return "", false
	}
}

// decPattern accepts a glob as path.Match understands it ("agent:*").
func decPattern(f *fileCtx, key string, n *node) (string, bool) {
	s, ok := decNonEmpty(f, key, n)
	if !ok {
		return "", false
	}
	if _, err := path.Match(s, ""); err != nil {
		f.errorf(n.off, "%s %q is not a valid pattern: %v", key, s, err)
		return "", false
	}
	return s, true
}

// MCPServerRule names an MCP server in the managed allow and deny lists, as Claude Code's
// managed settings do: by name, by command line, or by URL. A plain string is a name.
type MCPServerRule struct {
	ServerName    string   `json:"serverName,omitempty"`
	ServerCommand []string `json:"serverCommand,omitempty"`
	ServerURL     string   `json:"serverUrl,omitempty"`
}

func decMCPServerRule(f *fileCtx, key string, n *node) (MCPServerRule, bool) {
	switch n.kind {
	case kindString:
		s, ok := decNonEmpty(f, key, n)
		return MCPServerRule{ServerName: s}, ok
	case kindObject:
		var r MCPServerRule
		dec := json.NewDecoder(strings.NewReader(string(n.raw)))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&r); err != nil {
			f.errorf(n.off, "%s: %v (want serverName, serverCommand or serverUrl)", key, err)
			return r, false
		}
		if r.ServerName == "" && len(r.ServerCommand) == 0 && r.ServerURL == "" {
			f.errorf(n.off, "%s names no server (want serverName, serverCommand or serverUrl)", key)
			return r, false
		}
		return r, true
	}
	wrongType(f, key, n, "a server name or an object with serverName, serverCommand or serverUrl")
	return MCPServerRule{}, false
}
