// Package outputstyle finds the output styles a session may answer in, as Claude Code defines
// them: the built-in Explanatory and Learning, and Markdown files in output-styles directories
// (name, description and keep-coding-instructions in the frontmatter, the instructions in the
// body). A style changes the system prompt: internal/prompt drops the concise-output section
// (and, unless the style keeps them, the coding instructions) and adds the style's text.
package outputstyle

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/atomicfile"
	"github.com/keel-dev/keel/internal/frontmatter"
)

// Default is the name of the style keel answers in without one: its own system prompt.
const Default = "default"

// Style is one output style.
type Style struct {
	Name        string
	Description string
	// Prompt is added at the end of the system prompt.
	Prompt string
	// KeepCodingInstructions keeps keel's software-engineering instructions in the prompt;
	// without it the style replaces them (a writing assistant, a data analyst).
	KeepCodingInstructions bool
	// Source is "built-in" or the file the style was read from.
	Source string
}

// Dir is a directory of style files; later directories in a list override earlier ones by
// name (user, then project).
type Dir struct {
	Path string
	// Refuse, when set, says why a style file must not be read into the prompt (a Read deny
	// rule, a sandbox mask: a project's style may be a link to a secret), or "" when it may;
	// a refused file is one of Load's problems.
	Refuse func(path string) string
}

// Load returns the built-in styles followed by those of dirs, a later style replacing an
// earlier one of the same name, sorted by name after the built-ins; the problems are the
// files that could not be read, each error naming its file. A missing directory has no styles.
func Load(dirs []Dir) ([]Style, []error) {
	out := Builtin()
	var errs []error
	for _, d := range dirs {
		entries, err := os.ReadDir(d.Path)
		if errors.Is(err, fs.ErrNotExist) {
			continue
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("read output styles in %s: %w", d.Path, err))
			continue
		}
		for _, e := range entries {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".md") {
				continue
			}
			path := filepath.Join(d.Path, e.Name())
			// Resolved once: the refusal judges, and parse opens with no link allowed on the
			// way, the same file — a link swapped in between would otherwise be read.
			real, err := filepath.EvalSymlinks(path)
			if err != nil {
				errs = append(errs, fmt.Errorf("read output style %s: %w", path, err))
				continue
			}
			if d.Refuse != nil {
				why := d.Refuse(path)
				if why == "" && real != path {
					why = d.Refuse(real)
				}
				if why != "" {
					errs = append(errs, fmt.Errorf("output style %s is not read: %s", path, why))
					continue
				}
			}
			st, err := parse(path, real)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			if i := slices.IndexFunc(out, func(s Style) bool { return strings.EqualFold(s.Name, st.Name) }); i >= 0 {
				out[i] = st
			} else {
				out = append(out, st)
			}
		}
	}
	n := len(Builtin())
	slices.SortStableFunc(out[n:], func(a, b Style) int { return strings.Compare(strings.ToLower(a.Name), strings.ToLower(b.Name)) })
	return out, errs
}

// Find returns the style called name (case aside); "" and "default" are the default style,
// which has no prompt.
func Find(styles []Style, name string) (Style, bool) {
	if name == "" || strings.EqualFold(name, Default) {
		return Style{Name: Default, KeepCodingInstructions: true}, true
	}
	i := slices.IndexFunc(styles, func(s Style) bool { return strings.EqualFold(s.Name, name) })
	if i < 0 {
		return Style{}, false
	}
	return styles[i], true
}

// Names lists the styles' names, the default first, for messages that list the choices.
func Names(styles []Style) []string {
	out := []string{Default}
	for _, s := range styles {
		out = append(out, s.Name)
	}
	return out
}

// maxStyleBytes bounds what one style file may add to the system prompt.
const maxStyleBytes = 1 << 20

// parse reads the style file at path, whose links resolve to real: real is what is opened,
// regular files only and without waiting on a FIFO.
func parse(path, real string) (Style, error) {
	data, err := atomicfile.ReadRegular(real, maxStyleBytes)
	if err != nil {
		return Style{}, fmt.Errorf("read output style %s: %w", path, err)
	}
	doc := frontmatter.Split(data)
	st := Style{Name: strings.TrimSuffix(filepath.Base(path), ".md"), Prompt: strings.TrimSpace(string(doc.Body)), Source: path}
	fields, serr := doc.Fields()
	if serr != nil && len(fields) == 0 {
		return Style{}, fmt.Errorf("output style %s: %w", path, serr)
	}
	for _, f := range fields {
		switch f.Key {
		case "name":
			if v := strings.TrimSpace(fmt.Sprint(f.Value)); v != "" {
				st.Name = v
			}
		case "description":
			st.Description = strings.TrimSpace(fmt.Sprint(f.Value))
		case "keep-coding-instructions":
			st.KeepCodingInstructions = fmt.Sprint(f.Value) == "true"
		}
	}
	if st.Prompt == "" {
		return Style{}, fmt.Errorf("output style %s: no instructions after the frontmatter", path)
	}
	return st, nil
}
