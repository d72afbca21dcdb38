package coordpipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/keel-dev/keel/internal/coord"
)

// Server serves one backend to one client over a pipe.
type Server struct {
	// in carries the client's lines, read by one goroutine so that the end of the input is
	// seen even while nothing is served (the backend is still opening); inErr is why it
	// ended, set before in closes.
	in    chan json.RawMessage
	inErr error
	// ended is closed once the input has ended.
	ended chan struct{}
	// wmu serialises lines: answers and watch signals are written from several goroutines.
	wmu sync.Mutex
	enc *json.Encoder

	// mu guards cancels: the running operations and watches by request id.
	mu      sync.Mutex
	cancels map[uint64]context.CancelFunc
	wg      sync.WaitGroup
}

// NewServer makes a server that reads requests from r and writes answers to w.
func NewServer(r io.Reader, w io.Writer) *Server {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	s := &Server{in: make(chan json.RawMessage), ended: make(chan struct{}), enc: enc, cancels: map[uint64]context.CancelFunc{}}
	go s.read(json.NewDecoder(r))
	return s
}

func (s *Server) read(dec *json.Decoder) {
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			s.inErr = err
			close(s.ended)
			close(s.in)
			return
		}
		s.in <- raw
	}
}

// next returns the client's next line; an error at the input's end.
func (s *Server) next(v any) error {
	raw, ok := <-s.in
	if !ok {
		return s.inErr
	}
	return json.Unmarshal(raw, v)
}

// Context returns ctx ended also when the client's input ends (the client went away): an
// opening backend gives up then rather than retrying for nobody.
func (s *Server) Context(ctx context.Context) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-ctx.Done():
		case <-s.ended:
			cancel()
		}
	}()
	return ctx, cancel
}

// ReadOpen reads the first line the client wrote, which says what to open, into v.
func (s *Server) ReadOpen(v any) error {
	if err := s.next(v); err != nil {
		return fmt.Errorf("read what to open: %w", err)
	}
	return nil
}

func (s *Server) write(r response) {
	s.wmu.Lock()
	defer s.wmu.Unlock()
	// A client that is gone reads nothing more; its requests end with the input.
	_ = s.enc.Encode(r)
}

// State tells the client that the backend's connection dropped or came back; it may be
// called before Serve (while the backend opens) and from any goroutine.
func (s *Server) State(st State) {
	ws := &wireState{Connected: st.Connected, URL: st.URL}
	if st.Err != nil {
		ws.Err = st.Err.Error()
	}
	s.write(response{State: ws})
}

// Fail tells the client that the backend could not be opened.
func (s *Server) Fail(err error) { s.write(response{Err: encodeError(err)}) }

// Reply answers a one-shot request (a listing that opens no backend) with v.
func (s *Server) Reply(v any) error {
	b, err := json.Marshal(v)
	if err != nil {
		return err
	}
	s.write(response{Ready: true, Result: b})
	return nil
}

// Serve tells the client the backend is ready, then serves it until the client closes it or
// its input ends; then it closes the backend and returns once nothing more is written.
func (s *Server) Serve(ctx context.Context, be coord.Backend) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	// Lines that come after the end (a watch's cancel crossing the close) are read and
	// dropped, so that the reading goroutine ends with the input.
	defer func() {
		go func() {
			for range s.in {
			}
		}()
	}()
	s.write(response{Ready: true})
	var closeErr error
	closed := false
	for !closed {
		var req request
		if err := s.next(&req); err != nil {
			if !errors.Is(err, io.EOF) {
				closeErr = fmt.Errorf("read a request: %w", err)
			}
			break
		}
		switch {
		case req.Cancel:
			s.mu.Lock()
			if c := s.cancels[req.ID]; c != nil {
				c()
			}
			s.mu.Unlock()
		case req.Op == opClose:
			err := be.Close()
			closed = true
			s.cancelAll()
			s.wg.Wait()
			s.write(response{ID: req.ID, Err: encodeError(err)})
			return nil
		default:
			s.start(ctx, be, req)
		}
	}
	err := be.Close()
	s.cancelAll()
	s.wg.Wait()
	return errors.Join(closeErr, err)
}

func (s *Server) cancelAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.cancels {
		c()
	}
}

// start runs one request in a goroutine of its own: operations block, and a slow one must
// not hold up the rest.
func (s *Server) start(ctx context.Context, be coord.Backend, req request) {
	opCtx, cancel := context.WithCancel(ctx)
	s.mu.Lock()
	s.cancels[req.ID] = cancel
	s.mu.Unlock()
	done := func() {
		s.mu.Lock()
		delete(s.cancels, req.ID)
		s.mu.Unlock()
		cancel()
	}
	a := req.Args
	if a == nil {
		a = &args{}
	}
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		if w := watchOf(be, req.Op, a); w != nil {
			ch, err := w(opCtx)
			s.write(response{ID: req.ID, Err: encodeError(err)})
			if err != nil {
				done()
				return
			}
			for range ch {
				s.write(response{ID: req.ID, Signal: true})
			}
			done()
			s.write(response{ID: req.ID, End: true})
			return
		}
		v, err := dispatch(opCtx, be, req.Op, a)
		done()
		r := response{ID: req.ID, Err: encodeError(err)}
		if err == nil && v != nil {
			b, merr := json.Marshal(v)
			if merr != nil {
				r.Err = encodeError(fmt.Errorf("%s: encode the result: %w", req.Op, merr))
			}
			r.Result = b
		}
		s.write(r)
	}()
}

// watchOf returns the watch op asks for, or nil when op is no watch.
func watchOf(be coord.Backend, op string, a *args) func(ctx context.Context) (<-chan struct{}, error) {
	switch op {
	case opBoardWatch:
		return be.Board().Watch
	case opMailWatch:
		return func(ctx context.Context) (<-chan struct{}, error) { return be.Mailbox().Watch(ctx, a.Member) }
	case opReqWatch:
		return be.Requests().Watch
	case opRecWatch:
		return func(ctx context.Context) (<-chan struct{}, error) { return be.Records().Watch(ctx, a.Key) }
	case opEventsWatch:
		return func(ctx context.Context) (<-chan struct{}, error) {
			ev, err := eventsOf(be)
			if err != nil {
				return nil, err
			}
			return ev.Watch(ctx, a.Member)
		}
	}
	return nil
}

func eventsOf(be coord.Backend) (coord.Events, error) {
	if el, ok := be.(coord.EventLog); ok {
		return el.Events(), nil
	}
	return nil, fmt.Errorf("event logs: the served backend keeps none: %w", coord.ErrInvalid)
}

// dispatch runs one operation that is not a watch.
func dispatch(ctx context.Context, be coord.Backend, op string, a *args) (any, error) {
	switch op {
	case opBoardCreate:
		return be.Board().Create(ctx, deref(a.Task))
	case opBoardGet:
		return be.Board().Get(ctx, a.ID)
	case opBoardList:
		return be.Board().List(ctx)
	case opBoardUpdate:
		return be.Board().Update(ctx, a.ID, deref(a.Change))
	case opBoardDelete:
		return nil, be.Board().Delete(ctx, a.ID)
	case opBoardClaim:
		return be.Board().Claim(ctx, a.ID, a.Owner, a.Lease)
	case opBoardClaimNext:
		return be.Board().ClaimNext(ctx, a.Owner, a.Lease)
	case opBoardRenew:
		return be.Board().Renew(ctx, a.ID, a.Owner, a.Lease)
	case opBoardRelease:
		return be.Board().Release(ctx, a.ID, a.Owner)
	case opMailSend:
		return nil, be.Mailbox().Send(ctx, deref(a.Msg))
	case opMailFetch:
		return be.Mailbox().Fetch(ctx, a.Member, a.Max)
	case opMailAck:
		return nil, be.Mailbox().Ack(ctx, a.Member, a.IDs...)
	case opMailDelivered:
		ml, ok := be.Mailbox().(coord.MailLog)
		if !ok {
			return nil, fmt.Errorf("delivered mail: the served backend keeps none: %w", coord.ErrInvalid)
		}
		return ml.Delivered(ctx, a.Member, a.Max)
	case opReqSubmit:
		return nil, be.Requests().Submit(ctx, deref(a.Req))
	case opReqPending:
		return be.Requests().Pending(ctx, a.To)
	case opReqResolve:
		return nil, be.Requests().Resolve(ctx, a.ID, deref(a.Res))
	case opReqResolution:
		return be.Requests().Resolution(ctx, a.ID)
	case opRecPut:
		return be.Records().Put(ctx, a.Key, a.Value)
	case opRecCreate:
		return be.Records().Create(ctx, a.Key, a.Value)
	case opRecUpdate:
		return be.Records().Update(ctx, a.Key, a.Value, a.Rev)
	case opRecGet:
		return be.Records().Get(ctx, a.Key)
	case opRecList:
		return be.Records().List(ctx, a.Key)
	case opRecDelete:
		return nil, be.Records().Delete(ctx, a.Key)
	case opEventsAppend, opEventsRead, opEventsLast:
		ev, err := eventsOf(be)
		if err != nil {
			return nil, err
		}
		switch op {
		case opEventsAppend:
			return nil, ev.Append(ctx, a.Member, raws(a.Data)...)
		case opEventsRead:
			return ev.Read(ctx, a.Member, a.After, a.Max)
		default:
			return ev.Last(ctx, a.Member)
		}
	case opTeams:
		return be.Teams(ctx, a.Key)
	}
	return nil, fmt.Errorf("operation %q: unknown to this server (is keel-nats of another version than keel?): %w", op, coord.ErrInvalid)
}

func deref[T any](p *T) T {
	var zero T
	if p == nil {
		return zero
	}
	return *p
}

func raws(data [][]byte) []json.RawMessage {
	out := make([]json.RawMessage, len(data))
	for i, d := range data {
		out[i] = d
	}
	return out
}
