// MCP servers from the SDK: an in-process SDK server over mcp_message and a stdio server from
// mcpServers: recordings 06 and 08l.
import assert from 'node:assert/strict';
import { existsSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { collect, run, sdk, start, timeout, toolResults, resultText, userMessage, workspace, zod } from './harness.mjs';

const z = zod.z ?? zod;

function probeServer() {
  return sdk.createSdkMcpServer({ name: 'probe', version: '1.0.0', tools: [
    sdk.tool('probe_add', 'Add two integers', { a: z.number(), b: z.number() },
      async ({ a, b }) => ({ content: [{ type: 'text', text: `PRB-SUM=${a + b}` }] })),
  ] });
}

test('mcp_toggle: a server switched off offers no tools', { timeout }, async () => {
  const ws = workspace();
  let ready;
  const off = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await off;
    yield userMessage('PRB-SDKMCP add 2 and 40');
  }
  const q = start(prompts(), ws, { mcpServers: { probe: probeServer() }, allowedTools: ['mcp__probe__probe_add'] });
  await q.toggleMcpServer('probe', false);
  ready();
  const r = await collect(q);
  assert.ok(!r.init.tools.includes('mcp__probe__probe_add'), `init tools: ${r.init.tools}`);
  assert.equal(toolResults(r.messages)[0].is_error, true);
});

test('06 SDK MCP server: its tool joins the pool and answers over mcp_message', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-SDKMCP add 2 and 40', ws, { mcpServers: { probe: probeServer() }, allowedTools: ['mcp__probe__probe_add'] });
  assert.ok(r.init.tools.includes('mcp__probe__probe_add') || r.init.tools.includes('ToolSearch'), `init tools: ${r.init.tools}`);
  assert.deepEqual(r.init.mcp_servers, [{ name: 'probe', status: 'connected' }]);
  const [res] = toolResults(r.messages);
  assert.match(resultText(res), /PRB-SUM=42/);
  assert.equal(r.result.result, 'The SDK MCP tool answered.');
});

const oracle = join(fileURLToPath(new URL('.', import.meta.url)), 'oracle-mcp.mjs');

test('08l mcpServers stdio: the server starts and its tool runs; status and reconnect', { timeout }, async () => {
  const ws = workspace();
  const servers = { oracle: { type: 'stdio', command: process.execPath, args: [oracle], env: { KEEL_AGENT_SDK: process.env.KEEL_AGENT_SDK } } };
  const r = await run('PRB-STDIOMCP add 2 and 40', ws, { mcpServers: servers, allowedTools: ['mcp__oracle__oracle_add'] });
  assert.match(resultText(toolResults(r.messages)[0]), /ORACLE-SUM=42/);
  assert.equal(r.result.result, 'The stdio MCP tool answered.');

  let ready;
  const checked = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await checked;
    yield userMessage('PRB-HELLO say hello');
  }
  const q = start(prompts(), ws, { mcpServers: { ...servers, probe: probeServer() } });
  const status = await q.mcpServerStatus();
  assert.deepEqual(status.map((s) => [s.name, s.status]).sort(), [['oracle', 'connected'], ['probe', 'connected']]);
  assert.equal(status.find((s) => s.name === 'oracle').serverInfo.name, 'oracle');
  await q.reconnectMcpServer('oracle');
  await q.reconnectMcpServer('probe');
  await assert.rejects(q.reconnectMcpServer('nope'), /nope/);
  ready();
  const after = await collect(q);
  assert.equal(after.result.subtype, 'success');
});

// oracleServer is the stdio oracle, writing its pid to a file of ws.
function oracleServer(ws) {
  const pidFile = join(ws.root, 'oracle.pid');
  return { pidFile, config: { type: 'stdio', command: process.execPath, args: [oracle], env: { KEEL_AGENT_SDK: process.env.KEEL_AGENT_SDK, ORACLE_PID_FILE: pidFile } } };
}

// alive says whether a process with pid exists.
function alive(pid) {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    if (e.code === 'ESRCH') return false;
    throw e;
  }
}

// oraclePid reads the pid the oracle wrote, and removes the file for the next start.
function oraclePid(server) {
  assert.ok(existsSync(server.pidFile), 'the oracle did not write its pid');
  const pid = Number(readFileSync(server.pidFile, 'utf8'));
  rmSync(server.pidFile);
  return pid;
}

test('toggleMcpServer: off stops the server process, on starts a new one', { timeout }, async () => {
  const ws = workspace();
  const oracleSrv = oracleServer(ws);
  let ready;
  const toggled = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await toggled;
    yield userMessage('PRB-STDIOMCP add 2 and 40');
  }
  const q = start(prompts(), ws, { mcpServers: { oracle: oracleSrv.config }, allowedTools: ['mcp__oracle__oracle_add'] });
  assert.equal((await q.mcpServerStatus()).find((s) => s.name === 'oracle').status, 'connected');
  const first = oraclePid(oracleSrv);
  assert.ok(alive(first));
  await q.toggleMcpServer('oracle', false);
  assert.equal(alive(first), false, `the oracle (pid ${first}) still runs after it was switched off`);
  const off = (await q.mcpServerStatus()).find((s) => s.name === 'oracle');
  assert.equal(off.status, 'disabled');
  await q.toggleMcpServer('oracle', true);
  assert.equal((await q.mcpServerStatus()).find((s) => s.name === 'oracle').status, 'connected');
  const second = oraclePid(oracleSrv);
  assert.notEqual(second, first);
  assert.ok(alive(second), 'the oracle did not start again');
  ready();
  const r = await collect(q);
  assert.match(resultText(toolResults(r.messages)[0]), /ORACLE-SUM=42/);
  assert.equal(r.result.result, 'The stdio MCP tool answered.');
});

test('setMcpServers: adds, removes and replaces servers; the next turn uses the new set', { timeout }, async () => {
  const ws = workspace();
  const oracleSrv = oracleServer(ws);
  const probe = probeServer();
  let ready, done;
  const changed = new Promise((resolve) => { ready = resolve; });
  const checked = new Promise((resolve) => { done = resolve; });
  async function* prompts() {
    await changed;
    yield userMessage('PRB-STDIOMCP add 2 and 40');
    await checked; // stdin stays open for the requests after the turn
  }
  const q = start(prompts(), ws, { mcpServers: { probe }, allowedTools: ['mcp__oracle__oracle_add'] });
  assert.deepEqual((await q.mcpServerStatus()).map((s) => s.name), ['probe']);

  const res = await q.setMcpServers({ probe, oracle: oracleSrv.config,
    broken: { type: 'stdio', command: join(ws.root, 'no-such-server') } });
  assert.deepEqual([...res.added].sort(), ['broken', 'oracle']);
  assert.deepEqual(res.removed, []);
  assert.deepEqual(Object.keys(res.errors), ['broken']);
  assert.match(res.errors.broken, /no-such-server/);
  const status = await q.mcpServerStatus();
  assert.deepEqual(status.map((s) => [s.name, s.status]).sort(), [['broken', 'failed'], ['oracle', 'connected'], ['probe', 'connected']]);
  let pid = oraclePid(oracleSrv);

  const again = await q.setMcpServers({ probe, oracle: oracleSrv.config });
  assert.deepEqual(again, { added: [], removed: ['broken'], errors: {} });
  assert.ok(alive(pid), 'an unchanged server was restarted');

  const changedOracle = { ...oracleSrv.config, env: { ...oracleSrv.config.env, ORACLE_TAG: 'second' } };
  const replaced = await q.setMcpServers({ probe, oracle: changedOracle });
  assert.deepEqual(replaced, { added: ['oracle'], removed: [], errors: {} });
  assert.equal(alive(pid), false, 'the oracle whose configuration changed still runs');
  pid = oraclePid(oracleSrv);
  assert.ok(alive(pid), 'the replaced oracle did not start');

  ready();
  const r = await collect(q, async (m, query) => {
    if (m.type !== 'result') return;
    try {
      const none = await query.setMcpServers({});
      assert.deepEqual([...none.removed].sort(), ['oracle', 'probe']);
      assert.equal(alive(pid), false, 'the removed oracle still runs');
      assert.deepEqual(await query.mcpServerStatus(), []);
    } finally {
      done();
    }
  });
  assert.equal(r.error, undefined);
  assert.ok(r.init.tools.includes('mcp__oracle__oracle_add'), `init tools: ${r.init.tools}`);
  assert.match(resultText(toolResults(r.messages)[0]), /ORACLE-SUM=42/);
  assert.equal(r.result.result, 'The stdio MCP tool answered.');
});

test('setMcpServers: an in-process SDK server added to a session that started with none', { timeout }, async () => {
  const ws = workspace();
  let ready;
  const added = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await added;
    yield userMessage('PRB-SDKMCP add 2 and 40');
  }
  const q = start(prompts(), ws, { allowedTools: ['mcp__probe__probe_add'] });
  assert.deepEqual(await q.mcpServerStatus(), []);
  const res = await q.setMcpServers({ probe: probeServer() });
  assert.deepEqual(res, { added: ['probe'], removed: [], errors: {} });
  const [st] = await q.mcpServerStatus();
  assert.equal(st.status, 'connected');
  assert.equal(st.scope, 'sdk');
  ready();
  const r = await collect(q);
  assert.match(resultText(toolResults(r.messages)[0]), /PRB-SUM=42/);
  assert.equal(r.result.result, 'The SDK MCP tool answered.');
});
