package fscoord

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/coord"
)

// keepDelivered is how many acked messages an inbox keeps (history and deduplication).
const keepDelivered = 1000

type mailbox struct {
	b *Backend

	// mu guards lastSent, acks and inboxes.
	mu       sync.Mutex
	lastSent time.Time
	acks     int
	// inboxes are the inboxes this handle sent to: their folders exist, and their lock
	// stays open, so a send costs no directory checks and no open of the lock file.
	inboxes map[string]*fileLock
}

// inboxLock returns the lock of member's inbox, making its folders on first use.
func (m *mailbox) inboxLock(member string) (*fileLock, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if l := m.inboxes[member]; l != nil {
		return l, nil
	}
	for _, d := range []string{m.dir(member, "new"), m.dir(member, "cur")} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			return nil, err
		}
	}
	if m.inboxes == nil {
		m.inboxes = map[string]*fileLock{}
	}
	l := newLock(m.dir(member, "lock"))
	m.inboxes[member] = l
	return l, nil
}

// close releases the inboxes' locks.
func (m *mailbox) close() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []error
	for _, l := range m.inboxes {
		errs = append(errs, l.close())
	}
	m.inboxes = nil
	return errors.Join(errs...)
}

var (
	_ coord.Mailbox = (*mailbox)(nil)
	_ coord.MailLog = (*mailbox)(nil)
)

func (m *mailbox) dir(member string, sub ...string) string {
	return m.b.path(append([]string{"mail", member}, sub...)...)
}

// stamp gives a message its send time: the clock's, but never at or before this handle's
// previous one, so one sender's messages sort in the order sent.
func (m *mailbox) stamp(msg *coord.Message) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if msg.Sent.IsZero() {
		msg.Sent = m.b.cfg.Now()
	}
	if !msg.Sent.After(m.lastSent) {
		msg.Sent = m.lastSent.Add(time.Nanosecond)
	}
	m.lastSent = msg.Sent
}

func (m *mailbox) Send(ctx context.Context, msg coord.Message) error {
	if err := m.b.live(ctx, "send message"); err != nil {
		return err
	}
	if err := msg.Check(m.b.cfg.Limits); err != nil {
		return err
	}
	if err := checkID("send message", msg.ID); err != nil {
		return err
	}
	m.stamp(&msg)
	data, err := json.Marshal(msg)
	if err != nil {
		return fmt.Errorf("encode message: %w", err)
	}
	name := msg.ID + ".json"
	newDir, curDir := m.dir(msg.To, "new"), m.dir(msg.To, "cur")
	lock, err := m.inboxLock(msg.To)
	if err != nil {
		return fmt.Errorf("send message to %s: %w", msg.To, err)
	}
	if exists(curDir + "/" + name) {
		return nil // delivered already: a retry
	}
	// The budget check and the publish happen under the inbox's lock, so concurrent senders
	// cannot together overfill it.
	return lock.with(ctx, func() error {
		n, size, err := usage(newDir)
		if errors.Is(err, os.ErrNotExist) {
			// Removed since this handle made it (a team directory cleared by hand).
			err = errors.Join(os.MkdirAll(newDir, 0o700), os.MkdirAll(curDir, 0o700))
		}
		if err != nil {
			return fmt.Errorf("send message to %s: %w", msg.To, err)
		}
		lim := m.b.cfg.Limits
		if n+1 > lim.InboxMessages || size+int64(len(data)) > lim.InboxBytes {
			return fmt.Errorf("send message to %s: the inbox holds %d unread messages (%d bytes), its budget is %d messages or %d bytes; %s must read its messages before more can be delivered: %w",
				msg.To, n, size, lim.InboxMessages, lim.InboxBytes, msg.To, coord.ErrInboxFull)
		}
		fresh, err := m.b.publish(newDir+"/"+name, msg.ID, data, true)
		if err != nil || !fresh {
			return err
		}
		// Linked: no message with this id was unread. If it was delivered meanwhile (acked
		// between our check and the link), this copy is a duplicate.
		if exists(curDir + "/" + name) {
			_ = os.Remove(newDir + "/" + name)
		}
		return nil
	})
}

// usage counts the files of an inbox and their bytes.
func usage(dir string) (int, int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return 0, 0, err
	}
	var n int
	var size int64
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") {
			continue
		}
		if info, err := e.Info(); err == nil {
			n++
			size += info.Size()
		}
	}
	return n, size, nil
}

func (m *mailbox) Fetch(ctx context.Context, member string, max int) ([]coord.Message, error) {
	if err := m.b.live(ctx, "fetch messages"); err != nil {
		return nil, err
	}
	if err := coord.CheckName(member); err != nil {
		return nil, fmt.Errorf("fetch messages: %w", err)
	}
	msgs, err := m.read(member, "new")
	if max > 0 && len(msgs) > max {
		msgs = msgs[:max]
	}
	return msgs, err
}

// read decodes every message in one folder of member's inbox, oldest first. A file that
// cannot be decoded is moved to bad/ (so it is reported once, not at every fetch) and named
// in the error; the others are returned.
func (m *mailbox) read(member, folder string) ([]coord.Message, error) {
	dir := m.dir(member, folder)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read inbox of %s: %w", member, err)
	}
	var msgs []coord.Message
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasSuffix(name, ".json") {
			continue
		}
		var msg coord.Message
		if err := readJSON(dir+"/"+name, &msg); err != nil {
			if errors.Is(err, os.ErrNotExist) {
				continue // acked meanwhile
			}
			if errors.Is(err, coord.ErrCorrupt) {
				bad := m.dir(member, "bad")
				_ = os.MkdirAll(bad, 0o700)
				_ = os.Rename(dir+"/"+name, bad+"/"+name)
				err = fmt.Errorf("message of %s moved to %s: %w", member, bad, err)
			}
			errs = append(errs, err)
			continue
		}
		msgs = append(msgs, msg)
	}
	slices.SortFunc(msgs, func(a, b coord.Message) int {
		return cmp.Or(a.Sent.Compare(b.Sent), strings.Compare(a.ID, b.ID))
	})
	return msgs, errors.Join(errs...)
}

func (m *mailbox) Ack(ctx context.Context, member string, ids ...string) error {
	if err := m.b.live(ctx, "ack messages"); err != nil {
		return err
	}
	if err := coord.CheckName(member); err != nil {
		return fmt.Errorf("ack messages: %w", err)
	}
	cur := m.dir(member, "cur")
	if err := os.MkdirAll(cur, 0o700); err != nil {
		return fmt.Errorf("ack messages of %s: %w", member, err)
	}
	var errs []error
	for _, id := range ids {
		if checkID("ack", id) != nil {
			continue // never sent: nothing to ack
		}
		err := os.Rename(m.dir(member, "new", id+".json"), cur+"/"+id+".json")
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, fmt.Errorf("ack message %s of %s: %w", id, member, err))
		}
	}
	m.mu.Lock()
	m.acks += len(ids)
	prune := m.acks >= keepDelivered/10
	if prune {
		m.acks = 0
	}
	m.mu.Unlock()
	if prune {
		pruneDelivered(cur)
	}
	return errors.Join(errs...)
}

// pruneDelivered keeps the newest keepDelivered files of a cur/ folder.
func pruneDelivered(dir string) {
	entries, err := os.ReadDir(dir)
	if err != nil || len(entries) <= keepDelivered {
		return
	}
	type aged struct {
		name string
		t    time.Time
	}
	var all []aged
	for _, e := range entries {
		if info, err := e.Info(); err == nil {
			all = append(all, aged{e.Name(), info.ModTime()})
		}
	}
	slices.SortFunc(all, func(a, b aged) int { return a.t.Compare(b.t) })
	for _, a := range all[:max(0, len(all)-keepDelivered)] {
		_ = os.Remove(dir + "/" + a.name)
	}
}

func (m *mailbox) Watch(ctx context.Context, member string) (<-chan struct{}, error) {
	if err := m.b.live(ctx, "watch inbox"); err != nil {
		return nil, err
	}
	if err := coord.CheckName(member); err != nil {
		return nil, fmt.Errorf("watch inbox: %w", err)
	}
	return m.b.hub.watch(ctx, nil, m.dir(member, "new"))
}

// Delivered returns the messages member acked, oldest first.
func (m *mailbox) Delivered(ctx context.Context, member string, limit int) ([]coord.Message, error) {
	if err := m.b.live(ctx, "read delivered messages"); err != nil {
		return nil, err
	}
	if err := coord.CheckName(member); err != nil {
		return nil, fmt.Errorf("read delivered messages: %w", err)
	}
	msgs, err := m.read(member, "cur")
	if limit > 0 && len(msgs) > limit {
		msgs = msgs[len(msgs)-limit:]
	}
	return msgs, err
}
