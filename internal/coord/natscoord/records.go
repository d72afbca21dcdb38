package natscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/lazy"
)

// records keeps each record under rec.<key>, with "." and "=" in keys escaped so that a
// record key is one token of the subject. The stored value carries the record's own revision
// (1, 2, …) and time; writes are compare-and-set on the key's revision in the stream.
type records struct{ b *Backend }

var _ coord.Records = (*records)(nil)

type recordEntry struct {
	Value    json.RawMessage `json:"value"`
	Revision uint64          `json:"revision"`
	Updated  time.Time       `json:"updated"`
}

var keyEscaper = lazy.Value[*strings.Replacer]{New: func() *strings.Replacer { return strings.NewReplacer("=", "=3D", ".", "=2E") }}
var keyUnescaper = lazy.Value[*strings.Replacer]{New: func() *strings.Replacer { return strings.NewReplacer("=3D", "=", "=2E", ".") }}

func recKey(key string) string { return "rec." + keyEscaper.Get().Replace(key) }

func recordKey(kvKey string) string {
	return keyUnescaper.Get().Replace(strings.TrimPrefix(kvKey, "rec."))
}

func (r *records) check(ctx context.Context, what, key string) error {
	if err := r.b.live(ctx, what); err != nil {
		return err
	}
	if err := coord.CheckKey(key); err != nil {
		return fmt.Errorf("%s: %w", what, err)
	}
	return nil
}

func checkValue(what string, v json.RawMessage) error {
	if !json.Valid(v) {
		return fmt.Errorf("%s: the value is not JSON: %w", what, coord.ErrInvalid)
	}
	return nil
}

// get reads a record and its revision in the stream (0: no record).
func (r *records) get(ctx context.Context, key string) (recordEntry, uint64, error) {
	e, err := r.b.stateKV.Get(ctx, recKey(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return recordEntry{}, 0, nil
	}
	if err != nil {
		return recordEntry{}, 0, err
	}
	var re recordEntry
	if err := json.Unmarshal(e.Value(), &re); err != nil {
		return recordEntry{}, e.Revision(), fmt.Errorf("record %s (key %s of bucket %s): %v: %w", key, e.Key(), r.b.stateKV.Bucket(), err, coord.ErrCorrupt)
	}
	return re, e.Revision(), nil
}

// write stores value as the record's revision n at the stream revision rev (0: new key).
func (r *records) write(ctx context.Context, key string, value json.RawMessage, n, rev uint64) error {
	data, err := json.Marshal(recordEntry{Value: value, Revision: n, Updated: r.b.cfg.Now()})
	if err != nil {
		return fmt.Errorf("encode record %s: %w", key, err)
	}
	if rev == 0 {
		_, err = r.b.stateKV.Create(ctx, recKey(key), data)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return errLost
		}
	} else {
		_, err = r.b.stateKV.Update(ctx, recKey(key), data, rev)
	}
	if wrongLastSeq(err) {
		return errLost
	}
	return err
}

func (r *records) Put(ctx context.Context, key string, value json.RawMessage) (uint64, error) {
	const what = "put record"
	if err := r.check(ctx, what, key); err != nil {
		return 0, err
	}
	if err := checkValue(what, value); err != nil {
		return 0, err
	}
	var n uint64
	err := r.b.retry(ctx, what+" "+key, func(ctx context.Context) error {
		for {
			re, rev, err := r.get(ctx, key)
			if err != nil && !errors.Is(err, coord.ErrCorrupt) {
				return err // a corrupt record is replaced
			}
			n = re.Revision + 1
			if err := r.write(ctx, key, value, n, rev); !errors.Is(err, errLost) {
				return err
			}
		}
	})
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", what, key, err)
	}
	return n, nil
}

func (r *records) Create(ctx context.Context, key string, value json.RawMessage) (uint64, error) {
	const what = "create record"
	if err := r.check(ctx, what, key); err != nil {
		return 0, err
	}
	if err := checkValue(what, value); err != nil {
		return 0, err
	}
	err := r.b.retry(ctx, what+" "+key, func(ctx context.Context) error {
		return r.write(ctx, key, value, 1, 0)
	})
	if errors.Is(err, errLost) {
		return 0, fmt.Errorf("%s: %s already exists: %w", what, key, coord.ErrExists)
	}
	if err != nil {
		return 0, fmt.Errorf("%s %s: %w", what, key, err)
	}
	return 1, nil
}

func (r *records) Update(ctx context.Context, key string, value json.RawMessage, want uint64) (uint64, error) {
	const what = "update record"
	if err := r.check(ctx, what, key); err != nil {
		return 0, err
	}
	if err := checkValue(what, value); err != nil {
		return 0, err
	}
	err := r.b.retry(ctx, what+" "+key, func(ctx context.Context) error {
		for {
			re, rev, err := r.get(ctx, key)
			if err != nil {
				return err
			}
			if rev == 0 {
				return fmt.Errorf("%s: %s does not exist: %w", what, key, coord.ErrNotFound)
			}
			if re.Revision != want {
				return fmt.Errorf("%s %s: it is at revision %d, not %d: %w", what, key, re.Revision, want, coord.ErrConflict)
			}
			if err := r.write(ctx, key, value, want+1, rev); !errors.Is(err, errLost) {
				return err
			}
		}
	})
	if err != nil {
		return 0, err
	}
	return want + 1, nil
}

func (r *records) Get(ctx context.Context, key string) (coord.Record, error) {
	const what = "get record"
	if err := r.check(ctx, what, key); err != nil {
		return coord.Record{}, err
	}
	var re recordEntry
	var rev uint64
	err := r.b.retry(ctx, what+" "+key, func(ctx context.Context) error {
		var err error
		re, rev, err = r.get(ctx, key)
		return err
	})
	if err != nil {
		return coord.Record{}, fmt.Errorf("%s: %w", what, err)
	}
	if rev == 0 {
		return coord.Record{}, fmt.Errorf("%s: %s does not exist: %w", what, key, coord.ErrNotFound)
	}
	return coord.Record{Key: key, Value: re.Value, Revision: re.Revision, Updated: re.Updated}, nil
}

func (r *records) List(ctx context.Context, prefix string) ([]coord.Record, error) {
	if err := r.b.live(ctx, "list records"); err != nil {
		return nil, err
	}
	var out []coord.Record
	var errs []error
	err := r.b.retry(ctx, "list records", func(ctx context.Context) error {
		out, errs = nil, nil
		return eachValue(ctx, r.b, "rec.*", func(e jetstream.KeyValueEntry) {
			key := recordKey(e.Key())
			if !strings.HasPrefix(key, prefix) {
				return
			}
			var re recordEntry
			if err := json.Unmarshal(e.Value(), &re); err != nil {
				errs = append(errs, fmt.Errorf("record %s (key %s of bucket %s): %v: %w", key, e.Key(), r.b.stateKV.Bucket(), err, coord.ErrCorrupt))
				return
			}
			out = append(out, coord.Record{Key: key, Value: re.Value, Revision: re.Revision, Updated: re.Updated})
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list records: %w", err)
	}
	slices.SortFunc(out, func(a, b coord.Record) int { return strings.Compare(a.Key, b.Key) })
	return out, errors.Join(errs...)
}

func (r *records) Delete(ctx context.Context, key string) error {
	const what = "delete record"
	if err := r.check(ctx, what, key); err != nil {
		return err
	}
	return r.b.retry(ctx, what+" "+key, func(ctx context.Context) error {
		if err := r.b.stateKV.Delete(ctx, recKey(key)); err != nil {
			return fmt.Errorf("%s %s: %w", what, key, err)
		}
		return nil
	})
}

func (r *records) Watch(ctx context.Context, prefix string) (<-chan struct{}, error) {
	return r.b.watch(ctx, "watch records", kvWatch(r.b, "rec.*", func(k string) bool {
		return strings.HasPrefix(recordKey(k), prefix)
	}))
}
