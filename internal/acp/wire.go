package acp

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
)

// maxLine is the longest message passed to the SDK's connection, whose reader gives up on the
// whole connection past 10 MiB; a longer one is answered with an error and dropped instead.
const maxLine = 10<<20 - 1

// The JSON-RPC error codes the guard answers with.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// lockedWriter serialises whole messages from the SDK's connection and from the guard onto
// one stream: each Write is one message.
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

// guard stands between the client's stream and the SDK's connection, which drops malformed
// lines silently and knows no initialisation order. It answers what the JSON-RPC and ACP
// specifications say with the error they name — a line that is not JSON (-32700), a batch,
// a value that is not a message object, and any request but initialize before initialize
// succeeded (-32600, as the protocol's own TypeScript agent does) — and passes the rest on.
type guard struct {
	out         io.Writer
	initialized atomic.Bool
	logger      *slog.Logger
}

// envelope is what the guard reads of a message.
type envelope struct {
	JSONRPC string           `json:"jsonrpc"`
	ID      *json.RawMessage `json:"id"`
	Method  *string          `json:"method"`
	Result  json.RawMessage  `json:"result"`
	Error   json.RawMessage  `json:"error"`
}

// pipe copies the valid messages of in to the returned reader, once start is closed; the
// reader ends when in does.
func (g *guard) pipe(in io.Reader, start <-chan struct{}) io.Reader {
	pr, pw := io.Pipe()
	go func() {
		<-start
		err := g.copy(in, pw)
		pw.CloseWithError(err)
	}()
	return pr
}

func (g *guard) copy(in io.Reader, to io.Writer) error {
	r := bufio.NewReaderSize(in, 64<<10)
	for {
		line, err := readLine(r)
		if len(bytes.TrimSpace(line)) > 0 {
			if pass := g.check(line); pass != nil {
				if _, werr := to.Write(append(pass, '\n')); werr != nil {
					return werr
				}
			}
		}
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

// readLine reads one line without its newline; a line past maxLine is returned cut to its
// first maxLine+1 bytes (so check sees it is too long), the rest skipped.
func readLine(r *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line) <= maxLine {
			line = append(line, chunk...)
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		return bytes.TrimSuffix(line, []byte("\n")), err
	}
}

// check returns the line to pass on, or nil after answering it.
func (g *guard) check(line []byte) []byte {
	if len(line) > maxLine {
		g.reply(nil, codeInvalidRequest, fmt.Sprintf("Invalid request: message over %d bytes", maxLine))
		return nil
	}
	trimmed := bytes.TrimSpace(line)
	if !json.Valid(trimmed) {
		g.logger.Warn("acp: a message is not JSON", "bytes", len(trimmed))
		g.reply(nil, codeParseError, "Parse error")
		return nil
	}
	switch trimmed[0] {
	case '{':
	case '[':
		g.reply(nil, codeInvalidRequest, "Invalid request: JSON-RPC batches are not supported")
		return nil
	default:
		g.reply(nil, codeInvalidRequest, "Invalid request: not a JSON-RPC message object")
		return nil
	}
	var m envelope
	if err := json.Unmarshal(trimmed, &m); err != nil {
		g.reply(nil, codeInvalidRequest, "Invalid request: "+err.Error())
		return nil
	}
	if m.ID != nil && !validID(*m.ID) {
		g.reply(nil, codeInvalidRequest, "Invalid request: id must be a string, a number or null")
		return nil
	}
	isResponse := m.Method == nil && m.ID != nil && (m.Result != nil || m.Error != nil)
	if m.JSONRPC != "2.0" || (m.Method == nil && !isResponse) {
		g.reply(m.ID, codeInvalidRequest, `Invalid request: not a JSON-RPC 2.0 request, notification or response (jsonrpc must be "2.0")`)
		return nil
	}
	if m.Method != nil && !g.initialized.Load() && *m.Method != "initialize" {
		if m.ID == nil {
			g.logger.Warn("acp: notification before initialize dropped", "method", *m.Method)
			return nil
		}
		g.reply(m.ID, codeInvalidRequest, fmt.Sprintf("Invalid request: ACP connection must be initialized before '%s'", *m.Method))
		return nil
	}
	return trimmed
}

func validID(raw json.RawMessage) bool {
	switch bytes.TrimSpace(raw)[0] {
	case '"', 'n', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return true
	}
	return false
}

// errorReply is a JSON-RPC error response.
type errorReply struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Error   replyError      `json:"error"`
}

type replyError struct {
	Code    int    `json:"code"`
	Message string `json:"message"`
}

// reply writes an error response; id nil answers with id null, as JSON-RPC says for a message
// whose id could not be read.
func (g *guard) reply(id *json.RawMessage, code int, msg string) {
	r := errorReply{JSONRPC: "2.0", ID: json.RawMessage("null"), Error: replyError{Code: code, Message: msg}}
	if id != nil {
		r.ID = *id
	}
	b, err := json.Marshal(r)
	if err != nil {
		g.logger.Error("acp: error reply not encoded", "err", err)
		return
	}
	if _, err := g.out.Write(append(b, '\n')); err != nil {
		g.logger.Debug("acp: error reply not written", "err", err)
	}
}
