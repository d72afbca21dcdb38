package gitexec

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// diffProgram stands in for an external diff or a diff driver's command: git calls it with
// path, old-file, old-hex, old-mode, new-file, new-hex, new-mode, through sh, so it prints a
// plain unified diff of the two files — the repository's own program never runs. The trailing
// ":" makes its status 0: git stops at an external diff that fails.
const diffProgram = `diff -u -- "$2" "$5"; :`

// fixed are the options every untrusted git call gets, whatever the repository configures:
// no pager, no fsmonitor, no hooks (a hooks path that cannot hold any), no bare repository
// found by walking up, no ext:: transport, no credential helper or proxy, no submodule
// recursion (a submodule's own configuration is another repository's), no automatic gc.
// Options given with -c outrank every configuration file, and git hands them on to the git
// processes it starts.
func fixed() []string {
	opts := []string{"--no-pager"}
	for _, kv := range [][2]string{
		{"core.fsmonitor", "false"},
		{"core.hooksPath", "/dev/null"},
		{"safe.bareRepository", "explicit"},
		{"protocol.ext.allow", "never"},
		{"credential.helper", ""}, // an empty value empties the helper list
		{"core.askPass", ""},
		{"core.sshCommand", "ssh"},
		{"core.gitProxy", "none"},
		{"diff.external", diffProgram},
		{"diff.ignoreSubmodules", "all"},
		{"submodule.recurse", "false"},
		{"status.submoduleSummary", "false"},
		{"log.showSignature", "false"},
		{"gc.auto", "0"},
		{"maintenance.auto", "false"},
	} {
		opts = append(opts, "-c", kv[0]+"="+kv[1])
	}
	return opts
}

// perKey says what a configured key that names a program becomes; the key's last part (or,
// for a few, the whole key) picks the rule. Keys of drivers and helpers carry a name git
// finds in .gitattributes or in a URL, so they are switched off one by one, as configured.
var perKey = []struct {
	section, variable string // variable "" matches the whole key
	value             string
}{
	{"filter", "clean", ""}, // an empty command is no filter
	{"filter", "smudge", ""},
	{"filter", "process", ""},
	{"filter", "required", "false"},
	{"diff", "command", diffProgram},
	{"diff", "textconv", "cat"},
	{"merge", "driver", "false"}, // a conflict instead of the repository's merge program
	{"credential", "helper", ""},
	{"remote", "uploadpack", "git-upload-pack"},
	{"remote", "receivepack", "git-receive-pack"},
	{"remote", "proxy", ""},
	{"http", "proxy", ""},
	{"gpg", "defaultkeycommand", ""},
	{"core", "editor", "false"},
	{"sequence", "editor", "false"},
	{"core", "alternaterefscommand", "true"},
	{"submodule", "update", "none"},
	{"browser", "cmd", "false"},
	{"browser", "path", "false"},
	{"man", "cmd", "false"},
	{"man", "path", "false"},
	{"difftool", "cmd", "false"},
	{"mergetool", "cmd", "false"},
	{"trailer", "command", "true"},
	{"trailer", "cmd", "true"},
	{"interactive", "difffilter", "cat"},
}

// gpgPrograms are the signature programs by key: the user's own from PATH, never one the
// repository names.
var gpgPrograms = lazy.Value[map[string]string]{New: func() map[string]string {
	return map[string]string{
		"gpg.program": "gpg", "gpg.openpgp.program": "gpg", "gpg.x509.program": "gpgsm", "gpg.ssh.program": "ssh-keygen",
	}
}}

// ErrUnneutralisable says a repository configures a program keel cannot switch off from git's
// command line; its git is not run until the workspace is trusted.
var ErrUnneutralisable = errors.New("the repository configures a program keel cannot switch off; trust the workspace to run git in it")

// Neutralise returns the options that switch off every program the configuration keys name
// (as `git config --list` prints them), after the fixed set. A driver whose name holds "="
// cannot be named on git's command line (-c splits at the first "="), so such a key is
// [ErrUnneutralisable].
func Neutralise(keys []string) ([]string, error) {
	opts := fixed()
	seen := map[string]bool{}
	for _, key := range keys {
		// git prints a key with its section and variable lowercased and its subsection as
		// written, which stays case-sensitive: filter.Lfs.clean and filter.lfs.clean are two
		// drivers, and each must be switched off.
		if seen[key] {
			continue
		}
		seen[key] = true
		lower := strings.ToLower(key)
		value, ok := gpgPrograms.Get()[lower]
		if !ok {
			section, _, _ := strings.Cut(lower, ".")
			variable := lower[strings.LastIndexByte(lower, '.')+1:]
			i := slices.IndexFunc(perKey, func(k struct{ section, variable, value string }) bool {
				return k.section == section && k.variable == variable
			})
			if i < 0 {
				continue
			}
			value = perKey[i].value
		}
		if strings.Contains(key, "=") {
			return nil, fmt.Errorf("%w (%s)", ErrUnneutralisable, key)
		}
		opts = append(opts, "-c", key+"="+value)
	}
	return opts, nil
}
