package transcript

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"syscall"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestRoundTripHeaderFirst(t *testing.T) {
	w, path := newSession(t, "s1")
	u := mustAppend(t, w, userText("hello"))
	a := mustAppend(t, w, assistantText("hi"))
	mustAppend(t, w, Entry{Type: TypeCustomTitle, Value: json.RawMessage(`"greeting"`)})
	mustAppend(t, w, Entry{Type: TypeMode, Value: json.RawMessage(`"plan"`)})
	mustAppend(t, w, Entry{Type: TypeTodos, Value: json.RawMessage(`[{"content":"x","status":"pending"}]`)})
	mustAppend(t, w, Entry{Type: TypeAgentSetting, Value: json.RawMessage(`{"model":"m"}`)})
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if a.ParentUUID != u.UUID || u.ParentUUID != "" {
		t.Fatalf("links: user parent %q, assistant parent %q (user %q)", u.ParentUUID, a.ParentUUID, u.UUID)
	}

	for i, line := range lines(readFile(t, path)) {
		if !bytes.HasPrefix(line, []byte(`{"type":"`)) || !bytes.Contains(line[:120], []byte(`","uuid":"`)) ||
			!bytes.Contains(line[:120], []byte(`,"parentUuid":`)) {
			t.Errorf("line %d is not header-first: %.120s", i+1, line)
		}
		if _, ok := fastHeader(line); !ok {
			t.Errorf("line %d: fast header parse failed: %.120s", i+1, line)
		}
	}

	st := mustLoad(t, path)
	if diff := cmp.Diff([]string{"hello", "hi"}, texts(st)); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
	got := map[string]string{"title": st.Title(), "mode": st.Mode(), "todos": string(st.Todos()),
		"setting": string(st.AgentSetting()), "leaf": st.Leaf, "session": st.SessionID}
	want := map[string]string{"title": "greeting", "mode": "plan", "todos": `[{"content":"x","status":"pending"}]`,
		"setting": `{"model":"m"}`, "leaf": a.UUID, "session": "s1"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("state mismatch (-want +got):\n%s", diff)
	}

	// Resume continues the chain from the leaf.
	w2, st2, err := Resume(t.Context(), path, testOpts("s1"))
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Close()
	if st2.TornTail != 0 || st2.Leaf != a.UUID {
		t.Fatalf("resume: torn %d leaf %q", st2.TornTail, st2.Leaf)
	}
	u2 := mustAppend(t, w2, userText("again"))
	if u2.ParentUUID != a.UUID {
		t.Errorf("after resume, parent = %q, want %q", u2.ParentUUID, a.UUID)
	}
}

func TestTornTail(t *testing.T) {
	for _, torn := range []string{`{"type":"user","uuid":"x","parentU`, `{`, strings.Repeat("x", 300<<10)} {
		t.Run(fmt.Sprint(len(torn)), func(t *testing.T) {
			w, path := newSession(t, "s")
			mustAppend(t, w, userText("one"))
			mustAppend(t, w, assistantText("two"))
			w.Close()
			appendBytes(t, path, []byte(torn))

			st := mustLoad(t, path)
			if st.TornTail != int64(len(torn)) {
				t.Errorf("Load torn tail = %d, want %d", st.TornTail, len(torn))
			}
			if diff := cmp.Diff([]string{"one", "two"}, texts(st)); diff != "" {
				t.Errorf("messages mismatch (-want +got):\n%s", diff)
			}

			w2, st2, err := Resume(t.Context(), path, testOpts("s"))
			if err != nil {
				t.Fatal(err)
			}
			if st2.TornTail != int64(len(torn)) {
				t.Errorf("Resume torn tail = %d, want %d", st2.TornTail, len(torn))
			}
			mustAppend(t, w2, userText("three"))
			w2.Close()
			st3 := mustLoad(t, path)
			if st3.TornTail != 0 || st3.BadLines != 0 {
				t.Errorf("after repair: torn %d bad %d", st3.TornTail, st3.BadLines)
			}
			if diff := cmp.Diff([]string{"one", "two", "three"}, texts(st3)); diff != "" {
				t.Errorf("messages mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func TestBadLinesSkipped(t *testing.T) {
	w, path := newSession(t, "s")
	u := mustAppend(t, w, userText("one"))
	w.Close()
	appendBytes(t, path, []byte("not json at all\n\x00\x00\x00\n"))
	w2, _, err := Resume(t.Context(), path, testOpts("s"))
	if err != nil {
		t.Fatal(err)
	}
	a := mustAppend(t, w2, assistantText("two"))
	w2.Close()
	st := mustLoad(t, path)
	if st.BadLines != 2 || a.ParentUUID != u.UUID {
		t.Errorf("bad lines = %d (want 2), parent %q want %q", st.BadLines, a.ParentUUID, u.UUID)
	}
	if diff := cmp.Diff([]string{"one", "two"}, texts(st)); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
}

func TestUnknownEntryType(t *testing.T) {
	w, path := newSession(t, "s")
	u := mustAppend(t, w, userText("one"))
	w.Close()
	// A future entry type on the chain, and one beside it.
	onChain := fmt.Sprintf(`{"type":"hologram","uuid":"h1","parentUuid":%q,"sessionId":"s","payload":{"x":1}}`, u.UUID)
	beside := `{"type":"weather","uuid":"w1","parentUuid":null,"sessionId":"s","sky":"blue"}`
	appendBytes(t, path, []byte(onChain+"\n"+beside+"\n"))

	w2, st, err := Resume(t.Context(), path, testOpts("s"))
	if err != nil {
		t.Fatal(err)
	}
	if st.Leaf != u.UUID {
		t.Errorf("leaf = %q, want the last known chain entry %q", st.Leaf, u.UUID)
	}
	var unknown []string
	for _, l := range st.Unknown {
		unknown = append(unknown, string(l))
	}
	if diff := cmp.Diff([]string{onChain, beside}, unknown); diff != "" {
		t.Errorf("unknown mismatch (-want +got):\n%s", diff)
	}
	// A newer keel may hang a chain entry under the unknown one; replay passes through it.
	mustAppend(t, w2, Entry{Type: TypeAssistant, ParentUUID: "h1", Message: assistantText("two").Message})
	w2.Close()
	st = mustLoad(t, path)
	if diff := cmp.Diff([]string{"one", "two"}, texts(st)); diff != "" {
		t.Errorf("messages mismatch (-want +got):\n%s", diff)
	}
	if !bytes.Contains(readFile(t, path), []byte(beside)) {
		t.Error("unknown line dropped from the file")
	}

	// Fork keeps unknown entries.
	dst := strings.TrimSuffix(path, "s.jsonl") + "f.jsonl"
	fw, _, err := Fork(t.Context(), path, dst, testOpts("f"))
	if err != nil {
		t.Fatal(err)
	}
	fw.Close()
	forked := readFile(t, dst)
	if !bytes.Contains(forked, []byte(beside)) || !bytes.Contains(forked, []byte(onChain)) {
		t.Errorf("fork dropped unknown entries:\n%s", forked)
	}
	if diff := cmp.Diff([]string{"one", "two"}, texts(mustLoad(t, dst))); diff != "" {
		t.Errorf("forked messages mismatch (-want +got):\n%s", diff)
	}
}

func TestUnknownSchemaVersion(t *testing.T) {
	w, path := newSession(t, "s")
	w.Close()
	b := readFile(t, path)
	b = bytes.Replace(b, []byte(`"schemaVersion":1`), []byte(`"schemaVersion":99`), 1)
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := Load(t.Context(), path)
	var ve *VersionError
	if !errors.As(err, &ve) || ve.Version != 99 {
		t.Fatalf("Load error = %v, want a VersionError for 99", err)
	}
	if !strings.Contains(err.Error(), "schema version 99") {
		t.Errorf("error does not say the version: %v", err)
	}
	if _, _, err := Resume(t.Context(), path, testOpts("s")); !errors.As(err, &ve) {
		t.Fatalf("Resume error = %v, want a VersionError", err)
	}
}

func TestSecondProcessRefused(t *testing.T) {
	w, path := newSession(t, "s")
	mustAppend(t, w, userText("one"))
	if err := w.Sync(t.Context()); err != nil {
		t.Fatal(err)
	}
	// A second open file description conflicts just like a second process.
	if _, _, err := Resume(t.Context(), path, testOpts("s")); !errors.Is(err, ErrLocked) {
		t.Fatalf("second resume: err = %v, want ErrLocked", err)
	}
	if err := Remove(path); !errors.Is(err, ErrLocked) {
		t.Fatalf("remove while open: err = %v, want ErrLocked", err)
	}
	// Forking an open session is allowed: it only reads.
	fw, _, err := Fork(t.Context(), path, strings.TrimSuffix(path, "s.jsonl")+"f.jsonl", testOpts("f"))
	if err != nil {
		t.Fatalf("fork of an open session: %v", err)
	}
	fw.Close()
	w.Close()
	w2, _, err := Resume(t.Context(), path, testOpts("s"))
	if err != nil {
		t.Fatalf("resume after close: %v", err)
	}
	w2.Close()
	if _, err := w.Append(t.Context(), userText("late")); !errors.Is(err, ErrClosed) {
		t.Errorf("append after close: err = %v, want ErrClosed", err)
	}
}

// faultyFile fails like a full or broken disk on demand.
type faultyFile struct {
	File
	writeErr error // next writes write half the data, then fail with it
	syncErr  error
}

func (f *faultyFile) Write(p []byte) (int, error) {
	if f.writeErr != nil {
		n, _ := f.File.Write(p[:len(p)/2])
		return n, f.writeErr
	}
	return f.File.Write(p)
}

func (f *faultyFile) Sync() error {
	if f.syncErr != nil {
		return f.syncErr
	}
	return f.File.Sync()
}

func TestFailingDisk(t *testing.T) {
	var ff *faultyFile
	opts := testOpts("s")
	opts.WrapFile = func(f File) File { ff = &faultyFile{File: f}; return ff }
	w, path := newSession(t, "s")
	w.Close()
	w, _, err := Resume(t.Context(), path, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	mustAppend(t, w, userText("one"))
	before := readFile(t, path)

	ff.writeErr = syscall.ENOSPC
	if _, err := w.Append(t.Context(), assistantText(strings.Repeat("big ", 1000))); !errors.Is(err, syscall.ENOSPC) {
		t.Fatalf("append on a full disk: err = %v, want ENOSPC", err)
	}
	if after := readFile(t, path); !bytes.Equal(before, after) {
		t.Fatalf("a failed append left %d bytes behind", len(after)-len(before))
	}
	ff.writeErr = nil
	mustAppend(t, w, assistantText("two"))
	st := mustLoad(t, path)
	if diff := cmp.Diff([]string{"one", "two"}, texts(st)); diff != "" || st.BadLines != 0 {
		t.Errorf("after ENOSPC: bad lines %d, messages mismatch (-want +got):\n%s", st.BadLines, diff)
	}

	ff.syncErr = syscall.EIO
	if err := w.Sync(t.Context()); !errors.Is(err, syscall.EIO) {
		t.Fatalf("sync on a broken disk: err = %v, want EIO", err)
	}
	ff.syncErr = nil
	if _, err := w.Append(t.Context(), userText("three")); !errors.Is(err, syscall.EIO) {
		t.Errorf("append after a failed sync: err = %v, want the sticky EIO", err)
	}
	if diff := cmp.Diff([]string{"one", "two"}, texts(mustLoad(t, path))); diff != "" {
		t.Errorf("after EIO mismatch (-want +got):\n%s", diff)
	}
}
