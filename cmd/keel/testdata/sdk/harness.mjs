// Shared helpers of the suite that drives keel through the official TypeScript Agent SDK.
// The Go test TestAgentSDK (cmd/keel/sdk_test.go) builds keel, starts the scripted model
// and runs these files with node's test runner; it passes:
//   KEEL_BIN          the keel binary to use as pathToClaudeCodeExecutable
//   KEEL_AGENT_SDK    the directory the pinned SDK is installed in (node_modules/…)
//   ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY   the scripted model on 127.0.0.1
//   KEEL_SDK_TIMEOUT_MS   the time limit of one test (scaled by KEEL_TEST_TIMEOUT_SCALE)
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { makeWorkspace } from '../workspace.mjs';

const modules = join(process.env.KEEL_AGENT_SDK, 'node_modules');
export const sdk = await import(pathToFileURL(join(modules, '@anthropic-ai/claude-agent-sdk/sdk.mjs')).href);
export const zod = await import(pathToFileURL(join(modules, 'zod/index.js')).href);
export const modulesDir = modules;
export const timeout = Number(process.env.KEEL_SDK_TIMEOUT_MS || 60000);

// workspace makes a project directory and a private home for one test.
export function workspace(files = {}) {
  return makeWorkspace('keel-sdk-', files);
}

// options are the query options that point the SDK at keel in ws.
export function options(ws, extra = {}) {
  return { pathToClaudeCodeExecutable: process.env.KEEL_BIN, cwd: ws.dir, env: ws.env, ...extra };
}

// run sends one prompt (a string, or an async iterable of user messages) and collects every
// message until the query ends. Every message is checked against the SDK's required fields.
// An error thrown by the iteration (the SDK throws after an error result, as it does with
// Claude Code) is returned, not thrown, so tests can look at the result first.
export async function run(prompt, ws, extra = {}, onMessage) {
  return collect(start(prompt, ws, extra), onMessage);
}

// start starts a query without reading it, for tests that call its methods first.
export function start(prompt, ws, extra = {}) {
  return sdk.query({ prompt, options: options(ws, extra) });
}

// collect reads a started query to its end, as run does.
export async function collect(q, onMessage) {
  const messages = [];
  let error;
  try {
    for await (const m of q) {
      requiredFields(m);
      messages.push(m);
      if (onMessage) await onMessage(m, q);
    }
  } catch (e) {
    error = e;
  }
  const results = messages.filter((m) => m.type === 'result');
  return {
    q, messages, error, results,
    result: results.at(-1),
    init: messages.find((m) => m.type === 'system' && m.subtype === 'init'),
    assistantText: messages.filter((m) => m.type === 'assistant').flatMap((m) => m.message.content)
      .filter((b) => b.type === 'text').map((b) => b.text).join('\n'),
  };
}

// userMessage is an SDKUserMessage for streaming input.
export function userMessage(text) {
  return { type: 'user', session_id: '', message: { role: 'user', content: [{ type: 'text', text }] }, parent_tool_use_id: null };
}

// has asserts obj has every key (present, possibly null).
function has(obj, what, ...keys) {
  for (const k of keys) assert.ok(Object.hasOwn(obj, k), `${what} lacks required field ${k}: ${JSON.stringify(obj).slice(0, 400)}`);
}

// requiredFields checks a message against the fields the SDK's types mark required.
export function requiredFields(m) {
  has(m, 'message', 'type');
  switch (m.type) {
    case 'system':
      has(m, `system/${m.subtype}`, 'subtype', 'session_id', 'uuid');
      if (m.subtype === 'init') {
        has(m, 'system/init', 'apiKeySource', 'claude_code_version', 'cwd', 'tools', 'mcp_servers', 'model',
          'permissionMode', 'slash_commands', 'output_style', 'skills', 'plugins');
        assert.ok(Array.isArray(m.tools) && Array.isArray(m.plugins) && Array.isArray(m.mcp_servers));
      }
      if (m.subtype === 'status') has(m, 'system/status', 'status');
      if (m.subtype === 'compact_boundary') has(m.compact_metadata, 'compact_metadata', 'trigger', 'pre_tokens');
      if (m.subtype === 'api_retry') has(m, 'system/api_retry', 'attempt', 'max_retries', 'retry_delay_ms', 'error_status', 'error');
      if (m.subtype === 'hook_started') has(m, 'system/hook_started', 'hook_id', 'hook_name', 'hook_event');
      if (m.subtype === 'hook_response') has(m, 'system/hook_response', 'hook_id', 'hook_name', 'hook_event', 'output', 'stdout', 'stderr', 'outcome');
      if (m.subtype === 'task_started') has(m, 'system/task_started', 'task_id', 'description');
      if (m.subtype === 'task_notification') has(m, 'system/task_notification', 'task_id', 'status', 'output_file', 'summary');
      if (m.subtype === 'task_progress') {
        has(m, 'system/task_progress', 'task_id', 'description', 'usage');
        has(m.usage, 'task_progress.usage', 'total_tokens', 'tool_uses', 'duration_ms');
      }
      break;
    case 'assistant':
      has(m, 'assistant', 'message', 'parent_tool_use_id', 'uuid', 'session_id');
      has(m.message, 'assistant.message', 'id', 'type', 'role', 'model', 'content', 'stop_reason', 'usage');
      break;
    case 'user':
      has(m, 'user', 'message', 'parent_tool_use_id', 'session_id');
      break;
    case 'stream_event':
      has(m, 'stream_event', 'event', 'parent_tool_use_id', 'uuid', 'session_id');
      break;
    case 'result':
      has(m, 'result', 'subtype', 'duration_ms', 'duration_api_ms', 'is_error', 'num_turns', 'stop_reason',
        'total_cost_usd', 'usage', 'modelUsage', 'permission_denials', 'uuid', 'session_id');
      assert.ok(Object.keys(m.modelUsage).length > 0, 'result.modelUsage is empty');
      for (const u of Object.values(m.modelUsage)) {
        has(u, 'modelUsage entry', 'inputTokens', 'outputTokens', 'cacheReadInputTokens', 'cacheCreationInputTokens',
          'webSearchRequests', 'costUSD', 'contextWindow', 'maxOutputTokens');
      }
      if (m.subtype === 'success') has(m, 'result/success', 'result');
      else assert.ok(Array.isArray(m.errors) && m.errors.length > 0, `error result ${m.subtype} lacks errors`);
      break;
  }
}

// toolResults are the tool_result blocks of the user messages.
export function toolResults(messages) {
  return messages.filter((m) => m.type === 'user' && Array.isArray(m.message.content))
    .flatMap((m) => m.message.content).filter((b) => b.type === 'tool_result');
}

export function resultText(block) {
  if (typeof block.content === 'string') return block.content;
  return (block.content || []).map((c) => c.text || '').join('\n');
}
