package session

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/permission"
	"github.com/keel-dev/keel/internal/sandbox"
)

// maxTrackedNamed bounds the files a notice names; the count says the rest.
const maxTrackedNamed = 8

// readDenyRules are the settings' Read deny rules with a path, as the permission checker
// reads them (each anchored by [permission.Rule.Root]).
func (s *Session) readDenyRules() []permission.Rule {
	var out []permission.Rule
	for _, v := range s.settings.Permissions.Deny {
		r, err := permission.ParseRule(v.V, permission.Deny, permission.Source{Dir: s.opts.ruleDir(v.From)})
		if err != nil || r.Tool != "Read" || r.Specifier == "" {
			continue
		}
		out = append(out, r)
	}
	return out
}

// trackedMasked lists the files that git tracks in the repository of each working directory
// and that the sandbox masks (masked, or a Read deny rule covers them): a mask hides the
// working tree's file, but git's object store, which a command must read for git to work,
// still holds what was committed, so `git show HEAD:path` reads it. One `git ls-files` per
// repository, through keel's hardened git, with the masks as exclude patterns; bounded by a
// timeout. Repositories nested below a working directory are not looked at.
func (s *Session) trackedMasked(ctx context.Context, masked []string) []string {
	rules := s.readDenyRules()
	if len(rules) == 0 && len(masked) == 0 {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	home := userHome()
	var tops, out []string
	for _, d := range append([]string{s.opts.Cwd}, s.state.AdditionalDirs...) {
		top := ProjectRoot(d)
		if _, err := os.Stat(filepath.Join(top, ".git")); err != nil || slices.Contains(tops, top) {
			continue
		}
		tops = append(tops, top)
		var lines []string
		for _, r := range rules {
			lines = append(lines, r.GitignoreUnder(top, s.opts.Cwd, home)...)
		}
		for _, m := range masked {
			if rel, err := filepath.Rel(top, m); err == nil && rel != "." && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
				lit := "/" + permission.GitignoreLiteral(filepath.ToSlash(rel))
				lines = append(lines, lit, lit+"/**")
			}
		}
		if len(lines) == 0 {
			continue
		}
		args := []string{"ls-files", "-z", "--cached", "--ignored"}
		for _, l := range lines {
			args = append(args, "--exclude="+l)
		}
		b, err := gitexec.Runner{}.Output(ctx, top, args...)
		if err != nil {
			s.logger.Debug("tracked masked files", "repo", top, "err", err)
			continue
		}
		for f := range strings.SplitSeq(strings.TrimSuffix(string(b), "\x00"), "\x00") {
			if f != "" {
				out = append(out, filepath.Join(top, filepath.FromSlash(f)))
			}
		}
	}
	return out
}

// splitHidden parts files, the masked files git tracks, into those whose blobs the sandbox
// hides from git inside ([sandbox.Sandbox.HideObjects]) and those that stay readable through
// it, with why, per repository, where the sandbox said.
func splitHidden(files []string, covers []sandbox.ObjectCover) (hidden, readable, why []string) {
	for _, f := range files {
		real := f
		if r, err := filepath.EvalSymlinks(f); err == nil {
			real = r
		}
		best, depth := -1, -1
		for i, c := range covers {
			for _, t := range c.Trees {
				if (real == t || strings.HasPrefix(real, t+string(filepath.Separator))) && len(t) > depth {
					best, depth = i, len(t)
				}
			}
		}
		switch {
		case best >= 0 && covers[best].Why == "":
			hidden = append(hidden, f)
		case best >= 0:
			readable = append(readable, f)
			if w := covers[best].Trees[0] + ": " + covers[best].Why; !slices.Contains(why, w) {
				why = append(why, w)
			}
		default:
			readable = append(readable, f)
		}
	}
	return hidden, readable, why
}

// named lists files, up to maxTrackedNamed, with a count of the rest.
func named(files []string) string {
	out := strings.Join(files[:min(len(files), maxTrackedNamed)], ", ")
	if len(files) > maxTrackedNamed {
		out += fmt.Sprintf(" and %d more", len(files)-maxTrackedNamed)
	}
	return out
}

// trackedMaskedText says what of files stays readable, and why keel could not hide it; ""
// when none.
func trackedMaskedText(files, why []string) string {
	if len(files) == 0 {
		return ""
	}
	text := fmt.Sprintf("committed content of %s stays readable through git inside the sandbox (git show HEAD:path): a mask hides the working tree's file, not git's objects", named(files))
	if len(why) > 0 {
		text += ", and keel could not hide them there (" + strings.Join(why, "; ") + ")"
	}
	return text + "; rewrite it out of the repository's history (git filter-repo) if that matters"
}

// trackedMaskedNotice is the session's notice on the masked files git tracks whose blobs the
// sandbox could not hide; "" when there are none. Only where there are any does the sandbox
// search its writable roots and hide them now, before the first command.
func (s *Session) trackedMaskedNotice(ctx context.Context, sb *sandbox.Sandbox) string {
	files := s.trackedMasked(ctx, sb.Policy().Masked)
	if len(files) == 0 {
		return ""
	}
	covers := sb.HideObjects()
	_, readable, why := splitHidden(files, covers)
	return strings.Join(slices.DeleteFunc([]string{trackedMaskedText(readable, why), sealedText(covers)}, func(t string) bool { return t == "" }), "; ")
}

// sealedText says which repositories' object stores commands see masked whole, and why
// ([sandbox.ObjectCover.Sealed]); "" when none.
func sealedText(covers []sandbox.ObjectCover) string {
	var out []string
	for _, c := range covers {
		if c.Sealed != "" {
			out = append(out, fmt.Sprintf("git's objects in %s are masked whole for commands, so git fails there: %s", c.Trees[0], c.Sealed))
		}
	}
	return strings.Join(out, "; ")
}

// trackedMaskedFindings are `keel doctor`'s lines for [Session.trackedMasked]'s files: those
// the sandbox hides from git, and those that stay readable through it.
func (s *Session) trackedMaskedFindings(ctx context.Context, sb *sandbox.Sandbox) []sandbox.Finding {
	if !sb.Policy().Enabled() {
		return nil
	}
	files := s.trackedMasked(ctx, sb.Policy().Masked)
	if len(files) == 0 {
		return nil
	}
	covers := sb.HideObjects()
	hidden, readable, why := splitHidden(files, covers)
	var out []sandbox.Finding
	if len(hidden) > 0 {
		out = append(out, sandbox.Finding{Name: "hidden from git", Status: "ok", Detail: "hidden from git inside the sandbox: the committed content of " + named(hidden) +
			" (its blobs are left out of the object store commands see; git commands that need them, such as git diff of that file or git gc, fail inside)"})
	}
	if text := trackedMaskedText(readable, why); text != "" {
		out = append(out, sandbox.Finding{Name: "masked in git", Status: "warn", Detail: text})
	}
	if text := sealedText(covers); text != "" {
		out = append(out, sandbox.Finding{Name: "git sealed", Status: "warn", Detail: text})
	}
	return out
}
