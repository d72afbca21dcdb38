package transcript

import (
	"cmp"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

// Sessions live in more than one place: keel's own directory ($KEEL_HOME/projects) and the
// one Claude Code and the Agent SDK's session functions read (${CLAUDE_CONFIG_DIR:-~/.claude}/
// projects), which keel writes to when a program drives it as Claude Code's CLI. A user who
// mixes both sees one history: the functions below take the project directories of every
// place, list them merged, newest first, and find a session in whichever holds it.

// ProjectDirs are the directories holding the sessions of cwd under each of homes, in order,
// without duplicates or empty homes.
func ProjectDirs(homes []string, cwd string) []string {
	var out []string
	for _, h := range homes {
		if h == "" {
			continue
		}
		if d := ProjectDir(h, cwd); !slices.Contains(out, d) {
			out = append(out, d)
		}
	}
	return out
}

// ListDirs lists the sessions of every directory in dirs, merged, most recently updated
// first. A session id found in two directories is listed once, from the newer file.
func ListDirs(dirs []string) ([]Summary, error) {
	var out []Summary
	seen := map[string]int{}
	for _, d := range dirs {
		sums, err := List(d)
		if err != nil {
			return nil, err
		}
		for _, s := range sums {
			if i, ok := seen[s.ID]; ok {
				if s.Updated.After(out[i].Updated) {
					out[i] = s
				}
				continue
			}
			seen[s.ID] = len(out)
			out = append(out, s)
		}
	}
	slices.SortFunc(out, func(a, b Summary) int {
		return cmp.Or(b.Updated.Compare(a.Updated), cmp.Compare(a.ID, b.ID))
	})
	return out, nil
}

// FindIn returns the transcript of session id in the first of dirs that holds it. A missing
// session is an error that names the most recent sessions of all of them.
func FindIn(dirs []string, id string) (string, error) {
	if err := CheckID(id); err != nil {
		return "", err
	}
	for _, d := range dirs {
		path := filepath.Join(d, id+".jsonl")
		if _, err := os.Stat(path); err == nil {
			return path, nil
		} else if !errors.Is(err, fs.ErrNotExist) {
			return "", fmt.Errorf("find session %s: %w", id, err)
		}
	}
	recent, _ := ListDirs(dirs)
	if len(recent) == 0 {
		return "", fmt.Errorf("no session %s: there are no sessions in %s", id, strings.Join(dirs, " or "))
	}
	var b strings.Builder
	for i, s := range recent {
		if i == 5 {
			break
		}
		fmt.Fprintf(&b, "\n  %s  %s  %s", s.ID, s.Updated.Format(time.DateTime), cmp.Or(s.Title, s.FirstPrompt))
	}
	return "", fmt.Errorf("no session %s; recent sessions:%s", id, b.String())
}

// LatestIn returns the most recently updated session of all dirs, for --continue.
func LatestIn(dirs []string) (Summary, error) {
	all, err := ListDirs(dirs)
	if err != nil {
		return Summary{}, err
	}
	if len(all) == 0 {
		return Summary{}, fmt.Errorf("no sessions in %s", strings.Join(dirs, " or "))
	}
	return all[0], nil
}
