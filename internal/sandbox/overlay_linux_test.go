package sandbox

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/settings"
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
