package session

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"

	"github.com/keel-dev/keel/internal/clearing"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/provider/scripted"
	"github.com/keel-dev/keel/internal/transcript"
)

// clearedSession runs the long session (which clears old Read results on the way), closes it
// and returns its server, its last request and its transcript.
func clearedSession(t *testing.T) (srv *scripted.Server, last scripted.Recorded, path, cwd, home string) {
	t.Helper()
	sc, cwd := longSession(t, 12)
	home = t.TempDir()
	first := newHarness(t, sc, Options{Cwd: cwd, Home: home})
	result(t, first.send(t, "read big.txt over and over"))
	reqs := first.srv.Requests()
	last = reqs[len(reqs)-1]
	if !bytes.Contains(last.Body, []byte(jsonString(t, clearing.StubPrefix))) {
		t.Fatal("the session cleared no tool results: nothing to carry over")
	}
	path = first.sess.TranscriptPath()
	if err := first.sess.Close(); err != nil {
		t.Fatal(err)
	}
	return first.srv, last, path, cwd, home
}

// jsonString is s as it appears inside a JSON string.
func jsonString(t *testing.T, s string) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return strings.Trim(string(b), `"`)
}

// TestResumeKeepsClearedResults: the tool results a session cleared stay stubs when it is
// resumed (keel -c, every SDK query), because the transcript records the clearing. So the
// first request after the resume repeats the last request's messages byte for byte (only the
// newest one's moving breakpoint differs), shares all of that request as its prefix and reads
// >= 99% of it from the cache. The record itself keeps the full results.
func TestResumeKeepsClearedResults(t *testing.T) {
	srv, last, path, cwd, home := clearedSession(t)
	resumed := newHarnessOn(t, srv, Options{Cwd: cwd, Home: home, Continue: true})
	if res := result(t, resumed.send(t, "and now?")); res.Text != "done" {
		t.Fatalf("after resume: %q", res.Text)
	}
	reqs := srv.Requests()
	next := reqs[len(reqs)-1]
	prevMsgs, nextMsgs := requestMessages(t, last.Body), requestMessages(t, next.Body)
	if len(nextMsgs) <= len(prevMsgs) {
		t.Fatalf("the request after resume has %d messages, the last one before had %d", len(nextMsgs), len(prevMsgs))
	}
	for i, m := range prevMsgs {
		a, b := m, nextMsgs[i]
		if i == len(prevMsgs)-1 {
			a, b = withoutCacheControl(t, a), withoutCacheControl(t, b)
		}
		if !bytes.Equal(a, b) {
			t.Fatalf("message %d of %d differs after resume:\nbefore: %.300s\nafter:  %.300s", i, len(prevMsgs), a, b)
		}
	}
	c := next.Cache
	share := float64(c.CacheReadTokens) / float64(c.SharedPrefixTokens)
	t.Logf("first request after resume: input %d, shared prefix %d, cache read %d (%.2f%%), written %d; last request before: input %d",
		c.InputTokens, c.SharedPrefixTokens, c.CacheReadTokens, 100*share, c.CacheCreationTokens, last.Cache.InputTokens)
	if c.SharedPrefixTokens < last.Cache.InputTokens {
		t.Errorf("the first request after resume shares %d tokens with earlier ones, want all %d of the last request", c.SharedPrefixTokens, last.Cache.InputTokens)
	}
	if share < 0.99 {
		t.Errorf("the first request after resume read %.4f of its shared prefix from the cache, want >= 0.99", share)
	}

	// The record keeps what the tools returned; the resumed conversation holds the stubs,
	// live or resumed alike.
	st, err := transcript.Load(t.Context(), path)
	if err != nil {
		t.Fatal(err)
	}
	full, _ := st.Messages()
	ctxMsgs, _ := st.Context()
	if stubs(full) != 0 || stubs(ctxMsgs) == 0 || len(st.Cleared) != stubs(ctxMsgs) {
		t.Errorf("record: %d stubs, context: %d stubs, %d cleared entries' results", stubs(full), stubs(ctxMsgs), len(st.Cleared))
	}
	if n := stubs(resumed.sess.History()); n != len(st.Cleared) {
		t.Errorf("the resumed session's history holds %d stubs, want %d", n, len(st.Cleared))
	}
}

// TestResumeWithoutClearedEntries: a transcript without cleared entries (written by a keel
// from before them) resumes with the full results and goes on.
func TestResumeWithoutClearedEntries(t *testing.T) {
	srv, _, path, cwd, home := clearedSession(t)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		if !bytes.HasPrefix(line, []byte(`{"type":"cleared"`)) {
			kept = append(kept, line)
		}
	}
	if len(kept) == len(bytes.SplitAfter(data, []byte("\n"))) {
		t.Fatal("the transcript has no cleared entry")
	}
	if err := os.WriteFile(path, bytes.Join(kept, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	resumed := newHarnessOn(t, srv, Options{Cwd: cwd, Home: home, Continue: true})
	if n := stubs(resumed.sess.History()); n != 0 {
		t.Fatalf("resumed without cleared entries, the history holds %d stubs", n)
	}
	if res := result(t, resumed.send(t, "and now?")); res.Text != "done" {
		t.Fatalf("after resume: %q", res.Text)
	}
}

func requestMessages(t *testing.T, body []byte) []json.RawMessage {
	t.Helper()
	var req struct {
		Messages []json.RawMessage `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		t.Fatal(err)
	}
	return req.Messages
}

// withoutCacheControl is a message with its blocks' cache_control markers removed.
func withoutCacheControl(t *testing.T, raw json.RawMessage) []byte {
	t.Helper()
	var m struct {
		Role    string           `json:"role"`
		Content []map[string]any `json:"content"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, b := range m.Content {
		delete(b, "cache_control")
	}
	out, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// stubs counts the tool results of msgs that are clearing stubs.
func stubs(msgs []message.Message) int {
	n := 0
	for _, m := range msgs {
		for _, b := range m.Content {
			if b.Type == message.TypeToolResult && len(b.Content) == 1 && strings.HasPrefix(b.Content[0].Text, clearing.StubPrefix) {
				n++
			}
		}
	}
	return n
}
