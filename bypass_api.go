package keel

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/keel-dev/keel/internal/atomicfile"
)

// bypassRecord is the file under Home that says the user accepted bypassPermissions mode.
const bypassRecord = "bypass-permissions-accepted"

// BypassAccepted reports whether the user of opts's keel directory has accepted running in
// bypassPermissions mode, where no call is ever asked about: a terminal UI asks once, before
// the first such session, and records the answer with [AcceptBypass].
func BypassAccepted(opts Options) bool {
	home := opts.home()
	if home == "" {
		return false
	}
	_, err := os.Stat(filepath.Join(home, bypassRecord))
	return err == nil
}

// AcceptBypass records that the user accepted bypassPermissions mode.
func AcceptBypass(opts Options) error {
	home := opts.home()
	if home == "" {
		return errors.New("record bypassPermissions acceptance: no keel directory")
	}
	if err := os.MkdirAll(home, 0o700); err != nil && !errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("record bypassPermissions acceptance: %w", err)
	}
	return atomicfile.WriteFile(filepath.Join(home, bypassRecord), []byte("accepted\n"), 0o600)
}
