package anthropic

import (
	"encoding/json"
	"fmt"

	"github.com/keel-dev/keel/internal/message"
)

// DecodeMessages reads the messages of a Messages API request body, as [EncodeRequest] wrote
// them, back into keel's shapes. The API takes a message's or a tool_result's content as a
// string or as blocks, and EncodeRequest sends a tool_result holding one plain text block as
// a string; either way the string comes back as one text block.
func DecodeMessages(body []byte) ([]message.Message, error) {
	var req struct {
		Messages []wireMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return nil, fmt.Errorf("decode request messages: %w", err)
	}
	out := make([]message.Message, len(req.Messages))
	for i, m := range req.Messages {
		content, err := m.Content.blocks()
		if err != nil {
			return nil, fmt.Errorf("decode message %d: %w", i, err)
		}
		out[i] = message.Message{Role: m.Role, Content: content}
	}
	return out, nil
}

type wireMessage struct {
	Role    message.Role `json:"role"`
	Content wireContent  `json:"content"`
}

// wireContent is a content as the API takes it: a string or a list of blocks.
type wireContent json.RawMessage

func (c *wireContent) UnmarshalJSON(b []byte) error {
	*c = append((*c)[:0], b...)
	return nil
}

func (c wireContent) blocks() ([]message.Block, error) {
	if len(c) == 0 || string(c) == "null" {
		return nil, nil
	}
	var s string
	if json.Unmarshal(c, &s) == nil {
		return []message.Block{message.Text(s)}, nil
	}
	var fields []map[string]json.RawMessage
	if err := json.Unmarshal(c, &fields); err != nil {
		return nil, err
	}
	out := make([]message.Block, len(fields))
	for i, f := range fields {
		// A content nested in a block (a tool_result's) may be a string too: it is read
		// apart from the rest of the block, which message.Block decodes as it is.
		inner := wireContent(f["content"])
		delete(f, "content")
		rest, err := json.Marshal(f)
		if err == nil {
			err = json.Unmarshal(rest, &out[i])
		}
		if err == nil {
			out[i].Content, err = inner.blocks()
		}
		if err != nil {
			return nil, fmt.Errorf("block %d: %w", i, err)
		}
	}
	return out, nil
}
