package session

import (
	"testing"
)

// TestCompactionAfterResumeReadsTheCache: /compact as the first thing of a resumed process
// (keel -c -p /compact, or any Agent SDK query that compacts at its start) has no request of
// its own to repeat; it rebuilds the conversation's last request from the transcript and
// marks a breakpoint where that request ended, so it reads >= 99% of what it shares with it
// and writes nothing — as a compaction inside a running session does.
func TestCompactionAfterResumeReadsTheCache(t *testing.T) {
	sc, cwd := longSession(t, 12)
	home := t.TempDir()
	first := newHarness(t, sc, Options{Cwd: cwd, Home: home})
	if res := result(t, first.send(t, "read big.txt over and over")); res.NumTurns != 13 {
		t.Fatalf("%d turns, want 13", res.NumTurns)
	}
	before := first.srv.Requests()
	last := before[len(before)-1]
	if err := first.sess.Close(); err != nil {
		t.Fatal(err)
	}
	resumed := newHarnessOn(t, first.srv, Options{Cwd: cwd, Home: home, Continue: true})
	resumed.send(t, "/compact")
	checkCompaction(t, compactionRequest(t, resumed), last)
}
