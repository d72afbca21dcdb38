package permission

import (
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/toolpath"
)

// A write to a protected path changes what keel or another tool will run: git hooks and
// config, keel's and Claude Code's settings, hooks, skills and agents, MCP server lists,
// editor task files. Such writes ask even in acceptEdits, and dontAsk denies them; only
// bypassPermissions skips the question (deny rules still win), and an allow rule covers one
// only when it names it (Edit(.claude/agents/**), not Edit(**) or Edit).

// protectedDirs are directory names whose contents are protected, at any depth below a
// working directory; protectedFiles are file names likewise.
var (
	protectedDirs = lazy.Value[map[string]bool]{New: func() map[string]bool {
		return map[string]bool{".git": true, ".keel": true, ".claude": true, ".vscode": true, ".idea": true,
			// keel loads agents, with their hooks and MCP servers, from the other harnesses' folders too.
			".codex": true, ".gemini": true, ".opencode": true,
			// The other agents' and editors' project folders name MCP servers, language servers,
			// tasks or hooks they start on the host (the sandbox keeps them read-only alike).
			".cursor": true, ".windsurf": true, ".zed": true, ".devcontainer": true, ".continue": true, ".roo": true,
			".kiro": true, ".amazonq": true, ".junie": true, ".crush": true, ".helix": true}
	}}
	protectedFiles = lazy.Value[map[string]bool]{New: func() map[string]bool {
		return map[string]bool{".mcp.json": true, ".gitmodules": true, ".crush.json": true, "crush.json": true, ".devcontainer.json": true}
	}}
)

// protected returns the first path of an edit that is protected, with the protected part it
// lies in (".git", or an extra path such as a settings file or hook script), or "".
func protected(p *prepared, pol Policy) (path, part string) {
	dirs := make([]string, len(pol.Dirs))
	for i, d := range pol.Dirs {
		dirs[i] = toolpath.Real(d)
	}
	for _, pp := range p.paths {
		for _, cand := range []string{pp.resolved, pp.clean} {
			for _, extra := range pol.Protected {
				if toolpath.Within(cand, filepath.Clean(extra)) || toolpath.Within(cand, toolpath.Real(extra)) {
					return pp.resolved, extra
				}
			}
			if part := protectedPart(cand, dirs); part != "" {
				return pp.resolved, part
			}
		}
		if d := gitDirOf(pp.resolved, dirs); d != "" {
			return pp.resolved, d
		}
	}
	return "", ""
}

// gitDirOf returns the directory at or above path's parent, within a working directory, that
// git would take for a repository once path is written — HEAD, objects (or commondir) and
// refs all present — or "". A repository written file by file inside the project (b/HEAD,
// b/config with core.fsmonitor, b/objects/…, b/refs/…) is as protected as .git: the write
// that completes it asks, and so does every write into it after.
func gitDirOf(path string, dirs []string) string {
	for d := filepath.Dir(path); slices.ContainsFunc(dirs, func(w string) bool { return toolpath.Within(d, w) }); d = filepath.Dir(d) {
		has := func(names ...string) bool {
			for _, n := range names {
				p := filepath.Join(d, n)
				if path == p || toolpath.Within(path, p) {
					return true
				}
				if _, err := os.Lstat(p); err == nil {
					return true
				}
			}
			return false
		}
		if has("HEAD") && has("objects", "commondir") && has("refs") {
			return d
		}
		if d == filepath.Dir(d) {
			break
		}
	}
	return ""
}

// protectedPart names the protected directory or file cand lies in, judging only the part
// below the working directory that holds it (a session started inside ~/.claude can still
// edit there), or the whole path when it is outside them all.
func protectedPart(cand string, dirs []string) string {
	rel := cand
	for _, d := range dirs {
		if toolpath.Within(cand, d) {
			rel, _ = filepath.Rel(d, cand)
			break
		}
	}
	parts := strings.Split(filepath.ToSlash(rel), "/")
	for i := 0; i < len(parts); i++ {
		c := parts[i]
		// A worktree keel made for an agent (.keel/worktrees/<name>/) holds ordinary project
		// files: judge the path inside it.
		if c == ".keel" && i+2 < len(parts) && parts[i+1] == "worktrees" {
			i += 2
			continue
		}
		if protectedDirs.Get()[c] || protectedFiles.Get()[c] && i == len(parts)-1 {
			return c
		}
	}
	return ""
}

// namesProtected reports whether an allow rule covers a protected path because it names the
// protected part itself: one of its literal segments (before any wildcard) is that name, or,
// for an extra protected path, the rule's literal base lies inside it
// (Edit(//home/u/.keel/agent-memory/**) names keel's directory; Edit(//home/**) does not).
func (r *Rule) namesProtected(part, cwd, home string) bool {
	if r.path == nil {
		return false
	}
	if !filepath.IsAbs(part) {
		return slices.Contains(r.path.literalSegments(), part)
	}
	base := r.path.base(r.root(cwd), home)
	if base == "" || r.path.anchor == anchorAnyDepth {
		return false
	}
	lit := filepath.Join(append([]string{base}, r.path.literalSegments()...)...)
	return toolpath.Within(lit, part) || toolpath.Within(toolpath.Real(lit), toolpath.Real(part))
}

// literalSegments are the pattern's leading segments that hold no wildcard.
func (p *pathPattern) literalSegments() []string {
	var out []string
	for s := range strings.SplitSeq(p.glob, "/") {
		if strings.ContainsAny(s, `*?[{\`) {
			break
		}
		out = append(out, s)
	}
	return out
}
