package transcript

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/google/uuid"
)

// File is what a [Writer] needs of its file. Tests wrap the real file to simulate a failing disk.
type File interface {
	io.Writer
	// Sync makes written data durable (fdatasync on the real file).
	Sync() error
	Truncate(size int64) error
	Close() error
}

// Options configure a [Writer]. The header fields fill entries that leave them empty.
type Options struct {
	SessionID string
	CWD       string
	GitBranch string
	Version   string
	// Logger receives repair reports; nil discards.
	Logger *slog.Logger
	// WrapFile, if set, wraps the file every write goes through (fault injection in tests).
	WrapFile func(File) File
	// Now stamps entries; nil means time.Now.
	Now func() time.Time
	// Leaf, on Resume, names the entry the conversation continues from — one on a branch
	// the default replay leaves aside (see SCHEMA.md) — when the file has it; otherwise the
	// default leaf is taken.
	Leaf string
}

// ErrLocked means another process (or another Writer in this one) has the session open.
var ErrLocked = errors.New("session is open in another process")

// ErrClosed is returned by calls on a closed Writer.
var ErrClosed = errors.New("transcript writer is closed")

// Writer appends entries to one transcript. One goroutine owns the file: Append and Sync hand
// their work to it and wait, so calls from many goroutines are serialised in call order and
// parent links follow that order. Each entry is written with one write call; Sync (call it at
// the end of every turn) and Close make it durable.
//
// A write that fails is cut back off the file so the next entry starts on a clean line; a
// failed Sync leaves the writer broken (every later call returns that error), because after a
// failed fdatasync the kernel may have dropped the data.
type Writer struct {
	path string
	reqs chan request
	done chan struct{}
}

type op int

const (
	opAppend op = iota
	opAppendRaw
	opSync
	opClose
)

type request struct {
	op    op
	entry Entry
	raw   []byte
	reply chan result
}

type result struct {
	entry Entry
	err   error
}

// owner is the state of the goroutine that owns the file.
type owner struct {
	path   string
	osFile *os.File
	file   File
	opts   Options
	logger *slog.Logger
	size   int64 // bytes known good on disk; a failed write is truncated back to it
	leaf   string
	meta   map[Type]json.RawMessage
	index  indexFile
	broken error
}

// Create starts a new transcript at path; it must not exist. The first line records the
// schema version.
func Create(ctx context.Context, path string, opts Options) (*Writer, error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create transcript %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL|os.O_APPEND, 0o600)
	if err != nil {
		return nil, fmt.Errorf("create transcript: %w", err)
	}
	if err := lockFile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("create transcript %s: %w", path, err)
	}
	o := newOwner(path, f, opts)
	o.index = indexFile{}
	if _, err := o.append(Entry{Type: TypeMeta, SchemaVersion: SchemaVersion}); err != nil {
		f.Close()
		return nil, fmt.Errorf("create transcript: %w", err)
	}
	if err := o.sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("create transcript: %w", err)
	}
	return start(path, o), nil
}

// Resume opens an existing transcript for appending: it takes the session's lock (returning
// an error wrapping [ErrLocked] if another process holds it), cuts off a torn last line so the
// next entry starts on a fresh line, and replays the file. The state says how many bytes
// were cut in State.TornTail.
func Resume(ctx context.Context, path string, opts Options) (*Writer, *State, error) {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_APPEND, 0)
	if err != nil {
		return nil, nil, fmt.Errorf("resume transcript: %w", err)
	}
	w, st, err := resume(ctx, path, f, opts)
	if err != nil {
		f.Close()
		return nil, nil, fmt.Errorf("resume transcript %s: %w", path, err)
	}
	return w, st, nil
}

func resume(ctx context.Context, path string, f *os.File, opts Options) (*Writer, *State, error) {
	if err := lockFile(f); err != nil {
		return nil, nil, err
	}
	if err := checkVersion(path, f); err != nil {
		return nil, nil, err
	}
	fi, err := f.Stat()
	if err != nil {
		return nil, nil, err
	}
	good, err := lastLineEnd(f, fi.Size())
	if err != nil {
		return nil, nil, err
	}
	st, err := replay(ctx, f, good, opts.Leaf)
	if err != nil {
		return nil, nil, err
	}
	st.TornTail = fi.Size() - good
	st.idFromName(path)
	o := newOwner(path, f, opts)
	if st.TornTail > 0 {
		if err := f.Truncate(good); err != nil {
			return nil, nil, fmt.Errorf("cut torn tail: %w", err)
		}
		if err := f.Sync(); err != nil {
			return nil, nil, fmt.Errorf("cut torn tail: %w", err)
		}
		o.logger.Warn("transcript torn tail cut", "path", path, "bytes", st.TornTail)
	}
	o.size = good
	o.leaf = st.Leaf
	for t, v := range st.Metadata {
		o.meta[t] = v
	}
	if o.index, err = refreshIndex(path, f, good); err != nil {
		return nil, nil, err
	}
	if good == 0 {
		// Everything was torn, even the meta line: start the file again.
		if _, err := o.append(Entry{Type: TypeMeta, SchemaVersion: SchemaVersion}); err != nil {
			return nil, nil, err
		}
	}
	if o.opts.SessionID == "" {
		o.opts.SessionID = st.SessionID
	}
	return start(path, o), st, nil
}

func newOwner(path string, f *os.File, opts Options) *owner {
	if opts.Now == nil {
		opts.Now = time.Now
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	var file File = osFile{f}
	if opts.WrapFile != nil {
		file = opts.WrapFile(file)
	}
	return &owner{path: path, osFile: f, file: file, opts: opts, logger: logger,
		meta: map[Type]json.RawMessage{}}
}

func start(path string, o *owner) *Writer {
	w := &Writer{path: path, reqs: make(chan request), done: make(chan struct{})}
	go o.run(w.reqs, w.done)
	return w
}

// Path is the transcript's file.
func (w *Writer) Path() string { return w.path }

// Append writes e and returns it as written: an empty UUID, SessionID, Timestamp or header
// field is filled in, and a chain entry without ParentUUID is linked to the current leaf.
// When Append returns nil the entry is in the file (not yet durable; see Sync).
func (w *Writer) Append(ctx context.Context, e Entry) (Entry, error) {
	r, err := w.call(ctx, request{op: opAppend, entry: e})
	return r.entry, err
}

// Rewind moves the conversation back: the next chain entry's parent is leaf (empty: a new
// first message). Nothing is removed; the abandoned branch stays in the file.
func (w *Writer) Rewind(ctx context.Context, leaf string) error {
	_, err := w.Append(ctx, Entry{Type: TypeRewind, LeafUUID: leaf})
	return err
}

// appendRaw writes a line kept verbatim (an entry of a type this keel does not know).
func (w *Writer) appendRaw(ctx context.Context, line []byte) error {
	_, err := w.call(ctx, request{op: opAppendRaw, raw: line})
	return err
}

// Sync makes everything appended so far durable and updates the listing index.
func (w *Writer) Sync(ctx context.Context) error {
	_, err := w.call(ctx, request{op: opSync})
	return err
}

// Close syncs, releases the lock and closes the file. It waits for the owner goroutine, even
// if ctx is done, so the file is never left half-closed.
func (w *Writer) Close() error {
	reply := make(chan result, 1)
	select {
	case w.reqs <- request{op: opClose, reply: reply}:
	case <-w.done:
		return ErrClosed
	}
	r := <-reply
	<-w.done
	return r.err
}

func (w *Writer) call(ctx context.Context, req request) (result, error) {
	req.reply = make(chan result, 1)
	select {
	case w.reqs <- req:
	case <-w.done:
		return result{}, ErrClosed
	case <-ctx.Done():
		return result{}, context.Cause(ctx)
	}
	// Once handed over, the request runs to completion: waiting for it keeps the caller from
	// believing an entry was not written when it was.
	r := <-req.reply
	return r, r.err
}

func (o *owner) run(reqs <-chan request, done chan<- struct{}) {
	defer close(done)
	for req := range reqs {
		var r result
		switch req.op {
		case opAppend:
			r.entry, r.err = o.append(req.entry)
		case opAppendRaw:
			r.err = o.appendRaw(req.raw)
		case opSync:
			r.err = o.sync()
		case opClose:
			r.err = o.close()
			req.reply <- r
			return
		}
		req.reply <- r
	}
}

func (o *owner) append(e Entry) (Entry, error) {
	if o.broken != nil {
		return e, o.broken
	}
	if e.UUID == "" {
		e.UUID = uuid.NewString()
	}
	if e.SessionID == "" {
		e.SessionID = o.opts.SessionID
	}
	if e.Timestamp.IsZero() {
		e.Timestamp = o.opts.Now().UTC()
	}
	if e.CWD == "" {
		e.CWD = o.opts.CWD
	}
	if e.GitBranch == "" {
		e.GitBranch = o.opts.GitBranch
	}
	if e.Version == "" {
		e.Version = o.opts.Version
	}
	if e.Type.IsChain() && e.ParentUUID == "" {
		e.ParentUUID = o.leaf
	}
	if e.Type == TypeSummary {
		e.Metadata = make(map[Type]json.RawMessage, len(o.meta))
		for t, v := range o.meta {
			e.Metadata[t] = v
		}
	}
	line, err := encodeLine(e)
	if err != nil {
		return e, err
	}
	if err := o.write(line); err != nil {
		return e, fmt.Errorf("append to transcript %s: %w", o.path, err)
	}
	switch {
	case e.Type.IsChain():
		o.leaf = e.UUID
	case e.Type == TypeRewind:
		o.leaf = e.LeafUUID
	case e.Type.IsMetadata():
		o.meta[e.Type] = e.Value
	}
	o.index.add(e, o.size)
	return e, nil
}

func (o *owner) appendRaw(line []byte) error {
	if o.broken != nil {
		return o.broken
	}
	if err := o.write(append(slices.Clip(line), '\n')); err != nil {
		return fmt.Errorf("append to transcript %s: %w", o.path, err)
	}
	o.index.Size = o.size
	return nil
}

// write puts line in the file with one write call; on failure it cuts the file back so no
// partial line is left for the next entry to be glued to.
func (o *owner) write(line []byte) error {
	n, err := o.file.Write(line)
	if err == nil && n < len(line) {
		err = io.ErrShortWrite
	}
	if err != nil {
		if n > 0 {
			if terr := o.file.Truncate(o.size); terr != nil {
				o.broken = fmt.Errorf("transcript %s has a partial line that could not be cut (%v) after: %w",
					o.path, terr, err)
				return o.broken
			}
		}
		return err
	}
	o.size += int64(n)
	return nil
}

func (o *owner) sync() error {
	if o.broken != nil {
		return o.broken
	}
	if err := o.file.Sync(); err != nil {
		o.broken = fmt.Errorf("sync transcript %s: %w", o.path, err)
		return o.broken
	}
	if err := writeIndex(o.path, o.index); err != nil {
		// The index is a cache checked against the file size; a stale one costs a rescan.
		o.logger.Warn("transcript index not written", "path", o.path, "err", err)
	}
	return nil
}

func (o *owner) close() error {
	err := o.sync()
	if cerr := o.file.Close(); cerr != nil && err == nil {
		err = fmt.Errorf("close transcript %s: %w", o.path, cerr)
	}
	return err
}

// osFile is the real file; its Sync is fdatasync where the platform has it (sync_linux.go).
type osFile struct{ *os.File }
