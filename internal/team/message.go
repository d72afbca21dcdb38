package team

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"html"
	"strings"

	"github.com/keel-dev/keel/internal/coord"
)

// Message types: plain text, the structured messages of Claude Code's SendMessage, and
// keel's own notices.
const (
	TypeMessage              = "message"
	TypeShutdownRequest      = "shutdown_request"
	TypeShutdownResponse     = "shutdown_response"
	TypePlanApprovalRequest  = "plan_approval_request"
	TypePlanApprovalResponse = "plan_approval_response"
	TypePermissionRequest    = "permission_request"
	TypePermissionResponse   = "permission_response"
	// TypeIdle tells the lead a teammate finished its work and waits; it does not wake an
	// idle lead on its own.
	TypeIdle = "idle_notification"
)

// LeadAlias is the name every member can reach the lead by, as in Claude Code.
const LeadAlias = "team-lead"

// Broadcast is the SendMessage recipient that reaches every teammate.
const Broadcast = "*"

// Structured is the object form of SendMessage's message, with Claude Code's fields.
type Structured struct {
	Type      string `json:"type"`
	RequestID string `json:"request_id,omitempty"`
	Approve   *bool  `json:"approve,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Feedback  string `json:"feedback,omitempty"`
	Plan      string `json:"plan,omitempty"`
	// Always (permission responses) adds the rules the request suggested, for the rest of
	// the teammate's session.
	Always bool `json:"always,omitempty"`
}

var structuredTypes = []string{TypeShutdownRequest, TypeShutdownResponse, TypePlanApprovalRequest, TypePlanApprovalResponse, TypePermissionResponse}

// check reports a structured message the model got wrong, in words it can act on.
func (s Structured) check() error {
	valid := false
	for _, t := range structuredTypes {
		valid = valid || s.Type == t
	}
	if !valid {
		return fmt.Errorf("message type %q is not one of %s (or send a plain string)", s.Type, strings.Join(structuredTypes, ", "))
	}
	switch s.Type {
	case TypePermissionResponse, TypePlanApprovalResponse:
		if s.Approve == nil {
			return fmt.Errorf("a %s needs approve: true or false", s.Type)
		}
	case TypeShutdownResponse:
		if s.RequestID == "" {
			return fmt.Errorf("a %s needs the request_id of the request it answers", s.Type)
		}
		if s.Approve == nil {
			return fmt.Errorf("a %s needs approve: true or false", s.Type)
		}
	case TypePlanApprovalRequest:
		if strings.TrimSpace(s.Plan) == "" {
			return fmt.Errorf("a plan_approval_request needs the plan")
		}
	}
	return nil
}

// newID returns a short unique message id: 16 hex digits, enough within one team.
func newID() string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// render is a message as the receiving model reads it, in Claude Code's tag format. The id
// lets a resumed member recognise messages its transcript already holds.
func render(m coord.Message, color string) string {
	var b strings.Builder
	fmt.Fprintf(&b, "<teammate-message teammate_id=%q", m.From)
	if color != "" {
		fmt.Fprintf(&b, " color=%q", color)
	}
	if m.Summary != "" {
		fmt.Fprintf(&b, " summary=%q", html.EscapeString(m.Summary))
	}
	if m.Type != "" && m.Type != TypeMessage {
		fmt.Fprintf(&b, " type=%q", m.Type)
	}
	fmt.Fprintf(&b, " id=%q>\n", m.ID)
	text := m.Text
	if len(m.Data) > 0 {
		text = string(m.Data)
		if m.Text != "" {
			text = m.Text + "\n" + text
		}
	}
	b.WriteString(text)
	b.WriteString("\n</teammate-message>")
	return b.String()
}

// marker is what render writes for id, found again in a history on resume.
func marker(id string) string { return fmt.Sprintf(" id=%q>\n", id) }

func structuredOf(m coord.Message) (Structured, bool) {
	if len(m.Data) == 0 {
		return Structured{}, false
	}
	var s Structured
	if json.Unmarshal(m.Data, &s) != nil || s.Type == "" {
		return Structured{}, false
	}
	return s, true
}

func ptr[T any](v T) *T { return &v }
