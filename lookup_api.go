package keel

import (
	"github.com/keel-dev/keel/internal/runconfig"
	"github.com/keel-dev/keel/internal/session"
	"github.com/keel-dev/keel/internal/transcript"
)

// FindSession resolves what a user typed after --resume to one stored session of cwd under
// home (empty: $KEEL_HOME or ~/.keel, and Claude Code's ~/.claude): a whole session id, a prefix of exactly one id, or a session's exact title (case
// aside). When nothing or more than one session matches, the error says so in full, listing
// the candidates (or the most recent sessions) one per line, so the user can pick one. [New]
// resolves [Options.Resume] the same way.
func FindSession(home, cwd, query string) (SessionInfo, error) {
	s, err := session.FindSession(storedHomes(home), cwd, query)
	if err != nil {
		return SessionInfo{}, err
	}
	return sessionInfo(s), nil
}

// storedHomes are the directories whose sessions the lookups see: for keel's own directory
// (home empty or $KEEL_HOME), it and Claude Code's (${CLAUDE_CONFIG_DIR:-~/.claude}), as
// keel's commands; any other home alone.
func storedHomes(home string) []string {
	env := runconfig.ReadEnv(nil)
	if home != "" && home != env.Home {
		return []string{home}
	}
	return env.SessionHomes(env.Home, false)
}

// sessionInfo is a stored session as the API describes it.
func sessionInfo(s transcript.Summary) SessionInfo {
	return SessionInfo{ID: s.ID, Title: s.Title, FirstPrompt: s.FirstPrompt, Branch: s.Branch, Updated: s.Updated, Size: s.Size, Messages: s.Messages}
}

// ResumeChoose, as [Options.Resume], asks the frontend to let the user choose the session to
// resume: `keel --resume` without an id opens a picker in the terminal UI. [New] itself
// cannot ask anyone; it fails, listing the recent sessions.
const ResumeChoose = runconfig.ResumeChoose
