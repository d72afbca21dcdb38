package mcphost

import (
	"path/filepath"
	"slices"
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
var runnerConfigs = map[string][]string{
	"npm":  {".npmrc"},
	"pnpm": {".npmrc", ".pnpmfile.cjs", "pnpm-workspace.yaml"},
	"yarn": {".yarnrc.yml", ".yarnrc"},
	"bun":  {"bunfig.toml", ".npmrc"},
}

// RunnerConfigNames are the names of every runner's configuration files
// ([PackageRun.Configured]), sorted: the sandbox keeps each read-only.
func RunnerConfigNames() []string {
	var out []string
	for _, names := range runnerConfigs {
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
		for _, n := range runnerConfigs[r.Runner] {
			if p := filepath.Join(d, n); counts(p) && isFile(p) {
				return p
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}
