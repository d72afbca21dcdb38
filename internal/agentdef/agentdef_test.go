package agentdef

import (
	"slices"
	"testing"

	"github.com/keel-dev/keel/internal/permission"
)

// An agent definition accepts exactly the permission modes: written out as a literal of the
// constants (a package-level copy of permission.Modes would be start-up work), held here.
func TestPermissionModesArePermissions(t *testing.T) {
	if !slices.Equal(PermissionModes, permission.Modes) {
		t.Errorf("agentdef.PermissionModes = %q, permission.Modes = %q", PermissionModes, permission.Modes)
	}
}
