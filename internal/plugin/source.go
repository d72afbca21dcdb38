package plugin

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
	"github.com/keel-dev/keel/internal/settings"
)

// Marketplace source types keel adds and reads (settings.MarketplaceSource.Source).
const (
	MarketGitHub    = "github"
	MarketGit       = "git"
	MarketDirectory = "directory"
	MarketFile      = "file"
	MarketURL       = "url"
)

var (
	ownerRepo = lazy.Regexp{Expr: `^[A-Za-z0-9_.-]+/[A-Za-z0-9_.-]+$`}
	scpLike   = lazy.Regexp{Expr: `^[A-Za-z0-9_.-]+@[A-Za-z0-9_.-]+:.+$`}
)

// ParseMarketplaceSource reads what `keel plugin marketplace add` is given:
//
//   - a folder holding .claude-plugin/marketplace.json, or that file itself;
//   - a git URL (https://…, ssh://…, git@host:path, file://…), "#ref" pinning a branch, tag or
//     commit;
//   - an http(s) URL ending in .json: a catalogue fetched as it is;
//   - owner/repo, a GitHub repository, with "#ref" or "@ref".
//
// A ref of 40 hexadecimal digits is a commit pin: updates keep the marketplace there.
func ParseMarketplaceSource(arg, cwd string) (settings.MarketplaceSource, error) {
	arg = strings.TrimSpace(arg)
	if arg == "" {
		return settings.MarketplaceSource{}, errors.New("no marketplace source given")
	}
	local := arg
	if strings.HasPrefix(local, "~/") {
		if home, err := os.UserHomeDir(); err == nil {
			local = filepath.Join(home, local[2:])
		}
	}
	if !filepath.IsAbs(local) && cwd != "" {
		local = filepath.Join(cwd, local)
	}
	if st, err := os.Stat(local); err == nil && !strings.Contains(arg, "://") {
		if st.IsDir() {
			return settings.MarketplaceSource{Source: MarketDirectory, Path: filepath.Clean(local)}, nil
		}
		return settings.MarketplaceSource{Source: MarketFile, Path: filepath.Clean(local)}, nil
	}
	base, ref, _ := strings.Cut(arg, "#")
	switch {
	case strings.HasPrefix(arg, "http://") || strings.HasPrefix(arg, "https://"):
		if strings.HasSuffix(strings.ToLower(base), ".json") {
			return settings.MarketplaceSource{Source: MarketURL, URL: arg}, nil
		}
		return settings.MarketplaceSource{Source: MarketGit, URL: base, Ref: ref}, nil
	case strings.Contains(arg, "://") || scpLike.Get().MatchString(base):
		return settings.MarketplaceSource{Source: MarketGit, URL: base, Ref: ref}, nil
	}
	if ref == "" {
		if b, r, ok := strings.Cut(base, "@"); ok {
			base, ref = b, r
		}
	}
	if ownerRepo.Get().MatchString(base) && !strings.HasPrefix(base, ".") {
		return settings.MarketplaceSource{Source: MarketGitHub, Repo: base, Ref: ref}, nil
	}
	return settings.MarketplaceSource{}, fmt.Errorf("marketplace source %q is not a folder, a marketplace.json, a git URL or owner/repo", arg)
}

// SourceString renders a marketplace source as `keel plugin marketplace add` takes it.
func SourceString(s settings.MarketplaceSource) string {
	ref := ""
	if s.Ref != "" {
		ref = "#" + s.Ref
	}
	switch s.Source {
	case MarketGitHub:
		return s.Repo + ref
	case MarketGit:
		return s.URL + ref
	case MarketURL:
		return s.URL
	case MarketDirectory, MarketFile:
		return s.Path
	}
	return s.Source
}

// Allowed says whether managed policy lets marketplace name from src be added or used: never
// when blockedMarketplaces names it, and, when strictKnownMarketplaces is set, only when it
// names it (an empty list allows none).
func Allowed(name string, src settings.MarketplaceSource, p settings.Plugins) error {
	for _, b := range p.BlockedMarketplaces.V {
		if matchesPolicy(b, src) {
			return fmt.Errorf("marketplace %s (%s) is blocked by managed settings (blockedMarketplaces, %s)", name, SourceString(src), p.BlockedMarketplaces.From)
		}
	}
	if !p.StrictMarketplaces.IsSet() {
		return nil
	}
	for _, a := range p.StrictMarketplaces.V {
		if matchesPolicy(a, src) {
			return nil
		}
	}
	return fmt.Errorf("marketplace %s (%s) is not allowed: managed settings allow only the marketplaces strictKnownMarketplaces names (%s)", name, SourceString(src), p.StrictMarketplaces.From)
}

// matchesPolicy says whether a policy entry names src.
func matchesPolicy(rule, src settings.MarketplaceSource) bool {
	switch rule.Source {
	case "hostPattern":
		re, err := regexp.Compile(rule.HostPattern)
		return err == nil && sourceHost(src) != "" && re.MatchString(sourceHost(src))
	case "pathPattern":
		re, err := regexp.Compile(rule.PathPattern)
		return err == nil && (src.Source == MarketDirectory || src.Source == MarketFile) && re.MatchString(src.Path)
	}
	if rule.Source != src.Source {
		return false
	}
	if rule.Ref != "" && rule.Ref != src.Ref {
		return false
	}
	switch rule.Source {
	case MarketGitHub:
		if owner, ok := strings.CutSuffix(rule.Repo, "/*"); ok {
			o, _, _ := strings.Cut(src.Repo, "/")
			return strings.EqualFold(owner, o)
		}
		return strings.EqualFold(rule.Repo, src.Repo)
	case MarketGit, MarketURL:
		return normalURL(rule.URL) == normalURL(src.URL)
	case MarketDirectory, MarketFile:
		return filepath.Clean(rule.Path) == filepath.Clean(src.Path)
	case "npm":
		return rule.Package == src.Package
	}
	return false
}

func normalURL(u string) string {
	return strings.TrimSuffix(strings.TrimSuffix(strings.ToLower(u), "/"), ".git")
}

// sourceHost is the host a source is fetched from, for hostPattern rules.
func sourceHost(src settings.MarketplaceSource) string {
	switch src.Source {
	case MarketGitHub:
		return "github.com"
	case MarketGit, MarketURL:
		if scpLike.Get().MatchString(src.URL) {
			_, rest, _ := strings.Cut(src.URL, "@")
			host, _, _ := strings.Cut(rest, ":")
			return host
		}
		if u, err := url.Parse(src.URL); err == nil {
			return u.Hostname()
		}
	}
	return ""
}
