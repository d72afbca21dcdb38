package plugin

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/frontmatter"
)

// OutputStyle is one output style a plugin brings: a markdown file whose body is the style's
// instructions. The session offers them beside the settings' own styles (outputStyle,
// /output-style).
type OutputStyle struct {
	// Name is plugin:<name>, where <name> is the file's name without .md.
	Name string
	// DisplayName is the frontmatter's name ("Ralph Iteration"), else the file's name.
	DisplayName string
	Description string
	// KeepCodingInstructions says the style adds to keel's coding instructions instead of
	// replacing them.
	KeepCodingInstructions bool
	Path                   string
	Body                   string
}

// loadOutputStyles reads an output-styles folder (its *.md files, not its sub-folders: those
// hold fragments a style's generator includes, like task-orchestrator's _fragments/) or one
// style file.
func loadOutputStyles(pr *problems, plugin, path string) []OutputStyle {
	files := []string{path}
	if isDir(path) {
		entries, err := os.ReadDir(path)
		if err != nil {
			pr.errorf(ErrComponent, path, 0, "outputStyles", "read output styles: %v", err)
			return nil
		}
		files = files[:0]
		for _, e := range entries {
			if !e.IsDir() && strings.EqualFold(filepath.Ext(e.Name()), ".md") {
				files = append(files, filepath.Join(path, e.Name()))
			}
		}
	}
	var out []OutputStyle
	for _, f := range files {
		if s, ok := readOutputStyle(pr, plugin, f); ok {
			out = append(out, s)
		}
	}
	return out
}

func readOutputStyle(pr *problems, plugin, file string) (OutputStyle, bool) {
	data, err := os.ReadFile(file)
	if err != nil {
		pr.errorf(ErrComponent, file, 0, "outputStyles", "read output style: %v", err)
		return OutputStyle{}, false
	}
	base := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
	doc := frontmatter.Split(data)
	s := OutputStyle{Name: plugin + ":" + base, DisplayName: base, Path: file, Body: strings.TrimSpace(string(doc.Body))}
	fields, serr := doc.Fields()
	if serr != nil {
		pr.warnf(ErrComponent, file, serr.Line, "", "frontmatter is not valid YAML (%s); read line by line", serr.Msg)
	}
	for _, f := range fields {
		switch f.Key {
		case "name":
			if v := strings.TrimSpace(fmt.Sprint(f.Value)); f.Value != nil && v != "" {
				s.DisplayName = v
			}
		case "description":
			if f.Value != nil {
				s.Description = strings.TrimSpace(fmt.Sprint(f.Value))
			}
		case "keep-coding-instructions":
			s.KeepCodingInstructions = fmt.Sprint(f.Value) == "true"
		}
	}
	return s, true
}
