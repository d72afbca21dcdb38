package sandbox_test

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gitexec"
	"github.com/keel-dev/keel/internal/gittest"
	"github.com/keel-dev/keel/internal/sandbox"
)

// TestMadeRepositoriesDisarmed: as a command is released, a repository it made keeps only
// the git settings that start nothing, the file as written moved beside it, and its planted
// hooks are moved aside — a bare repository too; a repository cloned or initialised as git
// does it is left alone and not reported; the next command cannot write the new repositories'
// configuration; and a repository the user had before, reached through a .git file the
// command made, keeps its settings.
func TestMadeRepositoriesDisarmed(t *testing.T) { forEachLauncher(t, testMadeRepositoriesDisarmed) }

func testMadeRepositoriesDisarmed(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	run := func(script string) (string, string) {
		t.Helper()
		return w.say(t, gitPrelude+script, "MARK="+filepath.Join(base, "PWNED"))
	}
	config := func(dir, key string) string {
		t.Helper()
		out, _ := gitexec.Runner{}.Output(t.Context(), dir, "config", "--file", filepath.Join(dir, "config"), "--get", key)
		return strings.TrimSpace(string(out))
	}

	out, said := run(`git init -q made && git -C made config user.name x && git -C made remote add origin https://example.invalid/x.git &&
		evilcfg >> made/.git/config && printf '#!/bin/sh\ntouch "$MARK"\n' > made/.git/hooks/pre-commit && chmod +x made/.git/hooks/pre-commit &&
		mkgitdir bare && git clone -q ../subsrc cloned && git init -q fresh && echo DONE`)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	made := filepath.Join(ws, "made", ".git")
	if got := config(made, "core.fsmonitor"); got != "" {
		t.Errorf("made's core.fsmonitor = %q after the release, want it gone", got)
	}
	if config(made, "user.name") != "x" || config(made, "remote.origin.url") != "https://example.invalid/x.git" || config(made, "core.bare") != "false" {
		t.Errorf("made's safe settings were not kept:\n%s", readFile(t, filepath.Join(made, "config")))
	}
	if got := readFile(t, filepath.Join(made, "config.keel-refused")); !strings.Contains(got, "fsmonitor = touch") {
		t.Errorf("made's configuration as written is not kept aside: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(made, "hooks", "pre-commit")); err == nil {
		t.Error("made's planted hook is still in hooks/")
	}
	if got := readFile(t, filepath.Join(made, "hooks.keel-refused", "pre-commit")); !strings.Contains(got, "touch") {
		t.Errorf("made's planted hook is not kept aside: %q", got)
	}
	if _, err := os.Lstat(filepath.Join(made, "hooks", "pre-commit.sample")); err == nil != hasSampleHooks(t) {
		t.Error("git's sample hooks in made were moved")
	}
	if got := config(filepath.Join(ws, "bare"), "core.fsmonitor"); got != "" {
		t.Errorf("bare's core.fsmonitor = %q after the release, want it gone", got)
	}
	joined := said
	for _, want := range []string{filepath.Join(made, "config") + ", a git configuration that sets core.fsmonitor", "the hooks pre-commit in " + filepath.Join(made, "hooks"), filepath.Join(ws, "bare", "config")} {
		if !strings.Contains(joined, want) {
			t.Errorf("Planted() does not say %q:\n%s", want, joined)
		}
	}
	for _, clean := range []string{"cloned", "fresh"} {
		if strings.Contains(joined, filepath.Join(ws, clean)) {
			t.Errorf("%s, made as git makes it, was reported:\n%s", clean, joined)
		}
		if _, err := os.Lstat(filepath.Join(ws, clean, ".git", "config.keel-refused")); err == nil {
			t.Errorf("%s's configuration was moved aside", clean)
		}
	}

	out, said = run(`for r in made/.git cloned/.git fresh/.git bare; do evilcfg >> $r/config && echo "WROTE $r"; done; echo DONE`)
	if strings.Contains(out, "WROTE") || !strings.Contains(out, "DONE") {
		t.Errorf("the next command wrote the configuration of a repository the last one made:\n%s", out)
	}
	if said != "" {
		t.Errorf("the next command reported: %q", said)
	}

	// A repository outside the writable roots no command wrote: reached through a new .git
	// file, it keeps its settings. One inside them, written before (by an earlier command, or
	// the project's own files) and reached now, is disarmed like a new one.
	outside := filepath.Join(base, "outside-old")
	inside := filepath.Join(ws, "node_modules", "old")
	for _, r := range []string{outside, inside} {
		git(t, ws, "init", "-q", "--bare", r)
		git(t, r, "config", "core.pager", "cat")
		write(t, filepath.Join(r, "hooks", "post-checkout"), "#!/bin/sh\n")
	}
	out, said = run(`mkdir via1 via2 && echo "gitdir: ` + outside + `" > via1/.git && echo "gitdir: ` + inside + `" > via2/.git && echo DONE`)
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	if config(outside, "core.pager") != "cat" {
		t.Error("a repository outside the writable roots, reached through a new .git file, lost its settings")
	}
	if _, err := os.Lstat(filepath.Join(outside, "hooks", "post-checkout")); err != nil {
		t.Errorf("a repository outside the writable roots had its hook moved: %v", err)
	}
	if config(inside, "core.pager") != "" || !strings.Contains(said, filepath.Join(inside, "hooks")) {
		t.Errorf("a repository inside the writable roots, reached through a new .git file, was not disarmed: %q", said)
	}
	if strings.Contains(said, outside) {
		t.Errorf("the repository outside the writable roots was reported: %q", said)
	}
}

// hasSampleHooks reports whether git init writes sample hooks here (the system's templates).
func hasSampleHooks(t *testing.T) bool {
	dir := filepath.Join(t.TempDir(), "r")
	git(t, t.TempDir(), "init", "-q", dir)
	entries, _ := os.ReadDir(filepath.Join(dir, ".git", "hooks"))
	return len(entries) > 0
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, _ := os.ReadFile(path)
	return string(b)
}

// TestDeletedRepositoryStaysDeleted: a protected repository deleted outside between commands
// is not made again by the next command's placeholders; a repository a command then plants in
// its place is disarmed like any other it makes.
func TestDeletedRepositoryStaysDeleted(t *testing.T) {
	forEachLauncher(t, testDeletedRepositoryStaysDeleted)
}

func testDeletedRepositoryStaysDeleted(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	w.run(t, "true")
	if err := os.RemoveAll(filepath.Join(ws, "nested")); err != nil {
		t.Fatal(err)
	}
	if out := w.run(t, "ls nested 2>&1; echo DONE"); !strings.Contains(out, "No such file") {
		t.Errorf("the deleted repository's directory is there again inside:\n%s", out)
	}
	if _, err := os.Lstat(filepath.Join(ws, "nested")); err == nil {
		t.Error("the deleted repository's directory is there again after the command")
	}
	out, said := w.say(t, gitPrelude+"mkgitdir nested/.git && echo DONE", "MARK="+filepath.Join(base, "PWNED"))
	if want := filepath.Join(ws, "nested", ".git", "config") + ", a git configuration that sets core.fsmonitor"; !strings.Contains(said, want) {
		t.Errorf("a repository planted where a deleted one stood was not disarmed: %q\n%s", said, out)
	}
}

// TestRepositoryMadeInTheBackgroundDisarmed: a repository made by a command that is still
// running (in the background) is disarmed as the next command ends, not only when it does.
func TestRepositoryMadeInTheBackgroundDisarmed(t *testing.T) {
	forEachLauncher(t, testRepositoryMadeInTheBackgroundDisarmed)
}

func testRepositoryMadeInTheBackgroundDisarmed(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	// The background command makes a repository; a command run meanwhile disarms it (there is
	// nothing to disarm yet) and protects it from then on — from the commands started after
	// it, not the background one, which then writes the configuration.
	bg := exec.Command("bash", "-c", gitPrelude+"git init -q bgmade && echo READY && read a && evilcfg >> bgmade/.git/config && echo READY && read b")
	bg.Dir, bg.Env = ws, append(os.Environ(), "MARK="+filepath.Join(base, "PWNED"))
	stdin, err := bg.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := bg.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	bgRun, err := w.s.Confine(bg)
	if err != nil {
		t.Fatal(err)
	}
	if err := bg.Start(); err != nil {
		t.Fatal(err)
	}
	bgOut := bufio.NewReader(stdout)
	ready := func() {
		t.Helper()
		if line, err := bgOut.ReadString('\n'); line != "READY\n" {
			t.Fatalf("the background command said %q (%v)", line, err)
		}
	}
	ready()
	runTrue := func() *sandbox.Run {
		t.Helper()
		c := exec.Command("true")
		c.Dir = ws
		r, err := w.s.Confine(c)
		if err != nil {
			t.Fatal(err)
		}
		c.Run()
		r.Release()
		return r
	}
	if said := runTrue().Planted(); len(said) > 0 {
		t.Errorf("a repository as git init makes it was reported: %q", said)
	}
	stdin.Write([]byte("go\n"))
	ready()
	want := filepath.Join(ws, "bgmade", ".git", "config") + ", a git configuration that sets core.fsmonitor"
	if said := runTrue().Planted(); !strings.Contains(strings.Join(said, "\n"), want) {
		t.Errorf("the next command's release did not disarm what the running one wrote: %q", said)
	}
	stdin.Close()
	bg.Wait()
	bgRun.Release()
	if said := bgRun.Planted(); len(said) > 0 {
		t.Errorf("disarmed twice: %q", said)
	}
}

// TestDisarmFollowsNoLinkOfTheCommand: keel moves planted hooks aside, outside the sandbox,
// into a directory of its own making — never through a link the command left where that
// directory would go, which would put the command's program anywhere (a directory on PATH).
func TestDisarmFollowsNoLinkOfTheCommand(t *testing.T) {
	forEachLauncher(t, testDisarmFollowsNoLinkOfTheCommand)
}

func testDisarmFollowsNoLinkOfTheCommand(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	bin := filepath.Join(base, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	w := gitWorld(t, ws, false)
	out := w.run(t, "git init -q sub && printf '#!/bin/sh\\necho planted\\n' > sub/.git/hooks/git && chmod +x sub/.git/hooks/git && ln -s "+bin+" sub/.git/hooks.keel-refused && echo DONE")
	if !strings.Contains(out, "DONE") {
		t.Fatalf("the script failed inside:\n%s", out)
	}
	if entries, _ := os.ReadDir(bin); len(entries) > 0 {
		t.Errorf("keel's release put %s into a directory the sandbox keeps read-only", entries[0].Name())
	}
	if _, err := os.Lstat(filepath.Join(ws, "sub", ".git", "hooks", "git")); err == nil {
		t.Error("the planted hook is still in hooks/")
	}
}

// TestUsersRepositoryNotDisarmed: a linked worktree added inside (git worktree add) is a new
// gitdir whose configuration is the user's repository's, protected throughout: that
// configuration keeps what the user set, even settings a made repository may not keep, and
// nothing is reported. Nor is a clone with its submodules, whose core.worktree names the
// submodule's own working tree, or an admin directory whose commondir names the user's.
func TestUsersRepositoryNotDisarmed(t *testing.T) { forEachLauncher(t, testUsersRepositoryNotDisarmed) }

func testUsersRepositoryNotDisarmed(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	git(t, ws, "config", "core.pager", "cat")
	w := gitWorld(t, ws, false)
	out, said := w.say(t, "git worktree add -q wt2 -b b2 && git -c protocol.file.allow=always clone -q --recurse-submodules \"$PWD\" cloned && mkdir -p .git/worktrees/x && echo ../.. > .git/worktrees/x/commondir && echo DONE")
	if !strings.Contains(out, "DONE") {
		t.Fatalf("git worktree add failed inside:\n%s", out)
	}
	if said != "" {
		t.Errorf("adding a worktree was reported: %q", said)
	}
	if got := gittest.Run(t, ws, "config", "--get", "core.pager"); got != "cat" {
		t.Errorf("the user's core.pager is %q after a worktree was added inside", got)
	}
}

// TestUsersRepositoriesPastTheSearch: a repository of the user's past the ones the search
// protects keeps what the user set while commands leave it alone, and is disarmed once one
// changes it.
func TestUsersRepositoriesPastTheSearch(t *testing.T) {
	forEachLauncher(t, testUsersRepositoriesPastTheSearch)
}

func testUsersRepositoriesPastTheSearch(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	for i := range 260 {
		if err := os.MkdirAll(filepath.Join(ws, fmt.Sprintf("r%03d", i), ".git"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	zzz := filepath.Join(ws, "zzz")
	newRepo(t, zzz)
	git(t, zzz, "config", "core.pager", "cat")
	w := gitWorld(t, ws, false)
	if out := w.run(t, "git -C zzz status --short && echo DONE"); !strings.Contains(out, "DONE") {
		t.Fatalf("git status inside failed:\n%s", out)
	}
	if got := gittest.Run(t, zzz, "config", "--get", "core.pager"); got != "cat" {
		t.Errorf("the user's repository past the search lost its core.pager (%q) to a command that left it alone", got)
	}
	w.run(t, "git -C zzz config core.fsmonitor 'touch pwned'")
	got, _ := gitexec.Runner{}.Output(t.Context(), zzz, "config", "--file", filepath.Join(zzz, ".git", "config"), "--get", "core.fsmonitor")
	if len(got) > 0 {
		t.Errorf("a command's core.fsmonitor in a repository past the search was kept: %q", got)
	}
}

// TestSearchBoundsAreSaid: a command that takes its repository past where the search goes
// (deeper than it looks) is told so in its result, once, since no mount protects it there and
// no disarm reaches it.
func TestSearchBoundsAreSaid(t *testing.T) { forEachLauncher(t, testSearchBoundsAreSaid) }

func testSearchBoundsAreSaid(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	deep := "d/d/d/d/d/d/d/d/d/d/d/d/d/d"
	if _, got := w.say(t, "mkdir -p "+deep+" && git init -q "+deep+"/r"); !strings.Contains(got, "stops 12 directories deep") {
		t.Errorf("the result does not say the search stopped: %q", got)
	}
	if _, got := w.say(t, "true"); got != "" {
		t.Errorf("the next command's result says it again: %q", got)
	}
}

// TestManyGitDirsStillRun: a command that makes hundreds of gitdirs keel would protect (in
// .git/modules, which is writable) does not stop the commands after it: the plan that
// protects them no longer fits one argument, and travels in several.
func TestManyGitDirsStillRun(t *testing.T) { forEachLauncher(t, testManyGitDirsStillRun) }

func testManyGitDirsStillRun(t *testing.T) {
	base := sandbox.VisibleDir(t)
	ws := repoLayout(t, base)
	w := gitWorld(t, ws, false)
	out := w.run(t, "for i in $(seq 600); do d=.git/modules/m$i; mkdir -p $d/objects $d/refs && echo 'ref: refs/heads/main' > $d/HEAD; done && echo MADE")
	if !strings.Contains(out, "MADE") {
		t.Fatalf("the gitdirs were not made:\n%s", out)
	}
	if out := w.run(t, "echo RAN"); !strings.Contains(out, "RAN") {
		t.Errorf("the next command did not run:\n%s", out)
	}
}
