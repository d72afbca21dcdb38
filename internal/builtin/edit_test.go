package builtin

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/keel-dev/keel/internal/tool"
)

func TestEdit(t *testing.T) {
	const code = "package main\n\nfunc a() {\n\treturn 1\n}\n\nfunc b() {\n\treturn 1\n}\n"
	tests := []struct {
		name   string
		file   string // initial content; "" with noFile means absent
		noFile bool
		read   bool // Read the file before editing
		in     editInput
		want   string // file content afterwards
	}{
		{"unique", code, false, true, editInput{OldString: "func a() {\n\treturn 1", NewString: "func a() {\n\treturn 2"},
			strings.Replace(code, "return 1", "return 2", 1)},
		{"not found", code, false, true, editInput{OldString: "return 3", NewString: "return 4"}, code},
		{"ambiguous", code, false, true, editInput{OldString: "return 1", NewString: "return 2"}, code},
		{"replace all", code, false, true, editInput{OldString: "return 1", NewString: "return 2", ReplaceAll: true},
			strings.ReplaceAll(code, "return 1", "return 2")},
		{"same strings", code, false, true, editInput{OldString: "x", NewString: "x"}, code},
		{"not read", code, false, false, editInput{OldString: "func a", NewString: "func c"}, code},
		{"crlf kept", "one\r\ntwo\r\nthree\r\n", false, true, editInput{OldString: "two\nthree", NewString: "2\n3"},
			"one\r\n2\r\n3\r\n"},
		{"bom kept", "\xef\xbb\xbfhello\nworld\n", false, true, editInput{OldString: "world", NewString: "there"},
			"\xef\xbb\xbfhello\nthere\n"},
		{"latin1 kept", "caf\xe9 na\xefve\n\xff\n", false, true, editInput{OldString: "naïve", NewString: "süß"}, "caf\xe9 s\xfc\xdf\n\xff\n"},
		{"windows-1252 kept", "\x93caf\xe9\x94 \x80\n", false, true, editInput{OldString: "café”", NewString: "thé” …"},
			"\x93th\xe9\x94 \x85 \x80\n"},
		{"latin1 cannot hold", "caf\xe9\n", false, true, editInput{OldString: "café", NewString: "café ☕"}, "caf\xe9\n"},
		{"utf16le kept", "\xff\xfeh\x00\xe9\x00\r\x00\n\x00", false, true, editInput{OldString: "hé", NewString: "hé → ok"},
			"\xff\xfeh\x00\xe9\x00 \x00\x92\x21 \x00o\x00k\x00\r\x00\n\x00"},
		{"utf16be kept", "\xfe\xff\x00a\x00b\x00\n", false, true, editInput{OldString: "b", NewString: "c"}, "\xfe\xff\x00a\x00c\x00\n"},
		{"utf16 matches whole code units", "\xff\xfea\x00b\x00", false, true, editInput{OldString: "\u6200", NewString: "x"}, "\xff\xfea\x00b\x00"},
		{"crlf new lines", "one\r\ntwo\r\n", false, true, editInput{OldString: "one", NewString: "one\nand a half"}, "one\r\nand a half\r\ntwo\r\n"},
		{"mixed endings untouched", "a\r\nb\nc\r\nd\r\n", false, true, editInput{OldString: "b", NewString: "B"}, "a\r\nB\nc\r\nd\r\n"},
		{"binary refused", "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n", false, true, editInput{OldString: "obj", NewString: "x"}, "%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj\n"},
		{"create with empty old", "", true, false, editInput{OldString: "", NewString: "new file\n"}, "new file\n"},
		{"empty old on existing", code, false, true, editInput{OldString: "", NewString: "x"}, code},
		{"missing", "", true, false, editInput{OldString: "a", NewString: "b"}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, "f.go")
			if !tt.noFile {
				writeFiles(t, dir, map[string]string{"f.go": tt.file})
			}
			env := newEnv(t, dir)
			if tt.read {
				if res := call(t, Read(), env, readInput{FilePath: path}); res.IsError && !strings.Contains(res.ResultText(), "binary") {
					t.Fatal(res.ResultText())
				}
				if _, ok := env.Files.Lookup(filepath.Join(env.State.Cwd, "f.go")); !ok {
					// Read refuses some files (UTF-16 looks binary); record them so Edit gets to check the encoding.
					data, _ := os.ReadFile(path)
					recordWrite(env, resolve(env.State, path), data, mustStat(t, path))
				}
			}
			tt.in.FilePath = "f.go"
			res := call(t, Edit(), env, tt.in)
			golden(t, "edit/"+strings.ReplaceAll(tt.name, " ", "_"), render(res, env.State.Cwd))
			got, err := os.ReadFile(path)
			if err != nil && !(tt.noFile && os.IsNotExist(err) && tt.want == "") {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tt.want, string(got)); diff != "" {
				t.Errorf("file mismatch (-want +got):\n%s", diff)
			}
		})
	}
}

func mustStat(t testing.TB, path string) os.FileInfo {
	t.Helper()
	info, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	return info
}

func TestEditKeepsModeAndAllowsRepeatedEdits(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "run.sh")
	if err := os.WriteFile(path, []byte("#!/bin/sh\necho a\n"), 0o751); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, 0o751); err != nil { // whatever the umask
		t.Fatal(err)
	}
	env := newEnv(t, dir)
	call(t, Read(), env, readInput{FilePath: path})
	for _, e := range []editInput{{FilePath: path, OldString: "echo a", NewString: "echo b"}, {FilePath: path, OldString: "echo b", NewString: "echo c"}} {
		if res := call(t, Edit(), env, e); res.IsError {
			t.Fatal(res.ResultText())
		}
	}
	if got := readFile(t, path); got != "#!/bin/sh\necho c\n" {
		t.Errorf("content = %q", got)
	}
	if mode := mustStat(t, path).Mode().Perm(); mode != 0o751 {
		t.Errorf("mode = %v, want 0751", mode)
	}
}

// A kill at any moment of an Edit or a Write must leave the old content or the new: the new
// content takes the file's place whole, so a reader that opened the file before still reads the
// old content (an in-place rewrite truncates first, and a kill there left an empty file).
func TestEditAndWriteSwapTheFileWhole(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	writeFiles(t, dir, map[string]string{"f.txt": "content: draft\n"})
	env := newEnv(t, dir)
	call(t, Read(), env, readInput{FilePath: path})
	steps := []struct {
		name string
		run  func() tool.Result
		want string
	}{
		{"Edit", func() tool.Result {
			return call(t, Edit(), env, editInput{FilePath: path, OldString: "draft", NewString: "final"})
		}, "content: final\n"},
		{"Write", func() tool.Result { return call(t, Write(), env, writeInput{FilePath: path, Content: "rewritten\n"}) }, "rewritten\n"},
	}
	for _, step := range steps {
		before := readFile(t, path)
		reader, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		if res := step.run(); res.IsError {
			t.Fatalf("%s: %s", step.name, res.ResultText())
		}
		old, err := io.ReadAll(reader)
		reader.Close()
		if err != nil {
			t.Fatal(err)
		}
		if string(old) != before {
			t.Errorf("%s rewrote the file in place: a reader that opened it before reads %q, want %q", step.name, old, before)
		}
		if got := readFile(t, path); got != step.want {
			t.Errorf("after %s the file is %q, want %q", step.name, got, step.want)
		}
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Errorf("temp files left behind: %v", entries)
	}
}

// A file with other hard links is edited in place, so every name shows the change.
func TestEditHardLinkedFileChangesEveryName(t *testing.T) {
	dir := t.TempDir()
	path, other := filepath.Join(dir, "f.txt"), filepath.Join(dir, "link.txt")
	writeFiles(t, dir, map[string]string{"f.txt": "one\n"})
	if err := os.Link(path, other); err != nil {
		t.Skipf("no hard links here: %v", err)
	}
	env := newEnv(t, dir)
	call(t, Read(), env, readInput{FilePath: path})
	if res := call(t, Edit(), env, editInput{FilePath: path, OldString: "one", NewString: "two"}); res.IsError {
		t.Fatal(res.ResultText())
	}
	for _, p := range []string{path, other} {
		if got := readFile(t, p); got != "two\n" {
			t.Errorf("%s = %q, want the edit through every link", filepath.Base(p), got)
		}
	}
}

func TestEditStaleAndDeleted(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	writeFiles(t, dir, map[string]string{"f.txt": "one\n"})
	env := newEnv(t, dir)
	call(t, Read(), env, readInput{FilePath: path})
	// Someone else changes the file after the read.
	if err := os.WriteFile(path, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	res := call(t, Edit(), env, editInput{FilePath: path, OldString: "one", NewString: "1"})
	golden(t, "edit/stale", render(res, env.State.Cwd))
	if got := readFile(t, path); got != "one\ntwo\n" {
		t.Errorf("stale file changed: %q", got)
	}
	res = call(t, Write(), env, writeInput{FilePath: path, Content: "x"})
	if !res.IsError || readFile(t, path) != "one\ntwo\n" {
		t.Errorf("Write over a stale file: %s", res.ResultText())
	}
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	res = call(t, Edit(), env, editInput{FilePath: path, OldString: "one", NewString: "1"})
	golden(t, "edit/deleted", render(res, env.State.Cwd))
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Error("Edit of a deleted file recreated it")
	}
}

func TestWrite(t *testing.T) {
	dir := t.TempDir()
	env := newEnv(t, dir)
	res := call(t, Write(), env, writeInput{FilePath: "new/dir/f.txt", Content: "a\nb\n"})
	golden(t, "write/create", render(res, env.State.Cwd))
	path := filepath.Join(dir, "new/dir/f.txt")
	if got := readFile(t, path); got != "a\nb\n" {
		t.Errorf("content = %q", got)
	}
	// Writing what it just wrote again needs no read: the write is the known content.
	if res := call(t, Write(), env, writeInput{FilePath: path, Content: "c\n"}); res.IsError {
		t.Fatal(res.ResultText())
	}

	writeFiles(t, dir, map[string]string{"old.sh": "echo old\n"})
	old := filepath.Join(dir, "old.sh")
	if err := os.Chmod(old, 0o755); err != nil {
		t.Fatal(err)
	}
	res = call(t, Write(), env, writeInput{FilePath: "old.sh", Content: "echo new\n"})
	golden(t, "write/not_read", render(res, env.State.Cwd))
	if got := readFile(t, old); got != "echo old\n" {
		t.Errorf("unread file overwritten: %q", got)
	}
	call(t, Read(), env, readInput{FilePath: "old.sh"})
	res = call(t, Write(), env, writeInput{FilePath: "old.sh", Content: "echo new\n"})
	golden(t, "write/overwrite", render(res, env.State.Cwd))
	if got := readFile(t, old); got != "echo new\n" {
		t.Errorf("content = %q", got)
	}
	if mode := mustStat(t, old).Mode().Perm(); mode != 0o755 {
		t.Errorf("mode = %v, want 0755", mode)
	}
}

// TestWriteEscapes covers paths that land outside the working directory without saying so.
func TestWriteEscapes(t *testing.T) {
	base := t.TempDir()
	work := filepath.Join(base, "work")
	outside := filepath.Join(base, "outside")
	writeFiles(t, base, map[string]string{"outside/secret.txt": "secret\n", "work/in.txt": "in\n"})
	if err := os.Symlink(outside, filepath.Join(work, "link")); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(outside, "secret.txt"), filepath.Join(work, "secret-link.txt")); err != nil {
		t.Fatal(err)
	}
	env := newEnv(t, work)
	root := filepath.Dir(env.State.Cwd)
	// Reads through the links record the real path, so the write check applies to it.
	call(t, Read(), env, readInput{FilePath: "link/secret.txt"})
	call(t, Read(), env, readInput{FilePath: "secret-link.txt"})
	tests := []struct {
		name string
		tl   string
		in   any
	}{
		{"write through dir link", "Write", writeInput{FilePath: "link/secret.txt", Content: "pwned\n"}},
		{"write new file under dir link", "Write", writeInput{FilePath: "link/new.txt", Content: "pwned\n"}},
		{"edit through file link", "Edit", editInput{FilePath: "secret-link.txt", OldString: "secret", NewString: "pwned"}},
		{"dotdot climbs out", "Write", writeInput{FilePath: "../outside/secret.txt", Content: "pwned\n"}},
		{"dotdot edit", "Edit", editInput{FilePath: "sub/../../outside/secret.txt", OldString: "secret", NewString: "pwned"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tl := Write()
			if tt.tl == "Edit" {
				tl = Edit()
			}
			res := call(t, tl, env, tt.in)
			if !res.IsError {
				t.Fatalf("escape allowed: %s", res.ResultText())
			}
			golden(t, "escape/"+strings.ReplaceAll(tt.name, " ", "_"), strings.ReplaceAll(render(res, env.State.Cwd), root, "$BASE"))
		})
	}
	if got := readFile(t, filepath.Join(outside, "secret.txt")); got != "secret\n" {
		t.Errorf("outside file changed: %q", got)
	}
	if _, err := os.Stat(filepath.Join(outside, "new.txt")); !os.IsNotExist(err) {
		t.Error("a file was created outside")
	}
	// A `..` that stays inside is fine.
	if res := call(t, Write(), env, writeInput{FilePath: "sub/../in2.txt", Content: "ok\n"}); res.IsError {
		t.Errorf("inside write refused: %s", res.ResultText())
	}
}

// TestEditMatchesTextCopiedFromRead: Read numbers lines compactly ("7\tline"); Edit matches
// the text after the tab, and also lines the model copied with their numbers (compact, or
// padded as keel once wrote them), numbered or not in new_string. A file whose lines really
// start with digits and a tab is matched literally first.
func TestEditMatchesTextCopiedFromRead(t *testing.T) {
	var code strings.Builder
	for i := 1; i <= 12; i++ {
		fmt.Fprintf(&code, "line %d\n", i)
	}
	dir := t.TempDir()
	path := filepath.Join(dir, "f.txt")
	read := func(t *testing.T, env *tool.Env, content string) []string {
		writeFiles(t, dir, map[string]string{"f.txt": content})
		out := call(t, Read(), env, readInput{FilePath: path}).ResultText()
		return strings.Split(out, "\n")
	}
	tests := []struct {
		name     string
		content  string
		old, new func(shown []string) string
		want     string
	}{
		{"text after the tab", code.String(),
			func(shown []string) string { return "line 9\nline 10" },
			func([]string) string { return "line nine\nline ten" },
			strings.Replace(code.String(), "line 9\nline 10\n", "line nine\nline ten\n", 1)},
		{"with compact numbers", code.String(),
			func(shown []string) string { return shown[8] + "\n" + shown[9] },
			func([]string) string { return "9\tline nine\n10\tline ten" },
			strings.Replace(code.String(), "line 9\nline 10\n", "line nine\nline ten\n", 1)},
		{"numbers only in old_string", code.String(),
			func(shown []string) string { return shown[8] + "\n" + shown[9] },
			func([]string) string { return "line nine" },
			strings.Replace(code.String(), "line 9\nline 10\n", "line nine\n", 1)},
		{"padded numbers", code.String(),
			func([]string) string { return "     9\tline 9\n    10\tline 10" },
			func([]string) string { return "     9\tline nine\n    10\tline ten" },
			strings.Replace(code.String(), "line 9\nline 10\n", "line nine\nline ten\n", 1)},
		{"tab-separated data", "1\tapple\n2\tpear\n",
			func([]string) string { return "2\tpear" },
			func([]string) string { return "2\tplum" },
			"1\tapple\n2\tplum\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			env := newEnv(t, dir)
			shown := read(t, env, tt.content)
			if tt.name == "with compact numbers" && shown[8] != "9\tline 9" {
				t.Fatalf("Read shows line 9 as %q", shown[8])
			}
			res := call(t, Edit(), env, editInput{FilePath: path, OldString: tt.old(shown), NewString: tt.new(shown)})
			if res.IsError {
				t.Fatal(res.ResultText())
			}
			if got := readFile(t, path); got != tt.want {
				t.Errorf("file mismatch (-want +got):\n%s", cmp.Diff(tt.want, got))
			}
		})
	}
}

// TestEditAndWriteRefuseHugeFiles: Edit and Write read the whole file, so one past
// maxEditBytes — a sparse file a command made for no disk — is refused with an error naming
// its size, never read into memory, and left as it was (adversary12 G4's class).
func TestEditAndWriteRefuseHugeFiles(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "big.txt")
	writeFiles(t, dir, map[string]string{"big.txt": "one\n"})
	env := newEnv(t, dir)
	call(t, Read(), env, readInput{FilePath: path, Limit: 1})
	if err := os.Truncate(path, 4*maxEditBytes); err != nil {
		t.Fatal(err)
	}
	for name, res := range map[string]tool.Result{
		"Edit":  call(t, Edit(), env, editInput{FilePath: path, OldString: "one", NewString: "1"}),
		"Write": call(t, Write(), env, writeInput{FilePath: path, Content: "x"}),
	} {
		if !res.IsError || !strings.Contains(res.ResultText(), "more than the 256 MiB keel reads whole") {
			t.Errorf("%s: %s", name, res.ResultText())
		}
	}
	if fi, err := os.Stat(path); err != nil || fi.Size() != 4*maxEditBytes {
		t.Errorf("the file changed: %v, %v", fi.Size(), err)
	}
}
