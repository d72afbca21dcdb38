package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/lazy"
)

// refusedSuffix names what keel moved aside: git reads neither a config.keel-refused nor a
// hooks.keel-refused directory, and nothing the command wrote is lost.
const refusedSuffix = ".keel-refused"

// disarm makes gitDir, a repository a command may have made or reached, start nothing when
// git runs there outside the sandbox, and says what it moved aside. What changed since
// since is the command's: its configuration files (the common directory's config, the
// gitdir's config.worktree) keep only the settings that start no program and redirect
// nothing ([safeGitKey]), the whole file moved aside when any other is set; its hooks (the
// common directory's) are moved aside unless they are git's own templates. What did not
// change is left as it was: the user's repositories reached through a new .git file keep
// their settings.
func disarm(gitDir string, since time.Time) []string {
	common := gitCommonDir(gitDir)
	var said []string
	for _, cfg := range []string{filepath.Join(common, "config"), filepath.Join(gitDir, "config.worktree")} {
		if msg := disarmConfig(cfg, since); msg != "" {
			said = append(said, msg)
		}
	}
	if msg := disarmHooks(filepath.Join(common, "hooks"), since); msg != "" {
		said = append(said, msg)
	}
	for _, msg := range said {
		slog.Warn("sandbox: a repository a command made was disarmed", "gitdir", gitDir, "what", msg)
	}
	return said
}

// gitCommonDir is the directory holding gitDir's configuration and hooks: the one its commondir
// names, else gitDir itself.
func gitCommonDir(gitDir string) string {
	b, err := os.ReadFile(filepath.Join(gitDir, "commondir"))
	if err != nil {
		return gitDir
	}
	c := strings.TrimSpace(string(b))
	if c == "" {
		return gitDir
	}
	if !filepath.IsAbs(c) {
		c = filepath.Join(gitDir, c)
	}
	return filepath.Clean(c)
}

// changedSince reports whether path (or, through a symbolic link, what it names) changed since
// t. The change time is the kernel's: a command can set a file's modification time back, not
// its change time.
func changedSince(path string, t time.Time) bool {
	li, err := os.Lstat(path)
	if err != nil {
		return false
	}
	if !changeTime(li).Before(t) {
		return true
	}
	fi, err := os.Stat(path)
	return err == nil && !changeTime(fi).Before(t)
}

// maxGitConfig is the largest configuration file disarmConfig has git read: one of a
// repository a command made that is larger is refused whole.
const maxGitConfig = 1 << 20

// disarmConfig keeps in the git configuration file cfg, when it changed since since, only the
// settings safeGitKey allows; the file as it was is moved to cfg.keel-refused. It says what it
// did, or "" when there was nothing to do.
func disarmConfig(cfg string, since time.Time) string {
	if !changedSince(cfg, since) {
		return ""
	}
	var entries []configEntry
	why := ""
	li, lerr := os.Lstat(cfg)
	fi, err := os.Stat(cfg)
	switch {
	case lerr == nil && li.Mode()&fs.ModeSymlink != 0:
		// What it names could change later, where no protection looks.
		why = "is a symbolic link"
	case err != nil:
		why = "cannot be read (" + err.Error() + ")"
	case !fi.Mode().IsRegular():
		why = "is not a regular file" // a FIFO would hold git, reading it, until the time limit
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
		if safeGitKey(e.key, e.value) {
			kept = append(kept, e)
		} else if !slices.Contains(refused, e.key) {
			refused = append(refused, e.key)
		}
	}
	switch {
	case why == "" && len(refused) == 0:
		return ""
	case why == "":
		why = "sets " + strings.Join(refused, ", ")
	default:
		kept = nil
	}
	aside, err := moveAside(cfg)
	if err == nil {
		err = atomicfile.WriteFile(cfg, formatGitConfig(kept), 0o644)
	}
	if err != nil {
		return fmt.Sprintf("the command wrote %s, a git configuration that %s, which git run there outside the sandbox would act on, and keel could not disarm it (%v): do not run git in that repository before you have checked it.", cfg, why, err)
	}
	return fmt.Sprintf("the command wrote %s, a git configuration that %s, which git run there outside the sandbox would act on. keel kept only the settings that start no program (%d of them) and moved the file as written to %s.", cfg, why, len(kept), aside)
}

// disarmHooks moves aside the hooks in dir that changed since since and are not git's own
// templates (which git init and git clone copy), into dir.keel-refused; a hooks directory
// that is a link or a file made since then goes aside whole.
func disarmHooks(dir string, since time.Time) string {
	li, err := os.Lstat(dir)
	if err != nil {
		return ""
	}
	if !li.IsDir() {
		if !changedSince(dir, since) {
			return ""
		}
		aside, err := moveAside(dir)
		if err != nil {
			return fmt.Sprintf("the command made %s, which is not a directory of hooks git would run outside the sandbox, and keel could not move it aside (%v): do not run git in that repository before you have checked it.", dir, err)
		}
		return fmt.Sprintf("the command made %s point elsewhere; git run outside the sandbox would run the hooks there. keel moved it to %s.", dir, aside)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	var moved []string
	var failed error
	for _, e := range entries {
		hook := filepath.Join(dir, e.Name())
		if strings.HasSuffix(e.Name(), ".sample") || !changedSince(hook, since) || isTemplateHook(e.Name(), hook) {
			continue
		}
		aside := filepath.Join(dir+refusedSuffix, e.Name())
		if err := os.MkdirAll(filepath.Dir(aside), 0o755); err != nil {
			failed = err
			continue
		}
		if err := os.Rename(hook, freeName(aside)); err != nil {
			failed = err
			continue
		}
		moved = append(moved, e.Name())
	}
	switch {
	case failed != nil:
		return fmt.Sprintf("the command wrote hooks in %s, which git run there outside the sandbox would run, and keel could not move all of them aside (%v): do not run git in that repository before you have checked it.", dir, failed)
	case len(moved) > 0:
		return fmt.Sprintf("the command wrote the hooks %s in %s, which git run there outside the sandbox would run. keel moved them to %s.", strings.Join(moved, ", "), dir, dir+refusedSuffix)
	}
	return ""
}

// moveAside renames path to path.keel-refused (with a number when that is taken) and
// returns the new name.
func moveAside(path string) (string, error) {
	aside := freeName(path + refusedSuffix)
	if err := os.Rename(path, aside); err != nil {
		return "", fmt.Errorf("move %s aside: %w", path, err)
	}
	return aside, nil
}

// freeName is name, or name.2, name.3, … — the first that does not exist.
func freeName(name string) string {
	try := name
	for i := 2; ; i++ {
		if _, err := os.Lstat(try); errors.Is(err, fs.ErrNotExist) {
			return try
		}
		try = fmt.Sprintf("%s.%d", name, i)
	}
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
	tmpl, err := os.ReadFile(filepath.Join(dir, "hooks", name))
	if err != nil {
		return false
	}
	b, err := os.ReadFile(path)
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
// anyway.
func readGitConfig(cfg string) ([]configEntry, error) {
	ctx, cancel := context.WithTimeout(context.Background(), plantCheckLimit)
	defer cancel()
	out, err := gitexec.Runner{}.Output(ctx, "/", "config", "--file", cfg, "--no-includes", "--null", "--list")
	if err != nil {
		return nil, err
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
// which starts a program, reads another file or moves the repository's configuration. A
// "*" stands for a subsection. Every other setting is refused, known or not: a list of what
// is dangerous would lag behind git.
var safeGitKeys = []string{
	"core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
	"core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol",
	"core.safecrlf", "core.quotepath", "core.worktree", "core.sparsecheckout", "core.sparsecheckoutcone",
	"extensions.objectformat", "extensions.refstorage", "extensions.worktreeconfig", "extensions.partialclone",
	"remote.*.url", "remote.*.pushurl", "remote.*.fetch", "remote.*.push", "remote.*.tagopt",
	"remote.*.prune", "remote.*.mirror", "remote.*.promisor", "remote.*.partialclonefilter",
	"branch.*.remote", "branch.*.merge", "branch.*.rebase", "branch.*.pushremote",
	"submodule.*.url", "submodule.*.active", "submodule.active",
	"user.name", "user.email", "init.defaultbranch", "clone.defaultremotename",
	"pull.rebase", "pull.ff", "push.default", "fetch.prune", "gc.auto", "lfs.repositoryformatversion",
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
