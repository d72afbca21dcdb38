package builtin

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func notebookFixture(t *testing.T, name string) string {
	t.Helper()
	return readFile(t, filepath.Join("testdata", "notebook", name))
}

// compactNotebook is a notebook on one line, as some tools write them.
const compactNotebook = `{"cells": [{"cell_type": "code", "execution_count": null, "id": "a1", "metadata": {}, "outputs": [], "source": ["print(1)"]}], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}`

func TestNotebookEdit(t *testing.T) {
	jupyter := notebookFixture(t, "jupyter.ipynb")
	tests := []struct {
		name    string
		file    string
		noRead  bool
		in      notebookEditInput
		wantErr bool
		// canonical: the result must be byte for byte what Jupyter itself writes.
		canonical bool
	}{
		{name: "replace code keeps outputs", file: jupyter, in: notebookEditInput{CellID: "setup", NewSource: "import math\nprint(math.tau)\n"}, canonical: true},
		{name: "replace markdown", file: jupyter, in: notebookEditInput{CellID: "intro", NewSource: "# Über\nnew text"}, canonical: true},
		{name: "replace empty source", file: jupyter, in: notebookEditInput{CellID: "boom", NewSource: ""}, canonical: true},
		{name: "replace code as markdown", file: jupyter, in: notebookEditInput{CellID: "plot", NewSource: "Just text now", CellType: "markdown"}, canonical: true},
		{name: "replace markdown as code", file: jupyter, in: notebookEditInput{CellID: "intro", NewSource: "print('hi')", CellType: "code"}, canonical: true},
		{name: "insert after", file: jupyter, in: notebookEditInput{CellID: "setup", NewSource: "y = 2\ny", CellType: "code", EditMode: "insert"}, canonical: true},
		{name: "insert first", file: jupyter, in: notebookEditInput{NewSource: "# Top", CellType: "markdown", EditMode: "insert"}, canonical: true},
		{name: "insert last", file: jupyter, in: notebookEditInput{CellID: "rawcell", NewSource: "end", CellType: "markdown", EditMode: "insert"}, canonical: true},
		{name: "delete middle", file: jupyter, in: notebookEditInput{CellID: "plot", EditMode: "delete"}, canonical: true},
		{name: "delete first", file: jupyter, in: notebookEditInput{CellID: "intro", EditMode: "delete"}, canonical: true},
		{name: "delete last", file: jupyter, in: notebookEditInput{CellID: "rawcell", EditMode: "delete"}, canonical: true},
		{name: "old notebook by index", file: notebookFixture(t, "v44.ipynb"), in: notebookEditInput{CellID: "cell-1", NewSource: "print('new')"}, canonical: true},
		{name: "old notebook insert has no id", file: notebookFixture(t, "v44.ipynb"), in: notebookEditInput{CellID: "cell-0", NewSource: "x", CellType: "code", EditMode: "insert"}, canonical: true},
		{name: "compact", file: compactNotebook, in: notebookEditInput{CellID: "a1", NewSource: "a\nb", CellType: "code", EditMode: "insert"}},
		{name: "crlf", file: strings.ReplaceAll(jupyter, "\n", "\r\n"), in: notebookEditInput{CellID: "setup", NewSource: "z = 1\nz"}},
		{name: "string source", file: `{"cells":[{"cell_type":"code","source":"print(1)","metadata":{},"outputs":[],"execution_count":null}],"metadata":{},"nbformat":4,"nbformat_minor":4}`,
			in: notebookEditInput{CellID: "cell-0", NewSource: "print(2)\nprint(3)"}},
		{name: "ascii escaped", file: "{\n \"cells\": [\n  {\n   \"cell_type\": \"markdown\",\n   \"id\": \"m\",\n   \"metadata\": {},\n   \"source\": [\n    \"caf\\u00e9\"\n   ]\n  }\n ],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n",
			in: notebookEditInput{CellID: "m", NewSource: "thé 🍵"}},
		{name: "delete only", file: "{\n \"cells\": [\n  {\n   \"cell_type\": \"markdown\",\n   \"id\": \"m\",\n   \"metadata\": {},\n   \"source\": []\n  }\n ],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n",
			in: notebookEditInput{CellID: "m", EditMode: "delete"}, canonical: true},
		{name: "insert into empty", file: "{\n \"cells\": [],\n \"metadata\": {},\n \"nbformat\": 4,\n \"nbformat_minor\": 5\n}\n",
			in: notebookEditInput{NewSource: "first", CellType: "markdown", EditMode: "insert"}, canonical: true},
		{name: "unknown id", file: jupyter, in: notebookEditInput{CellID: "nope", NewSource: "x"}, wantErr: true},
		{name: "no id to replace", file: jupyter, in: notebookEditInput{NewSource: "x"}, wantErr: true},
		{name: "insert without type", file: jupyter, in: notebookEditInput{CellID: "setup", NewSource: "x", EditMode: "insert"}, wantErr: true},
		{name: "not read", file: jupyter, noRead: true, in: notebookEditInput{CellID: "setup", NewSource: "x"}, wantErr: true},
		{name: "invalid json", file: `{"cells": [{"cell_type": "code",`, in: notebookEditInput{CellID: "cell-0", NewSource: "x"}, wantErr: true},
		{name: "no cells", file: `{"metadata": {}}`, in: notebookEditInput{CellID: "cell-0", NewSource: "x"}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel() // each case checks its result with a Python process
			dir := t.TempDir()
			writeFiles(t, dir, map[string]string{"nb.ipynb": tt.file})
			env := newEnv(t, dir)
			path := filepath.Join(env.State.Cwd, "nb.ipynb")
			if !tt.noRead {
				// Read refuses invalid notebooks; record them so NotebookEdit gets to judge them.
				if res := call(t, Read(), env, readInput{FilePath: path}); res.IsError {
					recordWrite(env, resolve(env.State, path), []byte(tt.file), mustStat(t, path))
				}
			}
			tt.in.NotebookPath = path
			res := call(t, NotebookEdit(), env, tt.in)
			got := readFile(t, path)
			if res.IsError != tt.wantErr {
				t.Fatalf("IsError = %v, want %v: %s", res.IsError, tt.wantErr, res.ResultText())
			}
			if tt.wantErr && got != tt.file {
				t.Errorf("a refused edit changed the file:\n%s", got)
			}
			golden(t, "notebook/"+strings.ReplaceAll(tt.name, " ", "_"), render(res, env.State.Cwd)+"--- nb.ipynb ---\n"+got)
			if !tt.wantErr {
				checkNotebook(t, path, tt.canonical)
				// Read the result back: an edit must leave a notebook Read understands.
				if res := call(t, Read(), env, readInput{FilePath: path}); res.IsError {
					t.Errorf("Read after the edit: %s", res.ResultText())
				}
			}
		})
	}
}

// TestNotebookEditAgain edits twice without a Read in between: what NotebookEdit wrote counts
// as read, as with Edit.
func TestNotebookEditAgain(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"nb.ipynb": notebookFixture(t, "jupyter.ipynb")})
	env := newEnv(t, dir)
	path := filepath.Join(env.State.Cwd, "nb.ipynb")
	call(t, Read(), env, readInput{FilePath: path})
	for _, src := range []string{"a = 1", "a = 2"} {
		if res := call(t, NotebookEdit(), env, notebookEditInput{NotebookPath: path, CellID: "setup", NewSource: src}); res.IsError {
			t.Fatal(res.ResultText())
		}
	}
	if err := os.WriteFile(path, []byte(readFile(t, path)+" "), 0o644); err != nil {
		t.Fatal(err)
	}
	res := call(t, NotebookEdit(), env, notebookEditInput{NotebookPath: path, CellID: "setup", NewSource: "a = 3"})
	if !res.IsError || !strings.Contains(res.ResultText(), "changed since it was last read") {
		t.Errorf("an edit after an outside change was not refused: %s", res.ResultText())
	}
}

func TestNotebookEditRefusesOtherFiles(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{"a.json": "{}"})
	env := newEnv(t, dir)
	for _, p := range []string{"a.json", "missing.ipynb"} {
		res := call(t, NotebookEdit(), env, notebookEditInput{NotebookPath: p, CellID: "x", NewSource: "y"})
		if !res.IsError {
			t.Errorf("%s: edit accepted: %s", p, res.ResultText())
		}
	}
	if got := readFile(t, filepath.Join(dir, "a.json")); got != "{}" {
		t.Errorf("a.json changed: %q", got)
	}
}

// checkNotebook has nbformat, Jupyter's own library, validate the notebook against its schema
// and, when canonical, confirm the bytes are exactly what Jupyter writes for it.
func checkNotebook(t *testing.T, path string, canonical bool) {
	t.Helper()
	py := nbformatPython(t)
	script := `import nbformat, sys
nb = nbformat.read(sys.argv[1], as_version=nbformat.NO_CONVERT)
nbformat.validate(nb)
if sys.argv[2] == "1":
    want = nbformat.writes(nb) + "\n"
    got = open(sys.argv[1], encoding="utf-8").read()
    if got != want:
        sys.exit("not what Jupyter writes:\n" + want)
`
	flag := "0"
	if canonical {
		flag = "1"
	}
	out, err := exec.Command(py, "-c", script, path, flag).CombinedOutput()
	if err != nil {
		t.Errorf("nbformat rejects the edited notebook: %v\n%s", err, out)
	}
}

// nbformatPython finds a Python with nbformat (scripts/test.sh installs Debian's
// python3-nbformat), skipping loudly when there is none.
func nbformatPython(t *testing.T) string {
	t.Helper()
	for _, py := range []string{"/usr/bin/python3", "python3"} {
		if path, err := exec.LookPath(py); err == nil {
			if exec.Command(path, "-c", "import nbformat").Run() == nil {
				return path
			}
		}
	}
	t.Skip("SKIPPED: no python3 with nbformat (apt-get install python3-nbformat; scripts/test.sh does) — notebook edits are not checked against Jupyter's validator")
	return ""
}

func TestNotebookSourceLines(t *testing.T) {
	tests := map[string][]string{
		"":       nil,
		"a":      {"a"},
		"a\n":    {"a\n"},
		"a\nb":   {"a\n", "b"},
		"a\n\nb": {"a\n", "\n", "b"},
	}
	for in, want := range tests {
		if diff := cmp.Diff(want, sourceLines(in)); diff != "" {
			t.Errorf("sourceLines(%q) mismatch (-want +got):\n%s", in, diff)
		}
	}
}
