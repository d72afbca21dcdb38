package team

import (
	"context"
	"fmt"

	"github.com/keel-dev/keel/internal/coord"
)

// AnswerRequest answers a teammate's open permission request as the lead's UI would, from a
// frontend outside the lead's process (the dashboard): allow once, or deny with reason. The
// teammate's own ceiling still applies: deny rules were checked before it asked. A request
// that is not open is [coord.ErrNotFound].
func (t *Team) AnswerRequest(ctx context.Context, id string, allow bool, reason string) error {
	pending, err := t.be.Requests().Pending(ctx, LeadAlias)
	if err != nil {
		return fmt.Errorf("list permission requests: %w", err)
	}
	for _, r := range pending {
		if r.ID != id || r.Type != TypePermissionRequest {
			continue
		}
		a := permissionAnswer{Behavior: "deny", Reason: reason}
		if allow {
			a.Behavior = "allow"
		}
		return t.resolve(ctx, r, a)
	}
	return fmt.Errorf("permission request %s is not open (answered, or gone): %w", id, coord.ErrNotFound)
}
