// Package fscoord is the default coordination backend: one team's mailbox, task board,
// permission requests and records as files in one directory (under the keel directory), safe
// for any number of processes on the machine.
//
// Layout under the team directory:
//
//	tmp/                        files being written; published by link or rename
//	mail/<member>/new/<id>.json unread messages, one file each
//	mail/<member>/cur/<id>.json acked messages: the history, and the ids already delivered
//	board/tasks/<id>.json       one file per task
//	board/next, board/lock      the next task id; the board's lock
//	requests/pending/<id>.json  open requests
//	requests/resolved/<id>.json their answers
//	records/<key>.json          records, "/" in keys written as "%"
//	events/<member>.log, .log.1 a member's event log, newest entries last (see events.go)
//
// A message is written to a file in tmp/ and published with link(2) to new/<id>.json — on
// Linux an unnamed file (O_TMPFILE) that the handle made before it was needed, so a send
// neither creates nor removes a name on the path the message travels (spares.go): the
// receiver sees it whole or not at all, and a second send of the same id fails to link (deduplicated)
// — rename would silently replace. Ack renames new/ to cur/, so at no instant is a message in
// neither; a send that finds its id in cur/ (already delivered) withdraws itself.
//
// Board and record changes are read-modify-write under an flock(2)'d lock file, which the
// kernel releases when a holder dies, even by SIGKILL: a crashed claimer can never wedge the
// board, and its claim's lease lets another member take the task over. Task files are
// replaced atomically (temp, rename), so a crash never leaves a torn task. board/state
// counts revisions and names the tasks each changed, so a handle keeps the board cached and
// re-reads only what changed since its last look.
//
// Watches use fsnotify on the directories involved; when change notification is unavailable
// (inotify limits, a filesystem without it) they poll instead.
package fscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/lazy"
)

// DefaultPollInterval is how often watches poll when fsnotify is not available.
const DefaultPollInterval = 100 * time.Millisecond

// Options configure a backend handle.
type Options struct {
	coord.Config
	// PollInterval, when set, makes watches poll at this interval instead of using fsnotify.
	PollInterval time.Duration
}

// Backend is a handle on one team directory. Several handles, in one process or many, may
// share a directory. It is safe for concurrent use.
type Backend struct {
	root   string
	cfg    coord.Config
	logger *slog.Logger
	hub    *hub

	mail     *mailbox
	board    *board
	requests *requests
	records  *records
	events   *events
	spares   *spares

	// mu guards closed.
	mu     sync.Mutex
	closed bool
}

var (
	_ coord.Backend  = (*Backend)(nil)
	_ coord.EventLog = (*Backend)(nil)
)

// Open opens (creating it if needed) the team directory dir.
func Open(dir string, opts Options) (*Backend, error) {
	cfg := opts.Config.WithDefaults()
	b := &Backend{root: dir, cfg: cfg, logger: cfg.Logger}
	for _, d := range []string{"tmp", "mail", "board/tasks", "requests/pending", "requests/resolved", "records", "events"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			return nil, fmt.Errorf("open team directory %s: %w", dir, err)
		}
	}
	b.sweepTemp()
	b.hub = newHub(b.logger, opts.PollInterval)
	b.mail = &mailbox{b: b}
	b.board = &board{b: b, lock: newLock(filepath.Join(dir, "board", "lock"))}
	b.requests = &requests{b: b}
	b.records = &records{b: b, lock: newLock(filepath.Join(dir, "records", "lock"))}
	b.events = newEvents(b)
	b.spares = newSpares(b.path("tmp"), b.logger)
	return b, nil
}

// Dir returns the team directory.
func (b *Backend) Dir() string { return b.root }

// Mailbox returns the team's mailbox.
func (b *Backend) Mailbox() coord.Mailbox { return b.mail }

// Board returns the team's task board.
func (b *Backend) Board() coord.Board { return b.board }

// Requests returns the team's permission requests.
func (b *Backend) Requests() coord.Requests { return b.requests }

// Records returns the team's records.
func (b *Backend) Records() coord.Records { return b.records }

// Close ends the handle's watches and releases its lock files.
func (b *Backend) Close() error {
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return nil
	}
	b.closed = true
	b.mu.Unlock()
	b.hub.close()
	b.spares.close()
	return errors.Join(b.board.lock.close(), b.records.lock.close(), b.mail.close(), b.events.close())
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

func (b *Backend) path(parts ...string) string {
	return filepath.Join(append([]string{b.root}, parts...)...)
}

// sweepTemp removes temporary files a crashed writer left behind long ago.
func (b *Backend) sweepTemp() {
	entries, err := os.ReadDir(b.path("tmp"))
	if err != nil {
		return
	}
	cutoff := time.Now().Add(-time.Hour)
	for _, e := range entries {
		if info, err := e.Info(); err == nil && info.ModTime().Before(cutoff) {
			_ = os.Remove(b.path("tmp", e.Name()))
		}
	}
}

// idRE is compiled on first use: a counted repetition compiles to a program of thousands
// of instructions, which every keel process paid at start (most never check an id).
var idRE = lazy.Regexp{Expr: `^[A-Za-z0-9_=-][A-Za-z0-9_.=-]{0,127}$`}

// checkID reports an id that cannot be a file name.
func checkID(what, id string) error {
	if !idRE.Get().MatchString(id) {
		return fmt.Errorf("%s: id %q: want 1-128 letters, digits and _ . = -: %w", what, id, coord.ErrInvalid)
	}
	return nil
}

// writeTemp writes data to a new file in tmp/ and returns its path. With durable, the data
// is synced to disk first.
//
// What needs syncing: a process crash (SIGKILL) loses nothing that was written, synced or
// not, because the page cache outlives the process; only a power loss or kernel crash loses
// unsynced writes. Messages are synced, since their content exists nowhere else; board,
// record and request files are not (about 3 ms per file on a loaded disk): what a power loss
// takes from them is recovered by leases, heartbeats and requests asked again.
func (b *Backend) writeTemp(name string, data []byte, durable bool) (string, error) {
	f, err := os.CreateTemp(b.path("tmp"), name+".*.tmp")
	if err != nil {
		return "", fmt.Errorf("create temporary file: %w", err)
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil && durable {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		_ = os.Remove(tmp)
		return "", fmt.Errorf("write temporary file %s: %w", tmp, err)
	}
	return tmp, nil
}

// publish makes data appear at dst whole, only if dst does not exist yet: it reports false
// when dst already existed (nothing changed). With durable the data is synced before publish
// returns — after the link, so a reader on this machine sees it without waiting for the disk
// (the page cache it reads is the one being synced); only a power loss in between could take
// it, and that takes its reader's unsynced state too.
func (b *Backend) publish(dst, name string, data []byte, durable bool) (bool, error) {
	if f := b.spares.take(); f != nil {
		defer f.Close()
		if _, err := f.Write(data); err != nil {
			return false, fmt.Errorf("write %s: %w", dst, err)
		}
		err := linkUnnamed(f, dst)
		if err == nil || errors.Is(err, os.ErrExist) {
			return b.published(f, dst, err, durable)
		}
		b.spares.disable(err) // no /proc, say: named temporary files from now on
	}
	f, err := os.CreateTemp(b.path("tmp"), name+".*.tmp")
	if err != nil {
		return false, fmt.Errorf("create temporary file: %w", err)
	}
	tmp := f.Name()
	defer os.Remove(tmp)
	defer f.Close()
	if _, err := f.Write(data); err != nil {
		return false, fmt.Errorf("write temporary file %s: %w", tmp, err)
	}
	return b.published(f, dst, os.Link(tmp, dst), durable)
}

// published finishes a publish whose link returned err: an existing dst is no news, a linked
// one is synced when durable.
func (b *Backend) published(f *os.File, dst string, err error, durable bool) (bool, error) {
	if err != nil {
		if errors.Is(err, os.ErrExist) {
			return false, nil
		}
		return false, fmt.Errorf("publish %s: %w", dst, err)
	}
	if durable {
		if err := f.Sync(); err != nil {
			return true, fmt.Errorf("sync %s: %w", dst, err)
		}
	}
	return true, nil
}

// replace makes data the content of dst atomically (temp, rename).
func (b *Backend) replace(dst, name string, data []byte) error {
	tmp, err := b.writeTemp(name, data, false)
	if err != nil {
		return err
	}
	if err := os.Rename(tmp, dst); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("replace %s: %w", dst, err)
	}
	return nil
}

// readJSON decodes the file at path into v; a file that is not valid JSON is ErrCorrupt,
// naming the file.
func readJSON(path string, v any) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("%s: %v: %w", path, err, coord.ErrCorrupt)
	}
	return nil
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}
