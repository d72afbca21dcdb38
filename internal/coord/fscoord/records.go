package fscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/keel-dev/keel/internal/coord"
)

type records struct {
	b    *Backend
	lock *fileLock
}

var _ coord.Records = (*records)(nil)

// fileName maps a key to its file: "/" cannot be in a file name and "%" cannot be in a key.
func fileName(key string) string { return strings.ReplaceAll(key, "/", "%") + ".json" }

func keyOf(name string) (string, bool) {
	base, ok := strings.CutSuffix(name, ".json")
	return strings.ReplaceAll(base, "%", "/"), ok && !temporary(name)
}

func (r *records) path(key string) string { return r.b.path("records", fileName(key)) }

func (r *records) read(key string) (coord.Record, error) {
	var rec coord.Record
	if err := readJSON(r.path(key), &rec); err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return coord.Record{}, fmt.Errorf("record %s: %w", key, coord.ErrNotFound)
		}
		return coord.Record{}, fmt.Errorf("record %s: %w", key, err)
	}
	return rec, nil
}

// write stores value under key at the revision after cur (0: a new key), holding the lock.
func (r *records) write(key string, value json.RawMessage, cur uint64) (uint64, error) {
	rec := coord.Record{Key: key, Value: value, Revision: cur + 1, Updated: r.b.cfg.Now()}
	data, err := json.Marshal(rec)
	if err != nil {
		return 0, fmt.Errorf("encode record %s: %w", key, err)
	}
	if err := r.b.replace(r.path(key), "rec", data); err != nil {
		return 0, err
	}
	return rec.Revision, nil
}

func (r *records) change(ctx context.Context, what, key string, value json.RawMessage, fn func(cur coord.Record, err error) error) (uint64, error) {
	if err := r.b.live(ctx, what); err != nil {
		return 0, err
	}
	if err := coord.CheckKey(key); err != nil {
		return 0, fmt.Errorf("%s: %w", what, err)
	}
	if !json.Valid(value) {
		return 0, fmt.Errorf("%s %s: the value is not JSON: %w", what, key, coord.ErrInvalid)
	}
	var rev uint64
	err := r.lock.with(ctx, func() error {
		cur, err := r.read(key)
		if err := fn(cur, err); err != nil {
			return err
		}
		rev, err = r.write(key, value, cur.Revision)
		return err
	})
	return rev, err
}

func (r *records) Put(ctx context.Context, key string, value json.RawMessage) (uint64, error) {
	return r.change(ctx, "put record", key, value, func(_ coord.Record, err error) error {
		if err != nil && !errors.Is(err, coord.ErrNotFound) && !errors.Is(err, coord.ErrCorrupt) {
			return err // a corrupt record is simply replaced
		}
		return nil
	})
}

func (r *records) Create(ctx context.Context, key string, value json.RawMessage) (uint64, error) {
	return r.change(ctx, "create record", key, value, func(_ coord.Record, err error) error {
		switch {
		case err == nil, errors.Is(err, coord.ErrCorrupt):
			return fmt.Errorf("create record %s: %w", key, coord.ErrExists)
		case errors.Is(err, coord.ErrNotFound):
			return nil
		}
		return err
	})
}

func (r *records) Update(ctx context.Context, key string, value json.RawMessage, rev uint64) (uint64, error) {
	return r.change(ctx, "update record", key, value, func(cur coord.Record, err error) error {
		if err != nil {
			return err
		}
		if cur.Revision != rev {
			return fmt.Errorf("update record %s: it is at revision %d, not %d: %w", key, cur.Revision, rev, coord.ErrConflict)
		}
		return nil
	})
}

func (r *records) Get(ctx context.Context, key string) (coord.Record, error) {
	if err := r.b.live(ctx, "get record"); err != nil {
		return coord.Record{}, err
	}
	if err := coord.CheckKey(key); err != nil {
		return coord.Record{}, fmt.Errorf("get record: %w", err)
	}
	return r.read(key)
}

func (r *records) List(ctx context.Context, prefix string) ([]coord.Record, error) {
	if err := r.b.live(ctx, "list records"); err != nil {
		return nil, err
	}
	entries, err := os.ReadDir(r.b.path("records"))
	if err != nil {
		return nil, fmt.Errorf("list records: %w", err)
	}
	var out []coord.Record
	var errs []error
	for _, e := range entries {
		key, ok := keyOf(e.Name())
		if !ok || !strings.HasPrefix(key, prefix) || coord.CheckKey(key) != nil {
			continue
		}
		rec, err := r.read(key)
		if err != nil {
			if !errors.Is(err, coord.ErrNotFound) {
				errs = append(errs, err)
			}
			continue
		}
		out = append(out, rec)
	}
	slices.SortFunc(out, func(a, b coord.Record) int { return strings.Compare(a.Key, b.Key) })
	return out, errors.Join(errs...)
}

func (r *records) Delete(ctx context.Context, key string) error {
	if err := r.b.live(ctx, "delete record"); err != nil {
		return err
	}
	if err := coord.CheckKey(key); err != nil {
		return fmt.Errorf("delete record: %w", err)
	}
	return r.lock.with(ctx, func() error {
		if err := os.Remove(r.path(key)); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("delete record %s: %w", key, err)
		}
		return nil
	})
}

func (r *records) Watch(ctx context.Context, prefix string) (<-chan struct{}, error) {
	if err := r.b.live(ctx, "watch records"); err != nil {
		return nil, err
	}
	return r.b.hub.watch(ctx, func(name string) bool {
		key, ok := keyOf(name)
		return ok && strings.HasPrefix(key, prefix)
	}, r.b.path("records"))
}
