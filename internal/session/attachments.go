package session

import (
	"context"

	"github.com/keel-dev/keel/internal/message"
)

// attachmentsKey is the context key of a prompt's attachments.
type attachmentsKey struct{}

// WithAttachments returns ctx carrying blocks (images, documents) that the prompt of the Send
// run under it carries after its text — what an editor's prompt holds besides text.
func WithAttachments(ctx context.Context, blocks []message.Block) context.Context {
	if len(blocks) == 0 {
		return ctx
	}
	return context.WithValue(ctx, attachmentsKey{}, blocks)
}

func attachments(ctx context.Context) []message.Block {
	b, _ := ctx.Value(attachmentsKey{}).([]message.Block)
	return b
}
