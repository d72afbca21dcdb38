package permission

import (
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// git's subcommands by what they do with the repository's files. A reader prints file
// contents, from the work tree or from history (show, diff, grep, archive…): it reads the
// whole repository — history included, so a rule applies whether or not the file exists
// now — unless pathspecs after "--" narrow it. A writer changes the work tree (checkout,
// reset, stash, merge…). The rest touch neither; a subcommand keel does not know may do both.
var (
	gitReaders = lazy.Value[map[string]bool]{New: func() map[string]bool {
		return set("show", "diff", "grep", "archive", "blame", "annotate", "cat-file", "format-patch",
			"range-diff", "bundle", "fast-export", "difftool", "diff-tree", "diff-index", "diff-files", "whatchanged",
			"cherry", "request-pull", "send-email", "am", "apply", "notes", "replay")
	}}
	gitWriters = lazy.Value[map[string]bool]{New: func() map[string]bool {
		return set("checkout", "switch", "restore", "reset", "clean", "stash", "merge", "rebase", "pull", "apply",
			"am", "cherry-pick", "revert", "rm", "mv", "checkout-index", "read-tree", "sparse-checkout", "submodule",
			"worktree", "clone", "init", "mergetool", "filter-branch", "bisect", "commit")
	}}
	gitQuiet = lazy.Value[map[string]bool]{New: func() map[string]bool {
		return set("status", "branch", "rev-parse", "log", "shortlog", "describe", "tag", "remote", "config", "fetch",
			"push", "ls-files", "ls-tree", "ls-remote", "count-objects", "reflog", "rev-list", "merge-base", "name-rev",
			"show-ref", "symbolic-ref", "for-each-ref", "var", "version", "help", "add", "check-ignore", "check-attr",
			"fsck", "gc", "prune", "repack", "verify-commit", "verify-tag", "show-branch", "hash-object", "update-index",
			"update-ref", "write-tree", "commit-tree", "mktree", "mktag", "maintenance", "check-ref-format", "column",
			"interpret-trailers", "credential", "stripspace")
	}}
	// gitPatchOptions make log and the like print file contents.
	gitPatchOptions = []string{"-p", "-u", "--patch", "-U", "--unified", "--word-diff", "--color-words", "--cc", "-c",
		"--full-diff", "-L", "--patch-with-stat", "--patch-with-raw", "--ext-diff", "--textconv", "-m", "--diff-merges"}
)

func set(names ...string) map[string]bool {
	m := make(map[string]bool, len(names))
	for _, n := range names {
		m[n] = true
	}
	return m
}

func gitFiles(c simpleCmd, u *fileUses) {
	u.readAll(c)
	s := skipGitOptions(c, gitFlags.Get(), true)
	if len(s.words) != len(c.words) && !slices.Equal(gitGlobalNames(c), []string{"--no-pager"}) {
		for _, g := range gitGlobalNames(c) {
			switch g {
			case "-C", "--git-dir", "--work-tree", "--namespace":
				u.unknown("git pointed at another repository or work tree")
			}
		}
	}
	if len(s.words) < 2 || !s.words[1].static {
		u.unknown("a git command keel cannot read")
		return
	}
	sub := s.words[1].value
	args := simpleCmd{words: s.words[1:]}
	reads, writes := gitReaders.Get()[sub], gitWriters.Get()[sub]
	switch {
	case sub == "log" || sub == "shortlog" || sub == "stash" && len(args.words) > 1 && args.words[1].value == "show":
		reads = slices.ContainsFunc(args.words[1:], func(w shellWord) bool {
			name, _, _ := strings.Cut(w.value, "=")
			return slices.Contains(gitPatchOptions, name) || strings.HasPrefix(name, "-U") || strings.HasPrefix(name, "-L")
		})
		if sub == "stash" {
			writes = false
		}
	case sub == "stash" && len(args.words) > 1 && args.words[1].value == "list":
		writes = false
	case sub == "worktree" && len(args.words) > 1 && args.words[1].value == "list",
		sub == "submodule" && len(args.words) > 1 && args.words[1].value == "status",
		sub == "bisect" && len(args.words) > 1 && args.words[1].value == "log":
		writes = false
	case sub == "diff" && slices.ContainsFunc(args.words, func(w shellWord) bool { return w.value == "--no-index" }):
		// Two plain paths, compared as files or trees: no repository involved.
		for _, i := range operandIndexes(args, "") {
			u.add(args.words[i], roleReadTree)
		}
		reads = false
	case !reads && !writes && !gitQuiet.Get()[sub]:
		reads, writes = true, true
	}
	outputs := []string{"--output", "--output-directory"}
	if sub == "archive" || sub == "format-patch" {
		outputs = append(outputs, "-o")
	}
	for _, w := range optionWordsAny(args, outputs) {
		u.add(w, roleWrite|roleWriteTree)
	}
	if !reads && !writes {
		return
	}
	var role fileRole
	if reads {
		role |= roleReadTree
	}
	if writes {
		role |= roleWriteTree
	}
	tracked := reads && !writes && gitReadsTrackedOnly(sub, args)
	mark := func(from int) {
		for k := range u.args[from:] {
			u.args[from+k].repo, u.args[from+k].tracked = reads && !tracked, tracked
		}
	}
	// Pathspecs after "--" narrow the trees; without them, the whole repository.
	from := len(u.args)
	if i := slices.IndexFunc(args.words, func(w shellWord) bool { return w.value == "--" }); i >= 0 && i+1 < len(args.words) {
		for _, w := range args.words[i+1:] {
			u.add(w, role)
		}
		mark(from)
		return
	}
	u.addPath(".", role, false)
	mark(from)
}

// gitReadsTrackedOnly reports whether a git diff or git grep reads only the files git tracks
// now — no revision, no --cached, no other repository — so the index tells which files it
// can print.
func gitReadsTrackedOnly(sub string, args simpleCmd) bool {
	if sub != "diff" && sub != "grep" {
		return false
	}
	operands, explicitPattern := 0, false
	for _, w := range args.words[1:] {
		v := w.value
		if v == "--" {
			break
		}
		switch {
		case !w.static:
			return false
		case v == "--cached" || v == "--staged" || v == "--merge-base" || v == "--no-index" || v == "--untracked" ||
			strings.HasPrefix(v, "--recurse-submodules") || strings.HasPrefix(v, "--no-exclude-standard"):
			return false
		case v == "-e" || v == "-f" || strings.HasPrefix(v, "--regexp") || strings.HasPrefix(v, "--file"):
			explicitPattern = true
		case !strings.HasPrefix(v, "-"):
			operands++
		}
	}
	if sub == "grep" && !explicitPattern {
		operands-- // the pattern
	}
	return operands <= 0
}

// gitGlobalNames are the option names before git's subcommand.
func gitGlobalNames(c simpleCmd) []string {
	s := skipGitOptions(c, gitFlags.Get(), true)
	var out []string
	for _, w := range c.words[1 : len(c.words)-len(s.words)+1] {
		if name, _, _ := strings.Cut(w.value, "="); strings.HasPrefix(name, "-") {
			out = append(out, name)
		}
	}
	return out
}

// optionWordsAny returns the value words of any of the options (see optionWords).
func optionWordsAny(c simpleCmd, opts []string) []shellWord {
	var out []shellWord
	for _, o := range opts {
		if strings.HasPrefix(o, "--") {
			out = append(out, optionWords(c, 0, o)...)
		} else {
			out = append(out, optionWords(c, o[1], "")...)
		}
	}
	return out
}
