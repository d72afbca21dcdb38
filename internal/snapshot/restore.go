package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"slices"
)

// Report says what a Restore did.
type Report struct {
	// Restored files got their earlier content and mode back; Deleted files had been created
	// since the snapshot.
	Restored []string
	Deleted  []string
	// Failed files could not be restored (for example, their blob is missing); the error of
	// Restore names each.
	Failed []string
	// Unrecoverable lists the changes since the snapshot that Restore cannot undo.
	Unrecoverable []Action
}

// Restore puts every file changed since snapshot id began back as it was then: content and
// mode restored, files created since deleted. A file that cannot be restored is named in the
// error and in Report.Failed, and the others are restored regardless.
//
// Afterwards the snapshots from id on are dropped: the files are as they were when id began, as
// if those turns had not happened (their turns are left on an abandoned branch of the
// conversation), so rewinding further back stays correct.
func (s *Store) Restore(id string) (Report, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var rep Report
	k := slices.IndexFunc(s.snaps, func(sn Snapshot) bool { return sn.ID == id })
	if k < 0 {
		return rep, fmt.Errorf("restore files to %s: %w (%d kept)", id, ErrNotFound, len(s.snaps))
	}
	// A file's state when snapshot k began is what the first turn from k on that touched it
	// found: nothing the store sees changed it in between.
	first := map[string]FileState{}
	for _, sn := range s.snaps[k:] {
		for _, f := range sn.Files {
			if _, ok := first[f.Path]; !ok {
				first[f.Path] = f
			}
		}
		rep.Unrecoverable = append(rep.Unrecoverable, sn.Unrecoverable...)
	}
	var errs []error
	for _, path := range slices.Sorted(maps.Keys(first)) {
		f := first[path]
		if !f.Existed {
			if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, fmt.Errorf("delete %s: %w", path, err))
				rep.Failed = append(rep.Failed, path)
				continue
			}
			rep.Deleted = append(rep.Deleted, path)
			continue
		}
		if err := s.restoreFile(f); err != nil {
			errs = append(errs, fmt.Errorf("restore %s: %w", path, err))
			rep.Failed = append(rep.Failed, path)
			continue
		}
		rep.Restored = append(rep.Restored, path)
	}
	s.snaps = s.snaps[:k]
	s.collect()
	if err := s.save(); err != nil {
		errs = append(errs, err)
	}
	return rep, errors.Join(errs...)
}

func (s *Store) restoreFile(f FileState) error {
	data, err := s.getBlob(f.Blob)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("its saved content (blob %s) is missing", f.Blob)
		}
		return err
	}
	if err := os.MkdirAll(filepath.Dir(f.Path), 0o755); err != nil {
		return err
	}
	return writeAtomic(f.Path, data, f.Mode)
}
