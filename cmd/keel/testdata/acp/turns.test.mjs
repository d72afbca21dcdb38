// A prompt turn as the editor sees it: initialize, streamed text and thoughts, tool calls with
// titles, kinds, locations and diffs, the plan, and the commands of a new session.
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { answer, connect, statuses, text, timeout, toolCalls, workspace } from './harness.mjs';

test('initialize: version, capabilities, agent info and the API-key auth method', { timeout }, async () => {
  const ws = workspace();
  const c = await connect(ws);
  try {
    assert.equal(c.init.protocolVersion, 1);
    const caps = c.init.agentCapabilities;
    assert.equal(caps.loadSession, true);
    assert.equal(caps.promptCapabilities.image, true);
    assert.equal(caps.promptCapabilities.embeddedContext, true);
    assert.equal(caps.mcpCapabilities.http, true);
    assert.equal(caps.mcpCapabilities.sse, true);
    for (const k of ['list', 'resume', 'fork', 'close']) assert.ok(caps.sessionCapabilities[k], `sessionCapabilities.${k} not advertised`);
    assert.equal(c.init.agentInfo.name, 'keel');
    assert.deepEqual(c.init.authMethods.map((m) => m.id), ['anthropic-api-key']);
    await c.agent.request('authenticate', { methodId: 'anthropic-api-key' });
  } finally {
    await c.close();
  }
});

test('a turn streams thoughts and text as chunks and ends with end_turn', { timeout }, async () => {
  const ws = workspace();
  const c = await connect(ws);
  try {
    const { sessionId } = await c.newSession();
    const resp = await c.prompt(sessionId, 'ACP-STREAM say hello');
    assert.equal(resp.stopReason, 'end_turn');
    const ups = c.of(sessionId);
    assert.equal(text(ups, 'agent_thought_chunk'), 'Considering how to greet the editor.');
    assert.equal(text(ups, 'agent_message_chunk'), 'Hello from keel over the Agent Client Protocol.');
    assert.ok(ups.filter((u) => u.sessionUpdate === 'agent_message_chunk').length > 1, 'the text came in one piece, not streamed');
    const firstText = ups.findIndex((u) => u.sessionUpdate === 'agent_message_chunk');
    const firstThought = ups.findIndex((u) => u.sessionUpdate === 'agent_thought_chunk');
    assert.ok(firstThought < firstText, 'thoughts should stream before the text they precede');
  } finally {
    await c.close();
  }
});

test('ordering trap: updates may come before the response they belong to; the commands arrive', { timeout }, async () => {
  const ws = workspace();
  mkdirSync(join(ws.env.KEEL_HOME, 'skills', 'greet'), { recursive: true });
  writeFileSync(join(ws.env.KEEL_HOME, 'skills', 'greet', 'SKILL.md'), '---\nname: greet\ndescription: Greet the user warmly\n---\nSay hello.\n');
  const c = await connect(ws);
  try {
    const { sessionId } = await c.newSession();
    // Whether available_commands_update came before the session/new response or after it,
    // the recorder has it: nothing is dropped for a session id not yet known.
    const cmds = await c.waitFor(sessionId, (u) => u.sessionUpdate === 'available_commands_update');
    const names = cmds.availableCommands.map((x) => x.name);
    for (const n of ['compact', 'clear', 'add-dir', 'greet']) assert.ok(names.includes(n), `command ${n} missing from ${names}`);
    assert.equal(cmds.availableCommands.find((x) => x.name === 'greet').description, 'Greet the user warmly');
  } finally {
    await c.close();
  }
});

test('a tool call with a diff: Read then Edit, statuses pending → in_progress → completed', { timeout }, async () => {
  const ws = workspace({ 'notes.txt': 'first line\nACP-EDIT-OLD\nlast line\n' });
  const asked = [];
  const c = await connect(ws, { handlers: { 'session/request_permission': answer('allow_once', asked) } });
  try {
    const { sessionId } = await c.newSession();
    const resp = await c.prompt(sessionId, 'ACP-EDIT-GO fix the notes');
    assert.equal(resp.stopReason, 'end_turn');
    assert.equal(readFileSync(ws.file('notes.txt'), 'utf8'), 'first line\nACP-EDIT-NEW\nlast line\n');
    const [read, edit] = toolCalls(c.of(sessionId));
    assert.equal(read[0].title, 'Read notes.txt');
    assert.equal(read[0].kind, 'read');
    assert.deepEqual(read[0].locations, [{ path: ws.file('notes.txt') }]);
    assert.equal(edit[0].title, 'Edit notes.txt');
    assert.equal(edit[0].kind, 'edit');
    assert.deepEqual(edit[0].content, [{ type: 'diff', path: ws.file('notes.txt'), oldText: 'ACP-EDIT-OLD', newText: 'ACP-EDIT-NEW' }]);
    assert.deepEqual(statuses(edit), ['pending', 'in_progress', 'completed']);
    assert.deepEqual(statuses(read), ['pending', 'in_progress', 'completed']);
    assert.equal(asked.length, 1, 'only the Edit needs a permission');
    assert.equal(asked[0].toolCall.toolCallId, edit[0].toolCallId);
    assert.deepEqual(asked[0].options.map((o) => o.kind), ['allow_once', 'allow_always', 'reject_once', 'reject_always']);
  } finally {
    await c.close();
  }
});

test('TodoWrite becomes a plan', { timeout }, async () => {
  const ws = workspace();
  const c = await connect(ws);
  try {
    const { sessionId } = await c.newSession();
    await c.prompt(sessionId, 'ACP-PLAN make a plan');
    const plan = await c.waitFor(sessionId, (u) => u.sessionUpdate === 'plan');
    assert.deepEqual(plan.entries.map((e) => [e.content, e.status]), [['Read the code', 'completed'], ['Fix the bug', 'in_progress']]);
    const [todo] = toolCalls(c.of(sessionId));
    assert.equal(todo[0].kind, 'think');
  } finally {
    await c.close();
  }
});

test('Bash: the title a person reads, kind execute, the output in the completed update', { timeout }, async () => {
  const ws = workspace();
  const c = await connect(ws, { args: ['--permission-mode', 'bypassPermissions'] });
  try {
    const { sessionId } = await c.newSession();
    const resp = await c.prompt(sessionId, 'ACP-ONE-TOOL run it');
    assert.equal(resp.stopReason, 'end_turn');
    const [bash] = toolCalls(c.of(sessionId));
    assert.equal(bash[0].title, 'Bash: echo one-tool');
    assert.equal(bash[0].kind, 'execute');
    const done = bash.at(-1);
    assert.equal(done.status, 'completed');
    assert.match(done.content[0].content.text, /one-tool/);
  } finally {
    await c.close();
  }
});

test('an image and a resource in the prompt reach the conversation (load shows them back)', { timeout }, async () => {
  const ws = workspace();
  const png = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==';
  const c = await connect(ws);
  const { sessionId } = await c.newSession();
  const resp = await c.agent.request('session/prompt', {
    sessionId,
    prompt: [
      { type: 'text', text: 'ACP-STREAM look at this' },
      { type: 'image', mimeType: 'image/png', data: png },
      { type: 'resource', resource: { uri: `file://${ws.file('spec.md')}`, text: 'ACP-EMBEDDED-SPEC' } },
    ],
  });
  assert.equal(resp.stopReason, 'end_turn');
  await c.close();
  const again = await connect(ws);
  try {
    await again.agent.request('session/load', { sessionId, cwd: ws.dir, mcpServers: [] });
    const user = again.of(sessionId).filter((u) => u.sessionUpdate === 'user_message_chunk');
    assert.match(text(user, 'user_message_chunk'), /ACP-STREAM look at this\n<context ref="file:\/\/.*spec\.md">\nACP-EMBEDDED-SPEC\n<\/context>/);
    assert.ok(user.some((u) => u.content.type === 'image' && u.content.data === png && u.content.mimeType === 'image/png'), 'the image is not in the conversation');
  } finally {
    await again.close();
  }
});

test('without an API key: session/new answers authentication required', { timeout }, async () => {
  const ws = workspace();
  delete ws.env.ANTHROPIC_API_KEY;
  const c = await connect(ws);
  try {
    await assert.rejects(c.newSession(), (e) => e.code === -32000);
    await assert.rejects(c.agent.request('authenticate', { methodId: 'anthropic-api-key' }), (e) => e.code === -32000);
  } finally {
    await c.close();
  }
});
