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

// trackedMaskedText says what of files stays readable; "" when none.
func trackedMaskedText(files []string) string {
	if len(files) == 0 {
		return ""
	}
	named := strings.Join(files[:min(len(files), maxTrackedNamed)], ", ")
	if len(files) > maxTrackedNamed {
		named += fmt.Sprintf(" and %d more", len(files)-maxTrackedNamed)
	}
	return fmt.Sprintf("committed content of %s stays readable through git inside the sandbox (git show HEAD:path): a mask hides the working tree's file, not git's objects; rewrite it out of the repository's history (git filter-repo) if that matters", named)
}

// trackedMaskedFinding is `keel doctor`'s line for [Session.trackedMasked]'s files.
func (s *Session) trackedMaskedFinding(ctx context.Context, sb *sandbox.Sandbox) (sandbox.Finding, bool) {
	if !sb.Policy().Enabled() {
		return sandbox.Finding{}, false
	}
	text := trackedMaskedText(s.trackedMasked(ctx, sb.Policy().Masked))
	return sandbox.Finding{Name: "masked in git", Status: "warn", Detail: text}, text != ""
}
