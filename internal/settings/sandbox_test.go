package settings

import (
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestSandboxBlock: Claude Code's sandbox block reads into Settings.Sandbox with every key.
func TestSandboxBlock(t *testing.T) {
	l := newLayout(t)
	l.write(t, l.files()["user"], `{"sandbox": {"enabled": true, "autoAllowBashIfSandboxed": true,
  "excludedCommands": ["docker:*"], "allowUnsandboxedCommands": false, "failIfUnavailable": true,
  "network": {"allowedDomains": ["github.com", "*.npmjs.org:443"], "deniedDomains": ["evil.example"],
    "allowLocalBinding": true, "allowUnixSockets": ["/run/docker.sock"], "strictAllowlist": true},
  "filesystem": {"allowWrite": ["~/.cargo"], "denyWrite": ["./secrets"], "denyRead": ["~/.ssh"], "allowRead": ["~/.ssh/known_hosts"]}}}`)
	s, err := Load(Options{Env: Env{Home: l.home}, ProjectDir: l.project, ManagedPath: l.managed})
	if err != nil {
		t.Fatal(err)
	}
	sb := s.Sandbox
	vals := func(vs []Value[string]) []string {
		var out []string
		for _, v := range vs {
			out = append(out, v.V)
		}
		return out
	}
	got := map[string]any{
		"enabled": sb.Enabled.V, "auto": sb.AutoAllowBashIfSandboxed.V, "excluded": vals(sb.ExcludedCommands),
		"unsandboxed": sb.AllowUnsandboxedCommands.IsSet() && !sb.AllowUnsandboxedCommands.V, "fail": sb.FailIfUnavailable.V,
		"allowed": vals(sb.Network.AllowedDomains), "denied": vals(sb.Network.DeniedDomains), "local": sb.Network.AllowLocalBinding.V,
		"sockets": vals(sb.Network.AllowUnixSockets), "strict": sb.Network.StrictAllowlist.V,
		"allowWrite": vals(sb.Filesystem.AllowWrite), "denyWrite": vals(sb.Filesystem.DenyWrite),
		"denyRead": vals(sb.Filesystem.DenyRead), "allowRead": vals(sb.Filesystem.AllowRead),
	}
	want := map[string]any{
		"enabled": true, "auto": true, "excluded": []string{"docker:*"}, "unsandboxed": true, "fail": true,
		"allowed": []string{"github.com", "*.npmjs.org:443"}, "denied": []string{"evil.example"}, "local": true,
		"sockets": []string{"/run/docker.sock"}, "strict": true,
		"allowWrite": []string{"~/.cargo"}, "denyWrite": []string{"./secrets"}, "denyRead": []string{"~/.ssh"}, "allowRead": []string{"~/.ssh/known_hosts"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("sandbox mismatch (-want +got):\n%s", diff)
	}
}

// TestSandboxBadInput: a misspelt or mistyped sandbox key is an error with file, line, column
// and the valid keys; Claude Code keys keel does not use only warn.
func TestSandboxBadInput(t *testing.T) {
	l := newLayout(t)
	path := l.files()["user"]
	l.write(t, path, "{\"sandbox\": {\n  \"enabeld\": true,\n  \"network\": {\"allowedDomain\": []},\n  \"filesystem\": {\"allowWrite\": \"/x\"},\n  \"ignoreViolations\": {},\n  \"network2\": 1}}")
	s, err := Load(Options{Env: Env{Home: l.home}, ManagedPath: l.managed})
	if err == nil {
		t.Fatal("a bad sandbox block loaded without an error")
	}
	var msgs []string
	for _, p := range s.Problems {
		msgs = append(msgs, p.Error())
	}
	all := strings.Join(msgs, "\n")
	for _, want := range []string{
		path + ":2:3: unknown key sandbox.enabeld: valid keys are enabled, autoAllowBashIfSandboxed, excludedCommands, allowUnsandboxedCommands, failIfUnavailable, wrapHooks, wrapMcpServers, wrapLspServers, network, filesystem",
		path + ":3:15: unknown key sandbox.network.allowedDomain: valid keys are allowedDomains, deniedDomains, allowLocalBinding, allowUnixSockets, strictAllowlist",
		"sandbox.filesystem.allowWrite is a string, want an array",
		"sandbox.ignoreViolations is a Claude Code key keel does not use",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("problems lack %q:\n%s", want, all)
		}
	}
	l.write(t, path, `{"sandbox": {"network": {"allowedDomains": ["*.x.com:http", "a b"]}}}`)
	s, _ = Load(Options{Env: Env{Home: l.home}, ManagedPath: l.managed})
	if n := len(s.Problems); n != 2 || len(s.Sandbox.Network.AllowedDomains) != 0 {
		t.Errorf("bad domain patterns: %d problems %v, %d domains kept", n, s.Problems, len(s.Sandbox.Network.AllowedDomains))
	}
}

// TestUntrustedSandboxOnlyTightens: before trust, a project may switch the sandbox on, deny
// writes and reads and domains, but not switch it off, allow unsandboxed commands, add
// writable paths or allowed domains.
func TestUntrustedSandboxOnlyTightens(t *testing.T) {
	l := newLayout(t)
	l.write(t, l.files()["user"], `{"sandbox": {"enabled": true, "allowUnsandboxedCommands": false}}`)
	l.write(t, l.files()["project"], `{"sandbox": {"enabled": false, "allowUnsandboxedCommands": true, "failIfUnavailable": true,
  "autoAllowBashIfSandboxed": true, "excludedCommands": ["curl:*"],
  "network": {"allowedDomains": ["attacker.example"], "deniedDomains": ["x.example"], "strictAllowlist": false},
  "filesystem": {"allowWrite": ["/"], "denyWrite": ["./keep"], "denyRead": ["./secret"]}}}`)
	s, err := Load(Options{Env: Env{Home: l.home}, ProjectDir: l.project, ManagedPath: l.managed})
	if err != nil {
		t.Fatal(err)
	}
	sb := s.Sandbox
	if !sb.Enabled.V || sb.AllowUnsandboxedCommands.V || !sb.FailIfUnavailable.V || sb.AutoAllowBashIfSandboxed.V ||
		len(sb.ExcludedCommands) != 0 || len(sb.Network.AllowedDomains) != 0 || len(sb.Filesystem.AllowWrite) != 0 {
		t.Errorf("an untrusted project loosened the sandbox: %+v", sb)
	}
	if len(sb.Network.DeniedDomains) != 1 || len(sb.Filesystem.DenyWrite) != 1 || len(sb.Filesystem.DenyRead) != 1 {
		t.Errorf("an untrusted project's deny entries were dropped: %+v", sb)
	}
	var ignored []string
	for _, v := range s.Ignored {
		ignored = append(ignored, v.V)
	}
	slices.Sort(ignored)
	want := []string{"sandbox.allowUnsandboxedCommands", "sandbox.autoAllowBashIfSandboxed", "sandbox.enabled", "sandbox.excludedCommands",
		"sandbox.filesystem.allowWrite", "sandbox.network.allowedDomains", "sandbox.network.strictAllowlist"}
	if diff := cmp.Diff(want, ignored); diff != "" {
		t.Errorf("ignored mismatch (-want +got):\n%s", diff)
	}
}

// TestWrapLspServers: sandbox.wrapLspServers (on unless set to false) may be switched off by
// the user; an untrusted project's false is ignored and listed, its true switches it back on.
func TestWrapLspServers(t *testing.T) {
	for _, tc := range []struct {
		name, user, project string
		set, want           bool
		ignored             []string
	}{
		{name: "user off", user: `{"sandbox": {"wrapLspServers": false}}`, set: true, want: false},
		{name: "project off", project: `{"sandbox": {"wrapLspServers": false}}`, set: false, ignored: []string{"sandbox.wrapLspServers"}},
		{name: "user off, project on", user: `{"sandbox": {"wrapLspServers": false}}`, project: `{"sandbox": {"wrapLspServers": true}}`, set: true, want: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l := newLayout(t)
			if tc.user != "" {
				l.write(t, l.files()["user"], tc.user)
			}
			if tc.project != "" {
				l.write(t, l.files()["project"], tc.project)
			}
			s, err := Load(Options{Env: Env{Home: l.home}, ProjectDir: l.project, ManagedPath: l.managed})
			if err != nil {
				t.Fatal(err)
			}
			if w := s.Sandbox.WrapLspServers; w.IsSet() != tc.set || w.V != tc.want {
				t.Errorf("wrapLspServers = %+v, want set %v, value %v", w, tc.set, tc.want)
			}
			var ignored []string
			for _, v := range s.Ignored {
				ignored = append(ignored, v.V)
			}
			if diff := cmp.Diff(tc.ignored, ignored); diff != "" {
				t.Errorf("ignored mismatch (-want +got):\n%s", diff)
			}
		})
	}
}
