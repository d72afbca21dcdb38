package builtin

import (
	"context"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider"
)

// ModelReader is the [PageReader] that asks a model: the session's provider with its small,
// fast model.
type ModelReader struct {
	Provider provider.Provider
	// Model names the model per request (the configuration may change during a session).
	Model func() string
	// Usage, if set, is told what each request used, so the session counts it.
	Usage func(model string, u message.Usage)
}

// pageReaderSystem frames the small model's job.
const pageReaderSystem = "You read one web page for a coding assistant and answer its question from that page alone."

// pageReaderMaxTokens bounds an answer: it joins the assistant's context.
const pageReaderMaxTokens = 4096

// ReadPage asks the model prompt about content.
func (m ModelReader) ReadPage(ctx context.Context, pageURL, content, prompt string) (string, error) {
	model := m.Model()
	req := &provider.Request{
		Model:     model,
		MaxTokens: pageReaderMaxTokens,
		System:    []provider.SystemBlock{{Text: pageReaderSystem}},
		Messages: []message.Message{message.User(message.Text(fmt.Sprintf(
			"<page url=%q>\n%s\n</page>\n\n%s\n\nAnswer from the page above only, concisely. Quote at most a sentence or two word for word, in quotation marks. If the page does not answer it, say so.",
			pageURL, content, prompt)))},
		Source: "webfetch",
	}
	done, err := provider.Complete(ctx, m.Provider, req)
	if err != nil {
		return "", err
	}
	if m.Usage != nil {
		m.Usage(model, done.Usage)
	}
	text := strings.TrimSpace(done.Message.TextOf())
	if text == "" {
		return "", fmt.Errorf("the model returned no text (stop reason %s)", done.StopReason)
	}
	return text, nil
}
