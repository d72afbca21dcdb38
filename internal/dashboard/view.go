package dashboard

import (
	"context"
	"time"

	"github.com/keel-dev/keel/internal/coord"
	"github.com/keel-dev/keel/internal/message"
	"github.com/keel-dev/keel/internal/team"
)

// View is everything the page shows, as JSON: built from the records each time they may have
// changed, and sent whole to the page when it differs from the last.
type View struct {
	Sessions []Session  `json:"sessions"`
	Teams    []TeamView `json:"teams"`
	Jobs     []Job      `json:"jobs"`
	// Problems are records that could not be read: shown as damaged, never a broken page.
	Problems []string `json:"problems,omitempty"`
}

// Session is one transcript with what its requests cost.
type Session struct {
	ID      string    `json:"id"`
	Project string    `json:"project"`
	Title   string    `json:"title"`
	Updated time.Time `json:"updated"`
	// State is running (a keel process has the transcript open), ended, or unknown where the
	// platform cannot tell.
	State    string        `json:"state"`
	Model    string        `json:"model,omitempty"`
	Turns    int           `json:"turns"`
	Messages int           `json:"messages"`
	CostUSD  float64       `json:"costUsd"`
	Priced   bool          `json:"priced"`
	Usage    message.Usage `json:"usage"`
	// CacheReadShare is cache-read tokens over all input tokens, 0–1.
	CacheReadShare float64   `json:"cacheReadShare"`
	Requests       []Request `json:"requests,omitempty"`
	Breaks         []Break   `json:"breaks,omitempty"`
	Compactions    []int     `json:"compactions,omitempty"`
	// Damaged counts lines of the transcript that did not parse.
	Damaged int `json:"damaged,omitempty"`
}

// Request is one model request of a session's main agent.
type Request struct {
	N     int           `json:"n"`
	At    time.Time     `json:"at"`
	Model string        `json:"model"`
	Usage message.Usage `json:"usage"`
	// CostUSD is the request's price; 0 with Priced false for a model without a known price.
	CostUSD float64 `json:"costUsd"`
	Priced  bool    `json:"priced"`
	Share   float64 `json:"share"`
	// Context is the request's whole input, what fills the context window.
	Context int64 `json:"context"`
}

// Break is a prompt-cache break, before request N.
type Break struct {
	N       int    `json:"n"`
	Segment string `json:"segment"`
	Reason  string `json:"reason,omitempty"`
}

// TeamView is one team: its members, board, mail and open permission requests.
type TeamView struct {
	Name     string       `json:"name"`
	Members  []Member     `json:"members"`
	Tasks    []coord.Task `json:"tasks"`
	Mail     []Mail       `json:"mail"`
	Requests []Permission `json:"requests"`
}

// Member is a team member as the page shows it. Its heartbeat is left out: it changes every
// few seconds and would make every view new.
type Member struct {
	Name      string     `json:"name"`
	Color     string     `json:"color,omitempty"`
	AgentType string     `json:"agent_type"`
	Runner    string     `json:"runner"`
	State     team.State `json:"state"`
	Task      string     `json:"task,omitempty"`
	Tokens    int64      `json:"tokens"`
	// Host is the machine the member's process runs on (workers on other hosts).
	Host string `json:"host,omitempty"`
}

// Mail is a message between members; Read says it was delivered to its recipient.
type Mail struct {
	ID      string    `json:"id"`
	From    string    `json:"from"`
	To      string    `json:"to"`
	Type    string    `json:"type,omitempty"`
	Summary string    `json:"summary,omitempty"`
	Text    string    `json:"text,omitempty"`
	Sent    time.Time `json:"sent"`
	Read    bool      `json:"read"`
}

// Permission is a teammate's permission request waiting for the lead.
type Permission struct {
	ID      string    `json:"id"`
	From    string    `json:"from"`
	Color   string    `json:"color,omitempty"`
	Tool    string    `json:"tool"`
	Input   string    `json:"input"`
	Reason  string    `json:"reason,omitempty"`
	Created time.Time `json:"created"`
}

// Job is a background agent the supervisor runs.
type Job struct {
	ID          string    `json:"id"`
	Description string    `json:"description"`
	AgentType   string    `json:"agentType,omitempty"`
	SessionID   string    `json:"sessionId,omitempty"`
	State       string    `json:"state"`
	Created     time.Time `json:"created"`
	Ended       time.Time `json:"ended,omitzero"`
	Result      string    `json:"result,omitempty"`
	Error       string    `json:"error,omitempty"`
}

// Teams opens the coordination backends of this machine's teams (cli adapts the team
// package's handles).
type Teams interface {
	// Names lists the teams, newest first.
	Names(ctx context.Context) []string
	Open(ctx context.Context, name string) (Team, error)
}

// Team is an open team handle.
type Team interface {
	Members(ctx context.Context) ([]team.MemberInfo, error)
	Backend() coord.Backend
	// SendFromUser puts a message from the user into a member's inbox.
	SendFromUser(ctx context.Context, to, text string) (string, error)
	// Answer resolves a teammate's permission request as the lead's UI would.
	Answer(ctx context.Context, requestID string, allow bool, reason string) error
	Close() error
}

// Jobs reads and stops the supervisor's background agents.
type Jobs interface {
	List(ctx context.Context) ([]Job, error)
	Stop(ctx context.Context, id string) error
}
