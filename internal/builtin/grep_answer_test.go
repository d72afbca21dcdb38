package builtin

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestGrepAnswerKeepsWhatCanBeShown: blocks arriving in any order give the answer they give
// in path order, and the answer never holds much more than it can show.
func TestGrepAnswerKeepsWhatCanBeShown(t *testing.T) {
	for _, mode := range []string{"files_with_matches", "count", "content"} {
		t.Run(mode, func(t *testing.T) {
			var blocks []grepBlock
			for i := range 3000 {
				path := fmt.Sprintf("/src/pkg%04d/file.go", i)
				b := summaryBlock(mode, path, 1+i%3)
				if mode == "content" {
					q := grepQuery{mode: mode, after: 1}
					bb := newBlockBuilder(path, q, true, newGrepAnswer(q, 0, nil))
					for n := range 1 + i%5 {
						bb.add(10*n+1, []byte("some matching text"), 18, true)
						bb.add(10*n+2, []byte("after it"), 8, false)
					}
					b = bb.block
					b.matches = 1 + i%5
				}
				blocks = append(blocks, b)
			}
			q := grepQuery{mode: mode}
			if mode == "content" {
				q.after = 1
			}
			sorted := newGrepAnswer(q, 0, nil)
			for _, b := range blocks {
				sorted.add(b)
			}
			shuffled := newGrepAnswer(q, 0, nil)
			maxKept := 0
			for _, i := range rand.Perm(len(blocks)) {
				shuffled.add(blocks[i])
				maxKept = max(maxKept, shuffled.keptChars)
			}
			if diff := cmp.Diff(sorted.String(), shuffled.String()); diff != "" {
				t.Errorf("the order of arrival changed the answer (-in order +shuffled):\n%s", diff)
			}
			biggest := slices.MaxFunc(blocks, func(a, b grepBlock) int { return a.chars - b.chars }).chars
			if maxKept > maxGrepOutput+2*biggest {
				t.Errorf("the answer held %d chars of blocks; it shows at most %d", maxKept, maxGrepOutput)
			}
		})
	}
}
