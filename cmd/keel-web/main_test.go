package main

import (
	"bytes"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		body   string
		code   int
		stdout string // the whole of stdout
		stderr string // a part of stderr
	}{
		{"html to markdown", []string{"-base", "https://example.com/docs/a", "-content-type", "text/html; charset=iso-8859-1"},
			`<h1>Caf` + "\xe9" + `</h1><p>See <a href="/b">b</a>.</p><script>x()</script>`, 0,
			"# Café\n\nSee [b](https://example.com/b).", ""},
		{"text decoded", []string{"-text", "-content-type", "text/plain; charset=windows-1252"}, "na\xefve <p>", 0, "na\u00efve <p>", ""},
		{"body over the limit", []string{"-base", "https://example.com/", "-max-bytes", "4"}, "<p>hello</p>", 1, "",
			"keel-web: the body is over the 4-byte limit"},
		{"no base for html", []string{"-content-type", "text/html"}, "<p>x</p>", 1, "", `-base "" is not an http or https URL`},
		{"relative base", []string{"-base", "/docs"}, "<p>x</p>", 1, "", `-base "/docs" is not an http or https URL`},
		{"argument instead of stdin", []string{"-base", "https://example.com/", "page.html"}, "", 2, "", `unexpected argument "page.html"`},
		{"unknown flag", []string{"-url", "https://example.com/"}, "", 2, "", "flag provided but not defined: -url"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errOut bytes.Buffer
			code := run(tt.args, strings.NewReader(tt.body), &out, &errOut)
			if code != tt.code || out.String() != tt.stdout || !strings.Contains(errOut.String(), tt.stderr) {
				t.Errorf("run(%q) = %d, stdout %q, stderr %q; want %d, stdout %q, stderr containing %q",
					tt.args, code, out.String(), errOut.String(), tt.code, tt.stdout, tt.stderr)
			}
			if tt.code == 1 && strings.Count(errOut.String(), "\n") != 1 {
				t.Errorf("a failure is one line on stderr, got:\n%s", errOut.String())
			}
		})
	}
}
