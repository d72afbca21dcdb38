package permission

import (
	"context"
	"encoding/json"
	"strings"
)

// ModeAuto lets a classifier decide the calls that default mode would ask about: a small,
// fast model judges whether the call is safe in its context. Deny and ask rules still
// apply first, and whatever the classifier cannot settle (unsure, unavailable) is asked.
const ModeAuto Mode = "auto"

// Classifier judges a tool call for auto mode.
type Classifier interface {
	Classify(ctx context.Context, req ClassifyRequest) (Verdict, error)
}

// ClassifyRequest is one call to judge.
type ClassifyRequest struct {
	Request Request
	// Reason is why the call would be asked about.
	Reason string
	Agent  AgentInfo
}

// Verdict is a classifier's answer: allow, block or unsure, and why.
type Verdict struct {
	Decision string `json:"decision"`
	Reason   string `json:"reason"`
}

// The verdicts.
const (
	VerdictAllow  = "allow"
	VerdictBlock  = "block"
	VerdictUnsure = "unsure"
)

// classify asks the classifier about a call that would be asked in auto mode. ok is false
// when the question must still be put: not auto mode, an ask rule matched (the user wrote
// it, so the user answers), no classifier, or it is unsure or unavailable.
func (c *Checker) classify(ctx context.Context, req Request, d Decision) (Decision, bool) {
	if c.classifier == nil || d.Rule != nil || c.Policy().Mode != ModeAuto {
		return d, false
	}
	v, err := c.classifier.Classify(ctx, ClassifyRequest{Request: req, Reason: d.Reason, Agent: c.agent})
	if err != nil {
		c.logger.Warn("auto mode: classifier unavailable; asking", "tool", req.Tool, "err", err)
		return d, false
	}
	c.logger.Info("auto mode verdict", "tool", req.Tool, "decision", v.Decision, "reason", v.Reason)
	switch v.Decision {
	case VerdictAllow:
		return Decision{Behavior: Allow, Reason: "auto mode: the classifier judged this call safe: " + v.Reason}, true
	case VerdictBlock:
		return Decision{Behavior: Deny, Reason: "auto mode: the classifier judged this call unsafe: " + v.Reason, Suggestions: d.Suggestions}, true
	}
	return d, false
}

// ParseVerdict reads a classifier model's answer: the first JSON object in text with a
// decision of allow, block or unsure. Anything else is unsure.
func ParseVerdict(text string) Verdict {
	for i := 0; i < len(text); i++ {
		if text[i] != '{' {
			continue
		}
		dec := json.NewDecoder(strings.NewReader(text[i:]))
		var v Verdict
		if dec.Decode(&v) == nil {
			switch v.Decision {
			case VerdictAllow, VerdictBlock, VerdictUnsure:
				return v
			}
		}
	}
	return Verdict{Decision: VerdictUnsure, Reason: "the classifier's answer had no verdict"}
}
