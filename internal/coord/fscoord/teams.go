package fscoord

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/coord"
)

// Teams lists the team directories beside this one (see [ListTeams]).
func (b *Backend) Teams(ctx context.Context, key string) ([]coord.TeamInfo, error) {
	if err := b.live(ctx, "list teams"); err != nil {
		return nil, err
	}
	return ListTeams(filepath.Dir(b.root), key)
}

// ListTeams lists the teams kept under dir, a directory of team directories (keel's
// teams directory), without opening any: each directory with records is one, updated when its
// records last changed. With key, each team's record at key is read too; a team whose record
// cannot be read is listed without it, and the error names it.
func ListTeams(dir, key string) ([]coord.TeamInfo, error) {
	if key != "" {
		if err := coord.CheckKey(key); err != nil {
			return nil, fmt.Errorf("list teams: %w", err)
		}
	}
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list teams: %w", err)
	}
	var out []coord.TeamInfo
	var errs []error
	for _, e := range entries {
		records := filepath.Join(dir, e.Name(), "records")
		info, err := os.Stat(records)
		if !e.IsDir() || err != nil || !info.IsDir() || coord.CheckName(e.Name()) != nil {
			continue
		}
		t := coord.TeamInfo{Name: e.Name(), Updated: info.ModTime()}
		if key != "" {
			err := readJSON(filepath.Join(records, fileName(key)), &t.Record)
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, fmt.Errorf("team %s: record %s: %w", t.Name, key, err))
			}
		}
		out = append(out, t)
	}
	coord.SortTeams(out)
	return out, errors.Join(errs...)
}
