package mcphost

import (
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/lazy"
)

// runnerConfigs are the files each package manager reads as configuration in the directory a
// runner starts in or one above it, any of which can make the runner run a program of the
// project's choosing outside the sandbox: npm's .npmrc (script-shell runs the package's
// executable through any program, node-options --require loads any script into node; npm
// reads it where package.json or node_modules is, or in the start directory), pnpm's too, its
// .pnpmfile.cjs (hooks it loads) and pnpm-workspace.yaml (where pnpm reads every setting
// since v10), Yarn's .yarnrc.yml and Yarn 1's .yarnrc (yarnPath, yarn-path: the Yarn release
// to run instead, any script), and bun's bunfig.toml (preload scripts) beside the .npmrc it
// reads too. Every directory up counts, not only the one the runner picks: which one it is
// depends on files a command can add (package.json), and Yarn reads them all.
var runnerConfigs = lazy.Value[map[string][]string]{New: func() map[string][]string {
	return map[string][]string{
		"npm":  {".npmrc"},
		"pnpm": {".npmrc", ".pnpmfile.cjs", "pnpm-workspace.yaml"},
		"yarn": {".yarnrc.yml", ".yarnrc"},
		"bun":  {"bunfig.toml", ".npmrc"},
	}
}}

// RunnerConfigNames are the names of every runner's configuration files
// ([PackageRun.Configured]), sorted: the sandbox keeps each read-only.
func RunnerConfigNames() []string {
	var out []string
	for _, names := range runnerConfigs.Get() {
		out = append(out, names...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Configured is the configuration file of r's runner ([runnerConfigs]) in dir or a directory
// above it that counts (counts says which may: those of the workspace, or those a sandboxed
// command can write), "" for none. Only a file counts: a directory of that name (the
// sandbox's placeholder for an absent one) configures nothing.
func (r PackageRun) Configured(dir string, counts func(path string) bool) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		for _, n := range runnerConfigs.Get()[r.Runner] {
			if p := filepath.Join(d, n); counts(p) && isFile(p) {
				return p
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

// harmlessNpmrcKeys are .npmrc settings that start no program and read nothing from a path a
// command could write: what most projects commit (engine-strict, save-exact,
// legacy-peer-deps…). script-shell, node-options, cache, prefix, userconfig, globalconfig and
// every key not listed are not.
var harmlessNpmrcKeys = []string{
	"access", "always-auth", "audit", "audit-level", "auto-install-peers", "dedupe-peer-dependents",
	"engine-strict", "fund", "git-tag-version", "hoist", "hoist-pattern", "ignore-scripts",
	"include", "legacy-peer-deps", "link-workspace-packages", "lockfile", "loglevel", "message",
	"node-linker", "omit", "optional", "package-lock", "prefer-frozen-lockfile", "prefer-offline",
	"prefer-workspace-packages", "progress", "provenance", "public-hoist-pattern",
	"resolution-mode", "save", "save-exact", "save-prefix", "shamefully-hoist", "sign-git-tag",
	"strict-peer-dependencies", "strict-ssl", "tag-version-prefix", "update-notifier",
}

// maxHarmlessConfig bounds the configuration file HarmlessConfig reads.
const maxHarmlessConfig = 64 << 10

// HarmlessConfig reports whether the runner configuration file at path sets only what starts
// no program ([harmlessNpmrcKeys]); with registries, a registry and its credentials too (a
// registry chooses the package that runs: the user's choice in a trusted workspace, not an
// untrusted one's). Only an .npmrc can be: Yarn's and bun's files and pnpm's others name
// scripts to load.
func HarmlessConfig(path string, registries bool) bool {
	if filepath.Base(path) != ".npmrc" {
		return false
	}
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxHarmlessConfig+1))
	if err != nil || len(b) > maxHarmlessConfig {
		return false
	}
	for line := range strings.Lines(string(b)) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == ';' {
			continue
		}
		key, _, ok := strings.Cut(line, "=")
		key = strings.ToLower(strings.TrimSpace(key))
		switch {
		case !ok:
			return false
		case slices.Contains(harmlessNpmrcKeys, key):
		case registries && (key == "registry" || strings.HasSuffix(key, ":registry") || strings.HasPrefix(key, "//")):
		default:
			return false
		}
	}
	return true
}
