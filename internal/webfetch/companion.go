package webfetch

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/url"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/companion"
)

// Program is the companion that converts pages: HTML to Markdown, other charsets to UTF-8
// (cmd/keel-web, internal/webfetch/htmltext). keel does not link the converter: its package
// initialisation would cost every keel start, and a fetch waits for the network far longer
// than keel-web takes to start.
const Program = "keel-web"

// stderrLimit bounds what is kept of keel-web's stderr for an error message.
const stderrLimit = 4 << 10

// Companion converts in keel-web, one process per page, started under the fetch's context:
// cancelling the fetch, or its time running out, kills the conversion.
type Companion struct {
	// Path is keel-web's path; empty finds it beside keel, beside this executable, then on
	// PATH ([companion.Find]), at each conversion.
	Path string
	// MaxBytes is keel-web's limit on a body; zero is [DefaultMaxBytes].
	MaxBytes int64
}

// Markdown runs keel-web on an HTML body.
func (c *Companion) Markdown(ctx context.Context, body []byte, header string, base *url.URL) (string, error) {
	// Only the scheme and host are used for links: the path and query (which may carry a
	// token) stay off keel-web's command line.
	origin := url.URL{Scheme: base.Scheme, Host: base.Host}
	out, err := c.run(ctx, body, "-content-type", header, "-base", origin.String())
	if err != nil {
		return "", fmt.Errorf("convert the HTML to Markdown: %w", err)
	}
	return out, nil
}

// Decode runs keel-web -text on a text body.
func (c *Companion) Decode(ctx context.Context, body []byte, header string) (string, error) {
	out, err := c.run(ctx, body, "-text", "-content-type", header)
	if err != nil {
		return "", fmt.Errorf("decode the text: %w", err)
	}
	return out, nil
}

func (c *Companion) run(ctx context.Context, body []byte, args ...string) (string, error) {
	path := c.Path
	if path == "" {
		var err error
		if path, err = companion.Find(Program, companion.Self()); err != nil {
			return "", fmt.Errorf("keel converts web pages in its companion %s: %w; install it beside keel with "+
				"`make build` or `CGO_ENABLED=0 go install ./cmd/...` (go install github.com/keel-dev/keel/cmd/keel-web@latest)", Program, err)
		}
	}
	limit := c.MaxBytes
	if limit <= 0 {
		limit = DefaultMaxBytes
	}
	cmd := exec.CommandContext(ctx, path, append([]string{"-max-bytes", strconv.FormatInt(limit, 10)}, args...)...)
	cmd.Stdin = bytes.NewReader(body)
	var stdout bytes.Buffer
	stderr := &headBuffer{limit: stderrLimit}
	cmd.Stdout, cmd.Stderr = &stdout, stderr
	// Killed on cancel, keel-web's pipes are closed soon after even if something inherited them.
	cmd.WaitDelay = time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return "", fmt.Errorf("%s stopped: %w", Program, context.Cause(ctx))
		}
		var exit *exec.ExitError
		if msg := strings.TrimSpace(stderr.String()); errors.As(err, &exit) && msg != "" {
			return "", fmt.Errorf("%s (%s): %s", Program, exit.ProcessState, strings.TrimPrefix(msg, Program+": "))
		}
		return "", fmt.Errorf("run %s: %w", Program, err)
	}
	return stdout.String(), nil
}

// headBuffer keeps the first limit bytes written to it.
type headBuffer struct {
	limit int
	buf   bytes.Buffer
}

func (b *headBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *headBuffer) String() string { return b.buf.String() }
