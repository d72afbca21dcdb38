package builtin

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/keel-dev/keel/internal/tool"
)

type notebookEditInput struct {
	NotebookPath string `json:"notebook_path"`
	CellID       string `json:"cell_id,omitempty"`
	NewSource    string `json:"new_source"`
	CellType     string `json:"cell_type,omitempty"`
	EditMode     string `json:"edit_mode,omitempty"`
}

const notebookEditSchema = `{"type":"object","properties":{
"notebook_path":{"type":"string","description":"Path of the .ipynb file (absolute, or relative to the working directory)"},
"cell_id":{"type":"string","description":"Id of the cell to change (as Read shows it); for insert, the new cell goes after it, or first when omitted"},
"new_source":{"type":"string","description":"The new source of the cell"},
"cell_type":{"type":"string","enum":["code","markdown"],"description":"The cell's type; required for insert, changes the type on replace"},
"edit_mode":{"type":"string","enum":["replace","insert","delete"],"description":"replace (default), insert or delete"}},
"required":["notebook_path","new_source"],"additionalProperties":false}`

// maxNotebookBytes bounds the notebooks NotebookEdit loads (outputs with images grow large).
const maxNotebookBytes = 64 << 20

// NotebookEdit returns the NotebookEdit tool: it replaces, inserts or deletes one cell of a
// Jupyter notebook the agent has read, by cell id. Everything else in the file — outputs,
// metadata, key order, indentation, line endings — keeps its bytes. Rarely needed, so deferred.
func NotebookEdit() tool.Tool {
	return deferred{tool.New(tool.Spec[notebookEditInput]{
		Name:        "NotebookEdit",
		Description: description("NotebookEdit"),
		Schema:      []byte(notebookEditSchema),
		Run:         runNotebookEdit,
	})}
}

// deferred marks a tool as rarely needed (see [tool.Deferrable]).
type deferred struct{ tool.Tool }

func (deferred) DeferLoading() bool { return true }

func runNotebookEdit(ctx context.Context, env *tool.Env, in notebookEditInput) tool.Result {
	mode := in.EditMode
	if mode == "" {
		mode = "replace"
	}
	if in.NotebookPath == "" {
		return tool.Errorf("notebook_path is empty.")
	}
	t := checked(env, in.NotebookPath)
	if !strings.EqualFold(filepath.Ext(t.abs), ".ipynb") {
		return tool.Errorf("%s is not a Jupyter notebook (.ipynb). Use Edit for other files.", t.abs)
	}
	if res, ok := checkWritable(env.State, t); !ok {
		return res
	}
	info, err := os.Lstat(t.real) // the checked path has its links resolved: one now was swapped in
	switch {
	case info != nil && info.Mode()&os.ModeSymlink != 0:
		return linkNow(t, "changed")
	case notExist(err):
		return tool.Errorf("Notebook does not exist: %s. Create it with Write (an nbformat 4 JSON document), then edit its cells.", t.abs)
	case err != nil:
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	case info.IsDir():
		return tool.Errorf("%s is a directory.", t.abs)
	case info.Size() > maxNotebookBytes:
		return tool.Errorf("%s is %d MB, over the %d MB NotebookEdit loads. Clear its outputs (jupyter nbconvert --clear-output) or edit it with Bash.",
			t.abs, info.Size()>>20, maxNotebookBytes>>20)
	}
	data, err := readNoLinks(t.real)
	if err != nil {
		if res, ok := changed(t, err, "changed"); ok {
			return res
		}
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	if res, ok := checkFresh(env, t, data); !ok {
		return res
	}
	doc, err := parseNotebook(data)
	if err != nil {
		return tool.Errorf("%s cannot be edited as a notebook: %v. Nothing was changed; fix the file with Write or Bash.", t.abs, err)
	}
	out, res := editNotebook(doc, in, mode, t.abs)
	if res.IsError {
		return res
	}
	if _, err := parseNotebook(out); err != nil {
		// Only a bug gets here; refusing keeps the user's file intact.
		return tool.Errorf("NotebookEdit produced an invalid notebook (%v); %s was left unchanged.", err, t.abs)
	}
	if err := overwriteFile(t.real, out); err != nil {
		return writeFailed(t, err)
	}
	if info, err := os.Lstat(t.real); err == nil {
		recordWrite(env, t, out, info)
	}
	if o, ok := res.Output.(map[string]any); ok {
		o["notebook_path"] = t.abs
		o["language"] = notebookLanguage(data)
	}
	return res
}

// editNotebook applies one edit to doc and returns the new bytes, with the result to report.
func editNotebook(doc *nbDoc, in notebookEditInput, mode, path string) ([]byte, tool.Result) {
	find := func() (int, tool.Result, bool) {
		if in.CellID == "" {
			return 0, tool.Errorf("cell_id is required to %s a cell. Read the notebook to see the cell ids.", mode), false
		}
		i, ok := doc.cellIndex(in.CellID)
		if !ok {
			return 0, tool.Errorf("No cell with id %q in %s (%s). Read the notebook to see the cell ids; nothing was changed.",
				in.CellID, path, plural(len(doc.cells), "cell")), false
		}
		return i, tool.Result{}, true
	}
	output := func(id, cellType string) map[string]any {
		return map[string]any{"cell_id": id, "cell_type": cellType, "edit_mode": mode, "new_source": in.NewSource}
	}
	switch mode {
	case "replace":
		i, res, ok := find()
		if !ok {
			return nil, res
		}
		c := doc.cells[i]
		cellType := c.cellType
		var out []byte
		if in.CellType != "" && in.CellType != c.cellType {
			cellType = in.CellType
			out = splice(doc.data, c.start, c.end, doc.withType(i, in.CellType, in.NewSource))
		} else if src := c.member("source"); src != nil {
			out = splice(doc.data, src.valStart, src.valEnd, doc.renderSource(in.NewSource, src, indentBefore(doc.data, src.keyStart)))
		} else {
			out = splice(doc.data, c.start, c.end, doc.withType(i, cellType, in.NewSource))
		}
		return out, tool.Result{Content: tool.Text(fmt.Sprintf("Replaced the source of %s cell %s in %s.", cellType, in.CellID, path)).Content,
			Output: output(in.CellID, cellType)}
	case "insert":
		if in.CellType == "" {
			return nil, tool.Errorf("cell_type is required to insert a cell (code or markdown).")
		}
		at := -1 // insert after this cell; -1 is before the first
		if in.CellID != "" {
			i, res, ok := find()
			if !ok {
				return nil, res
			}
			at = i
		}
		id := ""
		if doc.usesIDs() {
			id = doc.newCellID(fmt.Sprintf("%d\x00%s\x00%s", at, in.CellType, in.NewSource))
		}
		out := doc.insertCell(at, doc.renderCell(doc.newCellFields(in.CellType, id, in.NewSource)))
		shown := id
		if shown == "" {
			shown = fmt.Sprintf("cell-%d", at+1)
		}
		where := "at the start of " + path
		if at >= 0 {
			where = fmt.Sprintf("after cell %s in %s", in.CellID, path)
		}
		return out, tool.Result{Content: tool.Text(fmt.Sprintf("Inserted %s cell %s %s.", in.CellType, shown, where)).Content,
			Output: output(shown, in.CellType)}
	case "delete":
		i, res, ok := find()
		if !ok {
			return nil, res
		}
		cellType := doc.cells[i].cellType
		return doc.deleteCell(i), tool.Result{Content: tool.Text(fmt.Sprintf("Deleted %s cell %s from %s (%s left).",
			cellType, in.CellID, path, plural(len(doc.cells)-1, "cell"))).Content, Output: output(in.CellID, cellType)}
	}
	return nil, tool.Errorf("edit_mode %q is not one of replace, insert, delete.", mode)
}

// insertCell puts the rendered cell after cell at (-1: first), with the separators and
// indentation the array already uses.
func (d *nbDoc) insertCell(at int, cell string) []byte {
	s := d.style
	sep, lead := s.comma, ""
	if s.unit != "" {
		sep = "," + s.nl + d.cellIndent()
		lead = s.nl + d.cellIndent()
	}
	switch {
	case len(d.cells) == 0:
		closing := ""
		if s.unit != "" {
			closing = s.nl + indentBefore(d.data, d.cellsClose)
			if indentBefore(d.data, d.cellsClose) == "" {
				closing = s.nl + s.unit
			}
		}
		return splice(d.data, d.cellsOpen+1, d.cellsClose, lead+cell+closing)
	case at < 0:
		first := d.cells[0].start
		return splice(d.data, first, first, cell+sep)
	default:
		end := d.cells[at].end
		return splice(d.data, end, end, sep+cell)
	}
}

// deleteCell removes cell i with one of the separators around it.
func (d *nbDoc) deleteCell(i int) []byte {
	switch {
	case len(d.cells) == 1:
		return splice(d.data, d.cellsOpen+1, d.cellsClose, "")
	case i < len(d.cells)-1:
		return splice(d.data, d.cells[i].start, d.cells[i+1].start, "")
	default:
		return splice(d.data, d.cells[i-1].end, d.cells[i].end, "")
	}
}

// notebookLanguage is the notebook's programming language, from its metadata; python when it
// says nothing, as Jupyter assumes.
func notebookLanguage(data []byte) string {
	var nb struct {
		Metadata struct {
			LanguageInfo struct {
				Name string `json:"name"`
			} `json:"language_info"`
			Kernelspec struct {
				Language string `json:"language"`
			} `json:"kernelspec"`
		} `json:"metadata"`
	}
	_ = json.Unmarshal(data, &nb)
	switch {
	case nb.Metadata.LanguageInfo.Name != "":
		return nb.Metadata.LanguageInfo.Name
	case nb.Metadata.Kernelspec.Language != "":
		return nb.Metadata.Kernelspec.Language
	}
	return "python"
}
