// Bad input: what the library's client never sends is written raw (a malformed line, a batch,
// a request before initialize); the rest goes through the client. keel answers each with the
// JSON-RPC error the specification names and keeps serving; a client that disappears ends
// the session cleanly.
import assert from 'node:assert/strict';
import { readFileSync, readdirSync } from 'node:fs';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { test } from 'node:test';
import { alive, commandPid, connect, spawnKeel, timeout, until, workspace } from './harness.mjs';

// raw starts keel and exchanges lines with it directly.
function raw(ws) {
  const keel = spawnKeel(ws);
  const lines = createInterface({ input: keel.proc.stdout })[Symbol.asyncIterator]();
  return {
    keel,
    send: (msg) => keel.proc.stdin.write((typeof msg === 'string' ? msg : JSON.stringify(msg)) + '\n'),
    next: async () => {
      const { value, done } = await lines.next();
      assert.ok(!done, `keel closed stdout; stderr:\n${keel.stderr()}`);
      return JSON.parse(value);
    },
  };
}

const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: 1, clientCapabilities: {} } };

test('malformed JSON, a batch, a non-object, a bad message: parse error and invalid request, id null; keel keeps serving', { timeout }, async () => {
  const ws = workspace();
  const k = raw(ws);
  try {
    k.send('{"jsonrpc": "2.0", "id": 7, "method": ');
    assert.deepEqual(await k.next(), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error' } });
    k.send('[{"jsonrpc":"2.0","id":8,"method":"initialize","params":{}}]');
    let r = await k.next();
    assert.equal(r.id, null);
    assert.equal(r.error.code, -32600);
    k.send('42');
    r = await k.next();
    assert.equal(r.error.code, -32600);
    k.send({ jsonrpc: '1.0', id: 9, method: 'initialize' });
    r = await k.next();
    assert.equal(r.id, 9);
    assert.equal(r.error.code, -32600);
    k.send(initialize);
    r = await k.next();
    assert.equal(r.id, 1);
    assert.equal(r.result.protocolVersion, 1, 'keel stopped serving after the bad input');
  } finally {
    k.keel.proc.stdin.end();
    assert.equal((await k.keel.exited).code, 0);
  }
});

test('a request before initialize: invalid request naming the method; initialize still works', { timeout }, async () => {
  const ws = workspace();
  const k = raw(ws);
  try {
    k.send({ jsonrpc: '2.0', id: 'early', method: 'session/new', params: { cwd: ws.dir, mcpServers: [] } });
    const r = await k.next();
    assert.equal(r.id, 'early');
    assert.equal(r.error.code, -32600);
    assert.match(r.error.message, /initialized before 'session\/new'/);
    k.send(initialize);
    assert.equal((await k.next()).result.protocolVersion, 1);
  } finally {
    k.keel.proc.stdin.end();
    await k.keel.exited;
  }
});

test('an unknown method: method not found; relative paths: invalid params naming the path', { timeout }, async () => {
  const ws = workspace();
  const c = await connect(ws);
  try {
    await assert.rejects(c.agent.request('session/teleport', { sessionId: 'x' }), (e) => e.code === -32601);
    await assert.rejects(c.agent.request('session/new', { cwd: 'proj', mcpServers: [] }),
      (e) => e.code === -32602 && /absolute path/.test(JSON.stringify(e.data)) && /"proj\\"/.test(JSON.stringify(e.data)));
    await assert.rejects(c.agent.request('session/new', { cwd: ws.dir, mcpServers: [], additionalDirectories: ['../elsewhere'] }),
      (e) => e.code === -32602 && /elsewhere/.test(JSON.stringify(e.data)));
    await assert.rejects(c.agent.request('session/list', { cwd: './proj' }), (e) => e.code === -32602);
    await assert.rejects(c.prompt('no-such-session', 'hello'), (e) => e.code === -32002);
    // Still serving.
    const { sessionId } = await c.newSession();
    assert.equal((await c.prompt(sessionId, 'ACP-STREAM hello')).stopReason, 'end_turn');
  } finally {
    await c.close();
  }
});

test('stdin closed mid-command: keel exits 0, the command is killed, the transcript synced', { timeout }, async () => {
  const ws = workspace();
  const c = await connect(ws, { args: ['--permission-mode', 'bypassPermissions'] });
  const { sessionId } = await c.newSession();
  const turn = c.prompt(sessionId, 'ACP-STDIN-CLOSE sleep').catch((e) => e);
  let pid = 0;
  await until(() => {
    try {
      pid = Number(readFileSync(ws.file('orphan.pid'), 'utf8'));
    } catch {
      return false;
    }
    // The file holds its pid inside the sandbox; find the one seen from here.
    pid = commandPid(ws.dir, 'sleep');
    return pid > 0;
  }, 'the command to start');
  const exit = await c.close();
  await turn;
  assert.equal(exit.code, 0, 'keel did not end cleanly');
  assert.ok(!alive(pid), `the command (pid ${pid}) outlived keel`);
  const projects = join(ws.home, '.keel', 'projects');
  const [project] = readdirSync(projects);
  const transcript = readFileSync(join(projects, project, `${sessionId}.jsonl`), 'utf8');
  assert.match(transcript, /ACP-STDIN-CLOSE sleep/, 'the prompt is not in the transcript');
  assert.match(transcript, /orphan\.pid/, 'the interrupted call is not in the transcript');
});
