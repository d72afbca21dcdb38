package scripted

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"
)

// matches reports whether a request with number n and view v has every feature m asks for.
func (m *Match) matches(n int, v *view) bool {
	switch {
	case m.Request != 0 && m.Request != n,
		m.UserText != "" && !strings.Contains(v.userText, m.UserText),
		m.ToolResult != "" && !slices.Contains(v.results, m.ToolResult),
		m.HasTool != "" && !slices.Contains(v.tools, m.HasTool),
		m.LacksTool != "" && slices.Contains(v.tools, m.LacksTool),
		m.System != "" && !strings.Contains(v.system, m.System),
		m.Contains != "" && !strings.Contains(v.userAll, m.Contains),
		m.Model != "" && !strings.Contains(v.model, m.Model):
		return false
	}
	return true
}

// reply is a scripted answer with its deterministic ids, independent of the wire format.
type reply struct {
	id           string
	model        string
	blocks       []replyBlock
	stopReason   string
	outputTokens int
	// webSearches counts the reply's web searches (usage.server_tool_use).
	webSearches int
}

type replyBlock struct {
	kind      BlockKind
	text      string // text or thinking
	signature string // thinking
	id        string // tool_use
	name      string
	input     json.RawMessage
	found     []string // tool search result
	// results and searchError are a web search's (kindWebResult) or the results a text cites
	// (kindCitedText).
	results     []WebResult
	searchError string
}

// Kinds of the two wire blocks a tool_search block becomes.
const (
	kindServerUse    BlockKind = "server_tool_use"
	kindSearchResult BlockKind = "tool_search_tool_result"
)

// replyEnv is what of the request shapes a reply: its tool search tool's name, its web_search
// definition, and whether it is a chat completion (which has no server tools).
type replyEnv struct {
	search string
	web    *webSearchTool
	chat   bool
}

// buildReply turns rule r into the answer to request n. Ids are msg_scripted_NNNN and
// toolu_scripted_NNNN_K (K counts the tool_use blocks of the reply from 0); a tool search is
// srvtoolu_scripted_NNNN_K (K counts the searches) run by the request's search tool, search
// (tool_search_tool_regex when the request has none); a web search srvtoolu_scripted_NNNN_wK.
// It fails when the scenario uses a server tool the request does not have.
func buildReply(n int, model string, r *Rule, env replyEnv) (*reply, error) {
	search := env.search
	rep := &reply{id: fmt.Sprintf("msg_scripted_%04d", n), model: model, stopReason: r.StopReason}
	tools, thinks, searches := 0, 0, 0
	for _, b := range r.Reply {
		rb := replyBlock{kind: b.Kind, text: b.Text}
		switch b.Kind {
		case KindWebSearch:
			if env.chat {
				continue
			}
			blocks, err := webSearchBlocks(n, b, env.web, rep.webSearches)
			if err != nil {
				return nil, err
			}
			rep.webSearches++
			rep.outputTokens += tokensOf(blocks[0].input) + tokensOf([]byte(b.Answer))
			rep.blocks = append(rep.blocks, blocks...)
			continue
		case KindToolSearch:
			if search == "" {
				search = "tool_search_tool_regex"
			}
			key := "pattern"
			if strings.Contains(search, "bm25") {
				key = "query"
			}
			input, _ := json.Marshal(map[string]string{key: b.Text})
			id := fmt.Sprintf("srvtoolu_scripted_%04d_%d", n, searches)
			searches++
			rep.outputTokens += tokensOf(input)
			rep.blocks = append(rep.blocks,
				replyBlock{kind: kindServerUse, id: id, name: search, input: input},
				replyBlock{kind: kindSearchResult, id: id, found: b.Found})
			continue
		case KindToolUse:
			rb.id = fmt.Sprintf("toolu_scripted_%04d_%d", n, tools)
			rb.name = b.Name
			rb.input = b.Input
			if b.RawInput != "" {
				rb.input = json.RawMessage(b.RawInput)
			}
			if len(rb.input) == 0 {
				rb.input = json.RawMessage("{}")
			}
			tools++
			rep.outputTokens += tokensOf(rb.input) + tokensOf([]byte(rb.name))
		case KindThinking:
			rb.signature = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "scripted-signature-%04d-%d", n, thinks))
			thinks++
			rep.outputTokens += tokensOf([]byte(rb.text))
		default:
			rep.outputTokens += tokensOf([]byte(rb.text))
		}
		rep.blocks = append(rep.blocks, rb)
	}
	rep.outputTokens = max(rep.outputTokens, 1)
	if rep.stopReason == "" {
		rep.stopReason = "end_turn"
		if tools > 0 {
			rep.stopReason = "tool_use"
		}
	}
	return rep, nil
}

// chunks splits s into stream fragments of about size bytes, never inside a UTF-8 sequence,
// and into at least two when s has two runes or more, so clients always see accumulation.
func chunks(s string, size int) []string {
	if s == "" {
		return nil
	}
	if n := utf8.RuneCountInString(s); n > 1 && len(s) <= size {
		size = max(1, len(s)/2)
	}
	var out []string
	for len(s) > 0 {
		end := min(size, len(s))
		for end < len(s) && !utf8.RuneStart(s[end]) {
			end++
		}
		out = append(out, s[:end])
		s = s[end:]
	}
	return out
}

// Fragment sizes of streamed text and tool input; small enough that every test sees several.
const (
	textChunk  = 24
	inputChunk = 16
)
