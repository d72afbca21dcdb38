package builtin

import (
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

// newEnv returns an Env whose cwd is dir (symlinks resolved, so paths in outputs are stable).
func newEnv(t testing.TB, dir string) *tool.Env {
	t.Helper()
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	return &tool.Env{
		State:    tool.State{Cwd: real},
		Files:    tool.NewFileState(),
		Progress: func(string) {},
		Logger:   slog.New(slog.NewTextHandler(io.Discard, nil)),
	}
}

// call validates input against the tool's schema, as the runner does, then calls the tool.
func call(t testing.TB, tl tool.Tool, env *tool.Env, input any) tool.Result {
	t.Helper()
	raw, err := json.Marshal(input)
	if err != nil {
		t.Fatal(err)
	}
	if err := tool.NewValidator().Validate(tl, raw); err != nil {
		t.Fatalf("%s input %s rejected: %v", tl.Name(), raw, err)
	}
	return tl.Call(t.Context(), env, raw)
}

// render shows a result the way a golden file stores it, with the cwd replaced by $ROOT.
func render(res tool.Result, root string) string {
	var b strings.Builder
	if res.IsError {
		b.WriteString("[is_error]\n")
	}
	for _, blk := range res.Content {
		switch blk.Type {
		case message.TypeText:
			b.WriteString(blk.Text)
		case message.TypeImage:
			fmt.Fprintf(&b, "[image %s, %d base64 chars]", blk.Source.MediaType, len(blk.Source.Data))
		}
		b.WriteString("\n")
	}
	return strings.ReplaceAll(b.String(), root, "$ROOT")
}

// golden compares got with testdata/name.golden, or rewrites it with -update.
func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", name+".golden")
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("%s mismatch (-want +got):\n%s", path, diff)
	}
}

// writeFiles creates files (path → content) below dir.
func writeFiles(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	for p, c := range files {
		full := filepath.Join(dir, p)
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, []byte(c), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func readFile(t testing.TB, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
