package natscoord

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/keel-dev/keel/internal/coord"
)

// requests keeps each request and, once answered, its resolution in one key, req.<id>: the
// answer is a compare-and-set on the request's revision, so the first answer wins.
type requests struct{ b *Backend }

var _ coord.Requests = (*requests)(nil)

type requestEntry struct {
	Request    coord.Request     `json:"request"`
	Resolution *coord.Resolution `json:"resolution,omitempty"`
}

func reqKey(id string) string { return "req." + id }

func (r *requests) Submit(ctx context.Context, req coord.Request) error {
	if err := r.b.live(ctx, "submit request"); err != nil {
		return err
	}
	if err := checkID("submit request", req.ID); err != nil {
		return err
	}
	if req.To == "" {
		return fmt.Errorf("submit request %s: no recipient: %w", req.ID, coord.ErrInvalid)
	}
	if req.Created.IsZero() {
		req.Created = r.b.cfg.Now()
	}
	data, err := json.Marshal(requestEntry{Request: req})
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	if limit := r.b.cfg.Limits.MessageBytes; len(data) > limit {
		return fmt.Errorf("submit request to %s: %d bytes is over the %d-byte budget: %w", req.To, len(data), limit, coord.ErrTooLarge)
	}
	return r.b.retry(ctx, "submit request "+req.ID, func(ctx context.Context) error {
		_, err := r.b.stateKV.Create(ctx, reqKey(req.ID), data)
		if errors.Is(err, jetstream.ErrKeyExists) {
			return nil // submitted before (and maybe answered): unchanged
		}
		return err
	})
}

// get reads request id and its revision.
func (r *requests) get(ctx context.Context, id string) (requestEntry, uint64, error) {
	e, err := r.b.stateKV.Get(ctx, reqKey(id))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return requestEntry{}, 0, fmt.Errorf("request %s does not exist: %w", id, coord.ErrNotFound)
	}
	if err != nil {
		return requestEntry{}, 0, err
	}
	var re requestEntry
	if err := json.Unmarshal(e.Value(), &re); err != nil {
		return requestEntry{}, 0, fmt.Errorf("request %s (key %s of bucket %s): %v: %w", id, e.Key(), r.b.stateKV.Bucket(), err, coord.ErrCorrupt)
	}
	return re, e.Revision(), nil
}

func (r *requests) Pending(ctx context.Context, to string) ([]coord.Request, error) {
	if err := r.b.live(ctx, "list requests"); err != nil {
		return nil, err
	}
	var out []coord.Request
	var errs []error
	err := r.b.retry(ctx, "list requests", func(ctx context.Context) error {
		out, errs = nil, nil
		return eachValue(ctx, r.b, "req.*", func(e jetstream.KeyValueEntry) {
			var re requestEntry
			if err := json.Unmarshal(e.Value(), &re); err != nil {
				errs = append(errs, fmt.Errorf("request under key %s: %v: %w", e.Key(), err, coord.ErrCorrupt))
				return
			}
			if re.Resolution == nil && (to == "" || re.Request.To == to) {
				out = append(out, re.Request)
			}
		})
	})
	if err != nil {
		return nil, fmt.Errorf("list requests: %w", err)
	}
	slices.SortFunc(out, func(a, b coord.Request) int {
		return cmp.Or(a.Created.Compare(b.Created), strings.Compare(a.ID, b.ID))
	})
	return out, errors.Join(errs...)
}

func (r *requests) Resolve(ctx context.Context, id string, res coord.Resolution) error {
	if err := r.b.live(ctx, "resolve request"); err != nil {
		return err
	}
	if checkID("resolve request", id) != nil {
		return fmt.Errorf("resolve request: request %s does not exist: %w", id, coord.ErrNotFound)
	}
	res.ID = id
	if res.Resolved.IsZero() {
		res.Resolved = r.b.cfg.Now()
	}
	return r.b.retry(ctx, "resolve request "+id, func(ctx context.Context) error {
		for {
			re, rev, err := r.get(ctx, id)
			if err != nil {
				return fmt.Errorf("resolve request: %w", err)
			}
			if re.Resolution != nil {
				by := cmp.Or(re.Resolution.By, "someone")
				return fmt.Errorf("resolve request %s: %s answered it at %s: %w", id, by, re.Resolution.Resolved.Format("15:04:05"), coord.ErrResolved)
			}
			re.Resolution = &res
			data, err := json.Marshal(re)
			if err != nil {
				return fmt.Errorf("encode resolution: %w", err)
			}
			_, err = r.b.stateKV.Update(ctx, reqKey(id), data, rev)
			if wrongLastSeq(err) {
				continue // answered meanwhile: the next read says by whom
			}
			return err
		}
	})
}

func (r *requests) Resolution(ctx context.Context, id string) (coord.Resolution, error) {
	if err := r.b.live(ctx, "read resolution"); err != nil {
		return coord.Resolution{}, err
	}
	if checkID("read resolution", id) != nil {
		return coord.Resolution{}, fmt.Errorf("read resolution: request %s does not exist: %w", id, coord.ErrNotFound)
	}
	var re requestEntry
	err := r.b.retry(ctx, "read resolution of "+id, func(ctx context.Context) error {
		var err error
		re, _, err = r.get(ctx, id)
		return err
	})
	if err != nil {
		return coord.Resolution{}, fmt.Errorf("read resolution: %w", err)
	}
	if re.Resolution == nil {
		return coord.Resolution{}, fmt.Errorf("request %s from %s has no answer yet: %w", id, re.Request.From, coord.ErrPending)
	}
	return *re.Resolution, nil
}

func (r *requests) Watch(ctx context.Context) (<-chan struct{}, error) {
	return r.b.watch(ctx, "watch requests", kvWatch(r.b, "req.*", nil))
}

// kvWatch starts a watch of the state bucket's keys matching filter whose changes pass keep
// (nil: all), signalling for each.
func kvWatch(b *Backend, filter string, keep func(key string) bool) func(ctx context.Context, sig *signal) (func(), error) {
	return func(ctx context.Context, sig *signal) (func(), error) {
		w, err := b.stateKV.Watch(ctx, filter, jetstream.UpdatesOnly())
		if err != nil {
			return nil, err
		}
		done := make(chan struct{})
		b.wg.Go(func() {
			defer close(done)
			for {
				select {
				case <-ctx.Done():
					return
				case e, ok := <-w.Updates():
					if !ok {
						return
					}
					if e != nil && (keep == nil || keep(e.Key())) {
						sig.notify()
					}
				}
			}
		})
		return func() { _ = w.Stop(); <-done }, nil
	}
}
