package sandbox

import (
	"bytes"
	"compress/zlib"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
)

// writeLoose writes a loose blob of content into the object store dir, under its own name,
// or under name when it is not empty, and returns the name.
func writeLoose(t *testing.T, dir, content, name string) string {
	t.Helper()
	obj := fmt.Sprintf("blob %d\x00%s", len(content), content)
	if name == "" {
		sum := sha1.Sum([]byte(obj))
		name = hex.EncodeToString(sum[:])
	}
	var b bytes.Buffer
	z := zlib.NewWriter(&b)
	z.Write([]byte(obj))
	z.Close()
	path := filepath.Join(dir, name[:2], name[2:])
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o444); err != nil {
		t.Fatal(err)
	}
	return name
}

// TestVerifyObjects: an object store as it was says nothing; a loose object past
// maxObjectFiles makes every release say that the store was not checked whole; a new loose
// object whose content is not its name goes aside, a good one stays.
func TestVerifyObjects(t *testing.T) {
	dir := t.TempDir()
	good := writeLoose(t, dir, "good\n", "")
	before := scanObjects(dir, objStore{}, true)
	if next, said, _ := verifyObjects(dir, before); len(said) > 0 || len(next.loose) != 1 {
		t.Fatalf("an unchanged store: %v, %d loose", said, len(next.loose))
	}
	fresh := writeLoose(t, dir, "fresh\n", "")
	forged := writeLoose(t, dir, "evil\n", strings.Repeat("ab", 20))
	next, said, whole := verifyObjects(dir, before)
	if len(said) != 1 || !strings.Contains(said[0], forged[2:]) || next.over || !whole {
		t.Errorf("a forged new loose object: %v", said)
	}
	for _, name := range []string{good, fresh} {
		if _, ok := next.loose[name[:2]+"/"+name[2:]]; !ok {
			t.Errorf("%s is not kept", name)
		}
	}
	// Names alone: what the store held as a command started is not read.
	for i := range maxObjectFiles {
		sum := sha1.Sum([]byte(fmt.Sprint(i)))
		name := hex.EncodeToString(sum[:])
		os.Mkdir(filepath.Join(dir, name[:2]), 0o755)
		if err := os.WriteFile(filepath.Join(dir, name[:2], name[2:]), nil, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	before = scanObjects(dir, objStore{}, true)
	s := &Sandbox{objSeen: map[string]objStore{}}
	for range 2 {
		var said []string
		before, said, _ = verifyObjects(dir, before)
		if !before.over || len(said) != 0 {
			t.Fatalf("past the bound: over %v, %v", before.over, said)
		}
		s.objSeen[dir] = before
		w := &plantWatch{objects: map[string]string{dir: ""}}
		if said := w.checkObjects(s); len(said) != 1 || !strings.Contains(said[0], fmt.Sprintf("more than %d loose objects", maxObjectFiles)) {
			t.Errorf("a store past the bound is not said: %v", said)
		}
	}
}

// TestForgedBlobs: git is asked for the object each read-only file's content names; one it
// reads with other content — here a loose object rewritten in place — is named, whatever the
// store's files looked like.
func TestForgedBlobs(t *testing.T) {
	r := gittest.New(t)
	r.Write(".claude/settings.json", "{}\n")
	r.Write(".mcp.json", "{}\n")
	r.Commit("settings")
	gitDir := filepath.Join(r.Dir, ".git")
	paths := []string{".claude", ".mcp.json", "absent"}
	if got := forgedBlobs(gitDir, r.Dir, paths); len(got) != 0 {
		t.Fatalf("genuine objects are named: %v", got)
	}
	blob := r.Git("rev-parse", "HEAD:.claude/settings.json")
	path := filepath.Join(gitDir, "objects", blob[:2], blob[2:])
	os.Chmod(path, 0o644)
	writeLoose(t, filepath.Join(gitDir, "objects"), "{\"hooks\":{}}\n", blob)
	if got := forgedBlobs(gitDir, r.Dir, paths); !slices.Equal(got, []string{".claude/settings.json", ".mcp.json"}) {
		t.Errorf("the forged object (shared by both files) is not named for both: %v", got)
	}
}

// TestObjectsNotCheckedWhole: where the store could not be checked whole (here: past
// maxObjectFiles loose objects, the forged one among those keel knew as they were), the
// release asks git for the read-only files' objects and names the one it reads forged.
func TestObjectsNotCheckedWhole(t *testing.T) {
	r := gittest.New(t)
	r.Write(".claude/settings.json", "{}\n")
	r.Commit("settings")
	gitDir := filepath.Join(r.Dir, ".git")
	objects := filepath.Join(gitDir, "objects")
	blob := r.Git("rev-parse", "HEAD:.claude/settings.json")
	os.Chmod(filepath.Join(objects, blob[:2], blob[2:]), 0o644)
	writeLoose(t, objects, "{\"hooks\":{}}\n", blob)
	for i := range maxObjectFiles {
		sum := sha1.Sum([]byte(fmt.Sprint(i)))
		name := hex.EncodeToString(sum[:])
		os.Mkdir(filepath.Join(objects, name[:2]), 0o755)
		if err := os.WriteFile(filepath.Join(objects, name[:2], name[2:]), nil, 0o444); err != nil {
			t.Fatal(err)
		}
	}
	s := &Sandbox{objSeen: map[string]objStore{objects: scanObjects(objects, objStore{}, true)}}
	w := &plantWatch{objects: map[string]string{objects: gitDir}, trees: map[string]string{gitDir: r.Dir}, guarded: map[string][]string{gitDir: {".claude"}}}
	said := strings.Join(w.checkObjects(s), "\n")
	if !strings.Contains(said, "more than") || !strings.Contains(said, "In "+r.Dir+" git reads the object of .claude/settings.json") {
		t.Errorf("the forged object past the bound is not named:\n%s", said)
	}
}
