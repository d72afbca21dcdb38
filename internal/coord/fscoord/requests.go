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

	"github.com/keel-dev/keel/internal/coord"
)

type requests struct{ b *Backend }

var _ coord.Requests = (*requests)(nil)

func (r *requests) pendingPath(id string) string { return r.b.path("requests", "pending", id+".json") }

func (r *requests) resolvedPath(id string) string {
	return r.b.path("requests", "resolved", id+".json")
}

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
	data, err := json.Marshal(req)
	if err != nil {
		return fmt.Errorf("encode request: %w", err)
	}
	if limit := r.b.cfg.Limits.MessageBytes; len(data) > limit {
		return fmt.Errorf("submit request to %s: %d bytes is over the %d-byte budget: %w", req.To, len(data), limit, coord.ErrTooLarge)
	}
	if exists(r.resolvedPath(req.ID)) {
		return nil
	}
	fresh, err := r.b.publish(r.pendingPath(req.ID), "req-"+req.ID, data, false)
	if err != nil || !fresh {
		return err
	}
	// Answered between the check and the publish: this copy must not reopen it.
	if exists(r.resolvedPath(req.ID)) {
		_ = os.Remove(r.pendingPath(req.ID))
	}
	return nil
}

func (r *requests) Pending(ctx context.Context, to string) ([]coord.Request, error) {
	if err := r.b.live(ctx, "list requests"); err != nil {
		return nil, err
	}
	dir := r.b.path("requests", "pending")
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("list requests: %w", err)
	}
	var out []coord.Request
	var errs []error
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || temporary(e.Name()) {
			continue
		}
		var req coord.Request
		if err := readJSON(dir+"/"+e.Name(), &req); err != nil {
			if !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("request: %w", err))
			}
			continue
		}
		if (to == "" || req.To == to) && !exists(r.resolvedPath(req.ID)) {
			out = append(out, req)
		}
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
	if err := checkID("resolve request", id); err != nil {
		return err
	}
	if !exists(r.pendingPath(id)) {
		if exists(r.resolvedPath(id)) {
			return fmt.Errorf("resolve request %s: it was answered before: %w", id, coord.ErrResolved)
		}
		return fmt.Errorf("resolve request %s: no such request: %w", id, coord.ErrNotFound)
	}
	res.ID = id
	if res.Resolved.IsZero() {
		res.Resolved = r.b.cfg.Now()
	}
	data, err := json.Marshal(res)
	if err != nil {
		return fmt.Errorf("encode resolution: %w", err)
	}
	fresh, err := r.b.publish(r.resolvedPath(id), "res-"+id, data, false)
	if err != nil {
		return err
	}
	if !fresh {
		return fmt.Errorf("resolve request %s: it was answered before: %w", id, coord.ErrResolved)
	}
	if err := os.Remove(r.pendingPath(id)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("resolve request %s: %w", id, err)
	}
	return nil
}

func (r *requests) Resolution(ctx context.Context, id string) (coord.Resolution, error) {
	if err := r.b.live(ctx, "read resolution"); err != nil {
		return coord.Resolution{}, err
	}
	if err := checkID("read resolution", id); err != nil {
		return coord.Resolution{}, err
	}
	var res coord.Resolution
	err := readJSON(r.resolvedPath(id), &res)
	switch {
	case err == nil:
		return res, nil
	case !errors.Is(err, os.ErrNotExist):
		return coord.Resolution{}, fmt.Errorf("read resolution: %w", err)
	case exists(r.pendingPath(id)):
		return coord.Resolution{}, fmt.Errorf("request %s: %w", id, coord.ErrPending)
	}
	return coord.Resolution{}, fmt.Errorf("request %s: no such request: %w", id, coord.ErrNotFound)
}

func (r *requests) Watch(ctx context.Context) (<-chan struct{}, error) {
	if err := r.b.live(ctx, "watch requests"); err != nil {
		return nil, err
	}
	return r.b.hub.watch(ctx, nil, r.b.path("requests", "pending"), r.b.path("requests", "resolved"))
}
