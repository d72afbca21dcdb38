package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/lazy"
)

// refusedSuffix names what keel moved aside: git reads neither a config.keel-refused nor a
// hooks.keel-refused directory, and nothing the command wrote is lost.
const refusedSuffix = ".keel-refused"

// disarm makes gitDir, a repository a command may have made or reached, start nothing when
// git runs there outside the sandbox, and says what it moved aside. Whatever of it lies in
// the writable roots may be the command's — written now, or earlier and moved in, which
// keeps a file's times — so it is all treated as the command's: its configuration files (the
// common directory's config, the gitdir's config.worktree) keep only the settings that start
// no program and redirect nothing ([safeGitKey]), the whole file moved aside when any other
// is set; its hooks (the common directory's) are moved aside unless they are git's own
// templates. What lies outside the writable roots no command wrote, and is left alone; so is
// a common directory protected for every command that ran — the user's repository, whose new
// linked worktree (git worktree add) or submodule gitdir is gitDir. hooks are the hooks
// directories outside gitDir that configuration other than gitDir's own (the user's, or the
// protected common directory's) has git use there ([Policy.plantedHooks]): their hooks go
// aside like those of hooks/.
func disarm(gitDir string, writable []string, protected func(gitDir string) bool, hooks []string) (said []string, ok bool) {
	ok = true
	note := func(msg string, failed bool) {
		if msg != "" {
			said = append(said, msg)
			slog.Warn("sandbox: a repository a command made was disarmed", "gitdir", gitDir, "what", msg)
		}
		ok = ok && !failed
	}
	common, _, unfollowable := readCommonDir(gitDir)
	if unfollowable && inWritable(filepath.Join(gitDir, "commondir"), writable) {
		// Where it leads keel cannot tell; git would follow it.
		note(moveAsidePath(filepath.Join(gitDir, "commondir"), "names a directory keel cannot follow (through /proc or /dev/fd, or too large to read)"))
		return said, ok
	}
	if !protected(common) {
		note(disarmConfig(filepath.Join(common, "config"), gitDir, writable, protected))
		note(disarmHooks(filepath.Join(common, "hooks"), writable))
	}
	note(disarmConfig(filepath.Join(gitDir, "config.worktree"), gitDir, writable, protected))
	for _, h := range hooks {
		note(disarmHooks(h, writable))
	}
	return said, ok
}

// legacyRemoteDirs are git's older way of naming a remote, in a gitdir: a push or fetch to a
// name the configuration does not define goes where a file there says.
var legacyRemoteDirs = []string{"remotes", "branches"}

// disarmLegacyRemotes moves aside what a command changed in a protected gitDir's remotes/ or
// branches/ (no mount protects them), so the user's git push and fetch go only where the
// configuration says.
func disarmLegacyRemotes(gitDir string, writable []string) []string {
	var said []string
	for _, n := range legacyRemoteDirs {
		dir := filepath.Join(gitDir, n)
		if _, err := os.Lstat(dir); err != nil || !inWritable(dir, writable) {
			continue
		}
		if msg, _ := moveAsidePath(dir, "names where git push and fetch go for a remote the configuration does not define"); msg != "" {
			slog.Warn("sandbox: a command wrote a repository's remotes", "gitdir", gitDir, "what", msg)
			said = append(said, msg)
		}
	}
	return said
}

// inWritable reports whether path's directory, its links resolved, is inside one of
// writable (which are resolved): only there can a command have put what is at path.
func inWritable(path string, writable []string) bool {
	dir, err := filepath.EvalSymlinks(filepath.Dir(path))
	if err != nil {
		return false
	}
	return withinAny(dir, writable)
}

// maxGitConfig is the largest configuration file disarmConfig has git read: one of a
// repository a command made that is larger is refused whole.
const maxGitConfig = 1 << 20

// disarmConfig keeps in the git configuration file cfg, when a command can have written it,
// only the settings safeGitKey allows; the file as it was is moved to cfg.keel-refused. It
// says what it did, or "" when there was nothing to do.
func disarmConfig(cfg, gitDir string, writable []string, protected func(string) bool) (said string, failed bool) {
	li, err := os.Lstat(cfg)
	if err != nil || !inWritable(cfg, writable) {
		return "", false
	}
	var entries []configEntry
	why := ""
	switch fi, err := os.Stat(cfg); {
	case li.Mode()&fs.ModeSymlink != 0:
		// What it names could change later, where no protection looks.
		why = "is a symbolic link"
	case err != nil:
		why = "cannot be read (" + err.Error() + ")"
	case !fi.Mode().IsRegular():
		why = "is not a regular file" // a FIFO would hold git, reading it, until the time limit
	case atomicfile.HardLinks(fi) > 1:
		// Written through another name later, where no protection looks.
		why = "has another name (a hard link)"
	case fi.Size() > maxGitConfig:
		why = fmt.Sprintf("is larger than %d bytes", maxGitConfig)
	default:
		if entries, err = readGitConfig(cfg); err != nil {
			why = "git cannot read (" + err.Error() + ")"
		}
	}
	var refused []string
	var kept []configEntry
	for _, e := range entries {
		if (safeGitKey(e.key, e.value) && !unsafeLocalRemote(e, writable, protected)) || ownWorktree(e, gitDir, writable) {
			kept = append(kept, e)
		} else if !slices.Contains(refused, e.key) {
			refused = append(refused, e.key)
		}
	}
	switch {
	case why == "" && len(refused) == 0:
		return "", false
	case why == "":
		why = "sets " + strings.Join(refused, ", ")
	default:
		kept = nil
	}
	aside := ""
	dir, err := holdDir(filepath.Dir(cfg))
	if err == nil {
		defer dir.close()
		aside = freeHeldName(dir, filepath.Base(cfg)+refusedSuffix)
		if err = dir.moveTo(filepath.Base(cfg), dir, aside); err == nil {
			err = dir.writeFile(filepath.Base(cfg), formatGitConfig(kept))
		}
		aside = filepath.Join(filepath.Dir(cfg), aside)
	}
	if err != nil {
		return fmt.Sprintf("the command wrote %s, a git configuration that %s, which git run there outside the sandbox would act on, and keel could not disarm it (%v): do not run git in that repository before you have checked it.", cfg, why, err), true
	}
	return fmt.Sprintf("the command wrote %s, a git configuration that %s, which git run there outside the sandbox would act on. keel kept only the settings that start no program (%d of them) and moved the file as written to %s.", cfg, why, len(kept), aside), false
}

// disarmHooks moves aside, into a new directory beside dir, the hooks in dir that are not
// git's samples or its own templates (which git init and git clone copy); a hooks directory
// that is a link or a file goes aside whole.
func disarmHooks(dir string, writable []string) (said string, failed bool) {
	li, err := os.Lstat(dir)
	if err != nil || !inWritable(dir, writable) {
		return "", false
	}
	if !li.IsDir() {
		return moveAsidePath(dir, "is a link or a file, so git would run the hooks it leads to")
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Sprintf("keel could not read %s, the hooks of a repository the command made (%v): do not run git in that repository before you have checked it.", dir, err), true
	}
	var planted []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".sample") && !isTemplateHook(e.Name(), filepath.Join(dir, e.Name())) {
			planted = append(planted, e.Name())
		}
	}
	if len(planted) == 0 {
		return "", false
	}
	// Into a directory of keel's own making, held open with the hooks directory: a link the
	// command leaves, or swaps in while the moves go on, leads them nowhere.
	aside := ""
	parent, err := holdDir(filepath.Dir(dir))
	if err == nil {
		defer parent.close()
		var hooks, into *heldDir
		if hooks, err = holdDir(dir); err == nil {
			defer hooks.close()
			aside = freeHeldName(parent, filepath.Base(dir)+refusedSuffix)
			if into, err = parent.mkdir(aside); err == nil {
				defer into.close()
				for _, name := range planted {
					if err = hooks.moveTo(name, into, name); err != nil {
						break
					}
				}
			}
		}
		aside = filepath.Join(filepath.Dir(dir), aside)
	}
	if err != nil {
		return fmt.Sprintf("the command wrote the hooks %s in %s, which git run there outside the sandbox would run, and keel could not move all of them aside (%v): do not run git in that repository before you have checked it.", strings.Join(planted, ", "), dir, err), true
	}
	return fmt.Sprintf("the command wrote the hooks %s in %s, which git run there outside the sandbox would run. keel moved them to %s.", strings.Join(planted, ", "), dir, aside), false
}

// moveAsidePath moves path, which why says is dangerous, to path.keel-refused (or the first
// free name after it) in its directory, held open, and says so.
func moveAsidePath(path, why string) (said string, failed bool) {
	dir, err := holdDir(filepath.Dir(path))
	aside := ""
	if err == nil {
		defer dir.close()
		aside = freeHeldName(dir, filepath.Base(path)+refusedSuffix)
		err = dir.moveTo(filepath.Base(path), dir, aside)
	}
	if err != nil {
		return fmt.Sprintf("the command made %s, which %s, and keel could not move it aside (%v): do not run git in that repository before you have checked it.", path, why, err), true
	}
	return fmt.Sprintf("the command made %s, which %s. keel moved it to %s.", path, why, filepath.Join(filepath.Dir(path), aside)), false
}

// freeHeldName is name, or name.2, name.3, … — the first that is not in d.
func freeHeldName(d *heldDir, name string) string {
	try := name
	for i := 2; d.exists(try); i++ {
		try = fmt.Sprintf("%s.%d", name, i)
	}
	return try
}

// isTemplateHook reports whether the hook at path holds what git's template of that name
// holds: git init copies the user's template hooks (init.templateDir) into every repository
// it makes, and those are the user's own.
func isTemplateHook(name, path string) bool {
	dir := os.Getenv("GIT_TEMPLATE_DIR")
	if dir == "" {
		dir = userTemplateDir.Get()
	}
	if dir == "" {
		return false
	}
	tmpl, err := readRegular(filepath.Join(dir, "hooks", name), maxGitConfig)
	if err != nil {
		return false
	}
	// A link, or a file with another name, could change after keel looked.
	fi, err := os.Lstat(path)
	if err != nil || !fi.Mode().IsRegular() || atomicfile.HardLinks(fi) > 1 {
		return false
	}
	b, err := readRegular(path, int64(len(tmpl)))
	return err == nil && bytes.Equal(b, tmpl)
}

// userTemplateDir is init.templateDir as the user's and the system's configuration set it,
// read once through git as for an untrusted workspace; "" when unset.
var userTemplateDir = lazy.Value[string]{New: func() string {
	ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
	defer cancel()
	out, _ := gitexec.Runner{}.Output(ctx, "/", "config", "--path", "--get", "init.templateDir")
	return strings.TrimSpace(string(out))
}}

// configEntry is one setting of a git configuration file: its key as git lists it (section
// and name in lower case, a subsection as written) and its value; noValue for a bare
// boolean ("[core] bare").
type configEntry struct {
	key, value string
	noValue    bool
}

// readGitConfig lists the settings of the configuration file cfg, read by git itself (so that
// keel reads it as the git outside would), includes not followed: an include is refused
// anyway. git reads what keel read of it, on its standard input: the command may still run,
// and a FIFO or a device swapped in at cfg must not be what git opens outside the sandbox.
func readGitConfig(cfg string) ([]configEntry, error) {
	b, err := readRegular(cfg, maxGitConfig)
	if err != nil {
		return nil, err
	}
	return parseGitConfig(b)
}

// parseGitConfig lists the settings of the git configuration b, read by git on its standard
// input, includes not followed.
func parseGitConfig(b []byte) ([]configEntry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
	defer cancel()
	cmd, err := gitexec.Runner{}.Command(ctx, "/", "config", "--file", "-", "--no-includes", "--null", "--list")
	if err != nil {
		return nil, err
	}
	cmd.Stdin = bytes.NewReader(b)
	out, err := cmd.Output()
	if ee := (*exec.ExitError)(nil); errors.As(err, &ee) {
		return nil, fmt.Errorf("git config: %w: %s", err, bytes.TrimSpace(ee.Stderr))
	} else if err != nil {
		return nil, fmt.Errorf("git config: %w", err)
	}
	var entries []configEntry
	for item := range bytes.SplitSeq(out, []byte{0}) {
		if len(item) == 0 {
			continue
		}
		key, value, ok := bytes.Cut(item, []byte{'\n'})
		entries = append(entries, configEntry{key: string(key), value: string(value), noValue: !ok})
	}
	return entries, nil
}

// safeGitKeys are the settings a repository a command made may keep: what git init, git clone,
// git remote, git branch --set-upstream-to, git submodule and git config user.* write, none of
// which starts a program, reads another file or moves the repository's configuration or its
// working tree (core.worktree, which git submodule writes, would let a later checkout write
// where the sandbox could not). A "*" stands for a subsection. Every other setting is refused,
// known or not: a list of what is dangerous would lag behind git.
var safeGitKeys = []string{
	"core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
	"core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol",
	"core.safecrlf", "core.quotepath", "core.sparsecheckout", "core.sparsecheckoutcone",
	"extensions.objectformat", "extensions.refstorage", "extensions.worktreeconfig", "extensions.partialclone",
	"remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push", "remote.*.tagopt",
	"remote.*.prune", "remote.*.mirror", "remote.*.promisor", "remote.*.partialclonefilter",
	"branch.*.remote", "branch.*.merge", "branch.*.rebase", "branch.*.pushremote",
	"submodule.*.url", "submodule.*.active", "submodule.active",
	"user.name", "user.email", "init.defaultbranch", "clone.defaultremotename",
	"pull.rebase", "pull.ff", "push.default", "fetch.prune", "gc.auto", "lfs.repositoryformatversion",
}

// unsafeLocalRemote reports whether e is a remote's or a submodule's URL that names a
// repository on this machine inside the writable roots that was not protected throughout: a
// push there runs its hooks, which a command may have written.
func unsafeLocalRemote(e configEntry, writable []string, protected func(string) bool) bool {
	if !strings.HasSuffix(e.key, ".url") && !strings.HasSuffix(e.key, ".pushurl") {
		return false
	}
	path, ok := strings.CutPrefix(e.value, "file://")
	if !ok {
		slash := strings.IndexByte(e.value, '/')
		if strings.Contains(e.value, "://") || (strings.IndexByte(e.value, ':') >= 0 && (slash < 0 || strings.IndexByte(e.value, ':') < slash)) {
			return false // another machine's (host:path is ssh)
		}
		path = e.value
	}
	if !filepath.IsAbs(path) {
		return true // relative to wherever git runs: no telling where
	}
	real, ok := settledPath(path, writable)
	if !ok {
		return true
	}
	return inWritable(filepath.Join(real, "x"), writable) && !protected(real) && !protected(filepath.Join(real, ".git"))
}

// settledPath resolves the absolute path p, a setting's value, and reports whether it stays
// where it leads: not through /proc or /dev/fd (where git, in another working directory,
// would land elsewhere), nor through a link inside the writable roots (which a later command
// could point elsewhere, after keel looked).
func settledPath(p string, writable []string) (string, bool) {
	real, viaProcess, links := walkPath(p)
	if viaProcess || slices.ContainsFunc(links, func(l string) bool { return inWritable(l, writable) }) {
		return "", false
	}
	return filepath.Clean(real), true
}

// ownWorktree reports whether e is a core.worktree that names the working tree whose .git
// file names gitDir back — what git submodule and git worktree write, which moves nothing.
func ownWorktree(e configEntry, gitDir string, writable []string) bool {
	if e.key != "core.worktree" || e.value == "" {
		return false
	}
	dir := e.value
	if !filepath.IsAbs(dir) {
		dir = gitDir + string(filepath.Separator) + dir
	}
	dir, ok := settledPath(dir, writable)
	if !ok {
		return false
	}
	back := readGitFile(filepath.Join(dir, ".git"))
	return back != "" && sameDir(back, gitDir)
}

// sameDir reports whether a and b are the same directory.
func sameDir(a, b string) bool {
	fa, errA := os.Stat(a)
	fb, errB := os.Stat(b)
	return errA == nil && errB == nil && os.SameFile(fa, fb)
}

// safeGitKey reports whether key (as git lists it) with value may stay: it matches
// safeGitKeys, and a URL does not use the ext:: transport, which runs a command.
func safeGitKey(key, value string) bool {
	section, rest, _ := strings.Cut(key, ".")
	name := rest
	if i := strings.LastIndexByte(rest, '.'); i >= 0 {
		name = "*." + rest[i+1:]
	}
	if !slices.Contains(safeGitKeys, section+"."+name) {
		return false
	}
	return !strings.HasSuffix(name, "url") || !strings.HasPrefix(strings.ToLower(strings.TrimSpace(value)), "ext::")
}

// formatGitConfig writes entries in git's configuration syntax, in order, a section header
// whenever the section changes.
func formatGitConfig(entries []configEntry) []byte {
	var b strings.Builder
	last := ""
	for _, e := range entries {
		section, rest, _ := strings.Cut(e.key, ".")
		sub, name := "", rest
		if i := strings.LastIndexByte(rest, '.'); i >= 0 {
			sub, name = rest[:i], rest[i+1:]
		}
		header := "[" + section + "]"
		if sub != "" {
			header = "[" + section + " " + quoteGitValue(sub) + "]"
		}
		if header != last {
			b.WriteString(header + "\n")
			last = header
		}
		if e.noValue {
			b.WriteString("\t" + name + "\n")
		} else {
			b.WriteString("\t" + name + " = " + quoteGitValue(e.value) + "\n")
		}
	}
	return []byte(b.String())
}

// quoteGitValue quotes s for a git configuration file.
func quoteGitValue(s string) string {
	r := strings.NewReplacer(`\`, `\\`, `"`, `\"`, "\n", `\n`, "\t", `\t`)
	return `"` + r.Replace(s) + `"`
}
