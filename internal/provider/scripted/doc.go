// Package scripted is keel's scripted model: a real HTTP server on 127.0.0.1 that speaks the
// Anthropic Messages API and OpenAI chat completions and answers from a scenario file. `keel
// demo` and keel's tests run against it, and users can run it to test their own agents
// offline.
//
// # Endpoints
//
//   - POST /v1/messages: streaming (SSE, the real event sequence: message_start, per block
//     content_block_start / content_block_delta / content_block_stop with a ping after the
//     first start, message_delta with stop_reason and usage, message_stop) and non-streaming
//     JSON. Text arrives in several text_delta events, thinking as thinking_delta events and
//     a signature_delta, tool input as input_json_delta fragments (the first one empty).
//     Any x-api-key (or Authorization) is accepted but one must be sent, and so must
//     anthropic-version. Errors have the API's shape
//     {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"},"request_id":"req_…"}.
//   - POST /v1/messages/count_tokens: {"input_tokens": N}; not recorded, not numbered.
//   - GET /v1/models: the scenario's models (else keel's built-in model table), newest first,
//     with the API's pagination (limit, after_id, before_id; has_more, first_id, last_id);
//     not recorded, not numbered.
//   - POST /v1/chat/completions: streaming (chunks with role, content, reasoning_content and
//     tool_calls deltas by index, a finish_reason chunk, with stream_options.include_usage a
//     usage chunk with no choices, then [DONE]) and non-streaming. Thinking blocks become
//     reasoning_content; ids are chatcmpl-scripted-NNNN and call_scripted_NNNN_K.
//
// A request asking for extended thinking is checked as the API checks it: budget_tokens at
// least 1024 and below max_tokens.
//
// # Strictness
//
// The conversation is checked as the Messages API checks it, and refused with its 400
// invalid_request_error and its message: every tool_use needs its tool_result among the
// blocks that open the next user message; a tool_result must answer a tool_use of the message
// right before it; tool_use ids and tool names are unique; messages and text blocks must be
// non-empty, text not blank; roles must alternate; a thinking block must come back as it was
// streamed (its signature is bound to its text); at most 4 cache_control breakpoints. Chat
// completions refuse tool calls without tool messages and tool messages without calls, with
// OpenAI's messages. So a test that passes against the scripted model shows that keel sent
// nothing the real APIs refuse.
//
// Both APIs are driven by the same rules: a request is reduced to a common view (model,
// system prompt, tool names, last user message, tool results in it) before matching.
//
// # Scenario format
//
// A scenario is one YAML document with four optional keys: rules, fallback, cache and models.
//
//	rules:              # tried in order; the first that matches and has uses left answers
//	  - name: NAME      # label in the request log (default "rule N")
//	    when:           # all given conditions must hold; no when = every request
//	      user_text: S    # S occurs in the text of the last user message (system reminders aside)
//	      contains: S     # S occurs anywhere in the last user message, tool results included
//	      tool_result: T  # the last user message holds a result for a tool_use of tool T
//	      has_tool: T     # T is in the request's tool list
//	      lacks_tool: T   # T is not
//	      system: S       # S occurs in the system prompt
//	      model: S        # S occurs in the model name
//	      history: S      # S occurs in any message of the request (text or tool result)
//	      thinking: B     # the request asks for extended thinking (true) or not (false)
//	      request: N      # the request is the N-th model request the server received (from 1)
//	    times: N        # fire at most N times (default unlimited)
//	    reply:          # content blocks, in order; each has exactly one key
//	      - text: S
//	      - thinking: S
//	      - tool_use: {name: T, input: {any: YAML map, sent as a JSON object in key order}}
//	      - tool_search: {query: S, found: [T, …]}  # the API's own tool search (see below)
//	      - web_search:   # the API's web_search server tool (see below)
//	          query: S
//	          results: [{title: S, url: U, page_age: S, text: S}, …]
//	          answer: S   # optional: a text block citing every result
//	          error: E    # optional: fail with this error_code (max_uses_exceeded, …)
//	    stop_reason: R  # end_turn|tool_use|max_tokens|stop_sequence|pause_turn|refusal
//	                    # (default tool_use if the reply has a tool_use block, else end_turn)
//	    fault:          # optional failure
//	      status: 529       # answer this HTTP status with an API-shaped error body instead
//	      retry_after: 2    # retry-after header (seconds) of a status answer
//	      retry_after_ms: 50  # retry-after-ms header
//	      message: S        # error message (default per status)
//	      drop_after: 3     # close the TCP connection after 3 stream events
//	      corrupt: 1        # send stream event 1 with undecodable data
//	      delay: 20ms       # wait before every stream event
//	fallback:           # answers when no rule matches; keys reply, stop_reason, fault
//	  reply: [{text: ...}]  # default: one short text block (DefaultFallbackText)
//	cache:
//	  min_tokens: 1024  # minimum cacheable prefix
//	  lookback: 20      # positions searched per breakpoint, its own included
//	models:             # what GET /v1/models lists (default: keel's built-in table)
//	  - {id: claude-opus-5-7, display_name: Claude Opus 5.7, created_at: 2027-01-05,
//	     max_input_tokens: 1000000, max_tokens: 128000}
//
// A rule needs a reply or a fault with a status. "529 twice, then succeed" is a rule
// {fault: {status: 529}, times: 2} before the rule with the reply: a retried request is
// matched again, and request numbers count retries. Malformed files fail with
// "file:line: message" naming the valid keys or values. Scenarios can also be built in Go
// ([Scenario], [Rule], [Text], [ToolUse]).
//
// An example (testdata/example.yaml):
//
//	# A session that reads a file, edits it, runs the tests and finishes.
//	cache:
//	  min_tokens: 1024   # shortest cacheable prefix (default 1024)
//	  lookback: 20       # block positions searched per breakpoint (default 20)
//	fallback:
//	  reply:
//	    - text: I have nothing scripted for that.
//	rules:
//	  - name: overloaded-once
//	    when: {request: 1}
//	    fault: {status: 529, retry_after_ms: 10}
//	  - name: read
//	    when: {user_text: fix the failing test}
//	    reply:
//	      - thinking: The test is in calc_test.go; read the code first.
//	      - text: Let me look at the code.
//	      - tool_use:
//	          name: Read
//	          input: {file_path: calc.go}
//	  - name: edit
//	    when: {tool_result: Read}
//	    reply:
//	      - tool_use:
//	          name: Edit
//	          input:
//	            file_path: calc.go
//	            old_string: "return a - b"
//	            new_string: "return a + b"
//	  - name: test
//	    when: {tool_result: Edit}
//	    reply:
//	      - tool_use:
//	          name: Bash
//	          input: {command: go test ./..., description: Run the tests}
//	  - name: done
//	    when: {tool_result: Bash, contains: ok}
//	    times: 1
//	    reply:
//	      - text: The test passes now.
//	  - name: essay
//	    when: {user_text: write an essay}
//	    stop_reason: max_tokens
//	    reply:
//	      - text: It was a dark and stormy
//	  - name: flaky-stream
//	    when: {user_text: flaky, has_tool: Write, lacks_tool: Agent, system: keel}
//	    times: 1
//	    fault: {drop_after: 5, delay: 5ms}
//	    reply:
//	      - text: This stream is cut after five events.
//
// Ids are deterministic: msg_scripted_NNNN for request N, toolu_scripted_NNNN_K for its K-th
// tool_use block (from 0), req_scripted_NNNN in the request-id header.
//
// # Token counting and the prompt cache
//
// Tokens are approximated, deterministically: the prompt is cut into blocks (each tool
// definition, each system block, each message content block; for chat completions each tool
// and each message), a block counts ceil(bytes/4) of its canonical JSON (keys sorted,
// cache_control removed), and output counts the same way over text, thinking and tool input.
//
// Cache accounting follows Anthropic's documented rules. The prefix runs tools → system →
// messages. Up to 4 blocks may carry cache_control (more → 400 invalid_request_error, as the
// API answers), a top-level cache_control marks the last block, and a 1h breakpoint may not
// follow a 5m one. An entry is written only at a breakpoint whose prefix reaches min_tokens,
// lives 5 minutes or 1 hour (by the injectable clock, [Options.Now]) and is refreshed by every
// hit. Each breakpoint looks for an entry at its own position and the lookback−1 positions
// before it; the longest hit is read. Tokens between the hit and the last written breakpoint
// are cache_creation (split by TTL into cache_creation.ephemeral_5m/1h_input_tokens), the
// rest is input_tokens. Entries are keyed by model. Chat completions use automatic prefix
// caching: every block boundary at or past min_tokens is cached for 5 minutes and the longest
// live prefix is reported as prompt_tokens_details.cached_tokens. A request answered with an
// error status neither reads nor writes the cache.
//
// # Deferred tools and tool search
//
// Tools with "defer_loading": true need a server tool search tool in the request (type
// tool_search_tool_regex_20251119 or tool_search_tool_bm25_20251119), else 400; the scripted
// model also refuses cache_control on a deferred tool (keel moves that breakpoint to the
// search tool). A tool_search reply block becomes a server_tool_use block (id
// srvtoolu_scripted_NNNN_K, the request's search tool, input {"pattern": S} or {"query": S}
// for bm25, streamed as input_json_delta) followed by a tool_search_tool_result whose
// tool_references name the found tools, whole in its content_block_start. Chat completions
// have no server tool search and leave the block out. A later tool_use of a found tool is an
// ordinary tool_use block.
//
// Cache approximation: a deferred tool's definition is not part of the tools section of the
// prefix, and adding or removing one moves none of the tools after it. Each tool_search_tool_result in the history counts, besides its own JSON, the
// canonical definitions of the tools it references, at its own position — where the API
// inlines them — so they join the cached prefix from there on and the tool list never changes.
// A reference to a tool that is not deferred in the request is a 400.
//
// # Context editing
//
// A Messages request may carry the beta's context_management with a clear_tool_uses_20250919
// edit (the anthropic-beta header context-management-2025-06-27 is required, else 400, as the
// API answers; unknown fields, wrong types, negative values and a repeated edit are refused with
// a 400 naming the field; the other edit types the API knows are refused as not implemented).
// Like the API, the server keeps no state: on every request, once the unedited prompt exceeds
// the trigger (input_tokens, default 100,000, or a count of tool_uses), every tool result but
// those of the newest keep tool uses (default 3), and but those of exclude_tools, is replaced by
// [ClearedToolResult] — with clear_tool_inputs the calls' inputs by {} too — unless that frees
// fewer tokens than clear_at_least. The edit applies before the rules match and before the
// cache accounting, which therefore sees the cleared prefix: a result cleared for the first
// time rewrites the cache from its block on. The response carries
// context_management.applied_edits (type, cleared_tool_uses, cleared_input_tokens; empty when
// nothing was cleared) — in the message_delta event when streaming — and [Recorded.AppliedEdits]
// the same.
//
// # Web search
//
// A web_search reply block needs a web_search tool (type web_search_20250305 or
// web_search_20260209, name web_search) in the request; its definition is checked as the API
// checks it (known fields only, max_uses above 0, not both allowed_domains and
// blocked_domains, bare domains) and a 400 names what is wrong. The block becomes a
// server_tool_use (id srvtoolu_scripted_NNNN_wK, input {"query": S}, streamed as
// input_json_delta), a web_search_tool_result whole in its content_block_start — results
// outside allowed_domains or inside blocked_domains dropped, and an error max_uses_exceeded
// past max_uses — and, with an answer, a text block whose citations_delta events
// (web_search_result_location, cited_text = the result's text) come before its text. Usage
// then reports server_tool_use.web_search_requests. A scenario that searches when the request
// has no web_search tool is answered with a 500 naming the problem; chat completions leave the
// block out.
//
// # Request log
//
// [Server.Requests] lists every model request (body, attempt, rule, fault, status, cache
// account incl. SharedPrefixTokens, the tokens of the longest block prefix shared with any
// earlier request to the same model), and [Server.WaitRequests] waits for the n-th without
// sleeping.
package scripted
