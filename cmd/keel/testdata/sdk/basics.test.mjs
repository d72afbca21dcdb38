// One turn, tools, streaming input, model, cwd, partial messages, limits and errors: the
// recordings 01a, 01b, 02, 03, 08d, 08h, 08i, 08p and 09 of shared/protocol/agent-sdk.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { run, timeout, toolResults, resultText, userMessage, workspace } from './harness.mjs';

test('01a hello: one turn, init and result', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-HELLO say hello', ws);
  assert.equal(r.error, undefined);
  assert.ok(r.init, 'no system/init line');
  assert.equal(r.init.cwd, ws.dir);
  // Tools whose schemas wait behind tool search are still the session's tools.
  for (const name of ['Read', 'TodoWrite', 'BashOutput', 'WebFetch', 'Agent', 'Skill']) {
    assert.ok(r.init.tools.includes(name), `init tools lack ${name}: ${r.init.tools}`);
  }
  assert.equal(r.result.subtype, 'success');
  assert.equal(r.result.is_error, false);
  assert.equal(r.result.result, 'Hello from the scripted model.');
  assert.equal(r.result.num_turns, 1);
  assert.equal(r.result.session_id, r.init.session_id);
});

test('01b required fields: every line, no prompt echo, distinct uuids', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-HELLO say hello', ws);
  const echoed = r.messages.filter((m) => m.type === 'user' && JSON.stringify(m.message).includes('PRB-HELLO'));
  assert.deepEqual(echoed, [], 'the prompt was echoed back without --replay-user-messages');
  const uuids = r.messages.map((m) => m.uuid);
  assert.equal(new Set(uuids).size, uuids.length, 'uuids repeat');
  assert.equal(r.init.apiKeySource, 'ANTHROPIC_API_KEY');
  assert.ok(r.init.claude_code_version, 'claude_code_version is empty');
});

test('02 tool: Read runs and its result goes back to the model', { timeout }, async () => {
  const ws = workspace({ 'probe-read.txt': 'READ-CONTENT-7781\n' });
  const r = await run('PRB-READ read the probe file', ws);
  const results = toolResults(r.messages);
  assert.equal(results.length, 1);
  assert.match(resultText(results[0]), /READ-CONTENT-7781/);
  assert.equal(r.result.result, 'Read done.');
  assert.equal(r.result.num_turns, 2);
});

test('03 streaming input: two prompts, one session, history kept', { timeout }, async () => {
  const ws = workspace();
  let firstDone;
  const first = new Promise((resolve) => { firstDone = resolve; });
  async function* prompts() {
    yield userMessage('PRB-STREAM-ONE first turn');
    await first;
    yield userMessage('PRB-STREAM-TWO second turn');
  }
  const r = await run(prompts(), ws, {}, (m) => { if (m.type === 'result') firstDone(); });
  assert.equal(r.results.length, 2);
  assert.equal(r.results[0].result, 'First answer.');
  assert.equal(r.results[1].result, 'Second answer.', 'the second turn did not carry the first');
  assert.equal(r.results[0].session_id, r.results[1].session_id);
});

test('08h model: the model option reaches the request', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-MODEL hi', ws, { model: 'claude-probe-model-1' });
  assert.equal(r.init.model, 'claude-probe-model-1');
  assert.equal(r.result.result, 'The probe model answered.');
  assert.ok(r.result.modelUsage['claude-probe-model-1'], 'modelUsage lacks the model');
});

test('08i cwd: tools run in the cwd option', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-CWD where am I', ws, { allowedTools: ['Bash'] });
  assert.equal(r.result.result, 'Cwd done.');
  assert.equal(readFileSync(ws.file('cwd-proof.txt'), 'utf8').trim(), ws.dir);
});

test('08p includePartialMessages: stream_event lines in the API event shapes', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-PARTIAL say hello', ws, { includePartialMessages: true });
  const events = r.messages.filter((m) => m.type === 'stream_event').map((m) => m.event);
  assert.equal(events[0].type, 'message_start');
  assert.equal(events.at(-1).type, 'message_stop');
  const text = events.filter((e) => e.type === 'content_block_delta' && e.delta.type === 'text_delta').map((e) => e.delta.text).join('');
  assert.equal(text, 'Hello from the partial stream.');
  const thinking = events.filter((e) => e.type === 'content_block_delta' && e.delta.type === 'thinking_delta').map((e) => e.delta.thinking).join('');
  assert.equal(thinking, 'Thinking about the greeting.');
  const starts = events.filter((e) => e.type === 'content_block_start').map((e) => e.index);
  const stops = events.filter((e) => e.type === 'content_block_stop').map((e) => e.index);
  assert.deepEqual(starts, [0, 1]);
  assert.deepEqual(stops, [0, 1]);
  assert.ok(events.some((e) => e.type === 'message_delta' && e.delta.stop_reason === 'end_turn'));
});

test('08d maxTurns: error_max_turns with errors', { timeout }, async () => {
  const ws = workspace({ 'probe-read.txt': 'MAXTURNS-CONTENT\n' });
  const r = await run('PRB-MAXTURNS keep reading', ws, { maxTurns: 1 });
  assert.equal(r.result.subtype, 'error_max_turns');
  assert.equal(r.result.is_error, true);
  assert.match(r.result.errors[0], /maximum number of turns/);
  assert.ok(r.error, 'the SDK reports an error result as an error, as with Claude Code');
});

test('09 API error: the error reaches the caller', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-APIERR trigger an API error', ws);
  assert.equal(r.result.is_error, true);
  const text = r.result.subtype === 'success' ? r.result.result : r.result.errors.join('\n');
  assert.match(text, /PRB-APIERR-MSG/);
  assert.match(String(r.error), /PRB-APIERR-MSG/);
});

test('api_retry: a failed attempt is reported, the retry answers', { timeout }, async () => {
  const r = await run('PRB-RETRY hello', workspace());
  const retry = r.messages.find((m) => m.type === 'system' && m.subtype === 'api_retry');
  assert.ok(retry, 'no api_retry line');
  assert.equal(retry.attempt, 1);
  assert.equal(retry.error, 'overloaded');
  assert.equal(r.result.result, 'Answered after a retry.');
});

test('background agent: task_started and task_notification, then a turn for its report', { timeout }, async () => {
  const r = await run('PRB-BACKGROUND start it', workspace());
  const started = r.messages.find((m) => m.type === 'system' && m.subtype === 'task_started');
  assert.ok(started, 'no task_started line');
  assert.equal(started.description, 'background probe');
  const note = r.messages.find((m) => m.type === 'system' && m.subtype === 'task_notification');
  assert.ok(note, 'no task_notification line');
  assert.equal(note.task_id, started.task_id);
  assert.equal(note.status, 'completed');
  // The report reaches the model once: in the request after the launch when the agent was
  // already done by then, else in a turn of its own after the launch receipt.
  assert.equal(r.results.at(-1).result, 'The background agent reported.');
  if (r.results.length > 1) assert.equal(r.results[0].result, 'Launched in the background.');
  assert.ok(r.results.length <= 2, `results: ${r.results.map((x) => x.result).join(' | ')}`);
});

// progressOf checks the task_progress lines of one task: one per reply of the agent that
// called tools, in the SDK's SDKTaskProgressMessage shape.
function progressOf(r, description) {
  const started = r.messages.find((m) => m.type === 'system' && m.subtype === 'task_started' && m.description === description);
  assert.ok(started, `no task_started line for ${description}`);
  const progress = r.messages.filter((m) => m.type === 'system' && m.subtype === 'task_progress' && m.task_id === started.task_id);
  assert.equal(progress.length, 1, `task_progress lines: ${JSON.stringify(progress)}`);
  const [p] = progress;
  assert.equal(p.tool_use_id, started.tool_use_id);
  assert.equal(p.description, description);
  assert.equal(p.subagent_type, 'general-purpose');
  assert.equal(p.last_tool_name, 'Read');
  assert.equal(p.usage.tool_uses, 1);
  assert.ok(p.usage.total_tokens > 0 && p.usage.duration_ms >= 0, JSON.stringify(p.usage));
  const note = r.messages.findIndex((m) => m.type === 'system' && m.subtype === 'task_notification' && m.task_id === started.task_id);
  if (note >= 0) assert.ok(r.messages.indexOf(p) < note, 'task_progress came after the task ended');
  return p;
}

test('task_progress: a subagent reports its tool calls and tokens as it works', { timeout }, async () => {
  const ws = workspace({ 'progress.txt': 'progress probe\n' });
  const r = await run('PRB-PROGRESS-FG look', ws);
  progressOf(r, 'progress probe');
  assert.equal(r.result.result, 'The agent made progress.');
});

test('task_progress: a background agent too, before its notification', { timeout }, async () => {
  const ws = workspace({ 'progress.txt': 'progress probe\n' });
  const r = await run('PRB-PROGRESS-BG look', ws);
  const p = progressOf(r, 'background progress probe');
  const note = r.messages.find((m) => m.type === 'system' && m.subtype === 'task_notification' && m.task_id === p.task_id);
  assert.equal(note.usage.tool_uses, 1);
  assert.ok(note.usage.total_tokens > p.usage.total_tokens, `notification usage ${JSON.stringify(note.usage)} after progress ${JSON.stringify(p.usage)}`);
  assert.equal(r.results.at(-1).result, 'The background agent reported.');
});
