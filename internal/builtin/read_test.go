package builtin

import (
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/tool"
)

func TestRead(t *testing.T) {
	dir := t.TempDir()
	var long strings.Builder
	for i := 1; i <= 2500; i++ {
		long.WriteString("line " + strings.Repeat("x", i%7) + "\n")
	}
	writeFiles(t, dir, map[string]string{
		"a.txt":           "alpha\nbeta\r\ngamma",
		"empty.txt":       "",
		"long.txt":        long.String(),
		"wide.txt":        strings.Repeat("é", 2100) + "\nshort\n",
		"big.txt":         strings.Repeat("0123456789abcdef\n", 20000),
		"bin.dat":         "ELF\x00\x01\x02binary",
		"latin1.txt":      "caf\xe9 na\xefve \xff\n",
		"cp1252.txt":      "\x93quoted\x94 \x80 caf\xe9\n",
		"bom.txt":         "\xef\xbb\xbfhello\nworld\n",
		"utf16le.txt":     "\xff\xfeh\x00\xe9\x00\r\x00\n\x00w\x00\xf6\x00\n\x00",
		"utf16be.txt":     "\xfe\xff\x00h\x00\xe9\x00\n",
		"late-latin1.txt": strings.Repeat("ascii only\n", 1000) + "caf\xe9\n",
		"doc.pdf":         "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n",
		"sub/b.txt":       "in sub\n",
		"nb.ipynb": `{"cells":[{"cell_type":"markdown","source":["# Title\n","text"]},
{"cell_type":"code","source":"print(1)","outputs":[{"output_type":"stream","text":["1\n"]},
{"output_type":"display_data","data":{"text/plain":"<Figure>","image/png":"iVBORw0KGgo="}}]},
{"cell_type":"code","source":"1/0","outputs":[{"output_type":"error","ename":"ZeroDivisionError","evalue":"division by zero"}]}]}`,
		"pic.png":  "\x89PNG\r\n\x1a\n" + strings.Repeat("\x00", 32),
		"pic.webp": "RIFF\x10\x00\x00\x00WEBPVP8 ",
	})
	if err := os.Symlink(filepath.Join(dir, "nowhere"), filepath.Join(dir, "dangling")); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		in   readInput
	}{
		{"text", readInput{FilePath: "a.txt"}},
		{"relative dotdot", readInput{FilePath: "sub/../a.txt"}},
		{"offset limit", readInput{FilePath: "a.txt", Offset: 2, Limit: 1}},
		{"default limit", readInput{FilePath: "long.txt", Offset: 1990}},
		{"past end", readInput{FilePath: "a.txt", Offset: 10}},
		{"empty", readInput{FilePath: "empty.txt"}},
		{"long line", readInput{FilePath: "wide.txt"}},
		{"too big", readInput{FilePath: "big.txt"}},
		{"big in parts", readInput{FilePath: "big.txt", Offset: 19999, Limit: 5}},
		{"binary", readInput{FilePath: "bin.dat"}},
		{"latin1", readInput{FilePath: "latin1.txt"}},
		{"windows-1252", readInput{FilePath: "cp1252.txt"}},
		{"utf8 bom", readInput{FilePath: "bom.txt"}},
		{"utf16le", readInput{FilePath: "utf16le.txt"}},
		{"utf16be", readInput{FilePath: "utf16be.txt"}},
		{"latin1 after ascii", readInput{FilePath: "late-latin1.txt", Offset: 1000}},
		{"pdf", readInput{FilePath: "doc.pdf"}},
		{"notebook", readInput{FilePath: "nb.ipynb"}},
		{"png", readInput{FilePath: "pic.png"}},
		{"webp", readInput{FilePath: "pic.webp"}},
		{"missing", readInput{FilePath: "nope.txt"}},
		{"directory", readInput{FilePath: "sub"}},
		{"dangling symlink", readInput{FilePath: "dangling"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, dir)
			res := call(t, Read(), env, tt.in)
			golden(t, "read/"+strings.ReplaceAll(tt.name, " ", "_"), render(res, env.State.Cwd))
		})
	}
}

func TestReadRecordsState(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"real/f.txt": "one\ntwo\n"})
	if err := os.Symlink(filepath.Join(dir, "real"), filepath.Join(dir, "link")); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, dir)
	if res := call(t, Read(), env, readInput{FilePath: "link/f.txt", Limit: 1}); res.IsError {
		t.Fatal(res.ResultText())
	}
	rec, ok := env.Files.Lookup(filepath.Join(env.State.Cwd, "real", "f.txt"))
	if !ok {
		t.Fatal("read not recorded under the resolved path")
	}
	if rec.Hash != hashOf([]byte("one\ntwo\n")) || rec.Size != 8 || !rec.Partial || rec.ModTime.IsZero() {
		t.Errorf("record = %+v", rec)
	}
}

// TestReadLongLineBoundedMemory: a 64 MiB line costs Read what it shows, not the line; the
// bytes allocated during the call stay far below it.
func TestReadLongLineBoundedMemory(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "one-line.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	chunk := []byte(strings.Repeat("x", 1<<20))
	for range 64 {
		if _, err := f.Write(chunk); err != nil {
			t.Fatal(err)
		}
	}
	f.WriteString("\nsecond line\n")
	f.Close()
	env := newEnv(t, dir)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	res := call(t, Read(), env, readInput{FilePath: path, Offset: 1, Limit: 2})
	runtime.ReadMemStats(&after)
	if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
		t.Errorf("allocated %d MiB reading a 64 MiB line", alloc>>20)
	}
	want := "1\t" + strings.Repeat("x", maxLineChars) + "… [line truncated: 67108864 chars]\n2\tsecond line"
	if got := res.ResultText(); got != want {
		t.Errorf("got %.100q…%q", got, got[max(0, len(got)-60):])
	}
}

// TestReadUnchangedStub: a second Read of the same lines of an unchanged file returns a short
// stub, as the agent's context holds the first; the content comes back when the file changed,
// other lines are asked for, the agent edited it, its context lost the result (compaction:
// ForgetViews) or the reader is another agent (a clone of the state).
func TestReadUnchangedStub(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.go")
	content := "package f\n\n// A comment long enough that the lines shown from the second on are longer than the stub.\nfunc F() int { return 1 }\n"
	writeFiles(t, dir, map[string]string{"f.go": content})
	read := func(env *tool.Env, in readInput) string {
		in.FilePath = path
		return call(t, Read(), env, in).ResultText()
	}
	full := func(t *testing.T, what, got string) {
		t.Helper()
		if !strings.Contains(got, "2\t\n3\t// A comment") {
			t.Errorf("%s: want the content, got %q", what, got)
		}
	}
	env := newEnv(t, dir)
	full(t, "first read", read(env, readInput{}))
	if got := read(env, readInput{}); got != unchangedStub {
		t.Errorf("second read of the unchanged file: %q", got)
	}
	full(t, "other lines", read(env, readInput{Offset: 2}))
	if got := read(env, readInput{Offset: 2}); got != unchangedStub {
		t.Errorf("second read of the same other lines: %q", got)
	}

	child := &tool.Env{State: env.State, Files: env.Files.Clone(), Logger: env.Logger}
	full(t, "another agent", read(child, readInput{Offset: 2}))

	env.Files.ForgetViews()
	full(t, "after compaction", read(env, readInput{}))

	os.WriteFile(path, []byte(strings.Replace(content, "return 1", "return 2", 1)), 0o644) // same size
	full(t, "after the file changed", read(env, readInput{}))

	if res := call(t, Edit(), env, editInput{FilePath: path, OldString: "return 2", NewString: "return 3"}); res.IsError {
		t.Fatal(res.ResultText())
	}
	full(t, "after the agent's edit", read(env, readInput{}))
}
