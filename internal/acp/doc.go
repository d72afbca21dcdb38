// Package acp serves the Agent Client Protocol (ACP) on a pair of streams: keel as the agent
// of an editor (Zed, JetBrains IDEs, Neovim, Emacs…) that starts `keel acp` and speaks
// JSON-RPC 2.0 to it over stdin and stdout.
//
// It is a frontend like the terminal UI: it opens sessions through the root package and maps
// their events onto `session/update` notifications (text and thoughts as chunks, tool calls
// with titles, kinds, locations and diffs, the todo list as a plan), permission asks onto
// `session/request_permission`, and keel's stored sessions onto load, list, resume and fork.
// When the client offers its files and terminals, the built-in tools do their I/O there
// ([keel.WithToolHost]). It holds no agent logic.
//
// The transport is github.com/coder/acp-go-sdk's; a guard in front of it answers malformed
// messages and requests before initialize, which the SDK drops without a word.
package acp
