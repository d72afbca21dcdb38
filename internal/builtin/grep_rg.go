package builtin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"strings"
)

// rgArgs builds a ripgrep command line equivalent to the built-in search: hidden files
// searched, .git skipped, only .gitignore files honoured (not .ignore, global or
// .git/info/exclude rules, which the built-in walker does not read), with or without a git
// repository.
func rgArgs(q grepQuery) []string {
	args := []string{"--no-config", "--hidden", "--no-require-git", "--no-ignore-global", "--no-ignore-exclude",
		"--no-ignore-dot", "--glob", "!.git"}
	if q.ignoreCase {
		args = append(args, "--ignore-case")
	}
	if q.multiline {
		args = append(args, "--multiline", "--multiline-dotall")
	}
	for _, g := range q.typeGlobs {
		args = append(args, "--type-add", "keel:"+g)
	}
	if len(q.typeGlobs) > 0 {
		args = append(args, "--type", "keel")
	}
	if strings.HasPrefix(q.glob, "!") {
		// An exclusion prunes rg's walk. A positive glob is applied to rg's results instead:
		// rg lets it override .gitignore and matches it against the absolute paths it prints.
		args = append(args, "--glob", q.glob)
	}
	switch q.mode {
	case "files_with_matches":
		args = append(args, "--files-with-matches", "--null")
	default:
		args = append(args, "--json")
		if q.mode == "content" {
			args = append(args, "--after-context", strconv.Itoa(q.after), "--before-context", strconv.Itoa(q.before))
		}
	}
	return append(args, "--regexp", q.pattern, "--", q.root)
}

// searchRipgrep runs rg and converts its output to the engine-neutral form.
func searchRipgrep(ctx context.Context, rg string, q grepQuery) ([]grepFile, error) {
	cmd := exec.CommandContext(ctx, rg, rgArgs(q)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start ripgrep: %w", err)
	}
	var files []grepFile
	var perr error
	if q.mode == "files_with_matches" {
		files, perr = parseRgFiles(stdout)
	} else {
		files, perr = parseRgJSON(stdout)
	}
	werr := cmd.Wait()
	if q.glob != "" && !strings.HasPrefix(q.glob, "!") {
		keep := fileFilter(grepQuery{root: q.root, glob: q.glob})
		files = slices.DeleteFunc(files, func(f grepFile) bool { return !keep(f.path) })
	}
	if perr != nil {
		return nil, fmt.Errorf("read ripgrep output: %w", perr)
	}
	var ee *exec.ExitError
	switch {
	case werr == nil:
	case errors.As(werr, &ee) && ee.ExitCode() == 1: // no match
	case len(files) > 0: // exit 2 after unreadable files: keep what was found
	default:
		return nil, fmt.Errorf("ripgrep: %v: %s", werr, strings.TrimSpace(stderr.String()))
	}
	return files, nil
}

func parseRgFiles(r interface{ Read([]byte) (int, error) }) ([]grepFile, error) {
	br := bufio.NewReader(r)
	var files []grepFile
	for {
		p, err := br.ReadString(0)
		if p = strings.TrimSuffix(p, "\x00"); p != "" {
			files = append(files, grepFile{path: p, matches: 1})
		}
		if err != nil {
			return files, nil
		}
	}
}

type rgText struct {
	Text  *string `json:"text"`
	Bytes string  `json:"bytes"`
}

func (t rgText) String() string {
	if t.Text != nil {
		return *t.Text
	}
	b, _ := base64.StdEncoding.DecodeString(t.Bytes)
	return string(b)
}

type rgMessage struct {
	Type string `json:"type,omitempty"`
	Data struct {
		Path       rgText `json:"path,omitempty"`
		Lines      rgText `json:"lines"`
		LineNumber int    `json:"line_number"`
	} `json:"data"`
}

// parseRgJSON reads rg --json: begin, match and context messages per file, then end.
func parseRgJSON(r interface{ Read([]byte) (int, error) }) ([]grepFile, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	var files []grepFile
	var cur *grepFile
	for {
		line, err := br.ReadBytes('\n')
		if len(bytes.TrimSpace(line)) > 0 {
			var m rgMessage
			if jerr := json.Unmarshal(line, &m); jerr != nil {
				return nil, jerr
			}
			switch m.Type {
			case "begin":
				files = append(files, grepFile{path: m.Data.Path.String()})
				cur = &files[len(files)-1]
			case "match", "context":
				if cur == nil {
					continue
				}
				if m.Type == "match" {
					cur.matches++
				}
				text := strings.TrimSuffix(m.Data.Lines.String(), "\n")
				for i, l := range strings.Split(text, "\n") {
					cur.lines = append(cur.lines, grepLine{num: m.Data.LineNumber + i, text: l, match: m.Type == "match"})
				}
			case "end":
				if cur != nil && cur.matches == 0 {
					files = files[:len(files)-1]
				}
				cur = nil
			}
		}
		if err != nil {
			return files, nil
		}
	}
}
