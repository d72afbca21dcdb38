// Package natscoord is the coordination backend on NATS JetStream, for teams that span
// machines: every host points at one NATS cluster (or, on one machine, the supervisor's
// embedded server, which the keel-nats binary runs). It passes the same conformance suite as the filesystem
// backend. keel does not link it: `keel-nats coord` serves it to keel over a pipe (coordpipe).
//
// One team is one JetStream stream and two key-value buckets, named after the team:
//
//	stream keel-<team>-mail     subjects keel.<team>.mail.<member>: each member's inbox
//	stream keel-<team>-events   subjects keel.<team>.events.<member>: event logs (events.go)
//	bucket keel-<team>-board    task.<id> (one task each), next (the id counter),
//	                            lock.graph (held while dependencies change; per-key TTL)
//	bucket keel-<team>-state    rec.<key> (records), req.<id> (requests and answers),
//	                            done.<member>.<id> (delivered mail: history and dedup)
//
// Mail. A message is published to its recipient's subject with Nats-Msg-Id set to its id
// (the server drops a retried publish) and an expected last sequence for the subject, so the
// inbox budget is checked and the message stored atomically: of two concurrent senders, the
// one that saw a stale inbox retries. The stream keeps every message until the receiver acks
// it; an ack records the message under done.<member>.<id> and then deletes it from the
// stream, so at no instant is a message in neither place, and a late resend of a delivered id
// is dropped. A receiver that dies before acking gets its mail again from any handle's Fetch
// at once — redelivery needs no ack timeout, because nothing is held in flight.
//
// Board. Each task is a key whose every change is a compare-and-set on its revision
// (create, update-with-revision): of concurrent claimers exactly one write lands, the others
// re-read and see why they lost. Claims carry lease records (LeaseUntil in the task, judged by
// the configured clock) so a crashed owner's task becomes claimable again. Changes that add or
// remove dependencies also hold lock.graph — a key created with a TTL, which the server
// expires if its holder dies — so two concurrent edits cannot close a cycle. Each handle keeps
// the board in memory from a watch of the bucket and reads it only after it has caught up
// with the stream's last sequence: reads are consistent and cost one round trip.
//
// Connections reconnect with backoff forever; an operation that meets a lost connection or
// a cluster electing a new leader waits and retries under its context. Every retried write is
// idempotent (message ids, compare-and-set), so nothing is lost or doubled.
package natscoord

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/keel-dev/keel/internal/coord"
)

// Options configure a backend handle.
type Options struct {
	coord.Config
	// URL is the NATS server, or several comma-separated (a cluster's nodes); credentials in
	// the URL (nats://user:pass@host) work as nats.go takes them. Required unless Conn is set.
	URL string
	// Team names the team; its stream and buckets are named after it ([coord.CheckName]).
	Team string
	// CredsFile is a NATS credentials file (JWT and NKey seed), as `nats context` makes.
	CredsFile string
	// TLS configures TLS to the server; a tls:// URL turns it on with the system roots.
	TLS TLS
	// Replicas is how many copies of the team's streams a cluster keeps; 0 is 1. A cluster
	// that must survive a node's loss wants 3.
	Replicas int
	// Name is the connection's name, shown by the server's monitoring.
	Name string
	// OnState, when set, is told when the connection drops and when it is back, so that a
	// session can show it; it must not block.
	OnState func(State)
	// Conn, when set, is a connection to use instead of dialling URL; Close leaves it open.
	Conn *nats.Conn
}

// TLS is how the connection authenticates the server and, optionally, itself.
type TLS struct {
	// CAFile holds the roots that sign the server's certificate; empty is the system's.
	CAFile string `json:"caFile,omitempty"`
	// CertFile and KeyFile are a client certificate, for servers that verify clients.
	CertFile string `json:"certFile,omitempty"`
	KeyFile  string `json:"keyFile,omitempty"`
}

// Enabled reports whether any TLS file is set.
func (t TLS) Enabled() bool { return t.CAFile != "" || t.CertFile != "" || t.KeyFile != "" }

// State is the connection's state, told to [Options.OnState].
type State struct {
	Connected bool
	// URL is the server connected to (redacted), or the one lost.
	URL string
	// Err is why the connection dropped, when known.
	Err error
}

// Backend is a handle on one team's coordination state in JetStream. Several handles, in one
// process or on many machines, share it. It is safe for concurrent use.
type Backend struct {
	cfg     coord.Config
	id      string // this handle, in the locks it takes
	team    string
	url     string // redacted, for errors
	nc      *nats.Conn
	ownConn bool
	js      jetstream.JetStream

	boardKV  jetstream.KeyValue
	stateKV  jetstream.KeyValue
	stateStr jetstream.Stream // the state bucket's stream, for listing its keys
	mailStr  jetstream.Stream
	eventStr jetstream.Stream

	mail     *mailbox
	board    *board
	requests *requests
	records  *records

	// stop ends the handle's goroutines; wg waits for them.
	stop   context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	// mu guards closed and watchers.
	mu       sync.Mutex
	closed   bool
	watchers map[*signal]struct{}
}

var (
	_ coord.Backend  = (*Backend)(nil)
	_ coord.EventLog = (*Backend)(nil)
)

// Open connects to NATS and opens (creating them if needed) the team's stream and buckets.
// An unreachable server is an error naming the URL; nothing falls back to another backend.
func Open(ctx context.Context, opts Options) (*Backend, error) {
	cfg := opts.Config.WithDefaults()
	if err := coord.CheckName(opts.Team); err != nil {
		return nil, fmt.Errorf("open NATS coordination: team: %w", err)
	}
	b := &Backend{cfg: cfg, id: coord.NewID(), team: opts.Team, url: Redact(opts.URL), watchers: map[*signal]struct{}{}}
	b.stop, b.cancel = context.WithCancel(context.Background())
	if opts.Conn != nil {
		b.nc = opts.Conn
		b.url = Redact(opts.Conn.ConnectedUrl())
	} else {
		nc, err := dial(opts, cfg.Logger, b.reconnected)
		if err != nil {
			b.cancel()
			return nil, err
		}
		b.nc, b.ownConn = nc, true
	}
	js, err := jetstream.New(b.nc)
	if err != nil {
		b.closeConn()
		return nil, fmt.Errorf("open JetStream at %s: %w", b.url, err)
	}
	b.js = js
	if err := b.provision(ctx, max(opts.Replicas, 1)); err != nil {
		b.closeConn()
		return nil, err
	}
	b.mail = newMailbox(b)
	b.requests = &requests{b: b}
	b.records = &records{b: b}
	b.board = newBoard(b)
	if err := b.board.start(ctx); err != nil {
		b.closeConn()
		return nil, err
	}
	return b, nil
}

// provision finds or creates the team's stream and buckets.
func (b *Backend) provision(ctx context.Context, replicas int) error {
	var err error
	what := fmt.Sprintf("open team %s on NATS at %s", b.team, b.url)
	err = b.retry(ctx, what, func(ctx context.Context) error {
		b.boardKV, err = b.bucket(ctx, "board", replicas)
		if err != nil {
			return err
		}
		b.stateKV, err = b.bucket(ctx, "state", replicas)
		if err != nil {
			return err
		}
		b.stateStr, err = b.js.Stream(ctx, "KV_"+b.stateKV.Bucket())
		if err != nil {
			return err
		}
		if b.mailStr, err = b.mailStream(ctx, replicas); err != nil {
			return err
		}
		b.eventStr, err = b.eventStream(ctx, replicas)
		return err
	})
	if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return fmt.Errorf("%s: JetStream is not enabled there (start nats-server with -js, or enable it for the account): %w", what, err)
	}
	if errors.Is(err, jetstream.ErrLimitMarkerTTLNotSupported) {
		return fmt.Errorf("%s: the server is too old; keel needs nats-server 2.11 or later: %w", what, err)
	}
	if err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func (b *Backend) bucket(ctx context.Context, kind string, replicas int) (jetstream.KeyValue, error) {
	name := fmt.Sprintf("keel-%s-%s", b.team, kind)
	kv, err := b.js.KeyValue(ctx, name)
	if err == nil {
		return kv, nil
	}
	if !errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, err
	}
	kv, err = b.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket:      name,
		Description: fmt.Sprintf("keel team %s: %s", b.team, kind),
		History:     1,
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		// Per-key TTLs: the graph lock and the delivered-mail records expire by themselves.
		LimitMarkerTTL: time.Minute,
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		return b.js.KeyValue(ctx, name) // another handle made it first
	}
	return kv, err
}

func (b *Backend) mailStream(ctx context.Context, replicas int) (jetstream.Stream, error) {
	return b.ensureStream(ctx, jetstream.StreamConfig{
		Name:        fmt.Sprintf("keel-%s-mail", b.team),
		Description: fmt.Sprintf("keel team %s: mailboxes", b.team),
		Subjects:    []string{b.mailSubject("*")},
		Storage:     jetstream.FileStorage,
		Replicas:    replicas,
		Retention:   jetstream.LimitsPolicy,
		// Mail stays until acked: no age, count or size limit of the stream's own; the
		// budgets are per inbox, checked by the senders.
		Duplicates: 10 * time.Minute,
	})
}

// ensureStream opens the stream cfg names, creating it with cfg when there is none yet (or
// taking the one another handle made first).
func (b *Backend) ensureStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	s, err := b.js.Stream(ctx, cfg.Name)
	if err == nil {
		return s, nil
	}
	if !errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, err
	}
	s, err = b.js.CreateStream(ctx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		return b.js.Stream(ctx, cfg.Name)
	}
	return s, err
}

func (b *Backend) mailSubject(member string) string {
	return "keel." + b.team + ".mail." + member
}

// Server names the server the handle is connected to now (empty while disconnected).
func (b *Backend) Server() string { return b.nc.ConnectedServerName() }

// Mailbox returns the team's mailbox.
func (b *Backend) Mailbox() coord.Mailbox { return b.mail }

// Board returns the team's task board.
func (b *Backend) Board() coord.Board { return b.board }

// Requests returns the team's permission requests.
func (b *Backend) Requests() coord.Requests { return b.requests }

// Records returns the team's records.
func (b *Backend) Records() coord.Records { return b.records }

// Close ends the handle's watches and, unless it was given one, closes its connection.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.cancel()
	b.wg.Wait()
	b.closeConn()
	return nil
}

func (b *Backend) closeConn() {
	if b.ownConn {
		b.nc.Close()
	}
}

// live fails once the handle is closed; every operation starts with it.
func (b *Backend) live(ctx context.Context, what string) error {
	b.mu.Lock()
	closed := b.closed
	b.mu.Unlock()
	if closed {
		return fmt.Errorf("%s: %w", what, coord.ErrClosed)
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("%s: %w", what, context.Cause(ctx))
	}
	return nil
}

// signal is a watch's wake-up channel that may be notified from any goroutine, also after
// it was closed (a NATS callback that runs late): then nothing happens.
type signal struct {
	// mu guards closed and the channel's closing.
	mu     sync.Mutex
	ch     chan struct{}
	closed bool
}

func (s *signal) notify() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		coord.Notify(s.ch)
	}
}

func (s *signal) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.closed {
		s.closed = true
		close(s.ch)
	}
}

// watch makes a watch: start sets up what feeds the signal (retried while NATS is briefly
// unavailable) and stop undoes it once ctx ends or the handle closes; then the channel
// closes.
func (b *Backend) watch(ctx context.Context, what string, start func(ctx context.Context, sig *signal) (stop func(), err error)) (<-chan struct{}, error) {
	if err := b.live(ctx, what); err != nil {
		return nil, err
	}
	sig := &signal{ch: coord.Signal()}
	wctx, cancel := context.WithCancel(ctx)
	unhook := context.AfterFunc(b.stop, cancel)
	var stop func()
	err := b.retry(ctx, what, func(context.Context) error {
		var err error
		stop, err = start(wctx, sig)
		return err
	})
	if err != nil {
		unhook()
		cancel()
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	b.mu.Lock()
	b.watchers[sig] = struct{}{}
	b.mu.Unlock()
	b.wg.Go(func() {
		<-wctx.Done()
		unhook()
		stop()
		b.mu.Lock()
		delete(b.watchers, sig)
		b.mu.Unlock()
		sig.close()
	})
	return sig.ch, nil
}

// reconnected wakes every watcher: what changed while the connection was down is read again.
func (b *Backend) reconnected() {
	if b.board != nil && b.board.view != nil {
		b.board.view.restart()
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for sig := range b.watchers {
		sig.notify()
	}
}

// attemptTimeout bounds one attempt of an operation: a request lost with a dropped
// connection is given up and sent again rather than waited for until the caller's deadline.
const attemptTimeout = 10 * time.Second

// retry runs op until it succeeds, fails for a reason other than the connection or the
// cluster being briefly unavailable, or ctx ends. Callers make op idempotent.
func (b *Backend) retry(ctx context.Context, what string, op func(ctx context.Context) error) error {
	wait := 20 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, attemptTimeout)
		err := op(actx)
		cancel()
		if err == nil || !transient(err) {
			return err
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%s: NATS at %s: %w (gave up: %w)", what, b.url, err, context.Cause(ctx))
		}
		b.cfg.Logger.Debug("nats: retrying", "op", what, "err", err, "wait", wait)
		t := time.NewTimer(wait + rand.N(wait/2))
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%s: NATS at %s: %w (gave up: %w)", what, b.url, err, context.Cause(ctx))
		case <-b.stop.Done():
			t.Stop()
			return fmt.Errorf("%s: %w", what, coord.ErrClosed)
		case <-t.C:
		}
		wait = min(2*wait, time.Second)
	}
}

// transient reports errors that a retry after a pause may cure: a connection being
// re-established, a request that timed out, a cluster without a leader for a moment.
func transient(err error) bool {
	switch {
	case errors.Is(err, nats.ErrConnectionReconnecting), errors.Is(err, nats.ErrTimeout),
		errors.Is(err, nats.ErrNoResponders), errors.Is(err, jetstream.ErrNoStreamResponse),
		errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, coord.ErrClosed),
		errors.Is(err, nats.ErrConnectionDraining):
		return true
	}
	if errors.Is(err, jetstream.ErrJetStreamNotEnabled) || errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount) {
		return false
	}
	var api *jetstream.APIError
	if errors.As(err, &api) {
		// 503: JetStream temporarily unavailable (no meta or stream leader yet);
		// 10008/10009: cluster not available / not the leader.
		return api.Code == 503 || api.ErrorCode == 10008 || api.ErrorCode == 10009
	}
	return false
}

// wrongLastSeq reports a compare-and-set that lost: the subject moved on since it was read.
func wrongLastSeq(err error) bool {
	var api *jetstream.APIError
	if errors.As(err, &api) {
		return api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence || api.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
	}
	return errors.Is(err, jetstream.ErrKeyRevisionMismatch)
}
