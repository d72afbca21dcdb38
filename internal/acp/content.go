package acp

import (
	"fmt"
	"net/url"
	"strings"

	sdk "github.com/coder/acp-go-sdk"

	"github.com/keel-dev/keel"
)

// promptContent turns a prompt's content blocks into keel's prompt text (the text blocks,
// resource links and embedded text resources, in order, so a leading /command stays first)
// and its attachments (images).
func promptContent(blocks []sdk.ContentBlock) (string, []keel.Block, error) {
	var (
		text        []string
		attachments []keel.Block
	)
	for i, b := range blocks {
		switch {
		case b.Text != nil:
			text = append(text, b.Text.Text)
		case b.Image != nil:
			if b.Image.Data == "" {
				return "", nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("prompt[%d]: keel takes images as data, not only a uri", i)})
			}
			attachments = append(attachments, imageBlock(b.Image.MimeType, b.Image.Data))
		case b.ResourceLink != nil:
			text = append(text, resourceMention(b.ResourceLink.Name, b.ResourceLink.Uri))
		case b.Resource != nil:
			r := b.Resource.Resource
			switch {
			case r.TextResourceContents != nil:
				text = append(text, fmt.Sprintf("<context ref=%q>\n%s\n</context>", r.TextResourceContents.Uri, r.TextResourceContents.Text))
			case r.BlobResourceContents != nil && strings.HasPrefix(derefOr(r.BlobResourceContents.MimeType, ""), "image/"):
				attachments = append(attachments, imageBlock(*r.BlobResourceContents.MimeType, r.BlobResourceContents.Blob))
			case r.BlobResourceContents != nil:
				text = append(text, resourceMention("", r.BlobResourceContents.Uri))
			}
		case b.Audio != nil:
			return "", nil, sdk.NewInvalidParams(map[string]any{"error": fmt.Sprintf("prompt[%d]: keel does not take audio", i)})
		}
	}
	if len(text) == 0 && len(attachments) == 0 {
		return "", nil, sdk.NewInvalidParams(map[string]any{"error": "the prompt is empty"})
	}
	return strings.Join(text, "\n"), attachments, nil
}

func imageBlock(mediaType, data string) keel.Block {
	return keel.Block{Type: keel.BlockImage, Source: &keel.ImageSource{Type: "base64", MediaType: mediaType, Data: data}}
}

// resourceMention names a linked resource in the prompt: a file by its path, which the
// model can Read; anything else by its URI.
func resourceMention(name, uri string) string {
	if u, err := url.Parse(uri); err == nil && u.Scheme == "file" {
		return "@" + u.Path
	}
	if name != "" {
		return fmt.Sprintf("[%s](%s)", name, uri)
	}
	return uri
}

func derefOr(p *string, or string) string {
	if p == nil {
		return or
	}
	return *p
}
