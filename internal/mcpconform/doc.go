// Package mcpconform runs the official MCP conformance suite (npm
// @modelcontextprotocol/conformance, pinned in scripts/test.sh) against the real keel binary:
// every client scenario drives keel the way a user would (keel mcp add, keel mcp login with a
// browser that follows the redirect, a keel -p session whose scripted model calls the
// scenario's tools), and the server scenarios run against keel mcp serve --http. The test
// fails when a scenario listed in testdata/*-expected.txt stops passing, or one not listed
// starts passing (the list is then stale). It has no code outside its tests.
package mcpconform
