package embed

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/keeltest"
)

// The model calls the program's own tool; its result comes back and the model answers
// with it — all against keel's scripted model, offline.
func TestWordCount(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "notes.txt"), []byte("one two three four\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	model, err := keeltest.Start(t.Context(),
		keeltest.Rule{When: keeltest.Match{UserText: "how long"}, Reply: []keeltest.Block{keeltest.ToolUse("WordCount", map[string]string{"path": "notes.txt"})}},
		keeltest.Rule{When: keeltest.Match{ToolResult: "WordCount", Contains: "has 4 words"}, Reply: []keeltest.Block{keeltest.Text("The notes are four words long.")}},
		keeltest.Rule{Reply: []keeltest.Block{keeltest.Text("the tool did not answer as expected")}},
	)
	if err != nil {
		t.Fatal(err)
	}
	defer model.Close()
	answer, err := Ask(t.Context(), model.Options(dir, t.TempDir()), "how long are my notes?")
	if err != nil {
		t.Fatal(err)
	}
	if answer != "The notes are four words long." {
		t.Errorf("answer %q", answer)
	}
	var called bool
	for _, r := range model.Requests() {
		called = called || strings.Contains(string(r.Body), `"name":"WordCount"`)
	}
	if !called {
		t.Error("the tool was never offered to the model")
	}
}
