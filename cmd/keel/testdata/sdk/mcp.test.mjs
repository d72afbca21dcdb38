// MCP servers from the SDK: an in-process SDK server over mcp_message and a stdio server from
// mcpServers: recordings 06 and 08l.
import assert from 'node:assert/strict';
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
  await q.toggleMcpServer('oracle', false);
  assert.equal((await q.mcpServerStatus()).find((s) => s.name === 'oracle').status, 'disabled');
  await q.toggleMcpServer('oracle', true);
  assert.equal((await q.mcpServerStatus()).find((s) => s.name === 'oracle').status, 'connected');
  await assert.rejects(q.setMcpServers({}), /cannot change the MCP servers of a running session/);
  ready();
  const after = await collect(q);
  assert.equal(after.result.subtype, 'success');
});
