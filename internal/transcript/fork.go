package transcript

import (
	"context"
	"fmt"
	"maps"
	"slices"
)

// Fork copies the live state of the transcript at src into a new transcript at dst, for
// opts.SessionID: the newest metadata, then the chain with its uuids (so rewind targets keep
// their names) and unknown entries. src is only read, never locked or changed, so a session open
// elsewhere can be forked. The new transcript is returned open for appending, with its state.
func Fork(ctx context.Context, src, dst string, opts Options) (*Writer, *State, error) {
	if err := CheckID(opts.SessionID); err != nil {
		return nil, nil, fmt.Errorf("fork session: %w", err)
	}
	st, err := Load(ctx, src)
	if err != nil {
		return nil, nil, fmt.Errorf("fork session: %w", err)
	}
	w, err := Create(ctx, dst, opts)
	if err != nil {
		return nil, nil, fmt.Errorf("fork session: %w", err)
	}
	if err := copyState(ctx, w, st, opts.SessionID); err != nil {
		w.Close()
		return nil, nil, fmt.Errorf("fork session %s into %s: %w", src, dst, err)
	}
	return w, st, nil
}

func copyState(ctx context.Context, w *Writer, st *State, id string) error {
	// Metadata first: a compaction boundary picks the values up from the writer.
	for _, t := range slices.Sorted(maps.Keys(st.Metadata)) {
		if _, err := w.Append(ctx, Entry{Type: t, Value: st.Metadata[t]}); err != nil {
			return err
		}
	}
	u := 0
	writeUnknown := func(upTo int) error {
		for ; u < len(st.Unknown) && st.unknownAt[u] <= upTo; u++ {
			if err := w.appendRaw(ctx, st.Unknown[u]); err != nil {
				return err
			}
		}
		return nil
	}
	for i := range st.Chain {
		if err := writeUnknown(i); err != nil {
			return err
		}
		e := &st.Chain[i]
		e.SessionID = id
		if i == 0 {
			e.ParentUUID = "" // a boundary's parent was not copied
		}
		written, err := w.Append(ctx, *e)
		if err != nil {
			return err
		}
		*e = written
	}
	if err := writeUnknown(len(st.Chain)); err != nil {
		return err
	}
	if err := copyCleared(ctx, w, st); err != nil {
		return err
	}
	st.SessionID = id
	st.TornTail, st.BadLines = 0, 0
	return w.Sync(ctx)
}

// copyCleared records the chain's cleared results in the copy, so the forked session resumes
// with the context (and the cached prefix) of the one it came from.
func copyCleared(ctx context.Context, w *Writer, st *State) error {
	if len(st.Cleared) == 0 {
		return nil
	}
	ids := slices.Sorted(maps.Keys(st.Cleared))
	results := make([]ClearedResult, 0, len(ids))
	for _, id := range ids {
		results = append(results, ClearedResult{ToolUseID: id, Stub: st.Cleared[id]})
	}
	parent := ""
	if n := len(st.Chain); n > 0 {
		parent = st.Chain[n-1].UUID
	}
	e, err := ClearedEntry(parent, results)
	if err != nil {
		return err
	}
	_, err = w.Append(ctx, e)
	return err
}
