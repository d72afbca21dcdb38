package transcript

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"

	"github.com/keel-dev/keel/internal/message"
)

// exportDoc is the JSON export: the live conversation with its metadata.
type exportDoc struct {
	SessionID string                   `json:"sessionId"`
	Title     string                   `json:"title,omitempty"`
	Metadata  map[Type]json.RawMessage `json:"metadata,omitempty"`
	Entries   []Entry                  `json:"entries"`
}

// ExportJSON writes the live conversation of st as one JSON document.
func ExportJSON(w io.Writer, st *State) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	doc := exportDoc{SessionID: st.SessionID, Title: st.Title(), Metadata: st.Metadata, Entries: st.Chain}
	if doc.Entries == nil {
		doc.Entries = []Entry{}
	}
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("export session %s: %w", st.SessionID, err)
	}
	return nil
}

// ExportMarkdown writes the live conversation of st for reading: one section per message,
// tool calls and results in fenced blocks. Thinking is left out.
func ExportMarkdown(w io.Writer, st *State) error {
	bw := bufio.NewWriter(w)
	title := st.Title()
	if title == "" {
		title = "Session " + st.SessionID
	}
	fmt.Fprintf(bw, "# %s\n", title)
	for _, e := range st.Chain {
		switch e.Type {
		case TypeSummary:
			fmt.Fprintf(bw, "\n## Summary of earlier conversation\n\n%s\n", e.Summary)
		case TypeSystem:
			fmt.Fprintf(bw, "\n> system (%s): %s\n", e.Subtype, e.Text)
		case TypeUser, TypeAssistant:
			if e.Message == nil {
				continue
			}
			who := "User"
			if e.Type == TypeAssistant {
				who = "Assistant"
			}
			fmt.Fprintf(bw, "\n## %s\n<!-- uuid: %s -->\n", who, e.UUID)
			writeBlocks(bw, e.Message.Content)
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export session %s: %w", st.SessionID, err)
	}
	return nil
}

func writeBlocks(w io.Writer, blocks []message.Block) {
	for _, b := range blocks {
		switch b.Type {
		case message.TypeText:
			fmt.Fprintf(w, "\n%s\n", b.Text)
		case message.TypeToolUse:
			fmt.Fprintf(w, "\n**Tool call: %s** (`%s`)\n\n%s\n", b.Name, b.ID, fence("json", string(b.Input)))
		case message.TypeToolResult:
			label := "Tool result"
			if b.IsError {
				label = "Tool error"
			}
			var text strings.Builder
			for _, c := range b.Content {
				if c.Type == message.TypeText {
					text.WriteString(c.Text)
				} else {
					fmt.Fprintf(&text, "[%s]", c.Type)
				}
			}
			fmt.Fprintf(w, "\n**%s** (`%s`)\n\n%s\n", label, b.ToolUseID, fence("", text.String()))
		case message.TypeImage:
			fmt.Fprintf(w, "\n[image]\n")
		}
	}
}

// fence wraps s in a code fence longer than any backtick run inside it.
func fence(lang, s string) string {
	n, run := 3, 0
	for _, c := range s {
		if c == '`' {
			run++
			n = max(n, run+1)
		} else {
			run = 0
		}
	}
	f := strings.Repeat("`", n)
	return f + lang + "\n" + strings.TrimSuffix(s, "\n") + "\n" + f
}
