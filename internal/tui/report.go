package tui

import (
	"bytes"
	"cmp"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// /export writes the conversation to a file; /bug writes a report with what went wrong, the
// session's facts and the conversation, with keys and tokens redacted.

func (m *Model) cmdExport(arg string) tea.Cmd {
	ex, ok := m.b.(Exporter)
	if !ok {
		m.notice(unavailable("/export"))
		return nil
	}
	path := arg
	if path == "" {
		path = fmt.Sprintf("keel-conversation-%s-%s.md", m.now().Format("2006-01-02"), shortID(m.b.ID()))
	}
	if !filepath.IsAbs(path) {
		path = filepath.Join(m.cwd, path)
	}
	return later("wrote the conversation to "+path, func(ctx context.Context) error {
		var b bytes.Buffer
		if err := ex.Export(ctx, &b); err != nil {
			return err
		}
		return writeNew(path, b.Bytes())
	})
}

func shortID(id string) string { return id[:min(len(id), 8)] }

// writeNew writes a file that must not exist yet: an export never overwrites.
func writeNew(path string, data []byte) error {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("write %s: %w", path, err)
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		return fmt.Errorf("write %s: %w", path, err)
	}
	return f.Close()
}

func (m *Model) cmdBug(arg string) tea.Cmd {
	if m.cfg.ReportDir == "" {
		m.notice(unavailable("/bug"))
		return nil
	}
	if arg == "" {
		m.notice("usage: /bug WHAT WENT WRONG (the report also holds this session's facts and conversation, with keys and tokens redacted)")
		return nil
	}
	path := filepath.Join(m.cfg.ReportDir, fmt.Sprintf("keel-bug-%s-%s.md", m.now().Format("20060102-150405"), shortID(m.b.ID())))
	report := m.bugReport(arg)
	ex, _ := m.b.(Exporter)
	return later("wrote the bug report to "+path+"; read it over before you share it", func(ctx context.Context) error {
		var conv bytes.Buffer
		if ex != nil {
			if err := ex.Export(ctx, &conv); err != nil {
				fmt.Fprintf(&conv, "(the conversation could not be exported: %v)\n", err)
			}
		}
		text := report + "\n## Conversation\n\n" + conv.String()
		if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
			return fmt.Errorf("write the bug report: %w", err)
		}
		return writeNew(path, []byte(Redact(text)))
	})
}

// bugReport is the report's head: what the user says went wrong, then the session's facts
// and what it showed as notices and errors.
func (m *Model) bugReport(what string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "# keel bug report\n\n%s\n\n## Session\n\n", what)
	fmt.Fprintf(&b, "- keel %s, %s, %s/%s\n", cmp.Or(m.cfg.Version, "dev"), runtime.Version(), runtime.GOOS, runtime.GOARCH)
	fmt.Fprintf(&b, "- session %s, %s\n", m.b.ID(), m.now().UTC().Format(time.RFC3339))
	fmt.Fprintf(&b, "- model %s, permission mode %s\n", m.b.Model(), m.b.PermissionMode())
	if sr, ok := m.b.(SettingsReporter); ok {
		for _, f := range sr.SettingsFiles() {
			if f.State != "missing" {
				fmt.Fprintf(&b, "- settings %s (%s): %s\n", f.Path, f.Scope, f.State)
			}
		}
		for _, p := range sr.SettingsProblems() {
			fmt.Fprintf(&b, "- settings %s: %s\n", p.Level, p.Text)
		}
	}
	if ms, ok := m.b.(MCPStatuser); ok {
		for _, s := range ms.MCPServers() {
			fmt.Fprintf(&b, "- MCP server %s: %s\n", s.Name, s.Status)
		}
	}
	b.WriteString("\n## Notices and errors shown\n\n")
	for _, it := range m.items {
		if it.kind == kindNotice || it.kind == kindError {
			fmt.Fprintf(&b, "- %s\n", strings.ReplaceAll(ansi.Strip(it.text), "\n", " "))
		}
	}
	return b.String()
}

// Secrets that must not leave the machine in a report: API keys, bearer tokens, the values
// of keys that name a key, token, secret or password, and passwords in URLs.
var (
	secretKeyRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`\b(sk-ant-[A-Za-z0-9_-]{8,}|sk-[A-Za-z0-9_-]{20,}|gh[pousr]_[A-Za-z0-9]{20,}|xox[abp]-[A-Za-z0-9-]{10,}|AKIA[A-Z0-9]{16})`)
	})
	bearerRE      = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}`) })
	secretValueRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?i)("?[A-Za-z0-9_.-]*(?:api[_-]?key|token|secret|password|passwd|credential)[A-Za-z0-9_.-]*"?\s*[:=]\s*"?)([^\s",}]+)`)
	})
	urlPasswordRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(://[^/\s:@]+:)[^@/\s]+@`) })
)

// Redact replaces what looks like a secret in text with [redacted].
func Redact(text string) string {
	text = secretKeyRE().ReplaceAllString(text, "[redacted]")
	text = bearerRE().ReplaceAllString(text, "$1 [redacted]")
	text = secretValueRE().ReplaceAllString(text, "${1}[redacted]")
	return urlPasswordRE().ReplaceAllString(text, "${1}[redacted]@")
}
