package sandbox

import (
	"fmt"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Project configuration is read-only where it is when a command starts, and where a session
// would read it (at a writable root's top and on the way to the working directory, absent ones
// held by placeholders); but a command can make it anywhere else below the writable roots,
// where none was: sub/.claude/skills/x/SKILL.md granting itself Bash, another project's
// .claude/settings.json with a SessionStart hook, a repository it clones with a .mcp.json of
// its own. A session started there later — keel's, another harness's, an editor's — runs what
// it names outside the sandbox. No mount can stand where nothing is yet; so, as with the
// repositories a command makes ([plantWatch]), keel closes it as the command is released: the
// same search for repositories lists every project configuration entry it passes, and each
// one that was not there when the policy's search saw the roots (or is not the entry it saw
// then), made or moved in since the command started, is moved aside to <name>.keel-refused,
// the command's result saying so and how to put it back. Inside a repository the command
// cloned or made it goes aside too: the user trusts their project, not what a command fetched.
//
// The same goes for the directories `go install` writes to where the home directory is a
// writable root ([homeRootProtected]): one whose parent is absent (~/go/bin with no ~/go)
// cannot be held by a placeholder without making that parent — a ~/go the user never had,
// where the module cache may have to be made — so one a command makes is moved aside at its
// release instead.

// configBefore is what a policy's search saw that a command's release compares with.
type configBefore struct {
	// config holds every projectConfigNames entry the search passed below the roots (past
	// maxNestedConfig too: those are writable, but the user's), each with its identity then.
	config map[string]string
	// bins are the directories `go install` writes to that stay writable because their
	// parent was absent as the policy was made ([goBins]).
	bins []string
}

// madeSlack is how far before a command's start the change time of what it made may lie:
// the kernel stamps files from a clock that runs behind the one keel reads by up to a tick.
const madeSlack = time.Second

// noteMade records, as a command starts, what its release compares with: the policy's
// configBefore, its read-only paths, the time, and which of the bins are absent now.
func (w *plantWatch) noteMade(p Policy) {
	w.began = time.Now()
	w.config = p.before.config
	w.readOnly = p.ReadOnly
	w.bins = nil
	for _, b := range p.before.bins {
		if _, err := os.Lstat(b); err != nil {
			w.bins = append(w.bins, b)
		}
	}
}

// madeNow reports whether fi, what is at a path now, was made or moved there since the
// command of w started: a change time only the kernel sets (a rename sets it too).
func (w *plantWatch) madeNow(fi os.FileInfo) bool {
	t, ok := changeTime(fi)
	return !ok || !t.Before(w.began.Add(-madeSlack))
}

// refuseMade moves aside the project configuration the command of w made below the roots,
// as the search g at its release found it, the bins it made and the directories it made keel
// cannot list, and says so. made says
// whether the command made or changed gitdir d (its repository's configuration is its own).
// Call with s.disarmMu held.
func (w *plantWatch) refuseMade(s *Sandbox, g gitGuard, made func(d string) bool) []string {
	var said []string
	var moved []string
	// Only what was there as the command started counts as the user's: the policy in force
	// now may have been searched again since (another command's release) and found what this
	// one, running in the background, made.
	now := s.complete()
	for _, c := range slices.Sorted(maps.Keys(g.present)) {
		if slices.ContainsFunc(moved, func(m string) bool { return within(c, m) }) {
			continue // moved aside with a directory that held it
		}
		if id, ok := w.config[c]; ok && id == g.present[c] {
			continue // the user's, there before the command
		}
		fi, err := os.Lstat(c)
		if err != nil || isPlaceholder(c, fi) || !w.madeNow(fi) || !inWritable(c, now.Writable) {
			continue
		}
		if slices.ContainsFunc(w.readOnly, func(r string) bool { return within(c, r) }) {
			// Read-only for the command throughout: keel's own (a worktree it made for an
			// agent in .keel/worktrees/ while the command ran), or the user's.
			continue
		}
		repo, usersTop := "", false
		for d, tree := range g.trees {
			if within(c, tree) && made(d) && len(tree) > len(repo) {
				repo = tree
			}
			usersTop = usersTop || (tree == filepath.Dir(c) && !made(d))
		}
		if filepath.Base(c) == ".gitmodules" && !usersTop {
			// git reads one only at the top of a working tree, and what one a checkout made
			// names git's own checks restrict: only the user's repository's is refused.
			continue
		}
		msg, ok := refuseConfig(c, repo)
		slog.Warn("sandbox: a command made project configuration below a writable root", "path", c, "what", msg)
		said = append(said, msg)
		if ok {
			moved = append(moved, c)
		}
	}
	said = append(said, w.refuseBins(now)...)
	unlisted, blind := w.refuseUnlisted(g, now, moved)
	said = append(said, unlisted...)
	if (blind || g.stopped) && !s.madeBoundSaid {
		// Once a session: each release stops there alike.
		s.madeBoundSaid = true
		said = append(said, "the search below the writable roots stopped at one of its bounds, or at a directory keel cannot list (keel doctor names it): project configuration (.claude, .mcp.json…) a command makes past it is not moved aside, and stays writable.")
	}
	return said
}

// refuseBins moves aside the bins ([configBefore]) absent as the command of w started that are
// there now, and says so.
func (w *plantWatch) refuseBins(now Policy) []string {
	var said []string
	for _, b := range w.bins {
		fi, err := os.Lstat(b)
		if err != nil || isPlaceholder(b, fi) || !inWritable(b, now.Writable) {
			continue
		}
		msg, _ := moveAsideSaying(b, "a directory `go install` puts programs in, on PATH for many, which keel keeps read-only where it exists (a program planted there would stand in for git or go outside the sandbox)")
		slog.Warn("sandbox: a command made a directory go install writes to", "path", b, "what", msg)
		said = append(said, msg)
	}
	return said
}

// refuseUnlisted moves aside the directories the search g could not list that the command of
// w made so, and says so; blind reports one of the user's, below which the search did not look.
// A directory keel cannot list hides what lies below it, and a session started there reads it
// all the same (git and a harness need only pass through): one the command made, or took its
// read permission from, goes aside whole. moved are the paths moved aside already.
func (w *plantWatch) refuseUnlisted(g gitGuard, now Policy, moved []string) (said []string, blind bool) {
	for _, u := range slices.Sorted(slices.Values(g.unlisted)) {
		fi, err := os.Lstat(u)
		if err != nil || slices.ContainsFunc(moved, func(m string) bool { return within(u, m) }) {
			continue
		}
		if !w.madeNow(fi) || !inWritable(u, now.Writable) || slices.ContainsFunc(w.readOnly, func(r string) bool { return within(u, r) }) {
			blind = true
			continue
		}
		msg, ok := moveAsideSaying(u, "a directory keel cannot list, so it cannot tell whether it holds project configuration (.claude, .mcp.json…) that a session started below it would act on")
		slog.Warn("sandbox: a command made a directory keel cannot list", "path", u, "what", msg)
		said = append(said, msg)
		if ok {
			moved = append(moved, u)
		}
	}
	return said, blind
}

// refuseConfig moves the project configuration entry c aside and says so, with how to put it
// back; repo names the repository the command cloned or made that holds it, if any. ok is
// false when it could not be moved.
func refuseConfig(c, repo string) (msg string, ok bool) {
	why := "project configuration — hooks, MCP servers, skills and commands with their allowed tools, an editor's tasks — that keel, Claude Code, another harness or an editor started there outside the sandbox would act on"
	switch name := filepath.Base(c); {
	case slices.Contains(runnerConfig, name):
		why = "a package runner's configuration, which can name a program for npx, pnpm dlx, yarn dlx or bunx to run — an MCP server, the status line or a hook that keel starts there outside the sandbox"
	case slices.Contains(enterConfig, name):
		why = "a file that a program you start there runs as code outside the sandbox — direnv's .envrc, mise's configuration, a .tool-versions naming a path: version, Vim's or Neovim's exrc, lazy.nvim's .lazy.lua"
	}
	if repo != "" {
		why += fmt.Sprintf(", inside %s, a repository the command cloned or made: what a command fetched is not the user's project, so its configuration goes aside too", repo)
	}
	aside, err := moveAside(c)
	if err != nil {
		return fmt.Sprintf("the command made %s, %s, and keel could not move it aside (%v): do not start keel or another harness there before you have checked it.", c, why, err), false
	}
	return fmt.Sprintf("the command made %s, %s. keel moved it to %s; to use it, check it and run `mv %s %s` outside the sandbox.", c, why, aside, shellQuote(aside), shellQuote(c)), true
}

// moveAsideSaying moves path, which why describes, aside and says so, with how to put it back;
// ok is false when it could not.
func moveAsideSaying(path, why string) (msg string, ok bool) {
	aside, err := moveAside(path)
	if err != nil {
		return fmt.Sprintf("the command made %s, %s, and keel could not move it aside (%v): check it before using it outside the sandbox.", path, why, err), false
	}
	return fmt.Sprintf("the command made %s, %s. keel moved it to %s; to use it, check it and run `mv %s %s` outside the sandbox.", path, why, aside, shellQuote(aside), shellQuote(path)), true
}

// moveAside renames path to path.keel-refused (or the first free name after it) in its
// directory, held open, and returns the new path.
func moveAside(path string) (string, error) {
	dir, err := holdDir(filepath.Dir(path))
	if err != nil {
		return "", err
	}
	defer dir.close()
	aside := freeHeldName(dir, filepath.Base(path)+refusedSuffix)
	if err := dir.moveTo(filepath.Base(path), dir, aside); err != nil {
		return "", err
	}
	return filepath.Join(filepath.Dir(path), aside), nil
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && !strings.ContainsFunc(s, func(r rune) bool {
		return !(r == '/' || r == '.' || r == '-' || r == '_' || r == '+' || r == ',' || r == ':' || r == '@' ||
			(r >= '0' && r <= '9') || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z'))
	}) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
