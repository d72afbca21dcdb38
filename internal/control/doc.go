// Package control speaks the Agent SDK's control protocol over stream-json, so programs that
// embed an agent through Anthropic's Agent SDKs (TypeScript `pathToClaudeCodeExecutable`,
// Python `cli_path`) can run keel in Claude Code's place.
//
// The SDK starts the CLI with `--input-format stream-json --output-format stream-json` and
// writes JSON lines to its stdin: `user` messages (prompts), `control_request`s (initialize,
// interrupt, set_permission_mode, set_model, mcp_status, …) and `control_response`s to the
// CLI's own requests. The CLI answers on stdout with the session's messages in stream-json
// shapes, `control_response`s, and `control_request`s of its own: can_use_tool (permission
// questions), hook_callback (the SDK's hook callbacks), mcp_message (in-process SDK MCP
// servers) and elicitation.
//
// [Run] reads stdin in one goroutine, answers requests in the order they arrive (a
// set_permission_mode sent before a prompt applies to that prompt), opens the session when
// initialize has arrived (its system prompt, agents, hooks, MCP servers and JSON schema shape
// the session) and runs one turn per prompt. A frontend, it drives the session through the
// small [Session] interface the CLI hands it; optional abilities are found by type assertion.
// A request keel does not implement gets an error response at once, so no SDK promise hangs.
package control
