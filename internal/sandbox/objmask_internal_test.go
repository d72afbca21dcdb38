package sandbox

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"testing"
)

// TestCoverLoose: up to maxHiddenLoose loose objects of hidden blobs are covered one by one;
// past it — a count a command passes by committing junk at a masked path — their fan-out
// directories are masked instead, so that the mounts stay bounded and every one is covered.
func TestCoverLoose(t *testing.T) {
	for _, n := range []int{3, maxHiddenLoose, maxHiddenLoose + 44} {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			objects := t.TempDir()
			var ids []string
			for i := range n {
				sum := sha1.Sum(fmt.Append(nil, i))
				id := hex.EncodeToString(sum[:])
				ids = append(ids, id)
				if err := os.MkdirAll(filepath.Join(objects, id[:2]), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(objects, id[:2], id[2:]), nil, 0o444); err != nil {
					t.Fatal(err)
				}
			}
			ids = append(ids, "ffffffffffffffffffffffffffffffffffffffff") // packed, not loose
			files, dirs := coverLoose(objects, ids, nil)
			if len(files)+len(dirs) > maxHiddenLoose {
				t.Errorf("%d files and %d directories to cover: past the bound %d", len(files), len(dirs), maxHiddenLoose)
			}
			covered := map[string]bool{}
			for _, f := range files {
				covered[f] = true
			}
			for _, d := range dirs {
				covered[d] = true
			}
			for _, id := range ids[:n] {
				if !covered[filepath.Join(objects, id[:2], id[2:])] && !covered[filepath.Join(objects, id[:2])] {
					t.Errorf("%s is not covered", id)
				}
			}
		})
	}
}
