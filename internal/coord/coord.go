// Package coord is the coordination interface of agent teams: a [Mailbox] per member, a
// shared task [Board] with atomic, leased claims, permission [Requests] that cross processes,
// and [Records] (member state, heartbeats) with watches. A [Backend] bundles the four for one
// team. Backends: coord/fscoord (files under the keel directory, the default) and
// coord/natscoord (NATS JetStream), which keel reaches through coord/coordpipe (a backend
// served across a pipe); all must pass the conformance suite in coord/coordtest.
//
// # Contracts every backend keeps
//
//   - Every operation takes a context first and may block on I/O; all are safe for concurrent
//     use by several goroutines and by several handles (processes) on the same storage.
//   - A claim is atomic: of any number of concurrent claimers of one task exactly one wins;
//     the others get an error wrapping [ErrClaimed]. A claim carries a lease; once the lease
//     has passed without a [Board.Renew], the task is claimable again.
//   - Mail is at-least-once and deduplicated by [Message.ID]: a message stays in its inbox,
//     and every [Mailbox.Fetch] returns it again, until the receiver [Mailbox.Ack]s it — which
//     it does only after the transcript that carries it is synced. A crash between delivery and
//     ack redelivers; a second Send of an id the inbox holds or has delivered is dropped.
//   - Size budgets fail loudly: an oversize message ([ErrTooLarge]) or a full inbox
//     ([ErrInboxFull]) is refused with an error and nothing is stored. Nothing is ever dropped
//     silently and nothing stalls.
//   - Watches are wake-up signals, coalesced and lossy by design: a receive on a watch channel
//     means "look again", so callers start the watch before they read and re-read after every
//     signal. Channels close when the watch's context ends or the backend closes.
//   - Unreadable stored state (a corrupt file) is an error wrapping [ErrCorrupt] that names
//     what could not be read; list operations return what they could read alongside it.
package coord

import (
	"context"
	"errors"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/google/uuid"
)

// Backend is one team's coordination store. Implementations assert
// `var _ coord.Backend = (*Backend)(nil)`.
type Backend interface {
	Mailbox() Mailbox
	Board() Board
	Requests() Requests
	Records() Records
	// Teams lists the teams kept in the store this handle's team is in — its own among them —
	// newest first, each with its record at key when it has one ("" reads none): a lead sees
	// the other teams' leads this way, on any backend.
	Teams(ctx context.Context, key string) ([]TeamInfo, error)
	// Close releases the handle: watches end, later calls fail with [ErrClosed]. What was
	// stored stays for other handles.
	Close() error
}

// TeamInfo is one team of a store, as [Backend.Teams] lists it.
type TeamInfo struct {
	Name string
	// Updated is when the team's records last changed.
	Updated time.Time
	// Record is the team's record at the key asked for; Revision 0 when it has none.
	Record Record
}

// SortTeams orders a listing newest first, then by name.
func SortTeams(teams []TeamInfo) {
	slices.SortFunc(teams, func(a, b TeamInfo) int {
		if c := b.Updated.Compare(a.Updated); c != 0 {
			return c
		}
		return strings.Compare(a.Name, b.Name)
	})
}

// Config is what every backend takes besides where its storage is.
type Config struct {
	// Now is the clock for leases and timestamps; nil is time.Now. The conformance suite
	// drives leases with a fake clock through it.
	Now func() time.Time
	// Limits are the size budgets; zero fields take [DefaultLimits]' values.
	Limits Limits
	// Logger receives what a backend notices but cannot return (a watch that fell back to
	// polling); nil discards.
	Logger *slog.Logger
}

// Limits are a backend's size budgets.
type Limits struct {
	// MessageBytes caps one message (its encoded size).
	MessageBytes int
	// InboxBytes and InboxMessages cap what one inbox holds unacked.
	InboxBytes    int64
	InboxMessages int
	// EventEntries bounds one member's event log ([Events]): older entries are dropped.
	EventEntries int
}

// DefaultLimits: a message of 256 KiB is already more than a model should read at once; an
// inbox of 8 MiB or 1000 messages means its reader is not reading; an event log of 2000
// entries holds a few hundred turns of a teammate's work.
var DefaultLimits = Limits{MessageBytes: 256 << 10, InboxBytes: 8 << 20, InboxMessages: 1000, EventEntries: 2000}

// WithDefaults fills the zero fields of c.
func (c Config) WithDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Limits.MessageBytes <= 0 {
		c.Limits.MessageBytes = DefaultLimits.MessageBytes
	}
	if c.Limits.InboxBytes <= 0 {
		c.Limits.InboxBytes = DefaultLimits.InboxBytes
	}
	if c.Limits.InboxMessages <= 0 {
		c.Limits.InboxMessages = DefaultLimits.InboxMessages
	}
	if c.Limits.EventEntries <= 0 {
		c.Limits.EventEntries = DefaultLimits.EventEntries
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return c
}

// Errors callers branch on with errors.Is. Backends wrap them with what was being done and
// why ("task 3 is held by alice until 12:04:05: task claimed").
var (
	// ErrNotFound: no task, record, request or member by that name.
	ErrNotFound = errors.New("not found")
	// ErrClaimed: the task is held (or assigned) by another member.
	ErrClaimed = errors.New("task claimed")
	// ErrBlocked: the task waits for tasks that are not completed.
	ErrBlocked = errors.New("task blocked")
	// ErrCompleted: the task is already completed.
	ErrCompleted = errors.New("task completed")
	// ErrNoTask: nothing on the board is claimable by this member now.
	ErrNoTask = errors.New("no claimable task")
	// ErrNotOwner: the caller does not hold the task (its lease lapsed and another member
	// claimed it, or it never held it).
	ErrNotOwner = errors.New("not the task's owner")
	// ErrCycle: the dependency would make a task wait for itself.
	ErrCycle = errors.New("dependency cycle")
	// ErrTooLarge: a message or request exceeds its size budget.
	ErrTooLarge = errors.New("too large")
	// ErrInboxFull: the receiver's inbox is at its budget; it must read before more arrives.
	ErrInboxFull = errors.New("inbox full")
	// ErrExists: a record with that key already exists.
	ErrExists = errors.New("already exists")
	// ErrConflict: the record changed since the revision the caller read.
	ErrConflict = errors.New("revision conflict")
	// ErrResolved: the request was already answered (the first answer wins).
	ErrResolved = errors.New("already resolved")
	// ErrPending: the request has no answer yet.
	ErrPending = errors.New("not resolved yet")
	// ErrCorrupt: stored state could not be read.
	ErrCorrupt = errors.New("corrupt")
	// ErrInvalid: a malformed argument (an empty id, a key with forbidden characters).
	ErrInvalid = errors.New("invalid")
	// ErrClosed: the backend handle was closed.
	ErrClosed = errors.New("coordination backend closed")
)

// NewID returns a fresh unique id for a message or request.
func NewID() string { return uuid.NewString() }

// Signal makes a coalescing wake-up channel of capacity one, the kind every Watch returns.
func Signal() chan struct{} { return make(chan struct{}, 1) }

// Notify wakes a watcher without ever blocking: a signal already waiting covers this one.
func Notify(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}
