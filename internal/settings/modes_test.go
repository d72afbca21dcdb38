package settings

import (
	"slices"
	"testing"

	"github.com/keel-dev/keel/internal/permission"
)

// permissions.defaultMode takes every permission mode but bubble, each once: a mode added to
// the permission package reaches the settings (and through them --permission-mode and the
// SDK's setPermissionMode) or this fails.
func TestPermissionModes(t *testing.T) {
	var want []string
	for _, m := range permission.Modes {
		if m != permission.ModeBubble {
			want = append(want, string(m))
		}
	}
	if !slices.Equal(PermissionModes, want) {
		t.Errorf("settings.PermissionModes = %q, want %q (permission.Modes without bubble)", PermissionModes, want)
	}
}
