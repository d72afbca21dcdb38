package mcphost

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// PackageRun is a stdio server started through a package runner (`npx -y PKG`, `npm exec`,
// `pnpm dlx`, `yarn dlx`, `bunx`…). Such a runner looks the package up in the working
// directory's project first — npx takes a copy anywhere in its node_modules tree, or a file at
// node_modules/.bin/NAME in any directory up to the root, before its cache or the registry —
// so what a workspace holds there runs in place of the package the user configured.
type PackageRun struct {
	// Runner is the package manager whose configuration the runner reads: npm (npx, npm
	// exec), pnpm, yarn or bun ([PackageRun.Configured]).
	Runner string
	// Package is the package's name (@scope/name), without a version.
	Package string
	// Bins are the names the runner looks for in node_modules/.bin: the word as written
	// (npx tries it before anything else) and the usual name of the package's executable.
	Bins []string
}

// runnerValued are the runners' options that take the next word as their value.
var runnerValued = []string{"-p", "--package", "-c", "--call", "--registry", "--cache", "--userconfig",
	"--prefix", "-w", "--workspace", "--node-options", "--loglevel", "--shell-mode"}

// PackageRunner says whether a server started as command with args runs a package through a
// package runner, and which.
func PackageRunner(command string, args []string) (PackageRun, bool) {
	name := strings.TrimSuffix(filepath.Base(command), ".cmd")
	manager := map[string]string{"npx": "npm", "npm": "npm", "pnpm": "pnpm", "yarn": "yarn", "bunx": "bun", "bun": "bun"}[name]
	switch {
	case name == "npx" || name == "bunx":
	case (name == "npm" || name == "bun") && len(args) > 0 && (args[0] == "exec" || args[0] == "x"),
		(name == "pnpm" || name == "yarn") && len(args) > 0 && args[0] == "dlx",
		name == "pnpm" && len(args) > 0 && args[0] == "exec":
		args = args[1:]
	default:
		return PackageRun{}, false
	}
	var pkg, word string
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "--":
			if i+1 < len(args) {
				word = args[i+1]
			}
			i = len(args)
		case a == "-p" || a == "--package":
			if i+1 < len(args) && pkg == "" {
				pkg = args[i+1]
			}
			i++
		case strings.HasPrefix(a, "--package="):
			if pkg == "" {
				pkg = strings.TrimPrefix(a, "--package=")
			}
		case slices.Contains(runnerValued, a):
			i++
		case strings.HasPrefix(a, "-"):
		default:
			word = args[i]
			i = len(args)
		}
	}
	if pkg == "" {
		pkg = word
	}
	pkgName := packageName(pkg)
	if pkgName == "" {
		return PackageRun{}, false
	}
	run := PackageRun{Runner: manager, Package: pkgName}
	if word != "" && !strings.Contains(word, "..") {
		run.Bins = append(run.Bins, word)
	}
	if bin := pkgName[strings.LastIndex(pkgName, "/")+1:]; !slices.Contains(run.Bins, bin) {
		run.Bins = append(run.Bins, bin)
	}
	return run, true
}

// packageName is the registry name a package spec names (name, name@range, @scope/name@tag),
// or "" for a spec that is no registry name (a path, a URL, git:…, file:…).
func packageName(spec string) string {
	name := spec
	if at := strings.Index(spec[min(1, len(spec)):], "@"); at >= 0 {
		name = spec[:at+1]
	}
	scope, rest, scoped := strings.Cut(name, "/")
	if scoped && !strings.HasPrefix(scope, "@") {
		return ""
	}
	if !scoped {
		rest = name
	}
	valid := func(s string) bool {
		return s != "" && s != "." && s != ".." && !strings.HasPrefix(s, ".") &&
			!strings.ContainsAny(s, ":\\/ ") && !strings.Contains(s, "..")
	}
	if !valid(rest) || scoped && !valid(strings.TrimPrefix(scope, "@")) {
		return ""
	}
	return name
}

// Planted are the paths in dir through which a workspace would provide r's package most
// simply to a runner started there or below: the files node_modules/.bin/NAME, which npx
// runs before looking at any package. Kept read-only (absent or not), no sandboxed command
// can put one there. node_modules/PKG is not among them: npm install moves aside what it
// finds there that no dependency asks for, and fails on a read-only placeholder; a copy
// there is found by [PackageRun.Provided] as the server starts.
func (r PackageRun) Planted(dir string) []string {
	var out []string
	for _, b := range r.Bins {
		out = append(out, filepath.Join(dir, "node_modules", ".bin", filepath.FromSlash(b)))
	}
	return out
}

// maxPackages bounds the packages [PackageRun.Provided] reads in one node_modules tree: past
// it the tree counts as providing the package, since what was not read cannot be vouched for.
const maxPackages = 4096

// Provided is the path through which a project would provide r's package to a runner
// started in dir, looking in dir and each directory above it whose node_modules counts
// (counts says which may: those of the workspace, or those a sandboxed command can write): a
// node_modules/.bin entry of one of its names, a package of its name anywhere in a
// node_modules tree (by folder or by the name its package.json gives, as npm reads it), or a
// package.json there whose bin names it (npx runs the project's own executable first). ""
// for none.
func (r PackageRun) Provided(dir string, counts func(path string) bool) string {
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if counts(filepath.Join(d, "node_modules")) {
			if p := r.providedIn(d); p != "" {
				return p
			}
		}
		if filepath.Dir(d) == d {
			return ""
		}
	}
}

func (r PackageRun) providedIn(d string) string {
	nm := filepath.Join(d, "node_modules")
	for _, b := range r.Bins {
		if p := filepath.Join(nm, ".bin", filepath.FromSlash(b)); isFile(p) {
			return p
		}
	}
	if p := filepath.Join(d, "package.json"); slices.ContainsFunc(r.Bins, binsOf(p).has) {
		return p
	}
	budget := maxPackages
	return r.inTree(nm, &budget)
}

// inTree finds r's package in the node_modules folder nm and the node_modules of the packages
// it holds.
func (r PackageRun) inTree(nm string, budget *int) string {
	entries, err := os.ReadDir(nm)
	if err != nil {
		return ""
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		dirs := []string{e.Name()}
		if strings.HasPrefix(e.Name(), "@") {
			dirs = dirs[:0]
			inner, _ := os.ReadDir(filepath.Join(nm, e.Name()))
			for _, i := range inner {
				dirs = append(dirs, e.Name()+"/"+i.Name())
			}
		}
		for _, name := range dirs {
			p := filepath.Join(nm, filepath.FromSlash(name))
			if *budget--; *budget < 0 {
				return nm
			}
			if name == r.Package || binsOf(filepath.Join(p, "package.json")).name == r.Package {
				return p
			}
			if fi, err := os.Lstat(p); err == nil && fi.IsDir() {
				if found := r.inTree(filepath.Join(p, "node_modules"), budget); found != "" {
					return found
				}
			}
		}
	}
	return ""
}

// manifest is what of a package.json says what a runner would run from it.
type manifest struct {
	name string
	bins []string
}

func (m manifest) has(bin string) bool { return slices.Contains(m.bins, bin) }

// binsOf reads the package.json at p: its name and the names of its executables (a bin
// given as one path is named after the package).
func binsOf(p string) manifest {
	b, err := os.ReadFile(p)
	if err != nil {
		return manifest{}
	}
	var pj struct {
		Name string          `json:"name"`
		Bin  json.RawMessage `json:"bin"`
	}
	if json.Unmarshal(b, &pj) != nil {
		return manifest{}
	}
	m := manifest{name: pj.Name}
	var one string
	var many map[string]string
	switch {
	case json.Unmarshal(pj.Bin, &one) == nil && one != "":
		m.bins = []string{pj.Name[strings.LastIndex(pj.Name, "/")+1:]}
	case json.Unmarshal(pj.Bin, &many) == nil:
		for k := range many {
			m.bins = append(m.bins, filepath.Base(k))
		}
	}
	return m
}

func isFile(p string) bool {
	fi, err := os.Stat(p)
	return err == nil && fi.Mode().IsRegular()
}
