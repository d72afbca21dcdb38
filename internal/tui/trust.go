package tui

import (
	"context"
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// TrustChoice is the answer to the first-run trust question.
type TrustChoice int

// The answers. The zero value, not trusting, is what Esc and a closed input give.
const (
	// TrustNo keeps the workspace untrusted: its files may narrow what keel does, never widen it.
	TrustNo TrustChoice = iota
	// TrustSession trusts it for this run only (like --trust).
	TrustSession
	// TrustAlways records the trust (like `keel trust`).
	TrustAlways
)

// TrustQuestion is what the trust prompt shows: the project directory and the files in it
// that take effect only once it is trusted.
type TrustQuestion struct {
	Dir      string
	Provides []string
}

// trustChoices are the answers of the options of trustQuestion, in order.
var trustChoices = []TrustChoice{TrustAlways, TrustSession, TrustNo}

// trustQuestion is the one question asked before the session opens, so that nothing the
// workspace provides has run yet when the user answers.
func trustQuestion(q TrustQuestion, st styles) *question {
	m := &question{
		title: "Do you trust the files in this folder?",
		lead:  q.Dir,
		notes: []string{"Until you trust it, what this folder provides can only narrow what keel does: its settings may add deny and ask rules but not allow rules, a mode or hooks; its MCP servers, hooks and skill shell lines do not run; its memory files include nothing outside it."},
		options: []string{
			"Yes, trust this folder",
			"Yes, for this session only",
			"No, continue without trusting it (esc)",
		},
		st: st, width: 80,
	}
	if len(q.Provides) > 0 {
		m.notes = append(m.notes, "Found here: "+strings.Join(q.Provides, ", "))
	}
	return m
}

// AskTrust asks the first-run trust question in the terminal. An error or an interrupt
// answers TrustNo.
func AskTrust(ctx context.Context, q TrustQuestion, noColor bool, opts ...tea.ProgramOption) (TrustChoice, error) {
	i, err := trustQuestion(q, newStyles(noColor)).ask(ctx, opts...)
	if err != nil {
		return TrustNo, fmt.Errorf("ask whether to trust %s: %w", q.Dir, err)
	}
	return trustChoices[i], nil
}
