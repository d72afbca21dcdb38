package control

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// inLine is one stdin line, decoded only as far as routing needs.
type inLine struct {
	Type      string          `json:"type"`
	RequestID string          `json:"request_id"`
	Request   json.RawMessage `json:"request"`
	Response  *responseBody   `json:"response"`
	Message   json.RawMessage `json:"message"`
	UUID      string          `json:"uuid"`
}

// responseBody is the response member of a control_response, either way.
type responseBody struct {
	Subtype   string          `json:"subtype"`
	RequestID string          `json:"request_id"`
	Response  json.RawMessage `json:"response,omitempty"`
	Error     string          `json:"error,omitempty"`
}

type controlResponse struct {
	Type     string       `json:"type"`
	Response responseBody `json:"response"`
}

type controlRequest struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
	Request   any    `json:"request"`
}

type cancelRequest struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id"`
}

// writer serialises whole-line writes to stdout: the renderer's message lines and the
// protocol's own, from the turn, the dispatcher and tool goroutines.
type writer struct {
	// mu guards w.
	mu sync.Mutex
	w  io.Writer
}

// Write writes p, which must be whole lines, in one call.
func (w *writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.w.Write(p)
}

func (w *writer) line(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Errorf("encode control line: %w", err)
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

func (w *writer) success(id string, v any) error {
	if v == nil {
		v = struct{}{}
	}
	b, err := json.Marshal(v)
	if err != nil {
		return w.failure(id, fmt.Errorf("encode response: %w", err))
	}
	return w.line(controlResponse{Type: "control_response", Response: responseBody{Subtype: "success", RequestID: id, Response: b}})
}

func (w *writer) failure(id string, err error) error {
	return w.line(controlResponse{Type: "control_response", Response: responseBody{Subtype: "error", RequestID: id, Error: err.Error()}})
}

// errSDKGone answers requests to the SDK after its end of stdin closed: nobody can answer.
var errSDKGone = errors.New("the controlling program closed stdin")

// outbox sends the CLI's own control requests and matches their responses.
type outbox struct {
	w *writer

	// onUnknown is told about a response to no request keel made or still waits for.
	onUnknown func(id string)

	// mu guards next, pending, early and closed.
	mu      sync.Mutex
	next    int
	pending map[string]chan responseBody
	// early holds responses to ids keel has not used yet: a program that answers from a
	// script, ahead of time. Ids are sequential so such a script can know them.
	early  map[string]responseBody
	closed bool
}

func newOutbox(w *writer) *outbox {
	return &outbox{w: w, pending: map[string]chan responseBody{}, early: map[string]responseBody{}}
}

// requestPrefix starts the ids of keel's requests: keel_req_1, keel_req_2, …
const requestPrefix = "keel_req_"

// request sends req with the next id and waits for its response. When ctx ends first the
// SDK is told with a control_cancel_request and ctx's cause is returned.
func (o *outbox) request(ctx context.Context, req any) (json.RawMessage, error) {
	ch := make(chan responseBody, 1)
	o.mu.Lock()
	o.next++
	id := requestPrefix + strconv.Itoa(o.next)
	if r, ok := o.early[id]; ok {
		delete(o.early, id)
		ch <- r
	} else if o.closed {
		o.mu.Unlock()
		return nil, errSDKGone
	} else {
		o.pending[id] = ch
	}
	o.mu.Unlock()
	if err := o.w.line(controlRequest{Type: "control_request", RequestID: id, Request: req}); err != nil {
		o.forget(id)
		return nil, err
	}
	select {
	case r, ok := <-ch:
		if !ok {
			return nil, errSDKGone
		}
		if r.Subtype == "error" {
			return nil, fmt.Errorf("%s", r.Error)
		}
		return r.Response, nil
	case <-ctx.Done():
		if o.forget(id) {
			_ = o.w.line(cancelRequest{Type: "control_cancel_request", RequestID: id})
		}
		return nil, context.Cause(ctx)
	}
}

// post sends req with the next id and does not wait: for a request whose answer cannot come
// (stdin has ended) but whose delivery still matters.
func (o *outbox) post(req any) error {
	o.mu.Lock()
	o.next++
	id := requestPrefix + strconv.Itoa(o.next)
	o.mu.Unlock()
	return o.w.line(controlRequest{Type: "control_request", RequestID: id, Request: req})
}

// isClosed reports whether stdin has ended.
func (o *outbox) isClosed() bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.closed
}

// forget drops a pending request; it reports whether it was still pending.
func (o *outbox) forget(id string) bool {
	o.mu.Lock()
	defer o.mu.Unlock()
	_, ok := o.pending[id]
	delete(o.pending, id)
	return ok
}

// deliver routes a control_response from stdin to its request.
func (o *outbox) deliver(r responseBody) {
	o.mu.Lock()
	ch, ok := o.pending[r.RequestID]
	delete(o.pending, r.RequestID)
	ahead := false
	if n, err := strconv.Atoi(strings.TrimPrefix(r.RequestID, requestPrefix)); !ok && err == nil && strings.HasPrefix(r.RequestID, requestPrefix) && n > o.next {
		o.early[r.RequestID], ahead = r, true
	}
	o.mu.Unlock()
	switch {
	case ok:
		ch <- r
	case !ahead && o.onUnknown != nil:
		o.onUnknown(r.RequestID)
	}
}

// close fails every pending request and every later one not answered ahead of time: stdin
// is gone.
func (o *outbox) close() (hadPending bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.closed = true
	for id, ch := range o.pending {
		close(ch)
		delete(o.pending, id)
		hadPending = true
	}
	return hadPending
}

// unused reports the responses that arrived ahead of time for requests never made.
func (o *outbox) unused() {
	o.mu.Lock()
	ids := make([]string, 0, len(o.early))
	for id := range o.early {
		ids = append(ids, id)
	}
	clear(o.early)
	o.mu.Unlock()
	slices.Sort(ids)
	for _, id := range ids {
		if o.onUnknown != nil {
			o.onUnknown(id)
		}
	}
}
