package coord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// Modify changes the JSON record key by compare-and-set: it reads the value into a T, lets fn
// change it, and writes it back only if nobody wrote the key in between — otherwise it reads
// again and calls fn again, so fn must decide from the value alone. An error from fn ends
// the loop with nothing written; it is returned as is, with the value fn saw, so a caller
// can make "nothing to do" a sentinel of its own. A missing key is an error wrapping
// [ErrNotFound]; an unreadable value one wrapping [ErrCorrupt].
func Modify[T any](ctx context.Context, rec Records, key string, fn func(v *T) error) (T, error) {
	for {
		var v T
		r, err := rec.Get(ctx, key)
		if err != nil {
			return v, err
		}
		if err := json.Unmarshal(r.Value, &v); err != nil {
			return v, fmt.Errorf("read record %s: %v: %w", key, err, ErrCorrupt)
		}
		if err := fn(&v); err != nil {
			return v, err
		}
		data, err := json.Marshal(v)
		if err != nil {
			return v, fmt.Errorf("encode record %s: %w", key, err)
		}
		_, err = rec.Update(ctx, key, data, r.Revision)
		if errors.Is(err, ErrConflict) {
			continue
		}
		if err != nil {
			return v, err
		}
		return v, nil
	}
}
