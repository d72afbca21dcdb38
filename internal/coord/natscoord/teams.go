package natscoord

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/keel-dev/keel/internal/coord"
)

// Teams lists the teams on this handle's NATS server (see [ListTeams]).
func (b *Backend) Teams(ctx context.Context, key string) ([]coord.TeamInfo, error) {
	if err := b.live(ctx, "list teams"); err != nil {
		return nil, err
	}
	var out []coord.TeamInfo
	err := b.retry(ctx, "list teams on NATS at "+b.url, func(ctx context.Context) error {
		var err error
		out, err = listTeams(ctx, b.js, key)
		return err
	})
	return out, err
}

// ListTeams lists the teams on the NATS server opts names without opening any (opts.Team is
// not needed): each team is one state bucket, updated when its stream last took a write. With
// key, each team's record at key is read too.
func ListTeams(ctx context.Context, opts Options, key string) ([]coord.TeamInfo, error) {
	cfg := opts.Config.WithDefaults()
	nc, err := dial(opts, cfg.Logger, func() {})
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, fmt.Errorf("list teams on NATS at %s: %w", Redact(opts.URL), err)
	}
	return listTeams(ctx, js, key)
}

func listTeams(ctx context.Context, js jetstream.JetStream, key string) ([]coord.TeamInfo, error) {
	if key != "" {
		if err := coord.CheckKey(key); err != nil {
			return nil, fmt.Errorf("list teams: %w", err)
		}
	}
	names := js.KeyValueStoreNames(ctx)
	var out []coord.TeamInfo
	var errs []error
	for bucket := range names.Name() {
		team, ok := strings.CutSuffix(strings.TrimPrefix(bucket, "keel-"), "-state")
		if !ok || !strings.HasPrefix(bucket, "keel-") || coord.CheckName(team) != nil {
			continue
		}
		t := coord.TeamInfo{Name: team}
		if st, err := js.Stream(ctx, "KV_"+bucket); err == nil {
			t.Updated = st.CachedInfo().State.LastTime
		}
		if key != "" {
			rec, err := readRecord(ctx, js, bucket, key)
			if err != nil {
				errs = append(errs, fmt.Errorf("team %s: %w", team, err))
			}
			t.Record = rec
		}
		out = append(out, t)
	}
	if err := names.Error(); err != nil {
		return out, fmt.Errorf("list teams: %w", err)
	}
	coord.SortTeams(out)
	return out, errors.Join(errs...)
}

// readRecord reads the record at key of a team's state bucket; none is a zero Record.
func readRecord(ctx context.Context, js jetstream.JetStream, bucket, key string) (coord.Record, error) {
	kv, err := js.KeyValue(ctx, bucket)
	if err != nil {
		return coord.Record{}, fmt.Errorf("record %s: %w", key, err)
	}
	e, err := kv.Get(ctx, recKey(key))
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return coord.Record{}, nil
	}
	if err != nil {
		return coord.Record{}, fmt.Errorf("record %s: %w", key, err)
	}
	var re recordEntry
	if err := json.Unmarshal(e.Value(), &re); err != nil {
		return coord.Record{}, fmt.Errorf("record %s: %v: %w", key, err, coord.ErrCorrupt)
	}
	return coord.Record{Key: key, Value: re.Value, Revision: re.Revision, Updated: re.Updated}, nil
}
