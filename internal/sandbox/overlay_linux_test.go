package sandbox

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/settings"
	"golang.org/x/sys/unix"
)

// TestLandlockOnlyCaches: the Landlock-only form has no mount namespace to overlay the caches
// in; they stay writable as they are, and its notice and doctor say so.
func TestLandlockOnlyCaches(t *testing.T) {
	if LandlockABI() < 1 {
		t.Skip("this kernel has no Landlock: the Landlock-only fallback cannot run here")
	}
	testNoUserNamespaces.Store(true)
	t.Cleanup(func() { testNoUserNamespaces.Store(false) })
	cache := t.TempDir()
	var notice error
	p := NewPolicy(Input{Mode: ModeWorkspaceWrite, Settings: &settings.Sandbox{}, Dirs: []string{t.TempDir()},
		Caches: []string{cache}, KeelHome: filepath.Join(t.TempDir(), "keel")})
	s := New(p, Options{Unavailable: func(err error) { notice = err }})
	if err := s.Available(); err != nil || !s.landlockOnly {
		t.Fatalf("the Landlock-only fallback did not start: %v", err)
	}
	if !errors.Is(notice, ErrLimited) || !strings.Contains(notice.Error(), "not overlays (no mount namespace in the Landlock-only form)") ||
		!strings.Contains(notice.Error(), cache) {
		t.Errorf("the notice does not say the caches are not overlays: %v", notice)
	}
	for _, f := range Doctor(context.Background(), s) {
		if f.Name == "toolchain caches" {
			if f.Status != "warn" || !strings.Contains(f.Detail, "Landlock-only") {
				t.Errorf("toolchain caches: %s %s", f.Status, f.Detail)
			}
			return
		}
	}
	t.Error("no \"toolchain caches\" line")
}

// TestOverlayProbeNotFooledByFullDisk: the probe takes a refused overlay for a machine that
// cannot have them (the caches then bound writable, said in the notice), but not a disk or
// quota full, which a command can cause: each command's cache is then read-only where its
// overlay fails, never writable.
func TestOverlayProbeNotFooledByFullDisk(t *testing.T) {
	for _, c := range []struct{ said, want string }{
		{cacheNote("/c", "mount /c as an overlay: "+unix.EINVAL.Error()), "an overlay cannot be mounted here: " + unix.EINVAL.Error()},
		{cacheNote("/c", "mount /c as an overlay: "+unix.ENOSPC.Error()), ""},
		{cacheNote("/c", "mount /c as an overlay: "+unix.EDQUOT.Error()), ""},
		{cacheNote("/c", "keel could not make its directories: mkdir /k/c-1/work: "+unix.ENOSPC.Error()), ""},
		{"open /k/c-1/upper for the sandbox: " + unix.EDQUOT.Error(), ""},
	} {
		if got := probeFailure(c.said); got != c.want {
			t.Errorf("the probe, told %q, says %q; want %q", c.said, got, c.want)
		}
	}
	if got := unlessOutOfSpace("keel's directory for their overlays cannot be made: mkdir /k: " + unix.ENOSPC.Error()); got != "" {
		t.Errorf("a full disk as the probe makes keel's directory is taken for overlays impossible here: %q", got)
	}
}
