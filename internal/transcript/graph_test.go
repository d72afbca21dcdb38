package transcript

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// craft is a transcript written by hand, line by line, for files keel itself would not write.
type craft struct{ lines []string }

func (c *craft) meta() *craft {
	c.lines = append(c.lines, `{"type":"meta","uuid":"","parentUuid":null,"sessionId":"s","schemaVersion":1}`)
	return c
}

// msg appends a message entry; the type alternates with the role given.
func (c *craft) msg(typ, id, parent, text string) *craft {
	p := "null"
	if parent != "" {
		p = strconv.Quote(parent)
	}
	role := "user"
	if typ == "assistant" {
		role = "assistant"
	}
	c.lines = append(c.lines, `{"type":"`+typ+`","uuid":"`+id+`","parentUuid":`+p+
		`,"sessionId":"s","timestamp":"2025-01-02T03:04:05Z","message":{"role":"`+role+`","content":[{"type":"text","text":`+strconv.Quote(text)+`}]}}`)
	return c
}

// conversation appends n messages m1…mn, each the child of the one before, after parent.
func (c *craft) conversation(prefix string, n int, parent string) *craft {
	for i := 1; i <= n; i++ {
		typ := "user"
		if i%2 == 0 {
			typ = "assistant"
		}
		id := prefix + strconv.Itoa(i)
		c.msg(typ, id, parent, id)
		parent = id
	}
	return c
}

func (c *craft) raw(line string) *craft { c.lines = append(c.lines, line); return c }

func (c *craft) write(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "s.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(c.lines, "\n")+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestReplayRepairs reads crafted files with duplicated ids, cycles, orphans and forks: the
// conversation resumed follows the rule in SCHEMA.md, and what it leaves aside is counted.
func TestReplayRepairs(t *testing.T) {
	base := func() *craft { return new(craft).meta().conversation("m", 7, "") }
	tests := []struct {
		name    string
		file    *craft
		want    []string
		repairs Repairs
	}{
		{"sound", base(), []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7"}, Repairs{}},
		{"the first entry appended again", func() *craft {
			c := base()
			return c.raw(c.lines[1])
		}(), []string{"m1", "m2", "m3", "m4", "m5", "m6", "m7"}, Repairs{Duplicates: 1}},
		{"an entry appended again with other content", base().msg("assistant", "m4", "m3", "m4 again"),
			[]string{"m1", "m2", "m3", "m4 again", "m5", "m6", "m7"}, Repairs{Duplicates: 1}},
		{"an id reused for a new message", base().msg("user", "m2", "m7", "new"),
			// m3 links to the m2 before it, the new m2 continues from m7.
			[]string{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "new"}, Repairs{SharedIDs: 1}},
		{"a cycle", new(craft).meta().conversation("m", 2, "").msg("user", "c1", "c2", "c1").
			msg("assistant", "c2", "c1", "c2").msg("user", "c3", "c2", "c3"),
			[]string{"c1", "c2", "c3"}, Repairs{Cycles: 1, Branches: []Branch{{Leaf: "m2", Entries: 2, Messages: 2}}}},
		{"an orphan", new(craft).meta().msg("user", "x1", "gone", "x1").msg("assistant", "x2", "x1", "x2"),
			[]string{"x1", "x2"}, Repairs{Orphan: "x1"}},
		{"a fork", base().msg("user", "b8", "m7", "b8").msg("user", "c8", "m7", "c8").msg("assistant", "b9", "b8", "b9"),
			[]string{"m1", "m2", "m3", "m4", "m5", "m6", "m7", "b8", "b9"},
			Repairs{Branches: []Branch{{Leaf: "c8", Entries: 1, Messages: 1}}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st := mustLoad(t, tt.file.write(t))
			if diff := cmp.Diff(tt.want, texts(st)); diff != "" {
				t.Errorf("messages mismatch (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tt.repairs, st.Repairs); diff != "" {
				t.Errorf("repairs mismatch (-want +got):\n%s", diff)
			}
			if tt.repairs.Any() != (st.Repairs.String() != "") {
				t.Errorf("notice %q for repairs %+v", st.Repairs.String(), st.Repairs)
			}
		})
	}
}

// TestResumeAtBranch: a branch the default replay leaves aside is resumed by naming its leaf,
// and the conversation continues from there.
func TestResumeAtBranch(t *testing.T) {
	path := new(craft).meta().conversation("m", 3, "").msg("assistant", "f4", "m3", "f4").
		msg("assistant", "m4", "m3", "m4").write(t)
	st := mustLoad(t, path)
	if diff := cmp.Diff([]Branch{{Leaf: "f4", Entries: 1, Messages: 1}}, st.Repairs.Branches); diff != "" {
		t.Fatalf("branches mismatch (-want +got):\n%s", diff)
	}
	if !strings.Contains(st.Repairs.String(), "--resume-session-at f4") {
		t.Errorf("the notice does not say how to reach the branch: %q", st.Repairs.String())
	}
	opts := testOpts("s")
	opts.Leaf = "f4"
	w, st, err := Resume(t.Context(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"m1", "m2", "m3", "f4"}, texts(st)); diff != "" {
		t.Errorf("resumed at f4: messages mismatch (-want +got):\n%s", diff)
	}
	mustAppend(t, w, userText("after f4"))
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"m1", "m2", "m3", "f4", "after f4"}, texts(mustLoad(t, path))); diff != "" {
		t.Errorf("after appending: messages mismatch (-want +got):\n%s", diff)
	}
}

// TestRepairsAfterBoundary: entries before a compaction boundary are summarised by it, so a
// branch that ended there is not counted; a duplicate after it is.
func TestRepairsAfterBoundary(t *testing.T) {
	c := new(craft).meta().conversation("old", 4, "").msg("user", "x", "old2", "abandoned before the boundary")
	c.raw(`{"type":"summary","uuid":"sum","parentUuid":"old4","sessionId":"s","summary":"earlier work"}`)
	c.conversation("n", 3, "sum")
	c.raw(c.lines[len(c.lines)-2]) // n2 again
	st := mustLoad(t, c.write(t))
	if diff := cmp.Diff([]string{"n1", "n2", "n3"}, texts(st)); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
	if b, ok := st.Boundary(); !ok || b.Summary != "earlier work" {
		t.Errorf("boundary = %+v, %v", b, ok)
	}
	if diff := cmp.Diff(Repairs{Duplicates: 1}, st.Repairs); diff != "" {
		t.Errorf("repairs mismatch (-want +got):\n%s", diff)
	}
}

func TestRepairsString(t *testing.T) {
	r := Repairs{Duplicates: 2, Cycles: 1, Orphan: "x1", Unreachable: 3,
		Branches: []Branch{{Leaf: "b", Entries: 3, Messages: 2}, {Leaf: "c", Entries: 1, Messages: 1}}}
	want := "the transcript's links needed repair: 2 lines repeated an earlier entry (read as one entry, with the newest line's content); " +
		"1 chain of parent links looped back (cut where the loop closed); entry x1 names a parent the file does not have (the conversation starts there); " +
		"2 other branches with 3 messages (4 entries) not on the resumed conversation: resume one with --resume-session-at b or c; " +
		"3 entries on no branch (a loop of parent links)"
	if diff := cmp.Diff(want, r.String()); diff != "" {
		t.Errorf("mismatch (-want +got):\n%s", diff)
	}
	_ = fmt.Sprint()
}

// TestResumeHugeLine: a line of 32 MiB resumes in memory linear in it — the line read once,
// its text decoded once — where crossing 128 chunk edges once copied it at every edge.
func TestResumeHugeLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "huge.jsonl")
	const size = 32 << 20
	writeHugeLine(t, path, size)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	w, st, err := Resume(t.Context(), path, Options{})
	runtime.ReadMemStats(&after)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 4*size {
		t.Errorf("allocated %d MiB resuming a %d MiB line", alloc>>20, size>>20)
	}
	msgs, _ := st.Messages()
	// Each 64 KiB of the literal holds a two-byte escape.
	if len(msgs) != 2 || len(msgs[0].TextOf()) != size/(64<<10)*(64<<10-1) || msgs[1].TextOf() != "done" {
		t.Fatalf("resumed %d messages", len(msgs))
	}
	list, err := List(filepath.Dir(path))
	if err != nil || len(list) != 1 || !strings.HasPrefix(list[0].FirstPrompt, "xxxx") {
		t.Errorf("listing %+v, %v", list, err)
	}
}
