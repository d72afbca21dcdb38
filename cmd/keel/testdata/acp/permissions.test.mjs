// Permission questions through the editor: allowed, rejected, rejected for good, and a mode
// switch that stops the asking.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { answer, connect, statuses, timeout, toolCalls, until, workspace } from './harness.mjs';

test('permission allowed once: the command runs', { timeout }, async () => {
  const ws = workspace();
  const asked = [];
  const c = await connect(ws, { handlers: { 'session/request_permission': answer('allow_once', asked) } });
  try {
    const { sessionId } = await c.newSession();
    const resp = await c.prompt(sessionId, 'ACP-PERM-ALLOW create the file');
    assert.equal(resp.stopReason, 'end_turn');
    assert.ok(existsSync(ws.file('allowed.txt')), 'the allowed command did not run');
    assert.equal(asked.length, 1);
    const q = asked[0];
    assert.equal(q.sessionId, sessionId);
    assert.equal(q.toolCall.title, 'Bash: touch allowed.txt');
    assert.equal(q.toolCall.kind, 'execute');
    const [bash] = toolCalls(c.of(sessionId));
    assert.equal(bash[0].toolCallId, q.toolCall.toolCallId, 'the question is not about the announced tool call');
    assert.deepEqual(statuses(bash), ['pending', 'in_progress', 'completed']);
  } finally {
    await c.close();
  }
});

test('permission rejected: the command does not run and the call fails', { timeout }, async () => {
  const ws = workspace();
  const c = await connect(ws, { handlers: { 'session/request_permission': answer('reject_once') } });
  try {
    const { sessionId } = await c.newSession();
    const resp = await c.prompt(sessionId, 'ACP-PERM-REJECT create the file');
    assert.equal(resp.stopReason, 'end_turn');
    assert.ok(!existsSync(ws.file('rejected.txt')), 'the rejected command ran');
    const [bash] = toolCalls(c.of(sessionId));
    assert.equal(statuses(bash).at(-1), 'failed');
  } finally {
    await c.close();
  }
});

test('reject always: the same call is refused later without asking', { timeout }, async () => {
  const ws = workspace();
  const asked = [];
  const c = await connect(ws, { handlers: { 'session/request_permission': answer('reject_always', asked) } });
  try {
    const { sessionId } = await c.newSession();
    await c.prompt(sessionId, 'ACP-PERM-NEVER first');
    await c.prompt(sessionId, 'ACP-PERM-NEVER second');
    assert.equal(asked.length, 1, 'asked again after "reject always"');
    assert.ok(!existsSync(ws.file('never.txt')), 'the rejected command ran');
    const calls = toolCalls(c.of(sessionId));
    assert.equal(calls.length, 2);
    for (const call of calls) assert.equal(statuses(call).at(-1), 'failed');
  } finally {
    await c.close();
  }
});

test('allow always: the same call is allowed later without asking', { timeout }, async () => {
  const ws = workspace();
  const asked = [];
  const c = await connect(ws, { handlers: { 'session/request_permission': answer('allow_always', asked) } });
  try {
    const { sessionId } = await c.newSession();
    await c.prompt(sessionId, 'ACP-PERM-ALLOW first');
    await c.prompt(sessionId, 'ACP-PERM-ALLOW second');
    assert.equal(asked.length, 1, 'asked again after "allow always"');
    assert.equal(toolCalls(c.of(sessionId)).length, 2);
  } finally {
    await c.close();
  }
});

test('set_mode acceptEdits: a write goes through without a question; the mode update arrives', { timeout }, async () => {
  const ws = workspace();
  const asked = [];
  const c = await connect(ws, { handlers: { 'session/request_permission': answer('reject_once', asked) } });
  try {
    const { sessionId, modes } = await c.newSession();
    assert.equal(modes.currentModeId, 'default');
    assert.deepEqual(modes.availableModes.map((m) => m.id), ['default', 'acceptEdits', 'plan', 'dontAsk', 'bypassPermissions']);
    await c.agent.request('session/set_mode', { sessionId, modeId: 'acceptEdits' });
    await c.waitFor(sessionId, (u) => u.sessionUpdate === 'current_mode_update' && u.currentModeId === 'acceptEdits');
    const resp = await c.prompt(sessionId, 'ACP-PERM-ACCEPT write it');
    assert.equal(resp.stopReason, 'end_turn');
    assert.equal(asked.length, 0, 'asked in acceptEdits');
    assert.equal(readFileSync(ws.file('accepted.txt'), 'utf8'), 'written in acceptEdits\n');
    const [write] = toolCalls(c.of(sessionId));
    assert.equal(write[0].title, 'Write accepted.txt');
    assert.deepEqual(write[0].content, [{ type: 'diff', path: ws.file('accepted.txt'), newText: 'written in acceptEdits\n' }], 'a new file: a diff without old text');
    await assert.rejects(c.agent.request('session/set_mode', { sessionId, modeId: 'yolo' }),
      (e) => e.code === -32602 && /default, acceptEdits, plan, dontAsk, bypassPermissions/.test(JSON.stringify(e.data)));
  } finally {
    await c.close();
  }
});

test("a teammate's question reaches the editor with the teammate's name", { timeout }, async () => {
  const ws = workspace();
  ws.env.CLAUDE_CODE_EXPERIMENTAL_AGENT_TEAMS = '1';
  let asked;
  const question = new Promise((resolve) => { asked = resolve; });
  const c = await connect(ws, {
    handlers: {
      'session/request_permission': ({ params }) => {
        asked(params);
        return { outcome: { outcome: 'selected', optionId: 'allow_once' } };
      },
    },
  });
  try {
    const { sessionId } = await c.newSession();
    const resp = await c.prompt(sessionId, 'ACP-LEAD-SPAWN start alice');
    assert.equal(resp.stopReason, 'end_turn');
    const q = await question;
    assert.equal(q.sessionId, sessionId);
    assert.equal(q.toolCall.title, 'alice: Bash: touch team.txt');
    await until(() => existsSync(ws.file('team.txt')), "alice's command, once allowed");
  } finally {
    await c.close();
  }
});
