package permission

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// fakeClassifier answers with its verdict (or err) and counts the questions.
type fakeClassifier struct {
	verdict Verdict
	err     error
	asked   int
}

func (f *fakeClassifier) Classify(context.Context, ClassifyRequest) (Verdict, error) {
	f.asked++
	return f.verdict, f.err
}

// countingAsker allows and counts.
type countingAsker struct{ n int }

func (a *countingAsker) Ask(context.Context, AskRequest) (Answer, error) {
	a.n++
	return AllowOnce(), nil
}

func TestAutoMode(t *testing.T) {
	bash := Request{Tool: "Bash", Command: "touch made.txt", Cwd: "/w"}
	tests := []struct {
		name       string
		verdict    Verdict
		err        error
		rules      []Rule
		req        Request
		want       Behavior
		classified bool // the classifier was consulted
		asked      bool // the user was asked
		reason     string
	}{
		{name: "allow", verdict: Verdict{VerdictAllow, "creating a file in the project"}, req: bash,
			want: Allow, classified: true, reason: "creating a file in the project"},
		{name: "block", verdict: Verdict{VerdictBlock, "deletes data"}, req: bash,
			want: Deny, classified: true, reason: "unsafe: deletes data"},
		{name: "unsure asks", verdict: Verdict{VerdictUnsure, "cannot tell"}, req: bash,
			want: Allow, classified: true, asked: true},
		{name: "unavailable asks", err: errors.New("model down"), req: bash,
			want: Allow, classified: true, asked: true},
		{name: "deny rule wins without asking the classifier", verdict: Verdict{VerdictAllow, "fine"},
			rules: mustRules(t, Deny, "Bash(touch:*)"), req: bash, want: Deny},
		{name: "ask rule goes to the user", verdict: Verdict{VerdictAllow, "fine"},
			rules: mustRules(t, Ask, "Bash(touch:*)"), req: bash, want: Allow, asked: true},
		{name: "allowed calls need no verdict", verdict: Verdict{VerdictBlock, "no"},
			req: Request{Tool: "Read", Paths: []string{"/w/a.go"}, ReadOnly: true, Cwd: "/w"}, want: Allow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cls := &fakeClassifier{verdict: tt.verdict, err: tt.err}
			asker := &countingAsker{}
			c := New(Config{Policy: Policy{Mode: ModeAuto, Dirs: []string{"/w"}, Rules: tt.rules}, Asker: asker, Classifier: cls})
			d := c.Check(t.Context(), tt.req)
			if d.Behavior != tt.want {
				t.Errorf("behavior = %v (%s), want %v", d.Behavior, d.Reason, tt.want)
			}
			if (cls.asked > 0) != tt.classified {
				t.Errorf("classifier asked %d times, want consulted=%v", cls.asked, tt.classified)
			}
			if (asker.n > 0) != tt.asked {
				t.Errorf("user asked %d times, want asked=%v", asker.n, tt.asked)
			}
			if !strings.Contains(d.Reason, tt.reason) {
				t.Errorf("reason %q lacks %q", d.Reason, tt.reason)
			}
		})
	}
}

func TestAutoModeOnlyInAuto(t *testing.T) {
	cls := &fakeClassifier{verdict: Verdict{VerdictAllow, "fine"}}
	c := New(Config{Policy: Policy{Mode: ModeDefault, Dirs: []string{"/w"}}, Classifier: cls})
	if d := c.Check(t.Context(), Request{Tool: "Bash", Command: "touch x", Cwd: "/w"}); d.Behavior != Deny || cls.asked != 0 {
		t.Errorf("default mode: %v after %d verdicts, want a headless deny without the classifier", d.Behavior, cls.asked)
	}
	child := c.Child(Policy{Mode: ModeAuto}, AgentInfo{Name: "worker"}, nil)
	if d := child.Check(t.Context(), Request{Tool: "Bash", Command: "touch x", Cwd: "/w"}); d.Behavior != Allow || cls.asked != 1 {
		t.Errorf("auto child: %v after %d verdicts, want the classifier's allow", d.Behavior, cls.asked)
	}
}

func TestParseVerdict(t *testing.T) {
	for _, tt := range []struct{ text, want string }{
		{`{"decision":"allow","reason":"ok"}`, VerdictAllow},
		{"Verdict:\n```json\n{\"decision\": \"block\", \"reason\": \"rm -rf\"}\n```", VerdictBlock},
		{`I think it is fine.`, VerdictUnsure},
		{`{"decision":"maybe"}`, VerdictUnsure},
	} {
		if got := ParseVerdict(tt.text).Decision; got != tt.want {
			t.Errorf("ParseVerdict(%q) = %s, want %s", tt.text, got, tt.want)
		}
	}
}
