package keel

import (
	"cmp"
	"fmt"
	"strings"
	"time"
)

// FindSession resolves what a user typed after --resume to one stored session of cwd under
// home: a whole session id, a prefix of exactly one id, or a session's exact title (case
// aside). When nothing or more than one session matches, the error says so in full, listing
// the candidates (or the most recent sessions) one per line, so the user can pick one.
func FindSession(home, cwd, query string) (SessionInfo, error) {
	query = strings.TrimSpace(query)
	list, err := ListSessions(home, cwd)
	if err != nil {
		return SessionInfo{}, fmt.Errorf("find session %q: %w", query, err)
	}
	if query == "" {
		return SessionInfo{}, fmt.Errorf("find session: no id or title given%s", sessionLines("recent sessions:", list))
	}
	for _, s := range list {
		if s.ID == query {
			return s, nil
		}
	}
	var byPrefix, byTitle []SessionInfo
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
		return SessionInfo{}, fmt.Errorf("%q is the start of %d session ids; give more of the id%s", query, len(byPrefix), sessionLines("matching sessions:", byPrefix))
	case len(byTitle) == 1:
		return byTitle[0], nil
	case len(byTitle) > 1:
		return SessionInfo{}, fmt.Errorf("%d sessions are titled %q; give the id instead%s", len(byTitle), query, sessionLines("matching sessions:", byTitle))
	}
	if len(list) == 0 {
		return SessionInfo{}, fmt.Errorf("no session %q: there are no sessions for %s yet", query, cwd)
	}
	return SessionInfo{}, fmt.Errorf("no session has the id, id prefix or title %q%s", query, sessionLines("recent sessions:", list))
}

// sessionLines lists up to ten sessions under a heading, one per line, for an error message.
func sessionLines(heading string, list []SessionInfo) string {
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

// ResumeChoose, as [Options.Resume], asks the frontend to let the user choose the session to
// resume: `keel --resume` without an id opens a picker in the terminal UI. [New] itself
// cannot ask anyone; it fails, listing the recent sessions.
const ResumeChoose = "\x00choose"
