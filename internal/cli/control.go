package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/keel-dev/keel/internal/permission"
)

// lockedWriter serialises whole-line writes from the renderer and the control protocol.
type lockedWriter struct {
	// mu guards w.
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// control speaks the stream-json control protocol on stdin/stdout: user messages come in
// as prompts, permission questions go out as can_use_tool control requests and their
// control responses come back. One goroutine reads stdin and sorts the lines.
type control struct {
	out *lockedWriter

	// mu guards next, pending and early.
	mu      sync.Mutex
	next    int
	pending map[string]chan controlAnswer
	// early holds responses that arrived before their request was sent (a scripted stdin).
	early map[string]controlAnswer

	prompts chan promptLine
}

type promptLine struct {
	text string
	err  error
}

type controlAnswer struct {
	Behavior     string          `json:"behavior"`
	UpdatedInput json.RawMessage `json:"updatedInput,omitempty"`
	Message      string          `json:"message,omitempty"`
}

func newControl(in io.Reader, out *lockedWriter) *control {
	// Buffered so a burst of user lines never blocks the reader while a control response
	// waits behind them.
	c := &control{out: out, pending: map[string]chan controlAnswer{}, early: map[string]controlAnswer{}, prompts: make(chan promptLine, 256)}
	go c.read(bufio.NewReader(in))
	return c
}

// read sorts stdin's lines until EOF; it owns the prompts channel.
func (c *control) read(br *bufio.Reader) {
	defer close(c.prompts)
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			c.handle(line)
		}
		if err == io.EOF {
			return
		}
		if err != nil {
			c.prompts <- promptLine{err: fmt.Errorf("read stdin: %w", err)}
			return
		}
	}
}

func (c *control) handle(line []byte) {
	var msg struct {
		Type    string `json:"type"`
		Message struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
		Response struct {
			RequestID string        `json:"request_id"`
			Subtype   string        `json:"subtype"`
			Error     string        `json:"error"`
			Response  controlAnswer `json:"response"`
		} `json:"response"`
	}
	if len(trimSpace(line)) == 0 {
		return
	}
	if err := json.Unmarshal(line, &msg); err != nil {
		c.prompts <- promptLine{err: fmt.Errorf("stdin: line is not JSON: %v", err)}
		return
	}
	switch msg.Type {
	case "user":
		text, err := contentText(msg.Message.Content)
		c.prompts <- promptLine{text: text, err: err}
	case "control_response":
		ans := msg.Response.Response
		if msg.Response.Subtype == "error" {
			ans = controlAnswer{Behavior: "deny", Message: msg.Response.Error}
		}
		c.mu.Lock()
		ch := c.pending[msg.Response.RequestID]
		delete(c.pending, msg.Response.RequestID)
		if ch == nil {
			c.early[msg.Response.RequestID] = ans
		}
		c.mu.Unlock()
		if ch != nil {
			ch <- ans
		}
	}
}

// nextPrompt returns the next user message, or ok=false at the end of stdin.
func (c *control) nextPrompt() (string, bool, error) {
	p, ok := <-c.prompts
	if !ok {
		return "", false, nil
	}
	return p.text, p.err == nil, p.err
}

// Ask sends a can_use_tool control request and waits for its response.
func (c *control) Ask(ctx context.Context, r permission.AskRequest) (permission.Answer, error) {
	ch := make(chan controlAnswer, 1)
	c.mu.Lock()
	c.next++
	id := "keel_req_" + strconv.Itoa(c.next)
	if ans, ok := c.early[id]; ok {
		delete(c.early, id)
		ch <- ans
	} else {
		c.pending[id] = ch
	}
	c.mu.Unlock()
	input := r.Request.Input
	if len(input) == 0 {
		input = json.RawMessage("{}")
	}
	suggestions := make([]string, 0, len(r.Suggestions))
	for _, s := range r.Suggestions {
		suggestions = append(suggestions, s.String())
	}
	type canUseTool struct {
		Subtype     string          `json:"subtype"`
		ToolName    string          `json:"tool_name"`
		Input       json.RawMessage `json:"input"`
		ToolUseID   string          `json:"tool_use_id,omitempty"`
		Suggestions []string        `json:"permission_suggestions"`
		Reason      string          `json:"reason,omitempty"`
		Agent       string          `json:"agent,omitempty"`
		AgentID     string          `json:"agent_id,omitempty"`
	}
	req := struct {
		Type      string     `json:"type"`
		RequestID string     `json:"request_id"`
		Request   canUseTool `json:"request"`
	}{"control_request", id, canUseTool{"can_use_tool", r.Request.Tool, input, r.Request.ToolUseID, suggestions, r.Reason, r.Agent.Name, r.Agent.ID}}
	b, err := json.Marshal(req)
	if err != nil {
		return permission.Answer{}, err
	}
	if _, err := c.out.Write(append(b, '\n')); err != nil {
		return permission.Answer{}, err
	}
	select {
	case ans := <-ch:
		if ans.Behavior == "allow" {
			return permission.AllowOnce(), nil
		}
		msg := ans.Message
		if msg == "" {
			msg = "denied by the controlling program"
		}
		return permission.DenyAnswer(msg), nil
	case <-ctx.Done():
		c.mu.Lock()
		delete(c.pending, id)
		c.mu.Unlock()
		return permission.DenyAnswer("interrupted"), nil
	}
}

func trimSpace(b []byte) []byte {
	for len(b) > 0 && (b[0] == ' ' || b[0] == '\n' || b[0] == '\r' || b[0] == '\t') {
		b = b[1:]
	}
	for len(b) > 0 && (b[len(b)-1] == ' ' || b[len(b)-1] == '\n' || b[len(b)-1] == '\r' || b[len(b)-1] == '\t') {
		b = b[:len(b)-1]
	}
	return b
}
