package coordpipe

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"
	"time"

	"github.com/keel-dev/keel/internal/coord"
)

// closeLimit bounds how long Close waits for the server to close its backend and end.
const closeLimit = 15 * time.Second

// Client is a [coord.Backend] whose every operation is served at the other end of a pipe.
// It is safe for concurrent use.
type Client struct {
	// wmu serialises requests; enc writes them to w.
	wmu sync.Mutex
	enc *json.Encoder
	w   io.WriteCloser

	next atomic.Uint64
	// done is closed once the reader has ended (the server's output ended); broken is why.
	done   chan struct{}
	broken error

	// mu guards calls and closed.
	mu     sync.Mutex
	calls  map[uint64]*call
	closed bool

	onState func(State)
	// answer is what the ready line carried: a one-shot server's answer ([Query]).
	answer json.RawMessage
	// stop, when set, ends the server by force (kills the companion); wait reaps it.
	stop func()
	wait func() error

	board    board
	mail     mailbox
	requests requests
	records  records
	events   events
}

var (
	_ coord.Backend  = (*Client)(nil)
	_ coord.EventLog = (*Client)(nil)
	_ coord.MailLog  = mailbox{}
)

// call is one request awaiting its answer, or a watch awaiting its signals.
type call struct {
	res chan response
	// watch is a watch's channel; ended is closed with it (guarded by Client.mu).
	watch chan struct{}
	ended chan struct{}
	over  bool
}

// Conn are the two ends of a pipe to a server: its output and its input.
type Conn struct {
	R io.Reader
	W io.WriteCloser
	// Stop, when set, ends the server by force when it does not end after its input closes;
	// Wait, when set, waits for it to have ended and says how.
	Stop func()
	Wait func() error
}

// Dial waits for the server at the other end of conn to say it is ready, and returns a
// client of its backend. onState, when set, is told of the server's connection state; it
// must not block. A server that could not open its backend is the error it sent.
func Dial(ctx context.Context, conn Conn, onState func(State)) (*Client, error) {
	enc := json.NewEncoder(conn.W)
	enc.SetEscapeHTML(false)
	c := &Client{enc: enc, w: conn.W, done: make(chan struct{}), calls: map[uint64]*call{},
		onState: onState, stop: conn.Stop, wait: conn.Wait}
	c.board, c.mail, c.requests, c.records, c.events = board{c}, mailbox{c}, requests{c}, records{c}, events{c}
	dec := json.NewDecoder(conn.R)
	ready := make(chan error, 1)
	go c.read(dec, ready)
	select {
	case err := <-ready:
		if err != nil {
			c.shut()
			return nil, err
		}
		return c, nil
	case <-ctx.Done():
		c.shut()
		return nil, fmt.Errorf("wait for the coordination server: %w", context.Cause(ctx))
	}
}

// shut ends a client that never became ready.
func (c *Client) shut() {
	_ = c.w.Close()
	if c.stop != nil {
		c.stop()
	}
	<-c.done
	if c.wait != nil {
		_ = c.wait()
	}
}

// read handles the server's lines until its output ends. The first is the ready line (or the
// error that stopped the server opening its backend), reported on ready.
func (c *Client) read(dec *json.Decoder, ready chan<- error) {
	defer close(c.done)
	var err error
	first := true
	for {
		var r response
		if err = dec.Decode(&r); err != nil {
			break
		}
		switch {
		case r.State != nil:
			if c.onState != nil {
				st := State{Connected: r.State.Connected, URL: r.State.URL}
				if r.State.Err != "" {
					st.Err = errors.New(r.State.Err)
				}
				c.onState(st)
			}
			continue
		case first:
			first = false
			if r.Err != nil || !r.Ready {
				err = r.Err.decode()
				if err == nil {
					err = fmt.Errorf("the coordination server's first line is no ready line: %w", coord.ErrCorrupt)
				}
				ready <- err
				c.end(err)
				return
			}
			c.answer = r.Result
			ready <- nil
			continue
		}
		c.deliver(r)
	}
	if errors.Is(err, io.EOF) {
		err = io.ErrUnexpectedEOF
	}
	err = fmt.Errorf("the coordination server ended: %w", err)
	if first {
		ready <- err
	}
	c.end(err)
}

// deliver hands one answer or signal to its call.
func (c *Client) deliver(r response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	cl := c.calls[r.ID]
	if cl == nil {
		return
	}
	switch {
	case r.Signal:
		if !cl.over {
			coord.Notify(cl.watch)
		}
	case r.End:
		c.endWatchLocked(r.ID, cl)
	default:
		if cl.watch == nil {
			delete(c.calls, r.ID)
		}
		cl.res <- r
	}
}

func (c *Client) endWatchLocked(id uint64, cl *call) {
	delete(c.calls, id)
	if !cl.over {
		cl.over = true
		close(cl.watch)
		close(cl.ended)
	}
}

// end fails every waiting call and ends every watch: the server is gone.
func (c *Client) end(err error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.broken = err
	for id, cl := range c.calls {
		if cl.watch != nil {
			c.endWatchLocked(id, cl)
		}
		select {
		case cl.res <- response{ID: id, Err: encodeError(err)}:
		default:
		}
	}
}

// register makes a call for a new request; watch calls get their channel now, before the
// request is sent, so no signal that follows the answer is lost.
func (c *Client) register(what string, watch bool) (uint64, *call, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		return 0, nil, fmt.Errorf("%s: %w", what, coord.ErrClosed)
	}
	if c.broken != nil {
		return 0, nil, fmt.Errorf("%s: %w", what, c.broken)
	}
	id := c.next.Add(1)
	cl := &call{res: make(chan response, 1)}
	if watch {
		cl.watch, cl.ended = coord.Signal(), make(chan struct{})
	}
	c.calls[id] = cl
	return id, cl, nil
}

func (c *Client) send(req request) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	return c.enc.Encode(req)
}

// roundTrip sends op and waits for its answer under ctx; a ctx that ends first cancels the
// operation on the server's side.
func (c *Client) roundTrip(ctx context.Context, op string, a *args, watch bool) (uint64, *call, response, error) {
	id, cl, err := c.register(op, watch)
	if err != nil {
		return 0, nil, response{}, err
	}
	if err := ctx.Err(); err != nil {
		c.forget(id)
		return 0, nil, response{}, fmt.Errorf("%s: %w", op, context.Cause(ctx))
	}
	if err := c.send(request{ID: id, Op: op, Args: a}); err != nil {
		c.forget(id)
		return 0, nil, response{}, fmt.Errorf("%s: send to the coordination server: %w", op, err)
	}
	select {
	case r := <-cl.res:
		if err := r.Err.decode(); err != nil {
			c.forget(id)
			return 0, nil, r, err
		}
		return id, cl, r, nil
	case <-ctx.Done():
		c.forget(id)
		_ = c.send(request{ID: id, Cancel: true})
		return 0, nil, response{}, fmt.Errorf("%s: %w", op, context.Cause(ctx))
	}
}

// forget drops a call whose answer no longer matters.
func (c *Client) forget(id uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl := c.calls[id]; cl != nil {
		if cl.watch != nil {
			c.endWatchLocked(id, cl)
		}
		delete(c.calls, id)
	}
}

// do runs op and decodes its result into a T.
func do[T any](ctx context.Context, c *Client, op string, a *args) (T, error) {
	var v T
	_, _, r, err := c.roundTrip(ctx, op, a, false)
	if err != nil {
		return v, err
	}
	if len(r.Result) > 0 {
		if err := json.Unmarshal(r.Result, &v); err != nil {
			return v, fmt.Errorf("%s: read the answer: %v: %w", op, err, coord.ErrCorrupt)
		}
	}
	return v, nil
}

// exec runs op, which has no result.
func (c *Client) exec(ctx context.Context, op string, a *args) error {
	_, _, _, err := c.roundTrip(ctx, op, a, false)
	return err
}

// watch starts a watch on the server; it ends when ctx does (cancelled there too), when
// the server ends it, or when the client closes.
func (c *Client) watch(ctx context.Context, op string, a *args) (<-chan struct{}, error) {
	id, cl, _, err := c.roundTrip(ctx, op, a, true)
	if err != nil {
		return nil, err
	}
	go func() {
		select {
		case <-ctx.Done():
			c.forget(id)
			_ = c.send(request{ID: id, Cancel: true})
		case <-cl.ended:
		}
	}()
	return cl.watch, nil
}

// Mailbox, Board, Requests, Records and Events are the served backend's.
func (c *Client) Mailbox() coord.Mailbox   { return c.mail }
func (c *Client) Board() coord.Board       { return c.board }
func (c *Client) Requests() coord.Requests { return c.requests }
func (c *Client) Records() coord.Records   { return c.records }
func (c *Client) Events() coord.Events     { return c.events }

// Teams lists the teams of the served backend's store.
func (c *Client) Teams(ctx context.Context, key string) ([]coord.TeamInfo, error) {
	return do[[]coord.TeamInfo](ctx, c, opTeams, &args{Key: key})
}

// Close closes the served backend and ends the server: its watches end, later calls fail
// with [coord.ErrClosed].
func (c *Client) Close() error {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil
	}
	c.closed = true
	id := c.next.Add(1)
	cl := &call{res: make(chan response, 1)}
	broken := c.broken
	if broken == nil {
		c.calls[id] = cl
	}
	c.mu.Unlock()
	var err error
	expired := make(chan struct{})
	timer := time.AfterFunc(closeLimit, func() { close(expired) })
	defer timer.Stop()
	if broken == nil {
		if err = c.send(request{ID: id, Op: opClose}); err == nil {
			select {
			case r := <-cl.res:
				err = r.Err.decode()
			case <-expired:
				err = fmt.Errorf("close the coordination backend: no answer in %s", closeLimit)
			}
		}
	}
	_ = c.w.Close()
	select {
	case <-c.done:
	case <-expired:
		if c.stop != nil {
			c.stop()
		}
		<-c.done
	}
	if c.wait != nil {
		if werr := c.wait(); werr != nil && err == nil && broken == nil {
			err = fmt.Errorf("the coordination server: %w", werr)
		}
	}
	if errors.Is(err, coord.ErrClosed) {
		err = nil
	}
	return err
}
