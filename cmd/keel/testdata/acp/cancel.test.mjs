// session/cancel: the turn ends with stop reason cancelled, not an error; the running command
// is killed; a pending permission question is abandoned; the session goes on.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { alive, commandPid, connect, statuses, timeout, toolCalls, until, workspace } from './harness.mjs';

test('cancel mid-command: stop reason cancelled, the command killed, the session still answers', { timeout }, async () => {
  const ws = workspace();
  const c = await connect(ws, { args: ['--permission-mode', 'bypassPermissions'] });
  try {
    const { sessionId } = await c.newSession();
    const turn = c.prompt(sessionId, 'ACP-CANCEL-CMD sleep');
    await c.waitFor(sessionId, (u) => u.sessionUpdate === 'tool_call_update' && u.status === 'in_progress');
    let pid = 0;
    await until(() => {
      try {
        pid = Number(readFileSync(ws.file('sleeper.pid'), 'utf8'));
      } catch {
        return false;
      }
      // The file holds its pid inside the sandbox; find the one seen from here.
      pid = commandPid(ws.dir, 'sleep');
      return pid > 0;
    }, 'the command to start');
    assert.ok(alive(pid), 'the command is not running');
    await c.agent.notify('session/cancel', { sessionId });
    const resp = await turn;
    assert.equal(resp.stopReason, 'cancelled');
    assert.ok(!alive(pid), `the command (pid ${pid}) still runs after the cancelled turn ended`);
    const [bash] = toolCalls(c.of(sessionId));
    assert.equal(statuses(bash).at(-1), 'failed');
    const after = await c.prompt(sessionId, 'ACP-AFTER-CANCEL are you there');
    assert.equal(after.stopReason, 'end_turn');
  } finally {
    await c.close();
  }
});

test('cancel while a permission question is pending: cancelled, the call never runs', { timeout }, async () => {
  const ws = workspace();
  let asked;
  const question = new Promise((resolve) => { asked = resolve; });
  let release;
  const answered = new Promise((resolve) => { release = resolve; });
  const c = await connect(ws, {
    handlers: {
      // An editor answers a pending question as cancelled once the user cancels the turn.
      'session/request_permission': async ({ params }) => {
        asked(params);
        await answered;
        return { outcome: { outcome: 'cancelled' } };
      },
    },
  });
  try {
    const { sessionId } = await c.newSession();
    const turn = c.prompt(sessionId, 'ACP-CANCEL-ASK do it');
    await question;
    await c.agent.notify('session/cancel', { sessionId });
    release();
    const resp = await turn;
    assert.equal(resp.stopReason, 'cancelled');
    const [bash] = toolCalls(c.of(sessionId));
    assert.notEqual(statuses(bash).at(-1), 'completed');
    assert.ok(!statuses(bash).includes('in_progress'), 'the call ran: ' + JSON.stringify(bash));
  } finally {
    await c.close();
  }
});
