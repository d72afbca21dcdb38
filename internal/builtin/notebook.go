package builtin

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/tool"
)

// notebook is the part of the Jupyter format (nbformat 4) Read shows.
type notebook struct {
	Cells []struct {
		CellType string          `json:"cell_type"`
		ID       string          `json:"id"`
		Source   multiline       `json:"source"`
		Outputs  []notebookOuput `json:"outputs"`
	} `json:"cells"`
}

type notebookOuput struct {
	OutputType string               `json:"output_type"`
	Text       multiline            `json:"text"`
	Data       map[string]multiline `json:"data"`
	EName      string               `json:"ename"`
	EValue     string               `json:"evalue"`
}

// multiline is nbformat's string-or-list-of-strings.
type multiline string

func (m *multiline) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*m = multiline(s)
		return nil
	}
	var parts []string
	if err := json.Unmarshal(b, &parts); err != nil {
		return err
	}
	*m = multiline(strings.Join(parts, ""))
	return nil
}

// readNotebook shows each cell's source and its outputs as text; image outputs (PNG, JPEG)
// follow as image blocks.
func readNotebook(env *tool.Env, t target, f *os.File, info os.FileInfo) tool.Result {
	data, err := io.ReadAll(io.LimitReader(f, 64<<20))
	if err != nil {
		return tool.Errorf("Cannot read %s: %v", t.abs, err)
	}
	var nb notebook
	if err := json.Unmarshal(data, &nb); err != nil {
		return tool.Errorf("%s is not a valid Jupyter notebook: %v. Read it as text with Bash (`cat`).", t.abs, err)
	}
	var out strings.Builder
	var images []message.Block
	for i, c := range nb.Cells {
		// Cells of notebooks older than nbformat 4.5 have no id; NotebookEdit takes cell-N.
		id := c.ID
		if id == "" {
			id = fmt.Sprintf("cell-%d", i)
		}
		fmt.Fprintf(&out, "<cell id=%q type=%s>\n%s\n</cell>\n", id, c.CellType, strings.TrimRight(string(c.Source), "\n"))
		for _, o := range c.Outputs {
			text := string(o.Text)
			switch {
			case o.OutputType == "error":
				text = o.EName + ": " + o.EValue
			case text == "" && o.Data != nil:
				text = string(o.Data["text/plain"])
			}
			for _, mt := range []string{"image/png", "image/jpeg"} {
				if img, ok := o.Data[mt]; ok {
					b64 := strings.ReplaceAll(string(img), "\n", "")
					if _, err := base64.StdEncoding.DecodeString(b64); err == nil {
						images = append(images, message.Block{Type: message.TypeImage, Source: &message.ImageSource{Type: "base64", MediaType: mt, Data: b64}})
						text = strings.TrimSpace(text + fmt.Sprintf("\n[%s image %d below]", mt, len(images)))
					}
				}
			}
			if text != "" {
				fmt.Fprintf(&out, "<output>\n%s\n</output>\n", strings.TrimRight(text, "\n"))
			}
		}
	}
	if out.Len() > maxReadBytes {
		return tool.Errorf("%s renders to %d KB, over the %d KB Read returns at once. Inspect it with Bash (e.g. `jq '.cells[0:10]' %s`).",
			t.abs, out.Len()>>10, maxReadBytes>>10, t.abs)
	}
	if recordRead(env, t, tool.FileRead{ModTime: info.ModTime(), Size: info.Size(), Hash: hashOf(data), View: "notebook"}) {
		return tool.Text(unchangedStub)
	}
	if len(nb.Cells) == 0 {
		out.WriteString("The notebook has no cells.")
	}
	return tool.Result{Content: append([]message.Block{message.Text(strings.TrimRight(out.String(), "\n"))}, images...)}
}
