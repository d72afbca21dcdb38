package dashboard

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"sync"
	"time"

	"github.com/keel-dev/keel/internal/cost"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/transcript"
)

// maxSessions bounds the sessions shown: the most recently updated across all projects.
const maxSessions = 40

// sessionReader reads sessions from transcripts, re-reading a file only when it grew: what
// was read is kept by path with the size it had, and the rest is read from there.
type sessionReader struct {
	home string

	// mu guards cache.
	mu    sync.Mutex
	cache map[string]*scanned
}

// scanned is what was read of one transcript, up to off.
type scanned struct {
	off      int64
	modTime  time.Time
	requests []Request
	breaks   []Break
	compact  []int
	model    string
	damaged  int
}

func newSessionReader(home string) *sessionReader {
	return &sessionReader{home: home, cache: map[string]*scanned{}}
}

// list returns the newest sessions of every project.
func (r *sessionReader) list(ctx context.Context) ([]Session, []string) {
	projects, err := os.ReadDir(filepath.Join(r.home, "projects"))
	if err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, []string{fmt.Sprintf("read the projects of %s: %v", r.home, err)}
	}
	var sums []transcript.Summary
	var problems []string
	for _, p := range projects {
		if !p.IsDir() {
			continue
		}
		s, err := transcript.List(filepath.Join(r.home, "projects", p.Name()))
		if err != nil {
			problems = append(problems, fmt.Sprintf("project %s: %v", p.Name(), err))
		}
		sums = append(sums, s...)
	}
	sort.Slice(sums, func(i, j int) bool { return sums[i].Updated.After(sums[j].Updated) })
	if len(sums) > maxSessions {
		sums = sums[:maxSessions]
	}
	out := make([]Session, 0, len(sums))
	open := openTranscripts()
	for _, s := range sums {
		sess := Session{ID: s.ID, Project: filepath.Base(filepath.Dir(s.Path)), Title: firstNonEmpty(s.Title, s.FirstPrompt), Updated: s.Updated,
			Messages: s.Messages, State: open.state(s.Path)}
		sc, err := r.scan(ctx, s.Path)
		if err != nil {
			problems = append(problems, fmt.Sprintf("session %s: %v", s.ID, err))
			sess.Damaged = 1
		} else {
			sess.fill(sc)
		}
		out = append(out, sess)
	}
	return out, problems
}

func (s *Session) fill(sc *scanned) {
	s.Model, s.Damaged = sc.model, sc.damaged
	s.Requests, s.Breaks, s.Compactions = sc.requests, sc.breaks, sc.compact
	s.Turns = len(sc.requests)
	s.Priced = true
	for _, q := range sc.requests {
		s.Usage = s.Usage.Add(q.Usage)
		s.CostUSD += q.CostUSD
		s.Priced = s.Priced && q.Priced
	}
	if in := s.Usage.TotalInput(); in > 0 {
		s.CacheReadShare = float64(s.Usage.CacheReadInputTokens) / float64(in)
	}
}

// scan reads path from where the last scan stopped; a file that shrank (rewritten) is read
// again from the start.
func (r *sessionReader) scan(ctx context.Context, path string) (*scanned, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	r.mu.Lock()
	prev := r.cache[path]
	r.mu.Unlock()
	if prev != nil && prev.off == fi.Size() && prev.modTime.Equal(fi.ModTime()) {
		return prev, nil
	}
	sc := &scanned{}
	if prev != nil && prev.off <= fi.Size() {
		c := *prev
		c.requests = append([]Request(nil), prev.requests...)
		c.breaks = append([]Break(nil), prev.breaks...)
		c.compact = append([]int(nil), prev.compact...)
		sc = &c
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if _, err := f.Seek(sc.off, io.SeekStart); err != nil {
		return nil, err
	}
	br := bufio.NewReaderSize(f, 64<<10)
	for ctx.Err() == nil {
		line, err := br.ReadBytes('\n')
		if len(line) == 0 || line[len(line)-1] != '\n' {
			break // the end, or a line still being written: read it next time
		}
		sc.off += int64(len(line))
		sc.line(line)
		if err != nil {
			break
		}
	}
	sc.modTime = fi.ModTime()
	r.mu.Lock()
	r.cache[path] = sc
	r.mu.Unlock()
	return sc, nil
}

// recordLine is what the dashboard reads of a transcript line.
type recordLine struct {
	Type      transcript.Type `json:"type"`
	Timestamp time.Time       `json:"timestamp"`
	Value     json.RawMessage `json:"value"`
}

func (sc *scanned) line(b []byte) {
	var l recordLine
	if err := json.Unmarshal(b, &l); err != nil {
		sc.damaged++
		return
	}
	switch l.Type {
	case transcript.TypeUsage:
		var v transcript.UsageValue
		if err := json.Unmarshal(l.Value, &v); err != nil {
			sc.damaged++
			return
		}
		usd, priced := cost.USD(v.Model, v.Usage)
		q := Request{N: len(sc.requests) + 1, At: l.Timestamp, Model: v.Model, Usage: v.Usage, CostUSD: usd, Priced: priced,
			Context: v.Usage.TotalInput()}
		if q.Context > 0 {
			q.Share = float64(v.Usage.CacheReadInputTokens) / float64(q.Context)
		}
		sc.requests = append(sc.requests, q)
		if v.Model != "" {
			sc.model = v.Model
		}
	case transcript.TypeCacheBreak:
		var v transcript.CacheBreakValue
		if err := json.Unmarshal(l.Value, &v); err != nil {
			sc.damaged++
			return
		}
		// A break is found before its request is sent, or once its usage is in; either way it
		// belongs to the request after the ones recorded so far.
		sc.breaks = append(sc.breaks, Break{N: len(sc.requests) + 1, Segment: v.Segment, Reason: v.Reason})
	case transcript.TypeSummary:
		sc.compact = append(sc.compact, len(sc.requests)+1)
	}
}

// Conversation is one session's messages for the page: text, tool calls and results.
type Conversation struct {
	ID      string  `json:"id"`
	Entries []Entry `json:"entries"`
	Damaged bool    `json:"damaged,omitempty"`
	Error   string  `json:"error,omitempty"`
}

// Entry is one message.
type Entry struct {
	Role   string          `json:"role"`
	At     time.Time       `json:"at"`
	Blocks []message.Block `json:"blocks"`
}

// conversation reads the live conversation of session id.
func (r *sessionReader) conversation(ctx context.Context, id string) Conversation {
	out := Conversation{ID: id}
	if err := transcript.CheckID(id); err != nil {
		out.Error = err.Error()
		return out
	}
	matches, _ := filepath.Glob(filepath.Join(r.home, "projects", "*", id+".jsonl"))
	if len(matches) == 0 {
		out.Error = "no session " + id
		return out
	}
	st, err := transcript.Load(ctx, matches[0])
	if err != nil {
		out.Error, out.Damaged = err.Error(), true
		return out
	}
	out.Damaged = st.BadLines > 0
	for _, e := range st.Chain {
		if e.Message == nil {
			continue
		}
		out.Entries = append(out.Entries, Entry{Role: string(e.Message.Role), At: e.Timestamp, Blocks: e.Message.Content})
	}
	return out
}

func firstNonEmpty(s ...string) string {
	for _, x := range s {
		if x != "" {
			return x
		}
	}
	return ""
}
