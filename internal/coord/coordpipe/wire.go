// Package coordpipe carries a [coord.Backend] over a pipe: a [Client] that is a backend, and
// a [Server] that serves any backend, speaking JSON lines over the two ends of a pipe (a
// companion process's stdin and stdout). keel opens NATS teams this way, through `keel-nats
// coord`, so that the keel binary does not link the NATS client: its package init and pages
// would cost every keel start, though few runs have a team on NATS.
//
// # Protocol
//
// One JSON value per line. The client writes requests {"id":N,"op":"board.claim","args":{…}};
// {"id":N,"cancel":true} cancels request N's context. The server answers each request once,
// {"id":N,"result":…} or {"id":N,"error":{"msg":…,"is":[…]}}: "is" names the sentinel errors
// (coord.ErrClaimed, context.Canceled, …) the error wraps, so that errors.Is holds on the
// client's side as on the server's. A watch's answer is followed by {"id":N,"signal":true} for
// each wake-up and {"id":N,"end":true} when its channel closes. {"state":{…}} lines say the
// server's connection dropped or came back. Before any of this the server writes one line:
// {"ready":true}, or {"error":…} when it could not open its backend.
package coordpipe

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/lazy"
)

// request is one line from client to server.
type request struct {
	ID     uint64 `json:"id"`
	Op     string `json:"op,omitempty"`
	Cancel bool   `json:"cancel,omitempty"`
	Args   *args  `json:"args,omitempty"`
}

// args are every operation's arguments; each uses the fields it needs.
type args struct {
	Member string        `json:"member,omitempty"`
	ID     string        `json:"taskID,omitempty"`
	Owner  string        `json:"owner,omitempty"`
	Key    string        `json:"key,omitempty"`
	To     string        `json:"to,omitempty"`
	Max    int           `json:"max,omitempty"`
	After  uint64        `json:"after,omitempty"`
	Rev    uint64        `json:"rev,omitempty"`
	Lease  time.Duration `json:"lease,omitempty"`
	IDs    []string      `json:"ids,omitempty"`
	// Value and Data cross as bytes (base64), not JSON: a value that is no JSON is the
	// backend's to refuse, and its bytes stay as they were.
	Value  []byte            `json:"value,omitempty"`
	Data   [][]byte          `json:"data,omitempty"`
	Task   *coord.Task       `json:"task,omitempty"`
	Change *coord.TaskChange `json:"change,omitempty"`
	Msg    *coord.Message    `json:"msg,omitempty"`
	Req    *coord.Request    `json:"req,omitempty"`
	Res    *coord.Resolution `json:"res,omitempty"`
}

// response is one line from server to client.
type response struct {
	ID     uint64          `json:"id,omitempty"`
	Ready  bool            `json:"ready,omitempty"`
	Result json.RawMessage `json:"result,omitempty"`
	Err    *wireError      `json:"error,omitempty"`
	Signal bool            `json:"signal,omitempty"`
	End    bool            `json:"end,omitempty"`
	State  *wireState      `json:"state,omitempty"`
}

// State is the server's connection to its store, as [Options.OnState] is told it.
type State struct {
	Connected bool
	// URL is the server connected to (redacted), or the one lost.
	URL string
	// Err is why the connection dropped, when known.
	Err error
}

type wireState struct {
	Connected bool   `json:"connected"`
	URL       string `json:"url,omitempty"`
	Err       string `json:"err,omitempty"`
}

// sentinel is an error whose identity crosses the pipe, by name.
type sentinel struct {
	name string
	err  error
}

// sentinels are built on first use: a table of other packages' errors would be init work at
// every keel start (cmd/keel's TestStartupInitBudget).
var sentinels = lazy.Value[[]sentinel]{New: func() []sentinel {
	return []sentinel{
		{"not_found", coord.ErrNotFound}, {"claimed", coord.ErrClaimed}, {"blocked", coord.ErrBlocked},
		{"completed", coord.ErrCompleted}, {"no_task", coord.ErrNoTask}, {"not_owner", coord.ErrNotOwner},
		{"cycle", coord.ErrCycle}, {"too_large", coord.ErrTooLarge}, {"inbox_full", coord.ErrInboxFull},
		{"exists", coord.ErrExists}, {"conflict", coord.ErrConflict}, {"resolved", coord.ErrResolved},
		{"pending", coord.ErrPending}, {"corrupt", coord.ErrCorrupt}, {"invalid", coord.ErrInvalid},
		{"closed", coord.ErrClosed}, {"canceled", context.Canceled}, {"deadline", context.DeadlineExceeded},
	}
}}

// wireError is an error as it crosses: its text and the sentinels it wraps.
type wireError struct {
	Msg string   `json:"msg"`
	Is  []string `json:"is,omitempty"`
}

func encodeError(err error) *wireError {
	if err == nil {
		return nil
	}
	w := &wireError{Msg: err.Error()}
	for _, s := range sentinels.Get() {
		if errors.Is(err, s.err) {
			w.Is = append(w.Is, s.name)
		}
	}
	return w
}

func (w *wireError) decode() error {
	if w == nil {
		return nil
	}
	e := &remoteError{msg: w.Msg}
	for _, s := range sentinels.Get() {
		if slices.Contains(w.Is, s.name) {
			e.is = append(e.is, s.err)
		}
	}
	return e
}

// remoteError is an error the server returned: its text, and errors.Is true for the
// sentinels it wrapped there.
type remoteError struct {
	msg string
	is  []error
}

func (e *remoteError) Error() string { return e.msg }

func (e *remoteError) Is(target error) bool { return slices.Contains(e.is, target) }

// Operation names.
const (
	opBoardCreate    = "board.create"
	opBoardGet       = "board.get"
	opBoardList      = "board.list"
	opBoardUpdate    = "board.update"
	opBoardDelete    = "board.delete"
	opBoardClaim     = "board.claim"
	opBoardClaimNext = "board.claimNext"
	opBoardRenew     = "board.renew"
	opBoardRelease   = "board.release"
	opBoardWatch     = "board.watch"
	opMailSend       = "mail.send"
	opMailFetch      = "mail.fetch"
	opMailAck        = "mail.ack"
	opMailWatch      = "mail.watch"
	opMailDelivered  = "mail.delivered"
	opReqSubmit      = "requests.submit"
	opReqPending     = "requests.pending"
	opReqResolve     = "requests.resolve"
	opReqResolution  = "requests.resolution"
	opReqWatch       = "requests.watch"
	opRecPut         = "records.put"
	opRecCreate      = "records.create"
	opRecUpdate      = "records.update"
	opRecGet         = "records.get"
	opRecList        = "records.list"
	opRecDelete      = "records.delete"
	opRecWatch       = "records.watch"
	opEventsAppend   = "events.append"
	opEventsRead     = "events.read"
	opEventsLast     = "events.last"
	opEventsWatch    = "events.watch"
	opTeams          = "teams"
	opClose          = "close"
)
