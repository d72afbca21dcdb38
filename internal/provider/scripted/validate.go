package scripted

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
)

// The conversation rules below are the Messages API's, with its error messages word for word,
// so a client that passes the scripted model also passes the real one. They are checked on
// every request: keel's tests then prove keel never sends what the API would refuse.

// msgBlock is what the conversation checks need of one content block.
type msgBlock struct {
	typ       string
	text      string // text blocks
	id        string // tool_use
	toolUseID string // tool_result
	thinking  string // thinking
	signature string
}

func blockOf(obj map[string]any) msgBlock {
	s := func(k string) string { v, _ := obj[k].(string); return v }
	return msgBlock{typ: s("type"), text: s("text"), id: s("id"), toolUseID: s("tool_use_id"),
		thinking: s("thinking"), signature: s("signature")}
}

// checkConversation applies the API's rules on roles, tool pairing, text and thinking blocks.
func checkConversation(roles []string, msgs [][]msgBlock) error {
	for i := 1; i < len(roles); i++ {
		if roles[i] == roles[i-1] {
			return badRequest(`messages: roles must alternate between "user" and "assistant", but found multiple %q roles in a row`, roles[i])
		}
	}
	for i, blocks := range msgs {
		if len(blocks) == 0 && !(i == len(msgs)-1 && roles[i] == "assistant") {
			return badRequest("messages.%d: all messages must have non-empty content except for the optional final assistant message", i)
		}
	}
	seen := map[string]bool{}
	for i, blocks := range msgs {
		for j, b := range blocks {
			if b.typ == "tool_use" {
				if seen[b.id] {
					return badRequest("messages.%d.content.%d: `tool_use` ids must be unique", i, j)
				}
				seen[b.id] = true
			}
			if b.typ != "text" {
				continue
			}
			if b.text == "" {
				return badRequest("messages: text content blocks must be non-empty")
			}
			if strings.TrimSpace(b.text) == "" {
				return badRequest("messages: text content blocks must contain non-whitespace text")
			}
		}
		if err := checkToolPairing(i, roles, msgs); err != nil {
			return err
		}
	}
	return checkThinking(roles, msgs)
}

// checkToolPairing: every tool_use of an assistant message needs a tool_result in the user
// message right after it, among the blocks that open that message; every tool_result answers
// a tool_use of the message right before it.
func checkToolPairing(i int, roles []string, msgs [][]msgBlock) error {
	if roles[i] == "assistant" {
		var uses []string
		for _, b := range msgs[i] {
			if b.typ == "tool_use" {
				uses = append(uses, b.id)
			}
		}
		if len(uses) == 0 {
			return nil
		}
		answered := map[string]bool{}
		if i+1 < len(msgs) && roles[i+1] == "user" {
			for _, b := range msgs[i+1] {
				if b.typ != "tool_result" {
					break // results must come first: one after a text block is not "immediately after"
				}
				answered[b.toolUseID] = true
			}
		}
		var missing []string
		for _, id := range uses {
			if !answered[id] {
				missing = append(missing, id)
			}
		}
		if len(missing) > 0 {
			return badRequest("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after: %s. Each `tool_use` block must have a corresponding `tool_result` block in the next message.",
				i, strings.Join(missing, ", "))
		}
		return nil
	}
	prev := map[string]bool{}
	if i > 0 && roles[i-1] == "assistant" {
		for _, b := range msgs[i-1] {
			if b.typ == "tool_use" {
				prev[b.id] = true
			}
		}
	}
	for j, b := range msgs[i] {
		if b.typ == "tool_result" && !prev[b.toolUseID] {
			return badRequest("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s. Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
				i, j, b.toolUseID)
		}
	}
	return nil
}

// checkThinking refuses thinking blocks whose text no longer matches the signature the
// scripted model gave them: a client must replay thinking exactly as it was streamed.
func checkThinking(roles []string, msgs [][]msgBlock) error {
	latest := -1
	for i, r := range roles {
		if r == "assistant" {
			latest = i
		}
	}
	for i, blocks := range msgs {
		for j, b := range blocks {
			if b.typ != "thinking" || signatureValid(b.signature, b.thinking) {
				continue
			}
			if i == latest {
				return badRequest("messages.%d.content.%d: `thinking` or `redacted_thinking` blocks in the latest assistant message cannot be modified. These blocks must remain as they were in the original response.", i, j)
			}
			return badRequest("messages.%d.content.%d: Invalid `signature` in `thinking` block", i, j)
		}
	}
	return nil
}

// thinkingSignature is the signature of the k-th thinking block of request n: readable, and
// bound to the thinking text by its hash, so a modified replay is detected.
func thinkingSignature(n, k int, thinking string) string {
	sum := sha256.Sum256([]byte(thinking))
	return base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "scripted-signature-%04d-%d-%s", n, k, hex.EncodeToString(sum[:8])))
}

func signatureValid(sig, thinking string) bool {
	raw, err := base64.StdEncoding.DecodeString(sig)
	if err != nil {
		return false
	}
	s, ok := strings.CutPrefix(string(raw), "scripted-signature-")
	if !ok {
		return false
	}
	i := strings.LastIndexByte(s, '-')
	sum := sha256.Sum256([]byte(thinking))
	return i >= 0 && s[i+1:] == hex.EncodeToString(sum[:8])
}
