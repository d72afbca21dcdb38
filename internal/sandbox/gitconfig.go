package sandbox

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"os"
	"os/user"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/lazy"
)

// Besides a gitdir's own files ([gitDirFiles]), git's configuration can name two more places
// git reads code or configuration from, often in the working tree, where a command could write:
//   - core.hooksPath moves the hooks out of the gitdir (husky's .husky/_, a project's
//     .githooks, lefthook's): git runs the hooks there, and .git/hooks not at all;
//   - include.path and includeIf.<condition>.path read another file as configuration (a
//     project's shared ../.gitconfig), where a command could set core.fsmonitor, core.pager or
//     an alias.
//
// At Complete (not per command), the configuration of each protected gitdir — its common
// directory's config, its config.worktree — and the user's and the system's are read, each
// file by git itself ([parseGitConfig], includes not followed, nothing run) and its includes
// followed by keel, whatever their condition (a command can change the branch, or the remote
// URL, an includeIf tests). Every hooks directory and included file that lies in a writable
// root is then always read-only, like .git/hooks and .git/config: a placeholder where it does
// not exist, so that a command cannot make it. A relative hooks path is the working tree's
// top (the gitdir's, bare), as git takes it when it runs a hook; ~ is the user's home.
//
// A repository a command makes has its core.hooksPath and includes dropped by [disarm] (none
// is a safe key); what the user's configuration or a protected repository's names relative to
// a working tree the command made (a linked worktree it added) has its hooks moved aside
// there too ([Policy.plantedHooks]).

// Bounds of the configuration read beyond the gitdirs' own files (at most maxProtectedGitDirs):
// the included files followed (each one git run at most, only for those that mention an
// include or a hooks path, and none for one read before), and git's own include depth.
const (
	maxIncludedFiles = 256
	maxIncludeDepth  = 10
)

// configScan reads git configuration files and what they include, for one completion.
type configScan struct {
	home string
	// done holds, per file read (by the path git opens), the hooks paths it and its includes
	// set; a file included twice is read once (and a cycle ends).
	done map[string][]string
	// included are the included files, as git opens them.
	included []string
	warnings []string
}

func newConfigScan(home string) *configScan {
	return &configScan{home: home, done: map[string][]string{}}
}

// read reads the configuration file path and, recursively, what it includes, noting each
// included file; it returns the core.hooksPath values set in any, ~ expanded, a relative
// one as written.
func (c *configScan) read(path string, depth int) []string {
	if h, ok := c.done[path]; ok {
		return h
	}
	c.done[path] = nil
	real, viaProcess, _ := walkPath(path)
	if viaProcess {
		c.warn(fmt.Sprintf("git's configuration includes %s, through /proc or /dev/fd, which keel cannot follow: what it sets may be writable", path))
		return nil
	}
	b, err := readRegular(real, maxGitConfig)
	switch {
	case errors.Is(err, errTooLarge):
		c.warn(fmt.Sprintf("the git configuration %s is larger than %d bytes: keel did not read which hooks directory or files it names", path, maxGitConfig))
		return nil
	case err != nil:
		return nil // absent, or no regular file: git reads nothing there either
	}
	entries, err := configPaths(b)
	if err != nil {
		slog.Warn("sandbox: git could not read a configuration file", "path", path, "err", err)
		return nil
	}
	var hooks []string
	for _, e := range entries {
		if e.noValue || e.value == "" {
			continue
		}
		v, ok := c.expand(e.value)
		if !ok {
			continue
		}
		if e.key == "core.hookspath" {
			hooks = append(hooks, v)
			continue
		}
		// An include, relative to the file that names it.
		if !filepath.IsAbs(v) {
			v = filepath.Dir(path) + string(filepath.Separator) + v
		}
		if slices.Contains(c.included, v) {
			continue // read already, or being read (a cycle)
		}
		if len(c.included) == maxIncludedFiles {
			c.warn(fmt.Sprintf("git's configuration includes more than %d files (%s is past them): the hooks directories and included files named there may be writable", maxIncludedFiles, v))
			continue
		}
		c.included = append(c.included, v)
		if depth+1 >= maxIncludeDepth {
			c.warn(fmt.Sprintf("git's configuration includes files more than %d deep (at %s): git refuses it", maxIncludeDepth, v))
			continue
		}
		hooks = append(hooks, c.read(v, depth+1)...)
	}
	c.done[path] = hooks
	return hooks
}

func (c *configScan) warn(w string) {
	if !slices.Contains(c.warnings, w) {
		c.warnings = append(c.warnings, w)
	}
}

// expand is a path setting's value as git interpolates it: ~/ the user's home, ~user/ that
// user's; false for what keel does not follow (%(prefix)/, git's installation, never in a
// writable root; a ~ with no home to put there).
func (c *configScan) expand(v string) (string, bool) {
	if strings.HasPrefix(v, "%(prefix)/") {
		return "", false
	}
	if !strings.HasPrefix(v, "~") {
		return v, true
	}
	name, rest, _ := strings.Cut(v[1:], "/")
	home := c.home
	if name != "" {
		u, err := user.Lookup(name)
		if err != nil {
			return "", false
		}
		home = u.HomeDir
	}
	if home == "" {
		return "", false
	}
	return filepath.Join(home, rest), true
}

// userConfigFiles are the user's and the system's git configuration files: what
// GIT_CONFIG_GLOBAL names, ~/.gitconfig and $XDG_CONFIG_HOME/git/config (git reads the
// first only when it is set; keel reads all), and the system's.
func userConfigFiles(home string) []string {
	var files []string
	if g := os.Getenv("GIT_CONFIG_GLOBAL"); filepath.IsAbs(g) {
		files = append(files, g)
	}
	if home != "" {
		files = append(files, filepath.Join(home, ".gitconfig"), filepath.Join(configHome(home), "git", "config"))
	}
	if s := systemGitConfig.Get(); s != "" {
		files = append(files, s)
	}
	return files
}

// systemGitConfig is the system's git configuration file, as git names it (its place depends
// on how git was built); "" when there is none, or GIT_CONFIG_NOSYSTEM is set. Read once.
var systemGitConfig = lazy.Value[string]{New: func() string {
	ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
	defer cancel()
	out, _ := gitexec.Runner{}.Output(ctx, "/", "config", "--system", "--list", "--show-origin", "--no-includes", "-z")
	origin, _, _ := bytes.Cut(out, []byte{0})
	f, _ := strings.CutPrefix(string(origin), "file:")
	if !filepath.IsAbs(f) {
		return ""
	}
	return f
}}

// configPaths lists the settings of the git configuration b that name a hooks directory or
// an included file. Only a file that mentions one is given to git (a key is never escaped,
// so "hookspath" or "include" is in it, in some case); what git lists is kept by content, so
// a completion done again runs no git for a file unchanged.
func configPaths(b []byte) ([]configEntry, error) {
	lower := bytes.ToLower(b)
	if !bytes.Contains(lower, []byte("hookspath")) && !bytes.Contains(lower, []byte("include")) {
		return nil, nil
	}
	sum := sha256.Sum256(b)
	configCache.Lock()
	entries, ok := configCache.m[sum]
	configCache.Unlock()
	if ok {
		return entries, nil
	}
	all, err := parseGitConfig(b)
	if err != nil {
		return nil, err
	}
	entries = []configEntry{}
	for _, e := range all {
		if e.key == "core.hookspath" || e.key == "include.path" || (strings.HasPrefix(e.key, "includeif.") && strings.HasSuffix(e.key, ".path")) {
			entries = append(entries, e)
		}
	}
	configCache.Lock()
	if configCache.m == nil || len(configCache.m) >= maxConfigCache {
		configCache.m = map[[sha256.Size]byte][]configEntry{}
	}
	configCache.m[sum] = entries
	configCache.Unlock()
	return entries, nil
}

// configCache holds configPaths' answers by the file's content.
var configCache = struct {
	sync.Mutex
	m map[[sha256.Size]byte][]configEntry
}{}

const maxConfigCache = 1024

// protectGitConfig makes read-only, in the writable roots, the hooks directories and the
// included configuration files that the configuration of each gitdir g protects names, and the
// user's and the system's name ([configScan]).
func (p *Policy) protectGitConfig(g gitGuard, home string) {
	c := newConfigScan(home)
	const whyHooks = "keel's always-read-only paths (git's hooks directory, core.hooksPath)"
	for _, f := range userConfigFiles(home) {
		p.userHooks = append(p.userHooks, c.read(f, 0)...)
	}
	for _, h := range p.userHooks {
		if filepath.IsAbs(h) { // a relative one is each repository's own, below
			p.protectGitPath(h, "", whyHooks)
		}
	}
	p.repoHooks = map[string][]string{}
	for _, d := range slices.Sorted(maps.Keys(g.seen)) {
		common, _, _ := readCommonDir(d)
		if _, ok := p.repoHooks[common]; !ok {
			p.repoHooks[common] = c.read(filepath.Join(common, "config"), 0)
		}
		base := hooksBase(d, g.trees[d])
		for _, h := range slices.Concat(p.repoHooks[common], c.read(filepath.Join(d, "config.worktree"), 0), p.userHooks) {
			if !filepath.IsAbs(h) {
				h = base + string(filepath.Separator) + h
			}
			p.protectGitPath(h, base, whyHooks)
			if filepath.Base(h) == "_" && filepath.Base(filepath.Dir(h)) == ".husky" {
				// husky 9's hooks in .husky/_ only run .husky/<hook>, the scripts the project
				// writes: those are the hooks git runs.
				p.protectGitPath(filepath.Dir(h), base, "keel's always-read-only paths (husky's hook scripts, which core.hooksPath's .husky/_ runs)")
			}
		}
	}
	for _, f := range c.included {
		if real := p.protectGitPath(f, "", "keel's always-read-only paths (a file git's configuration includes)"); real != "" {
			includePlaceholders.Store(real, true)
		}
	}
	p.Warnings = append(p.Warnings, c.warnings...)
}

// protectGitPath makes path, as git opens it, read-only when it, or a link on its way, lies in
// a writable root (elsewhere it is read-only already), and returns where it leads. A path that
// would make a whole writable root, or the working tree tree, read-only (a hooks path of ".")
// is not, and said.
func (p *Policy) protectGitPath(path, tree, why string) (real string) {
	real, viaProcess, links := walkPath(path)
	if viaProcess {
		p.warnOnce(fmt.Sprintf("git's configuration names %s, through /proc or /dev/fd, which keel cannot follow: it may be writable", path))
		return ""
	}
	real = filepath.Clean(real)
	if (tree != "" && within(tree, real)) || slices.ContainsFunc(p.Writable, func(w string) bool { return within(w, real) }) {
		p.warnOnce(fmt.Sprintf("git's configuration names %s as hooks or configuration, a working tree, a writable root or above one: keel does not make it read-only, and a command can write hooks there", real))
		return ""
	}
	if !withinAny(real, p.Writable) && !slices.ContainsFunc(links, func(l string) bool { return inWritable(l, p.Writable) }) {
		return real
	}
	// Given as git spells it, so that a link on the way is kept too ([currentLinks]), where
	// that spelling leads to the same place once its ".." are taken as written (a ".." after
	// a link leaves the link's target, not its directory).
	as := filepath.Clean(path)
	if r, _, _ := walkPath(as); filepath.Clean(r) != real {
		as = real
	}
	p.add(&p.ReadOnly, as, why)
	return real
}

// includePlaceholders are the files git's configuration includes, inside the writable roots:
// where one is absent, its placeholder is an empty file (git dies on a directory it includes),
// which [filePlaceholder] knows by its path. Each sandbox of the process adds its own; a path
// stays known, so that a placeholder made for it is still recognised as it is removed.
var includePlaceholders sync.Map

// includePlaceholder reports whether path is one of includePlaceholders.
func includePlaceholder(path string) bool {
	_, ok := includePlaceholders.Load(path)
	return ok
}

func (p *Policy) warnOnce(w string) {
	if !slices.Contains(p.Warnings, w) {
		p.Warnings = append(p.Warnings, w)
	}
}

// hooksBase is where git takes a relative hooks path from for gitdir d: the top of its working
// tree (tree, when the search knows it; the parent of a .git), else d itself (a bare
// repository's).
func hooksBase(d, tree string) string {
	switch {
	case tree != "":
		return tree
	case filepath.Base(d) == ".git":
		return filepath.Dir(d)
	}
	return d
}

// plantedHooks are the hooks directories git would use in gitdir d, a repository a command may
// have made or reached with its working tree at tree, that lie relative to that tree: named by
// the user's configuration, or by the configuration of the protected common directory d shares
// (a linked worktree the command added, whose checkout is the command's). d's own
// configuration, which disarm reduces, names none after it. A directory that holds the whole
// tree is left out: its hooks cannot be told from the tree's files.
func (p Policy) plantedHooks(d, tree string, protected func(string) bool) []string {
	vals := slices.Clone(p.userHooks)
	if common, _, _ := readCommonDir(d); protected(common) {
		vals = append(vals, p.repoHooks[common]...)
	}
	base := hooksBase(d, tree)
	var dirs []string
	for _, v := range vals {
		if filepath.IsAbs(v) {
			continue // protected at Complete
		}
		dir, viaProcess := resolveGitPath(base, v)
		if viaProcess || within(base, dir) || slices.ContainsFunc(p.Writable, func(w string) bool { return within(w, dir) }) || slices.Contains(dirs, dir) {
			continue
		}
		dirs = append(dirs, dir)
	}
	return dirs
}

// hooksFingerprint is statDir of each of dirs.
func hooksFingerprint(dirs []string) string {
	var b strings.Builder
	for _, d := range dirs {
		b.WriteString(statDir(d))
	}
	return b.String()
}
