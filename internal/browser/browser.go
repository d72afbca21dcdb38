// Package browser opens addresses in the user's web browser: an OAuth authorization page, a
// URL an MCP server asks the user to visit.
package browser

import (
	"context"
	"fmt"
	"strings"

	"github.com/keel-dev/keel/internal/hostexec"
)

// Open opens url with browser, the value of $BROWSER: a command in which "%s" stands for
// the URL, else the URL is its last argument. An empty browser opens nothing: the address
// the caller printed is all there is. The browser is not waited for, since its exit says
// nothing about what the user did there.
func Open(browser, url string) error {
	if browser == "" {
		return nil
	}
	line := browser + ` "$1"`
	if strings.Contains(browser, "%s") {
		line = strings.ReplaceAll(browser, "%s", `"$1"`)
	}
	cmd := hostexec.Command(context.Background(), "sh", "-c", line, "sh", url)
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("run $BROWSER: %w", err)
	}
	go cmd.Wait() //nolint:errcheck // reaps the process
	return nil
}
