package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
)

// projectConfigNames are the names that, in a directory of a project, hold what a program run
// later outside the sandbox takes as code to run or permissions to grant: keel's and Claude
// Code's settings, hooks, skills, commands, agents and output styles (.keel, .claude), the MCP
// servers of .mcp.json, the agent definitions keel loads from the other harnesses' folders too
// (.codex, .gemini, .opencode: hooks and MCP servers of their own), the other agents' and
// editors' project folders and files, which name MCP servers, language servers, tasks or hooks
// they start on the host (.vscode, .idea, .cursor, .windsurf, .zed, .continue, .roo, .kiro,
// .amazonq, .junie, .crush and crush.json, .helix; a dev container's initializeCommand), and
// .gitmodules, the submodules git clones and checks out there.
// keel reads skills and commands in every directory from the project's root down to the
// working directory, and an editor or another harness opened in a subdirectory reads that
// directory's: so each is read-only at every writable root, in every directory between a
// writable root and the session's working directory (a placeholder where absent), and
// wherever the search for repositories below the roots finds one ([gitGuard.projectConfig]);
// one a command makes elsewhere below the roots is moved aside as it is released
// ([plantWatch.refuseMade]).
//
// Memory files (KEEL.md, CLAUDE.md, AGENTS.md at a directory's top) are not among them: they
// are instructions a model reads, as it reads any file of the project, not code any program
// runs or a grant keel applies, and keeping them writable lets /init and the agent itself
// maintain them. Those inside .keel/ and .claude/ are read-only with their folder.
var projectConfigNames = []string{".mcp.json", ".gitmodules", ".claude", ".keel", ".codex", ".gemini", ".opencode", ".vscode", ".idea",
	".cursor", ".windsurf", ".zed", ".devcontainer", ".devcontainer.json", ".continue", ".roo", ".kiro", ".amazonq", ".junie",
	".crush", ".crush.json", "crush.json", ".helix"}

// runnerConfig are the files npm, pnpm, Yarn and bun read as configuration in the directory a
// package runner (`npx -y PKG`, `pnpm dlx`, `yarn dlx`, `bunx`) starts in and those above it,
// as mcphost.RunnerConfigNames lists them: an .npmrc's script-shell or node-options, a
// .yarnrc.yml's yarnPath, a pnpmfile or a bunfig's preload make the runner run any program,
// outside the sandbox where keel starts it there (an MCP server, the status line, a hook).
// Each is read-only where it is, the search noting them at the roots' top too; but unlike
// projectConfigNames, an absent one gets no placeholder — a directory where a package manager
// looks for its configuration file may break it inside — so one a command makes goes aside
// as it is released instead ([plantWatch.refuseMade]).
var runnerConfig = []string{".npmrc", ".pnpmfile.cjs", "pnpm-workspace.yaml", ".yarnrc.yml", ".yarnrc", "bunfig.toml"}

// enterConfig are the files a program the user starts in a directory runs as code: their
// shell entering it (direnv's .envrc; mise's configuration, whose hooks and env scripts run
// once the file is trusted — by its path; a .tool-versions, whose `path:` versions asdf's and
// mise's shims run programs from), or an editor opened there (Vim's and Neovim's exrc files,
// lazy.nvim's .lazy.lua). Like runnerConfig, each is read-only where it is, and an absent one
// gets no placeholder — mise and asdf look for theirs in every directory up from where a
// command runs, and a directory in its place would break them inside (and the user's shell
// hook outside, while a command runs) — so one a command makes goes aside as it is released.
var enterConfig = []string{".envrc", "mise.toml", ".mise.toml", "mise.local.toml", ".mise.local.toml", ".tool-versions",
	".exrc", ".vimrc", ".nvimrc", ".nvim.lua", ".lazy.lua"}

// heldWhereFound reports whether name is runnerConfig or enterConfig: read-only wherever the
// search finds one, without a placeholder where absent.
func heldWhereFound(name string) bool {
	return slices.Contains(runnerConfig, name) || slices.Contains(enterConfig, name)
}

// rootConfig are more names read-only at a writable root's top: what tools started there
// read as configuration — ripgrep's, a workspace-level git configuration, the shells'
// start-up files — Claude Code's sandbox's "dangerous files" beside those of projectConfigNames
// (where the home directory is a writable root, [homeProtected] lists the rest of its own).
var rootConfig = []string{".ripgreprc", ".gitconfig", ".bashrc", ".bash_profile", ".zshrc", ".zprofile", ".profile"}

// nestedConfig is what the search for repositories notes of the project configuration it
// passes ([gitGuard.projectConfig]): the paths made read-only, and whether maxNestedConfig was
// reached; present, every one it passed, with its identity (device and inode), which a
// command's release compares with ([plantWatch.refuseMade]); stopped, whether a bound stopped
// the search, so that some may lie past it; unlisted, the directories it could not list.
type nestedConfig struct {
	config     []string
	configFull bool
	present    map[string]string
	stopped    bool
	unlisted   []string
}

// maxNestedConfig bounds the project configuration found below the roots that is made
// read-only: each costs a mount per command. Past it the policy carries a warning.
const maxNestedConfig = 256

// protectedIn lists what is always read-only inside the writable root r besides git's
// files (see [gitGuard]): the files through which a later, unsandboxed program would run what
// a command planted (projectConfigNames and rootConfig).
func protectedIn(r string) []string {
	var out []string
	for _, n := range slices.Concat(projectConfigNames, rootConfig) {
		out = append(out, filepath.Join(r, n))
	}
	return out
}

// protectedBetween lists projectConfigNames in each directory below the writable root r down to
// dir, the session's working directory, when dir lies below r (a working directory inside an
// allowWrite or additional directory): a session started there later, by keel or another
// harness, reads each of them.
func protectedBetween(r, dir string) []string {
	if dir == "" || dir == r || !within(dir, r) {
		return nil
	}
	var out []string
	for d := dir; d != r; d = filepath.Dir(d) {
		for _, n := range projectConfigNames {
			out = append(out, filepath.Join(d, n))
		}
	}
	return out
}

// projectConfig notes the projectConfigNames that dir, a directory the search for repositories
// visits below root, holds, and the runnerConfig and enterConfig that dir or root holds (from
// its listing, entries: a stat more for each one found). The root's projectConfigNames are
// protectedIn's, absent ones included.
func (g *gitGuard) projectConfig(dir, root string, entries []os.DirEntry) {
	for _, e := range entries {
		// The root's projectConfigNames are protectedIn's; its runnerConfig and enterConfig only
		// the search's.
		if !heldWhereFound(e.Name()) && (dir == root || !slices.Contains(projectConfigNames, e.Name())) {
			continue
		}
		if g.present == nil {
			g.present = map[string]string{}
		}
		if fi, err := e.Info(); err == nil {
			g.present[filepath.Join(dir, e.Name())] = fileInode(fi)
		}
		if len(g.config) >= maxNestedConfig {
			if !g.configFull {
				g.configFull = true
				g.warnings = append(g.warnings, fmt.Sprintf("more than %d folders and files of project configuration (.claude, .keel, .mcp.json, .vscode…) below %s: those past them are writable", maxNestedConfig, root))
			}
			continue
		}
		g.config = append(g.config, filepath.Join(dir, e.Name()))
	}
}
