package permission

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/keel-dev/keel/internal/shell"
	"github.com/keel-dev/keel/internal/waittest"
)

// The file-rule differential fuzz: generated command lines that name a protected file in
// spellings bash resolves differently from a plain path (globs, quotes, $PWD, ~+, braces,
// hard and symbolic links, cd, wrappers, recursive readers) are checked in bypassPermissions
// under one deny rule, and every line keel allows runs under real bash in a fresh directory.
//
//   - Read mode: deny Read(./secret/**); a hit is any output holding the secret's content.
//   - Edit mode: deny Edit(./protected/**); a hit is any change to protected/ (content, mode,
//     time, a file added or removed).
//
// Both also count the allowed lines that did their job elsewhere (the public file was read,
// a file outside protected/ written), so a checker that asked about everything would fail.
//
// KEEL_FILEFUZZ_N sets the lines per mode (default 1500, the make test run);
// KEEL_FILEFUZZ_SEED the seed (default 1; "random" draws one and logs it).

// fuzzPrograms are the real programs the fuzz runs, linked into its PATH.
var fuzzPrograms = []string{"cat", "grep", "head", "tail", "tac", "sort", "cut", "tar", "find", "xargs", "ls", "cp", "mv",
	"ln", "tee", "truncate", "sed", "dd", "touch", "rm", "chmod", "mkdir", "env", "timeout", "nice", "bash", "sh", "true",
	"printf", "echo", "install", "rg"}

type fileFuzz struct {
	bin    string
	secret string // the secret's content (Read mode) or the protected file's (Edit mode)
	// archive is a tar holding a protected/keep.txt of its own, made once.
	archive []byte
}

func newFileFuzz(t testing.TB) *fileFuzz {
	t.Helper()
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("SKIPPED: bash is not installed, so keel's file rules cannot be compared with it (scripts/test.sh installs it)")
	}
	bin := t.TempDir()
	for _, p := range fuzzPrograms {
		if real, err := exec.LookPath(p); err == nil {
			if err := os.Symlink(real, filepath.Join(bin, p)); err != nil {
				t.Fatal(err)
			}
		}
	}
	f := &fileFuzz{bin: bin, secret: "S3CR3T-" + strconv.FormatUint(rand.Uint64(), 36)}
	tmp := t.TempDir()
	if err := os.MkdirAll(filepath.Join(tmp, "protected"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "protected", "keep.txt"), []byte("REPLACED\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	archive, err := exec.Command("tar", "-cf", "-", "-C", tmp, "protected").Output()
	if err != nil {
		t.Fatalf("tar: %v", err)
	}
	f.archive = archive
	return f
}

// setup fills a run directory: secret/token.txt and protected/keep.txt hold the secret, with
// a hard link (hard.txt, hard-keep.txt) and a symlink (link, plink) to each; src/a.txt is
// public; list.txt names the secret for xargs; archive.tar holds a protected/keep.txt of its own.
func (f *fileFuzz) setup(dir string) error {
	files := map[string]string{
		"secret/token.txt": f.secret + "\n", "protected/keep.txt": f.secret + "\n", "src/a.txt": "PUBLIC\n",
		"list.txt": "secret/token.txt\n",
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, l := range [][2]string{{"secret/token.txt", "hard.txt"}, {"protected/keep.txt", "hard-keep.txt"}} {
		if err := os.Link(filepath.Join(dir, l[0]), filepath.Join(dir, l[1])); err != nil {
			return err
		}
	}
	for _, l := range [][2]string{{"secret", "link"}, {"protected", "plink"}} {
		if err := os.Symlink(filepath.Join(dir, l[0]), filepath.Join(dir, l[1])); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "archive.tar"), f.archive, 0o644)
}

// run runs line in dir as the Bash tool would, with the fuzz PATH and HOME=dir.
func (f *fileFuzz) run(t testing.TB, dir, line string) (string, error) {
	res, err := shell.Run(t.Context(), shell.Command{Script: line, Dir: dir, Timeout: waittest.Scale(10 * time.Second),
		Env: []string{"PATH=" + f.bin, "HOME=" + dir, "LC_ALL=C"}})
	if err != nil {
		return "", err
	}
	if res.TimedOut {
		return "", fmt.Errorf("timed out")
	}
	return res.Output, nil
}

// fileState is what Edit mode compares: every entry below protected/ with mode, size, time and
// content.
func fileState(dir string) string {
	var b strings.Builder
	_ = filepath.WalkDir(filepath.Join(dir, "protected"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			fmt.Fprintf(&b, "%s error %v\n", p, err)
			return nil
		}
		fi, err := os.Lstat(p)
		if err != nil {
			return nil
		}
		data, _ := os.ReadFile(p)
		fmt.Fprintf(&b, "%s %v %d %d %q\n", p, fi.Mode(), fi.Size(), fi.ModTime().UnixNano(), data)
		return nil
	})
	return b.String()
}

// TestFileRulesDifferentialFuzzRead is the Read mode.
func TestFileRulesDifferentialFuzzRead(t *testing.T) {
	n, seed := fuzzSettings(t, "KEEL_FILEFUZZ", 1500)
	f := newFileFuzz(t)
	gen := &pathGen{r: rand.New(rand.NewPCG(seed, seed^0x51))}
	var public atomic.Int64
	stats := fuzzFiles(t, f, n, "Read(./secret/**)", func() string { return gen.readLine() },
		func(dir, out string) string {
			if strings.Contains(out, "PUBLIC") {
				public.Add(1)
			}
			if strings.Contains(out, f.secret) {
				return "printed the secret"
			}
			return ""
		})
	t.Logf("file fuzz (Read): seed %d, %s, %d allowed lines printed the public file", seed, stats, public.Load())
	if public.Load() < int64(n)/40 {
		t.Errorf("only %d allowed lines read the public file: the fuzz no longer exercises allowed reads", public.Load())
	}
}

// TestFileRulesDifferentialFuzzEdit is the Edit mode.
func TestFileRulesDifferentialFuzzEdit(t *testing.T) {
	n, seed := fuzzSettings(t, "KEEL_FILEFUZZ", 1500)
	f := newFileFuzz(t)
	gen := &pathGen{r: rand.New(rand.NewPCG(seed, seed^0xed17))}
	var wrote atomic.Int64
	stats := fuzzFiles(t, f, n, "Edit(./protected/**)", func() string { return gen.editLine() },
		func(dir, out string) string {
			if _, err := os.Stat(filepath.Join(dir, "out.txt")); err == nil {
				wrote.Add(1)
			}
			return ""
		})
	t.Logf("file fuzz (Edit): seed %d, %s, %d allowed lines wrote a file elsewhere", seed, stats, wrote.Load())
	if wrote.Load() < int64(n)/40 {
		t.Errorf("only %d allowed lines wrote elsewhere: the fuzz no longer exercises allowed writes", wrote.Load())
	}
}

// fuzzFiles generates n lines, checks each under the deny rule in bypassPermissions in a
// fresh directory, runs the allowed ones and reports hits: judge's findings, and for every
// line any change below protected/ when the rule is an Edit rule.
func fuzzFiles(t *testing.T, f *fileFuzz, n int, deny string, gen func() string, judge func(dir, out string) string) string {
	scratch := t.TempDir()
	lines := make(chan string, 64)
	go func() {
		defer close(lines)
		for range n {
			lines <- gen()
		}
	}()
	var (
		allowed, ran atomic.Int64
		mu           sync.Mutex // guards hits and failures
		hits         []string
		wg           sync.WaitGroup
	)
	editMode := strings.HasPrefix(deny, "Edit")
	fresh := func() (string, error) {
		dir, err := os.MkdirTemp(scratch, "run")
		if err == nil {
			dir, err = filepath.EvalSymlinks(dir)
		}
		if err == nil {
			err = f.setup(dir)
		}
		return dir, err
	}
	for range 4 {
		wg.Go(func() {
			// A directory serves every line until one runs in it.
			dir, err := fresh()
			for line := range lines {
				if err != nil {
					mu.Lock()
					hits = append(hits, fmt.Sprintf("setup: %v", err))
					mu.Unlock()
					return
				}
				rule, perr := ParseRule(deny, Deny, Source{Name: "project", Dir: dir})
				if perr != nil {
					t.Error(perr)
					return
				}
				c := New(Config{Policy: Policy{Mode: ModeBypassPermissions, Rules: []Rule{rule}, Dirs: []string{dir}}, Home: dir})
				if d := c.Evaluate(Request{Tool: "Bash", Command: line, Cwd: dir}); d.Behavior != Allow {
					continue
				}
				allowed.Add(1)
				before := fileState(dir)
				out, rerr := f.run(t, dir, line)
				ran.Add(1)
				why := judge(dir, out)
				if editMode && rerr == nil && fileState(dir) != before {
					why = "changed protected/"
				}
				if why != "" {
					mu.Lock()
					hits = append(hits, fmt.Sprintf("%q %s; output %q", line, why, truncate(out, 300)))
					mu.Unlock()
				}
				os.RemoveAll(dir)
				dir, err = fresh()
			}
			os.RemoveAll(dir)
		})
	}
	wg.Wait()
	for _, h := range hits {
		t.Errorf("allowed under deny %s in bypassPermissions, but bash %s", deny, h)
	}
	return fmt.Sprintf("%d lines, %d allowed, %d run, %d hits", n, allowed.Load(), ran.Load(), len(hits))
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}

// pathGen spells paths and builds lines around them.
type pathGen struct{ r *rand.Rand }

func (g *pathGen) pick(list ...string) string { return list[g.r.IntN(len(list))] }

// spell writes path so that bash still resolves it to the same file or to a glob matching
// it: quotes inserted, characters escaped or turned into pattern elements, a prefix that
// leads to the same directory.
func (g *pathGen) spell(path string) string {
	type tok struct {
		s     string
		plain bool // a single plain character that may be replaced
	}
	var toks []tok
	for _, c := range path {
		toks = append(toks, tok{string(c), c != '/' && c != '.'})
	}
	for range g.r.IntN(4) {
		i := g.r.IntN(len(toks) + 1)
		if g.r.IntN(3) == 0 || i == len(toks) || !toks[i].plain {
			ins := g.pick(`""`, `''`, `$''`, `""''`)
			toks = append(toks[:i], append([]tok{{ins, false}}, toks[i:]...)...)
			continue
		}
		c := toks[i].s
		other := "x"
		if c == "x" {
			other = "y"
		}
		alts := []string{"?", "*", "[" + c + "]", "[!" + other + "]", "[^" + other + "]", `\` + c, `"` + c + `"`, "'" + c + "'",
			"$'" + c + "'", fmt.Sprintf(`$'\x%02x'`, c[0]), "[" + c + other + "]", "{" + c + "," + other + "}"}
		if c >= "a" && c <= "z" {
			alts = append(alts, "[[:alpha:]]", "[[:lower:]]", "[a-z]", "[!A-Z]", "[[:alnum:]_]", "[^[:upper:]]")
		}
		toks[i] = tok{g.pick(alts...), false}
	}
	var b strings.Builder
	b.WriteString(g.pick("", "", "", "./", "$PWD/", `"$PWD"/`, "${PWD}/", "~+/", "~/", "$HOME/", `"${HOME}"/`, "src/../",
		"./src/../", "link/../", ".//"))
	for _, t := range toks {
		b.WriteString(t.s)
	}
	return b.String()
}

// secretPath is one of the names of the secret file, spelled.
func (g *pathGen) secretPath() string {
	switch g.r.IntN(10) {
	case 0:
		return g.spell("hard.txt")
	case 1:
		return g.spell("link/token.txt")
	case 2:
		return g.pick("*/*", "*/t*", "s*/*", "*/*.txt", "{src,secret}/*.txt", "*t/t*")
	}
	return g.spell("secret/token.txt")
}

// tree is a directory holding the secret, spelled.
func (g *pathGen) tree() string {
	return g.pick(".", "./", "*", "s*", "secret", g.spell("secret"), "$PWD", "~", "~+", "link/", "link/.")
}

func (g *pathGen) readLine() string {
	p, t := g.secretPath(), g.tree()
	public := g.spell("src/a.txt")
	line := g.pick(
		"cat "+p, "cat < "+p, "cat 0<"+p, "head -n 5 "+p, "tail "+p, "tac "+p, "sort "+p, "cut -c1- "+p,
		"grep -h . "+p, "grep -r . "+t, "grep -R S3CR3T "+t, "grep -rh S3 "+t, "rg -uu S3 "+t, "tar -cf - "+t,
		"find "+t+" -type f -exec cat {} +", "find "+t+" -exec cat {} \\;", "cat -- "+p, "xargs cat < list.txt",
		"ls | xargs cat", "bash -c 'cat "+p+"'", "sh -c \"cat "+p+"\"", "eval cat "+p, "command cat "+p,
		"env cat "+p, "timeout 5 cat "+p, "nice cat "+p, "cat $(echo "+p+")", "cat `echo "+p+"`",
		"cd secret && cat token.txt", "cd "+g.spell("secret")+" && cat *", "cd src && cat ../"+p, "cp "+p+" x && cat x",
		"ln "+p+" y && cat y", "cat "+public, "head "+public, "grep -h . "+public, "cat "+public+" "+p, "tail -n+1 "+p,
		"grep -h --include=*.txt -r S3 "+t, "cat "+g.spell("src/a.txt")+"; cat "+p, "while read f; do cat \"$f\"; done < list.txt",
		"for f in "+p+"; do cat \"$f\"; done", "cat "+p+" | cat", "exec cat "+p)
	return line + g.pick("", "", " 2>&1", " | cat", "; true", " | head -c 300")
}

func (g *pathGen) editPath() string {
	switch g.r.IntN(8) {
	case 0:
		return g.spell("hard-keep.txt")
	case 1:
		return g.spell("plink/keep.txt")
	case 2:
		return g.pick("*/keep.txt", "p*/*", "{src,protected}/keep.txt", "pr*/k*")
	}
	return g.spell("protected/keep.txt")
}

func (g *pathGen) editLine() string {
	p := g.editPath()
	d := g.pick("protected", g.spell("protected"), "p*", "plink", "plink/", ".", "*")
	out := g.spell("out.txt")
	line := g.pick(
		"echo x > "+p, "echo x >> "+p, "printf x > "+p, "echo x >| "+p, "echo x | tee "+p, "tee -a "+p+" < src/a.txt",
		"cp src/a.txt "+p, "cp -f src/a.txt "+p, "cp -t "+d+" src/a.txt", "mv src/a.txt "+p, "install src/a.txt "+p,
		"ln -sf src/a.txt "+p, "truncate -s 0 "+p, "sed -i s/S/X/ "+p, "sed -n 'w "+p+"' src/a.txt", "sort -o "+p+" src/a.txt",
		"sort -o"+p+" src/a.txt", "sort --output="+p+" src/a.txt", "dd if=src/a.txt of="+p, "touch "+p, "rm -f "+p,
		"rm -rf "+d, "find "+d+" -delete", "find "+d+" -type f -exec rm {} +", "chmod 600 "+p, "tar -xf archive.tar",
		"cat src/a.txt > "+p, "bash -c 'echo x > "+p+"'", "eval 'echo x > "+p+"'", "cd protected && echo x > keep.txt",
		"cd src && echo x > ../"+p, "xargs rm < list.txt", "env cp src/a.txt "+p, "timeout 5 cp src/a.txt "+p,
		// Allowed controls: writes elsewhere.
		"echo x > "+out, "cp src/a.txt "+out, "sort -o "+out+" src/a.txt", "tee "+out+" < src/a.txt",
		"cat "+p+" > "+out, "dd if=src/a.txt of="+out)
	return line + g.pick("", "", " 2>&1", "; true")
}

// TestPathGenSpellsTheSamePath checks the generator itself: every spelling bash expands
// names the file (or a glob matching it).
func TestPathGenSpellsTheSamePath(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	dir := t.TempDir()
	f := newFileFuzz(t)
	if err := f.setup(dir); err != nil {
		t.Fatal(err)
	}
	g := &pathGen{r: rand.New(rand.NewPCG(9, 9))}
	var script bytes.Buffer
	var spells []string
	for range 200 {
		s := g.spell("secret/token.txt")
		spells = append(spells, s)
		fmt.Fprintf(&script, "printf '%%s\\n' %s | grep -c token.txt\n", s)
	}
	cmd := exec.Command("bash", "-c", script.String())
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "HOME="+dir)
	out, _ := cmd.Output()
	counts := strings.Fields(string(out))
	if len(counts) != len(spells) {
		t.Fatalf("bash gave %d results for %d spellings:\n%s", len(counts), len(spells), out)
	}
	for i, c := range counts {
		if c == "0" {
			t.Errorf("spelling %q does not name token.txt in bash", spells[i])
		}
	}
}

// FuzzFileRules is the native fuzz target for what a command does with files: reading any
// line with file rules in force never panics or hangs, and a line naming the secret plainly
// is never allowed.
func FuzzFileRules(f *testing.F) {
	g := &pathGen{r: rand.New(rand.NewPCG(5, 5))}
	for range 40 {
		f.Add(g.readLine())
		f.Add(g.editLine())
	}
	for _, s := range []string{"sed -n '1{/x/w out\n}' f", "tar -C d -xvzf a.tgz", "git -C x show HEAD:s", "find . -exec sh -c 'cat {}' \\;"} {
		f.Add(s)
	}
	dir := f.TempDir()
	ff := &fileFuzz{secret: "s", archive: nil}
	if err := ff.setup(dir); err != nil {
		f.Fatal(err)
	}
	var rules []Rule
	for _, text := range []string{"Read(./secret/**)", "Edit(./protected/**)"} {
		r, err := ParseRule(text, Deny, Source{Name: "project", Dir: dir})
		if err != nil {
			f.Fatal(err)
		}
		rules = append(rules, r)
	}
	c := New(Config{Policy: Policy{Mode: ModeBypassPermissions, Rules: rules, Dirs: []string{dir}}, Home: dir})
	f.Fuzz(func(t *testing.T, line string) {
		d := c.Evaluate(Request{Tool: "Bash", Command: line, Cwd: dir})
		if d.Behavior == Allow && (strings.Contains(line, "cat secret/token.txt") || strings.Contains(line, "> protected/keep.txt")) {
			t.Errorf("%q was allowed (%s)", line, d.Reason)
		}
		_, _ = parseSed(line)
	})
}
