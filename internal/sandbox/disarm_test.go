package sandbox

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestGitConfigRoundTrip: the configuration keel writes back reads, through git, as the
// settings it kept — values and subsections with quotes, backslashes, tabs and newlines, and
// bare booleans.
func TestGitConfigRoundTrip(t *testing.T) {
	want := []configEntry{
		{key: "core.bare", value: "false"},
		{key: "core.sparsecheckout", noValue: true},
		{key: "remote.o \"q\" \\b.url", value: "https://h/x"},
		{key: "user.name", value: "a \"quoted\" \\ name\twith\nlines  "},
		{key: "branch.Main.merge", value: "refs/heads/Main"},
	}
	cfg := filepath.Join(t.TempDir(), "config")
	if err := os.WriteFile(cfg, formatGitConfig(want), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := readGitConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("read back %+v, want %+v\nfile:\n%s", got, want, formatGitConfig(want))
	}
}

// TestSafeGitKey: what git init, clone and remote write stays; what names a program, another
// file or the ext:: transport goes, known or not.
func TestSafeGitKey(t *testing.T) {
	for _, kv := range [][2]string{{"core.bare", "false"}, {"remote.origin.url", "https://h/x"}, {"remote.a.b.fetch", "+refs/*:refs/*"},
		{"branch.main.merge", "refs/heads/main"}, {"user.email", "x@y"}, {"submodule.s.url", "../s"}} {
		if !safeGitKey(kv[0], kv[1]) {
			t.Errorf("%s = %s is refused", kv[0], kv[1])
		}
	}
	for _, kv := range [][2]string{{"core.fsmonitor", "x"}, {"core.hookspath", "h"}, {"core.sshcommand", "x"}, {"core.pager", "x"},
		{"include.path", "x"}, {"includeif.gitdir:/.path", "x"}, {"filter.f.smudge", "x"}, {"diff.d.textconv", "x"},
		{"remote.o.uploadpack", "x"}, {"remote.o.url", " EXT::sh -c x"}, {"submodule.s.update", "!x"}, {"core.newthing", "x"},
		{"alias.st", "!x"}, {"credential.helper", "x"}} {
		if safeGitKey(kv[0], kv[1]) {
			t.Errorf("%s = %s is kept", kv[0], kv[1])
		}
	}
}

// TestTemplateHooksStay: a hook git init copied from the user's template directory stays; one
// that differs from the template goes aside.
func TestTemplateHooksStay(t *testing.T) {
	tmpl := t.TempDir()
	t.Setenv("GIT_TEMPLATE_DIR", tmpl)
	hooks := filepath.Join(t.TempDir(), "hooks")
	for path, body := range map[string]string{
		filepath.Join(tmpl, "hooks", "pre-commit"): "#!/bin/sh\nlint\n",
		filepath.Join(tmpl, "hooks", "pre-push"):   "#!/bin/sh\ntest\n",
		filepath.Join(hooks, "pre-commit"):         "#!/bin/sh\nlint\n",
		filepath.Join(hooks, "pre-push"):           "#!/bin/sh\nplanted\n",
	} {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(body), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	msg := disarmHooks(hooks, time.Now().Add(-time.Hour))
	if !strings.Contains(msg, "the hooks pre-push in") {
		t.Errorf("disarmHooks said %q", msg)
	}
	if _, err := os.Stat(filepath.Join(hooks, "pre-commit")); err != nil {
		t.Errorf("the template's hook was moved: %v", err)
	}
	if _, err := os.Stat(filepath.Join(hooks+refusedSuffix, "pre-push")); err != nil {
		t.Errorf("the planted hook is not aside: %v", err)
	}
}
