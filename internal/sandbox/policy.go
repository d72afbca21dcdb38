// Package sandbox confines Bash, and everything it starts, with the kernel: on Linux, new
// user, mount, PID, network and IPC namespaces set up by bubblewrap where it is installed and
// recent enough, else by keel itself (keel re-executed as a helper, see [Dispatch]), Landlock
// where the kernel has it, a seccomp filter and no_new_privs; where user namespaces are
// blocked, Landlock, seccomp and no_new_privs alone. A [Policy] says what a command may write, what it may not read and how it
// reaches the network; it is built once per session from the settings' sandbox block, the
// --sandbox flag and the user's Read deny rules ([NewPolicy]).
//
// The guarantees are the kernel's, not a parser's: a command string that fools the
// permission rules still cannot write outside the writable roots, read a masked file or open
// a connection that bypasses the egress proxy.
package sandbox

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/settings"
)

// Mode is how much a sandboxed command may write: Codex's words, as --sandbox takes them.
type Mode string

// The modes. ModeAuto (the empty string) leaves the choice to the settings' sandbox.enabled
// and, when that is unset, to [DefaultOn].
const (
	ModeAuto           Mode = ""
	ModeOff            Mode = "off"
	ModeReadOnly       Mode = "read-only"
	ModeWorkspaceWrite Mode = "workspace-write"
)

// Modes are the values --sandbox accepts.
var Modes = []string{string(ModeReadOnly), string(ModeWorkspaceWrite), string(ModeOff)}

// DefaultOn says whether a session that neither --sandbox nor sandbox.enabled speaks for runs
// its commands in the sandbox (auto): on, in workspace-write with the network through the
// proxy. Where the machine cannot run it, the session says so once and commands run outside,
// unless failIfUnavailable (or a headless run in auto permission mode) makes that an error.
const DefaultOn = true

// Policy is what a sandboxed command may do. Paths are absolute and cleaned. It is a plain
// value, safe to copy and to share between goroutines once built.
//
// What takes reading the file system below the writable roots — git's files in every
// repository found there, the matches of Read deny globs — is left by [NewPolicy] to
// [Policy.Complete]: a [Sandbox] completes its policy at its first command (or `keel
// doctor`), so a session that opens in a large tree and never runs one does not pay for the
// search. Until then ReadOnly, Pinned, Masked, Warnings and Problems hold only what the
// settings name.
type Policy struct {
	Mode Mode
	// Writable are the directories (and files) a command may write: in workspace-write the
	// working directories, filesystem.allowWrite and the per-user toolchain caches; in
	// read-only none. A private /tmp is always writable.
	Writable []string
	// ReadOnly are always read-only, even inside a writable root and also when they do not
	// exist yet (keel puts an empty placeholder there for the command's life): git's
	// configuration and hooks, the project configuration of projectConfigNames (.mcp.json,
	// .claude/, .keel/, the other harnesses' and the editors' folders) and the few files of
	// rootConfig, settings files, hook scripts, shell start-up files and filesystem.denyWrite.
	ReadOnly []string
	// Pinned are directories bound onto themselves, writable: a mount point cannot be renamed
	// or removed, so a command cannot move a repository's gitdir (or a directory on the way to
	// one) aside and plant another in its place.
	Pinned []string
	// GitDirs are the repositories whose configuration and hooks ReadOnly protects, found by
	// Complete: a repository found later that is not among them was made (or reached) by a
	// command, and is checked as that command is released ([Run.Planted]).
	GitDirs []string
	// Warnings say where the protection is incomplete (the search for repositories stopped at
	// its bounds, a .git that is a symbolic link): `keel doctor` shows them.
	Warnings []string
	// Problems make every command an error (a Read deny glob whose matches cannot be masked
	// without hiding a working directory): a sandbox that would leave a secret readable does
	// not run.
	Problems []string
	// Masked are replaced by an empty file or directory: filesystem.denyRead, the paths of
	// Read(...) deny rules and keel's credentials and copies of files ([KeelHomeMasked]).
	// Unmasked (filesystem.allowRead) stay readable inside them.
	Masked   []string
	Unmasked []string
	// Caches are the toolchain caches among Writable: each is an overlay inside the sandbox
	// whose upper layer is kept below CacheState, so the real cache is never written ([overlay]).
	Caches     []string
	CacheState string
	// ObjectState is where keel keeps the copies of packs without the blobs of masked files
	// ([Sandbox.HideObjects]), below its own directory; empty without one.
	ObjectState string
	// PythonCache is the bytecode cache of the Python programs keel runs outside the sandbox
	// ([hostexec.PythonCache]), below its own directory, which commands cannot write; empty
	// without one.
	PythonCache string
	// Network is how a command reaches the outside.
	Network Network
	// UnixSockets are the Unix sockets a command may connect to (allowUnixSockets); with none,
	// creating a Unix socket fails.
	UnixSockets []string

	AutoAllowBash    bool
	AllowUnsandboxed bool
	// FailIfUnavailable makes a sandbox that cannot start an error for each command instead
	// of a notice; FailWhy names what asked for it (sandbox.failIfUnavailable, or a headless
	// run in auto permission mode).
	FailIfUnavailable bool
	FailWhy           string
	// RefuseLimited (sandbox.failIfUnavailable itself) counts the weaker Landlock-only form as
	// unavailable too: whoever set it asked for the full sandbox or a refusal. A headless run
	// in auto permission mode still takes that form, which is not an unsandboxed run.
	RefuseLimited bool
	// Excluded are Bash rule patterns run outside the sandbox (excludedCommands).
	Excluded []string
	// WrapHooks and WrapMCPServers extend the sandbox to hooks and MCP stdio servers;
	// WrapLSPServers to language servers, which load code from the workspace (a project's
	// node_modules/typescript, build scripts), so it is on unless sandbox.wrapLspServers is false.
	WrapHooks      bool
	WrapMCPServers bool
	WrapLSPServers bool

	// why remembers, for each configured path, the setting that put it there, for the
	// messages about denied operations.
	why map[string]string
	// search is what Complete has left to do; nil once done.
	search *search
	// gitRoots are the writable roots Complete searched for repositories: searched again as
	// each command is released, for the repositories it made ([plantWatch]).
	gitRoots []string
	// unprotected are the repositories Complete found past those it protects.
	unprotected []string
	// trees names the working tree of each gitdir found through a .git ([gitGuard]).
	trees map[string]string
	// userHooks are the core.hooksPath values of the user's and the system's git configuration,
	// repoHooks those of each protected common directory's ([Policy.protectGitConfig]).
	userHooks []string
	repoHooks map[string][]string
	// viaLinks are the read-only and masked paths as given, where a link on their way made
	// the real path differ: the links themselves are kept at each release ([plantWatch.noteLinks]).
	viaLinks []string
	// denyRules are the Read deny rules Complete matched, with the directory and home they
	// are anchored at: their globs name files git holds that the working tree no longer does.
	denyRules         []PathRule
	denyCwd, denyHome string
	// objBinds and unreadable hide the blobs of masked files from git for one command
	// ([Sandbox.withObjectMasks]).
	objBinds   []objBind
	unreadable []string
	// before is what a command's release compares with to find the project configuration and
	// the bins it made ([plantWatch.refuseMade]).
	before configBefore
}

// search is the part of a policy that reads the file system: the writable roots whose
// repositories git's protection looks for, and the Read deny rules whose globs are matched.
type search struct {
	roots     []string
	readDeny  []PathRule
	cwd, home string
}

// Network says what the egress proxy lets through. A sandboxed command has no network
// device but loopback; with Proxy its HTTP_PROXY, HTTPS_PROXY and ALL_PROXY lead to keel's
// proxy, which applies these lists.
type Network struct {
	Proxy          bool
	AllowedDomains []string
	DeniedDomains  []string
	// AllowLocalBinding lets a command listen on the loopback where it is the host's (the
	// Landlock-only form, macOS). In the namespaces the loopback is the sandbox's own, which
	// nothing outside reaches, so a test server may listen there whatever it says.
	AllowLocalBinding bool
	// Strict refuses a domain in neither list instead of asking.
	Strict bool
}

// Enabled reports whether commands run in the sandbox.
func (p Policy) Enabled() bool { return p.Mode == ModeReadOnly || p.Mode == ModeWorkspaceWrite }

// Input is what a policy is built from.
type Input struct {
	// Mode is --sandbox; ModeAuto defers to the settings.
	Mode Mode
	// Settings is the merged sandbox block (nil: none).
	Settings *settings.Sandbox
	// Dirs are the working directories: the session's cwd first, then additional ones.
	Dirs []string
	// Home is the user's home directory (~ in paths); KeelHome keel's own directory.
	Home, KeelHome string
	// Caches are the per-user toolchain caches writable in workspace-write ([Caches]).
	Caches []string
	// Protect are more always-read-only paths: the settings files and hook scripts.
	Protect []string
	// ReadDeny are the user's Read(...) deny rules.
	ReadDeny []PathRule
	// Unattended is a run with no one to ask and no one to read a notice, in auto permission
	// mode (a headless `keel -p --permission-mode auto`): a sandbox that cannot start is then
	// an error, as with failIfUnavailable.
	Unattended bool
}

// PathRule is the specifier of a path rule ("./secrets/**", "~/.ssh", "//etc/shadow",
// "/build/**", "*.pem") with the directory its relative forms are anchored at: the project
// for a project's settings, as the permission rules read them.
type PathRule struct {
	Spec, Dir string
}

// NewPolicy builds the policy in asks for.
func NewPolicy(in Input) Policy {
	sb := in.Settings
	if sb == nil {
		sb = &settings.Sandbox{}
	}
	p := Policy{Mode: in.Mode, why: map[string]string{}}
	if p.Mode == ModeAuto {
		p.Mode = ModeOff
		if (sb.Enabled.IsSet() && sb.Enabled.V) || (!sb.Enabled.IsSet() && DefaultOn) {
			p.Mode = ModeWorkspaceWrite
		}
	}
	cwd := ""
	if len(in.Dirs) > 0 {
		cwd = in.Dirs[0]
	}
	abs := func(s string) string { return absPath(s, cwd, in.Home) }
	vals := func(vs []settings.Value[string]) []string {
		out := make([]string, 0, len(vs))
		for _, v := range vs {
			out = append(out, v.V)
		}
		return out
	}
	var roots []string // writable roots whose git and agent configuration stays read-only
	if p.Mode == ModeWorkspaceWrite {
		for _, d := range in.Dirs {
			roots = append(roots, resolvePath(abs(d)))
			p.addWritable(abs(d), "the working directories (--add-dir, permissions.additionalDirectories)")
		}
		for _, w := range vals(sb.Filesystem.AllowWrite) {
			roots = append(roots, resolvePath(abs(w)))
			p.addWritable(abs(w), "sandbox.filesystem.allowWrite")
		}
		p.addCaches(in.Caches, in.KeelHome, abs)
	}
	if in.KeelHome != "" {
		p.ObjectState = resolvePath(filepath.Join(abs(in.KeelHome), "sandbox", "objects"))
		p.PythonCache = resolvePath(filepath.Join(abs(in.KeelHome), "sandbox", "pycache"))
	}
	for _, d := range vals(sb.Filesystem.DenyWrite) {
		p.add(&p.ReadOnly, abs(d), "sandbox.filesystem.denyWrite")
	}
	for _, r := range roots {
		if r == "" || r == "/" {
			continue
		}
		for _, ro := range append(protectedIn(r), protectedBetween(r, resolvePath(cwd))...) {
			p.add(&p.ReadOnly, ro, "keel's always-read-only paths")
		}
	}
	for _, ro := range homeRootProtected(in.Home, roots, p.Writable, os.Getenv) {
		p.add(&p.ReadOnly, ro, homeRootWhy)
	}
	p.before.bins = homeRootAbsentBins(in.Home, roots, p.Writable, os.Getenv)
	if len(roots) > 0 || len(in.ReadDeny) > 0 {
		p.search = &search{roots: roots, readDeny: in.ReadDeny, cwd: cwd, home: in.Home}
	}
	for _, pr := range append(homeProtected(in.Home, configHome(in.Home), cargoHome(), in.KeelHome), in.Protect...) {
		p.add(&p.ReadOnly, abs(pr), "keel's always-read-only paths")
	}
	for _, d := range vals(sb.Filesystem.DenyRead) {
		p.add(&p.Masked, abs(d), "sandbox.filesystem.denyRead")
	}
	for _, m := range KeelHomeMasked(in.KeelHome) {
		p.add(&p.Masked, m, "keel's masked paths (its credentials and other sessions' copies of files)")
	}
	for _, a := range vals(sb.Filesystem.AllowRead) {
		p.add(&p.Unmasked, abs(a), "sandbox.filesystem.allowRead")
	}
	p.Network = Network{
		Proxy:          true,
		AllowedDomains: vals(sb.Network.AllowedDomains), DeniedDomains: vals(sb.Network.DeniedDomains),
		AllowLocalBinding: sb.Network.AllowLocalBinding.V, Strict: sb.Network.StrictAllowlist.V,
	}
	for _, s := range vals(sb.Network.AllowUnixSockets) {
		p.add(&p.UnixSockets, abs(s), "sandbox.network.allowUnixSockets")
	}
	p.AutoAllowBash = sb.AutoAllowBashIfSandboxed.V
	// Claude Code's default: a command may ask to run outside (and is asked about).
	p.AllowUnsandboxed = !sb.AllowUnsandboxedCommands.IsSet() || sb.AllowUnsandboxedCommands.V
	p.FailIfUnavailable = sb.FailIfUnavailable.V
	p.RefuseLimited = sb.FailIfUnavailable.V
	switch {
	case p.FailIfUnavailable:
		p.FailWhy = "sandbox.failIfUnavailable is true"
	case in.Unattended:
		p.FailIfUnavailable, p.FailWhy = true, "a headless run in auto permission mode never runs commands unsandboxed"
	}
	p.Excluded = vals(sb.ExcludedCommands)
	p.WrapHooks, p.WrapMCPServers = sb.WrapHooks.V, sb.WrapMcpServers.V
	p.WrapLSPServers = !sb.WrapLspServers.IsSet() || sb.WrapLspServers.V
	return p
}

// Complete returns p with what NewPolicy left to the first command done: git's files made
// read-only in every repository found below the writable roots ([gitGuard]) and the matches
// of the Read deny rules masked. p itself is not changed; a complete policy is returned as
// it is.
func (p Policy) Complete() Policy {
	sr := p.search
	if sr == nil {
		return p
	}
	p.search = nil
	p.why = maps.Clone(p.why)
	p.ReadOnly, p.Pinned, p.Masked = slices.Clone(p.ReadOnly), slices.Clone(p.Pinned), slices.Clone(p.Masked)
	p.Warnings, p.Problems, p.viaLinks = slices.Clone(p.Warnings), slices.Clone(p.Problems), slices.Clone(p.viaLinks)
	p.protectRoots(sr.roots, sr.home)
	for _, r := range sr.readDeny {
		p.maskRule(r, sr.cwd, sr.home)
	}
	p.denyRules, p.denyCwd, p.denyHome = sr.readDeny, sr.cwd, sr.home
	p.protectAlternates()
	return p
}

// protectRoots makes git's configuration and hooks read-only in every repository found in
// the writable roots ([gitGuard]), and what that configuration names ([Policy.protectGitConfig]).
func (p *Policy) protectRoots(roots []string, home string) {
	g := p.searchRepos(roots)
	for _, ro := range g.readOnly {
		p.add(&p.ReadOnly, ro, "keel's always-read-only paths (git's configuration and hooks)")
	}
	for _, d := range g.pinned {
		p.add(&p.Pinned, d, "keel's always-read-only paths (git's configuration and hooks)")
	}
	for _, c := range g.config {
		p.add(&p.ReadOnly, c, "keel's always-read-only paths (project configuration below a writable root)")
	}
	p.Warnings = append(p.Warnings, g.warnings...)
	p.before.config = g.present
	p.GitDirs = slices.Sorted(maps.Keys(g.seen))
	p.unprotected = g.unprotected
	p.trees = g.trees
	p.gitRoots = roots
	p.protectGitConfig(g, home)
	p.protectCheckouts()
}

// protectCheckouts makes checkoutFiles read-only in the common directory of each protected
// repository with read-only paths in its working tree: only there does what a checkout writes
// matter to keel (elsewhere the command can write the working tree itself), and each costs a
// mount, or a placeholder, per command.
func (p *Policy) protectCheckouts() {
	for _, d := range p.GitDirs {
		if tree := p.trees[d]; tree == "" || len(guardedPaths(tree, *p)) == 0 {
			continue
		}
		common, _, _ := readCommonDir(d)
		for _, n := range checkoutFiles {
			p.add(&p.ReadOnly, filepath.Join(common, n), "keel's always-read-only paths (what git's checkout reads)")
		}
		// A sparse checkout's patterns (this worktree's): one that leaves .claude/ out has the
		// next checkout remove it. Only where there is one: git reads it only when the
		// configuration turns sparse checkout on, and an empty placeholder would then leave the
		// whole working tree out.
		sparse := filepath.Join(d, "info", "sparse-checkout")
		if _, err := os.Lstat(sparse); err == nil {
			p.add(&p.ReadOnly, sparse, "keel's always-read-only paths (what git's checkout reads)")
		}
	}
}

// searchRepos finds the repositories below roots ([gitGuard]).
func (p Policy) searchRepos(roots []string) gitGuard {
	g := gitGuard{seen: map[string]bool{}, trees: map[string]string{}}
	for _, r := range roots {
		if r == "" || r == "/" {
			continue
		}
		// The other writable roots and the caches are searched on their own, or not at all.
		g.skip = slices.DeleteFunc(slices.Clone(p.Writable), func(w string) bool { return w == r })
		g.root(r)
	}
	return g
}

// maskRule masks what the Read deny rule r covers. A glob past maxGlobMatches covers the
// directory holding every match; where that would hide a working directory, every command is
// refused instead (Problems).
func (p *Policy) maskRule(r PathRule, cwd, home string) {
	dir := r.Dir
	if dir == "" {
		dir = cwd
	}
	ms, whole := readDenyPaths(r.Spec, dir, home)
	for _, m := range ms {
		if !whole {
			p.add(&p.Masked, m, "a Read(...) deny rule")
			continue
		}
		m = resolvePath(m)
		if slices.ContainsFunc(p.Writable, func(w string) bool { return within(w, m) }) || within(resolvePath(cwd), m) {
			p.Problems = append(p.Problems, fmt.Sprintf("the Read deny rule %q matches more than %d files, and masking %s, the directory holding them all, would hide the working directory: name fewer files in the rule", r.Spec, maxGlobMatches, m))
			continue
		}
		p.add(&p.Masked, m, fmt.Sprintf("a Read(...) deny rule (%s matches more than %d files: the directory holding them is masked)", r.Spec, maxGlobMatches))
	}
}

func (p *Policy) addWritable(path, why string) {
	if path == "" || path == "/" || resolvePath(path) == "/" {
		return // the whole file system is what a sandbox is not
	}
	p.add(&p.Writable, path, why)
}

// add puts path on list with the symbolic links in it resolved: a mount is made at, and a
// mask covers, the real path, which is where bubblewrap can make it (it cannot bind onto a
// path through a link), and the way in through the link leads there too. why is kept for
// both spellings.
func (p *Policy) add(list *[]string, path, why string) {
	if path == "" {
		return
	}
	real := resolvePath(path)
	if list == &p.UnixSockets {
		real = path // a socket is matched by the path a program connects to, not mounted
	}
	for _, k := range []string{path, real} {
		if _, ok := p.why[k]; !ok {
			p.why[k] = why
		}
	}
	if !slices.Contains(*list, real) {
		*list = append(*list, real)
	}
	if real != path && (list == &p.ReadOnly || list == &p.Masked) && !slices.Contains(p.viaLinks, path) {
		p.viaLinks = append(p.viaLinks, path)
	}
}

// resolvePath is path with its symbolic links resolved; for a path that does not exist, its
// nearest existing ancestor's, the rest kept as it is.
func resolvePath(path string) string {
	if path == "" {
		return ""
	}
	rest := ""
	for p := path; ; p = filepath.Dir(p) {
		if r, err := filepath.EvalSymlinks(p); err == nil {
			return filepath.Join(r, rest)
		}
		if filepath.Dir(p) == p {
			return path
		}
		rest = filepath.Join(filepath.Base(p), rest)
	}
}

// absPath resolves a settings path: ~/ under home, // and / absolute, anything else under cwd.
func absPath(s, cwd, home string) string {
	switch {
	case s == "~" || strings.HasPrefix(s, "~/"):
		if home == "" {
			return ""
		}
		s = filepath.Join(home, strings.TrimPrefix(s, "~"))
	case strings.HasPrefix(s, "//"):
		s = "/" + strings.TrimLeft(s, "/")
	case filepath.IsAbs(s):
	default:
		if cwd == "" {
			return ""
		}
		s = filepath.Join(cwd, s)
	}
	return filepath.Clean(s)
}

// homeProtected are the start-up and configuration files of the user's shell, login, git
// and tools — whatever runs by itself, or is run by git, a shell or a login, when the user
// next works outside: read-only already unless a writable root holds them (keel run in ~,
// --add-dir ~, a toolchain cache), and then they stay so. configHome is $XDG_CONFIG_HOME
// (~/.config by default): git's global configuration, attributes and ignore file live in its
// git/, fish's start-up files in fish/, systemd's user units and environment in systemd/ and
// environment.d/, a desktop session's autostart entries in autostart/. ~/.local/bin is on
// PATH on many distributions (a program planted there shadows git), and so is cargo's bin/
// (cargoProtected), in ~/.cargo and in $CARGO_HOME (cargoHome) — both are toolchain caches,
// writable. The editors git starts for a commit message (vi, by default) read ~/.vimrc, ~/.vim
// and nvim's configuration, which can run commands: protected too. Other editors'
// configuration is not. Where a writable root holds the home directory, [homeRootProtected]
// keeps the rest of its dot-entries too; this list is what stays when only a cache holds them.
func homeProtected(home, configHome, cargoHome, keelHome string) []string {
	var out []string
	if home != "" {
		for _, n := range []string{".bashrc", ".bash_profile", ".bash_login", ".profile", ".bash_logout", ".bash_aliases",
			".zshrc", ".zshenv", ".zprofile", ".zlogin", ".zlogout", ".gitconfig", ".config/git", ".ssh", ".claude", ".keel",
			".claude.json", ".local/bin", ".npmrc", ".vimrc", ".vim"} {
			out = append(out, filepath.Join(home, n))
		}
	}
	cargoHomes := []string{cargoHome}
	if home != "" {
		cargoHomes = append(cargoHomes, filepath.Join(home, ".cargo"))
	}
	for _, c := range cargoHomes {
		if c == "" {
			continue
		}
		for _, n := range cargoProtected {
			out = append(out, filepath.Join(c, n))
		}
	}
	if configHome != "" {
		for _, n := range []string{"git", "fish", "systemd", "environment.d", "autostart", "nvim"} {
			out = append(out, filepath.Join(configHome, n))
		}
	}
	if keelHome != "" {
		out = append(out, keelHome)
	}
	return out
}

// KeelHomeMasked are what of keel's own directory a command cannot read: mcp-auth/, the MCP
// servers' OAuth tokens and client secrets, which would let a command act as the user on
// those services; file-history/ and shadow/, every session's copies of the files it changed
// (the shadow repository's, of whole working trees), which may hold what a Read deny rule
// masks where the file lies, or another project's secrets. keel itself reads and writes them,
// outside. projects/ stays readable: each command's shell reports its final directory in a
// file below it, which a mask over it would hide (masking each other project's folder would
// cost a mount per project, per command); so do the settings files, which a keel or another
// tool run inside reads: a secret written there (an env block, webSearch.apiKey) is readable.
func KeelHomeMasked(keelHome string) []string {
	if keelHome == "" {
		return nil
	}
	return []string{filepath.Join(keelHome, "mcp-auth"), filepath.Join(keelHome, "file-history"), filepath.Join(keelHome, "shadow")}
}

// cargoProtected are what of a cargo home (~/.cargo, $CARGO_HOME) stays read-only though the
// rest is a cache: bin/, on PATH, where a program planted would shadow git; env, which a login
// sources; config and config.toml, which can wrap rustc or name a linker.
var cargoProtected = []string{"bin", "env", "config", "config.toml"}

// cargoHome is $CARGO_HOME when set to an absolute path ([Caches] makes it writable), else "".
func cargoHome() string {
	if c := os.Getenv("CARGO_HOME"); filepath.IsAbs(c) {
		return filepath.Clean(c)
	}
	return ""
}

// configHome is $XDG_CONFIG_HOME when set to an absolute path, else ~/.config.
func configHome(home string) string {
	if c := os.Getenv("XDG_CONFIG_HOME"); filepath.IsAbs(c) {
		return filepath.Clean(c)
	}
	if home == "" {
		return ""
	}
	return filepath.Join(home, ".config")
}

// Why names the setting that made path writable, read-only or masked (the nearest
// configured ancestor), or "" when none did.
func (p Policy) Why(path string) string {
	for q := filepath.Clean(path); ; q = filepath.Dir(q) {
		if w, ok := p.why[q]; ok {
			return w
		}
		if q == "/" || q == "." {
			return ""
		}
	}
}

// withinAny reports whether path is one of roots or below one.
func withinAny(path string, roots []string) bool {
	return slices.ContainsFunc(roots, func(r string) bool { return within(path, r) })
}

// within reports whether path is root or below it.
func within(path, root string) bool {
	return path == root || strings.HasPrefix(path, strings.TrimSuffix(root, "/")+"/")
}

// WritableAt reports whether a command may write path: below a writable root and not below an
// always-read-only path.
func (p Policy) WritableAt(path string) bool {
	if !withinAny(path, p.Writable) {
		return false
	}
	return !withinAny(path, p.ReadOnly)
}

// PrivateRoot names the directory of their own — /tmp, /dev or /proc — in which commands see
// path instead of the host's, or is "" where they see the host's: outside those, and where a
// writable or read-only root is bound in from the host. keel reading a host file there for a
// command's benefit (a memory file's include, say) would hand it what the sandbox hides. The
// Landlock-only form, which mounts nothing, shares them all; see [Sandbox.Stranded].
func (p Policy) PrivateRoot(path string) string {
	if !p.Enabled() {
		return ""
	}
	shared := func(roots []string) bool {
		return slices.ContainsFunc(roots, func(r string) bool { return within(path, r) || within(path, resolvePath(r)) })
	}
	if shared(p.Writable) || shared(p.ReadOnly) {
		return ""
	}
	for _, private := range [...]string{"/tmp", "/dev", "/proc"} {
		if within(path, private) {
			return private
		}
	}
	return ""
}

// MaskedAt reports whether path is masked from reads.
func (p Policy) MaskedAt(path string) bool {
	if withinAny(path, p.Unmasked) {
		return false
	}
	return withinAny(path, p.Masked)
}

// Caches are the per-user toolchain caches keel keeps writable in workspace-write, so that
// go build, go test, npm, pnpm, pip and cargo work inside: Go's build and module caches (as
// GOCACHE and GOMODCACHE say, else their defaults), ~/.cache, ~/.npm, ~/.cargo and pnpm's
// store — the store only: PNPM_HOME itself is on PATH (pnpm setup puts it first), where a
// program a command planted would shadow git; for the same reason cargo's bin/, env and config
// stay read-only in $CARGO_HOME as in ~/.cargo ([homeProtected]). getenv reads the session's
// environment.
func Caches(home string, getenv func(string) string) []string {
	var out []string
	for _, k := range []string{"GOCACHE", "GOMODCACHE", "XDG_CACHE_HOME", "npm_config_cache", "CARGO_HOME"} {
		if v := getenv(k); filepath.IsAbs(v) {
			out = append(out, v)
		}
	}
	if v := getenv("PNPM_HOME"); filepath.IsAbs(v) {
		out = append(out, filepath.Join(v, "store"))
	}
	if home != "" {
		gopath := getenv("GOPATH")
		if !filepath.IsAbs(gopath) {
			gopath = filepath.Join(home, "go")
		}
		out = append(out, filepath.Join(gopath, "pkg", "mod"), filepath.Join(home, ".cache"), filepath.Join(home, ".npm"),
			filepath.Join(home, ".cargo"), filepath.Join(home, ".local", "share", "pnpm", "store"))
	}
	return out
}
