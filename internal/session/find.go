package session

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/transcript"
)

// ListStored lists the sessions stored for the working directory cwd (empty: the process's)
// under each of homes (the directories whose projects folders hold transcripts), merged,
// newest first. It reads file tails and indexes, never whole files.
func ListStored(homes []string, cwd string) ([]transcript.Summary, error) {
	// As the session resolves its directory: "" is the process's, a relative one from there.
	if abs, err := filepath.Abs(cwd); err == nil {
		cwd = abs
	}
	sums, err := transcript.ListDirs(transcript.ProjectDirs(homes, cwd))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	return sums, err
}

// FindSession resolves what a user typed after --resume to one stored session of cwd under
// homes: a whole session id, a prefix of exactly one id, or a session's exact title (case
// aside). When nothing or more than one session matches, the error says so in full, listing
// the candidates (or the most recent sessions) one per line, so the user can pick one.
func FindSession(homes []string, cwd, query string) (transcript.Summary, error) {
	query = strings.TrimSpace(query)
	list, err := ListStored(homes, cwd)
	if err != nil {
		return transcript.Summary{}, fmt.Errorf("find session %q: %w", query, err)
	}
	if query == "" {
		return transcript.Summary{}, fmt.Errorf("find session: no id or title given%s", sessionLines("recent sessions:", list))
	}
	for _, s := range list {
		if s.ID == query {
			return s, nil
		}
	}
	var byPrefix, byTitle []transcript.Summary
	for _, s := range list {
		if strings.HasPrefix(s.ID, query) {
			byPrefix = append(byPrefix, s)
		}
		if s.Title != "" && strings.EqualFold(s.Title, query) {
			byTitle = append(byTitle, s)
		}
	}
	switch {
	case len(byPrefix) == 1:
		return byPrefix[0], nil
	case len(byPrefix) > 1:
		return transcript.Summary{}, fmt.Errorf("%q is the start of %d session ids; give more of the id%s", query, len(byPrefix), sessionLines("matching sessions:", byPrefix))
	case len(byTitle) == 1:
		return byTitle[0], nil
	case len(byTitle) > 1:
		return transcript.Summary{}, fmt.Errorf("%d sessions are titled %q; give the id instead%s", len(byTitle), query, sessionLines("matching sessions:", byTitle))
	}
	if len(list) == 0 {
		return transcript.Summary{}, fmt.Errorf("no session %q: there are no sessions for %s yet", query, cwd)
	}
	return transcript.Summary{}, fmt.Errorf("no session has the id, id prefix or title %q%s", query, sessionLines("recent sessions:", list))
}

// sessionLines lists up to ten sessions under a heading, one per line, for an error message.
func sessionLines(heading string, list []transcript.Summary) string {
	if len(list) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("\n" + heading)
	for i, s := range list {
		if i == 10 {
			fmt.Fprintf(&b, "\n  … and %d more (keel sessions list)", len(list)-i)
			break
		}
		fmt.Fprintf(&b, "\n  %s  %s  %s", s.ID, s.Updated.Local().Format(time.DateTime), cmp.Or(s.Title, s.FirstPrompt))
	}
	return b.String()
}

// resolveResume turns the session cfg asks to resume into a stored session's id, whatever the
// entry point: a stored id as it is, else an id prefix or a title ([FindSession]). The
// choice a frontend should have offered ([runconfig.ResumeChoose]) fails, listing the recent
// sessions, as does a name that matches none or several.
func resolveResume(cfg *runconfig.Config) error {
	if cfg.Resume == "" || cfg.Home == "" {
		return nil
	}
	query := cfg.Resume
	homes := sessionHomes(cfg.Home, cfg.SessionHomes)
	if query == runconfig.ResumeChoose {
		query = ""
	} else if _, err := transcript.FindIn(transcript.ProjectDirs(homes, absDir(cfg.Cwd)), query); err == nil {
		return nil
	}
	found, err := FindSession(homes, cfg.Cwd, query)
	if err != nil {
		return err
	}
	cfg.Resume = found.ID
	return nil
}

// sessionHomes are the directories sessions are kept under: homes as configured, else home.
func sessionHomes(home string, homes []string) []string {
	if len(homes) == 0 {
		return []string{home}
	}
	return homes
}

// absDir is dir made absolute ("" is the process's directory).
func absDir(dir string) string {
	if abs, err := filepath.Abs(dir); err == nil {
		return abs
	}
	return dir
}
