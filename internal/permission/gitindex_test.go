package permission

import (
	"slices"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/gittest"
)

// TestTrackedPathsMatchGit reads indexes of versions 2, 3 (an intent-to-add entry has the
// extended flags) and 4 (prefix-compressed names) and compares with git ls-files.
func TestTrackedPathsMatchGit(t *testing.T) {
	repo := gittest.New(t)
	for _, f := range []string{"a/b/c.txt", "a/b/d.txt", "a/bb.txt", "z.txt", "sp ace/é.txt"} {
		repo.Write(f, "x\n")
	}
	repo.Commit("files")
	repo.Write("new.txt", "n\n")
	repo.Git("add", "-N", "new.txt")
	for _, version := range []string{"2", "3", "4"} {
		if version != "3" {
			repo.Git("update-index", "--index-version", version)
		}
		got, ok := trackedPaths(repo.Dir)
		if !ok {
			t.Fatalf("index version %s not read", version)
		}
		want := strings.Split(repo.Git("-c", "core.quotePath=false", "ls-files"), "\n")
		slices.Sort(got)
		slices.Sort(want)
		if !slices.Equal(got, want) {
			t.Errorf("index version %s: keel read %q; git lists %q", version, got, want)
		}
	}
	if _, ok := parseIndex([]byte("DIRC\x00\x00\x00\x02\x00\x00\x00\x05short")); ok {
		t.Error("a truncated index was read")
	}
}
