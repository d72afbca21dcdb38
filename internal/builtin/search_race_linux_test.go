package builtin

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/keel-dev/keel/internal/tool"
	"golang.org/x/sys/unix"
)

// raceSearches is how many Grep or Glob calls each case makes while the links are swapped.
const raceSearches = 150

// racePaths are the paths the searches take turns with: the workspace, and d, which the
// permission check sees resolved (the secret directory when the link was there).
var racePaths = []string{"", "d"}

// maxSwaps bounds the swapping loop should the searches it races never end.
const maxSwaps = 50_000_000

// swapTree is a workspace whose directories d and g and file f.txt a command in the
// background swaps for links (rename-exchange in a loop, adversary9 F5): d for a link to a
// directory a deny rule covers, g and f.txt for links to a directory and a file outside the
// workspace. Every file there holds KEY, the decoys in the workspace "decoy", the others
// SECRET or OUTSIDE; only-* files exist only behind the links.
type swapTree struct {
	ws, secret string
	pairs      [][2]string
}

func newSwapTree(t *testing.T) swapTree {
	t.Helper()
	base, err := filepath.EvalSymlinks(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ws, secret, outside := filepath.Join(base, "ws"), filepath.Join(base, "secret"), filepath.Join(base, "outside")
	writeFiles(t, base, map[string]string{
		"ws/d/k.txt":               "decoy KEY\n",
		"ws/g/k.txt":               "decoy KEY\n",
		"ws/f.txt":                 "decoy KEY\n",
		"secret/k.txt":             "SECRET KEY\n",
		"secret/only-secret.txt":   "SECRET KEY\n",
		"outside/k.txt":            "OUTSIDE KEY\n",
		"outside/only-outside.txt": "OUTSIDE KEY\n",
	})
	links := map[string]string{"dl": secret, "gl": outside, "fl": filepath.Join(outside, "k.txt")}
	for name, target := range links {
		if err := os.Symlink(target, filepath.Join(ws, name)); err != nil {
			t.Fatal(err)
		}
	}
	st := swapTree{ws: ws, secret: secret}
	for _, p := range [][2]string{{"d", "dl"}, {"g", "gl"}, {"f.txt", "fl"}} {
		st.pairs = append(st.pairs, [2]string{filepath.Join(ws, p[0]), filepath.Join(ws, p[1])})
	}
	if err := unix.Renameat2(unix.AT_FDCWD, st.pairs[0][0], unix.AT_FDCWD, st.pairs[0][1], unix.RENAME_EXCHANGE); err != nil {
		t.Skipf("no rename-exchange here: %v", err)
	}
	return st
}

// env is a session's tool environment in the workspace, with a deny rule on the secret
// directory.
func (st swapTree) env(t *testing.T) *tool.Env {
	env := newEnv(t, st.ws)
	env.Hidden = func(p string) bool { return strings.HasPrefix(p, st.secret+string(filepath.Separator)) }
	return env
}

// race runs search raceSearches times while a goroutine swaps every pair in a tight loop, and
// fails the test for any answer with a file or a name from behind a link.
func (st swapTree) race(t *testing.T, search func(i int) string) {
	t.Helper()
	var stop atomic.Bool
	var swaps atomic.Int64
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < maxSwaps && !stop.Load(); i++ {
			p := st.pairs[i%len(st.pairs)]
			if err := unix.Renameat2(unix.AT_FDCWD, p[0], unix.AT_FDCWD, p[1], unix.RENAME_EXCHANGE); err != nil && !errors.Is(err, unix.ENOENT) {
				t.Errorf("swap %s: %v", p[0], err)
				return
			}
			swaps.Add(1)
		}
	})
	leaks := 0
	for i := range raceSearches {
		out := search(i)
		for _, bad := range []string{"SECRET", "OUTSIDE", "only-"} {
			if strings.Contains(out, bad) {
				leaks++
				if leaks <= 3 {
					t.Errorf("search %d returned %s from behind a swapped link:\n%s", i, bad, out)
				}
				break
			}
		}
	}
	stop.Store(true)
	wg.Wait()
	if leaks > 0 {
		t.Errorf("%d of %d searches reached behind a link (%d swaps)", leaks, raceSearches, swaps.Load())
	}
	t.Logf("%d swaps during %d searches", swaps.Load(), raceSearches)
}

// TestSearchFollowsNoSwappedLink: Grep (both engines, every output mode) and Glob over a
// workspace whose directories and files a command in the background swaps for links never
// show a line, a count or a name of a file behind a link — a deny-rule file, or one outside
// the directory the permission check approved — whether they search the workspace or the
// swapped directory itself (resolved, then swapped).
func TestSearchFollowsNoSwappedLink(t *testing.T) {
	engines := []struct {
		name string
		e    GrepEngine
	}{{"builtin", GrepBuiltin}}
	if _, err := exec.LookPath("rg"); err == nil {
		engines = append(engines, struct {
			name string
			e    GrepEngine
		}{"ripgrep", GrepRipgrep})
	}
	modes := []string{"content", "files_with_matches", "count"}
	for _, engine := range engines {
		t.Run("Grep/"+engine.name, func(t *testing.T) {
			st := newSwapTree(t)
			env, tl := st.env(t), Grep(engine.e, "")
			st.race(t, func(i int) string {
				return call(t, tl, env, grepInput{Pattern: "KEY", OutputMode: modes[i%len(modes)], Path: racePaths[i%len(racePaths)]}).ResultText()
			})
		})
	}
	t.Run("Glob", func(t *testing.T) {
		st := newSwapTree(t)
		env := st.env(t)
		st.race(t, func(i int) string {
			return call(t, Glob(), env, globInput{Pattern: "**/*.txt", Path: racePaths[i%len(racePaths)]}).ResultText()
		})
	})
}
