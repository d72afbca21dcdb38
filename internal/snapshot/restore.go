package snapshot

import (
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"

	"github.com/keel-dev/keel/internal/atomicfile"
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
			if err := atomicfile.RemoveNoLinks(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
				errs = append(errs, failure("delete", path, err))
				rep.Failed = append(rep.Failed, path)
				continue
			}
			rep.Deleted = append(rep.Deleted, path)
			continue
		}
		if err := s.restoreFile(f); err != nil {
			errs = append(errs, failure("restore", path, err))
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
	if f.NotKept != "" {
		return fmt.Errorf("its content was not kept: %s", f.NotKept)
	}
	data, err := s.getBlob(f.Blob)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("its saved content (blob %s) is missing", f.Blob)
		}
		return err
	}
	// The content and mode may be what a command wrote before the turn's tool first touched the
	// file, so no setuid or setgid bit comes back with them: keel would be the one to set it.
	return atomicfile.WriteNoLinks(f.Path, data, f.Mode&fs.ModePerm)
}

// failure says why the op ("restore", "delete") on path failed. Restore writes from keel's own
// process, outside any sandbox, to paths a command could since have rerouted: a directory on
// the way that is now a link (swapped in to have keel write or delete where it points) leaves
// the file alone, and is said so plainly.
func failure(op, path string, err error) error {
	if link, ok := errors.AsType[*atomicfile.LinkError](err); ok {
		return fmt.Errorf("%s not %sd: %w", path, op, link)
	}
	return fmt.Errorf("%s %s: %w", op, path, err)
}
