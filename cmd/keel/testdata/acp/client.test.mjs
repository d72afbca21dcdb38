// What the client offers: its files (unsaved buffers read and written through the editor),
// its terminals (commands run where the user sees them, killed when the turn is cancelled),
// and its own MCP servers.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { alive, answer, connect, statuses, text, timeout, toolCalls, until, workspace } from './harness.mjs';

test('fs capabilities: Read shows the unsaved buffer, Edit writes through the editor', { timeout }, async () => {
  const ws = workspace({ 'buffer.txt': 'saved on disk\n' });
  const buffers = new Map([[ws.file('buffer.txt'), 'line one\nACP-UNSAVED-BUFFER\n']]);
  const reads = [];
  const writes = [];
  const c = await connect(ws, {
    capabilities: { fs: { readTextFile: true, writeTextFile: true } },
    handlers: {
      'session/request_permission': answer('allow_once'),
      'fs/read_text_file': ({ params }) => {
        reads.push(params);
        return { content: buffers.get(params.path) };
      },
      'fs/write_text_file': ({ params }) => {
        writes.push(params);
        buffers.set(params.path, params.content);
        return {};
      },
    },
  });
  try {
    const { sessionId } = await c.newSession();
    const resp = await c.prompt(sessionId, 'ACP-FS edit the buffer');
    assert.equal(resp.stopReason, 'end_turn');
    assert.ok(reads.some((r) => r.path === ws.file('buffer.txt') && r.sessionId === sessionId), 'keel did not read through the editor');
    assert.deepEqual(writes, [{ sessionId, path: ws.file('buffer.txt'), content: 'line one\nACP-EDITED-IN-EDITOR\n' }]);
    assert.equal(readFileSync(ws.file('buffer.txt'), 'utf8'), 'saved on disk\n', 'keel wrote the file on disk behind the editor');
    assert.equal(text(c.of(sessionId), 'agent_message_chunk'), 'Edited the buffer.');
  } finally {
    await c.close();
  }
});

// terminals is a client's terminal/* in miniature: real processes, their output kept.
function terminals() {
  const all = new Map();
  const calls = [];
  let next = 0;
  const handlers = {
    'terminal/create': ({ params }) => {
      calls.push(['create', params]);
      const id = `term-${++next}`;
      const env = { ...process.env };
      for (const e of params.env || []) env[e.name] = e.value;
      const proc = spawn(params.command, params.args || [], { cwd: params.cwd, env, detached: true });
      const t = { proc, output: '', exit: null };
      t.exited = new Promise((resolve) => proc.on('exit', (code, signal) => {
        t.exit = { exitCode: code, signal };
        resolve(t.exit);
      }));
      proc.stdout.on('data', (d) => { t.output += d; });
      proc.stderr.on('data', (d) => { t.output += d; });
      all.set(id, t);
      return { terminalId: id };
    },
    'terminal/output': ({ params }) => {
      calls.push(['output', params]);
      const t = all.get(params.terminalId);
      return { output: t.output, truncated: false, ...(t.exit ? { exitStatus: t.exit } : {}) };
    },
    'terminal/wait_for_exit': async ({ params }) => {
      calls.push(['wait_for_exit', params]);
      return all.get(params.terminalId).exited;
    },
    'terminal/kill': ({ params }) => {
      calls.push(['kill', params]);
      const t = all.get(params.terminalId);
      if (!t.exit) process.kill(-t.proc.pid, 'SIGKILL');
      return {};
    },
    'terminal/release': ({ params }) => {
      calls.push(['release', params]);
      const t = all.get(params.terminalId);
      if (!t.exit) process.kill(-t.proc.pid, 'SIGKILL');
      all.delete(params.terminalId);
      return {};
    },
  };
  return { handlers, calls, all };
}

test('terminal capability: Bash runs in an editor terminal, shown in the tool call', { timeout }, async () => {
  const ws = workspace();
  const term = terminals();
  // The editor's terminal is outside keel's sandbox, so only an unsandboxed command goes there.
  const c = await connect(ws, { capabilities: { terminal: true }, handlers: term.handlers, args: ['--permission-mode', 'bypassPermissions', '--sandbox', 'off'] });
  try {
    const { sessionId } = await c.newSession();
    const resp = await c.prompt(sessionId, 'ACP-TERM-RUN echo');
    assert.equal(resp.stopReason, 'end_turn');
    assert.equal(text(c.of(sessionId), 'agent_message_chunk'), 'The terminal ran it.');
    const [create] = term.calls.filter(([m]) => m === 'create').map(([, p]) => p);
    assert.equal(create.sessionId, sessionId);
    assert.equal(create.command, 'bash');
    assert.deepEqual(create.args, ['-c', 'echo ACP-FROM-TERMINAL']);
    assert.equal(create.cwd, ws.dir);
    const [bash] = toolCalls(c.of(sessionId));
    assert.ok(bash.some((u) => (u.content || []).some((x) => x.type === 'terminal' && x.terminalId === 'term-1')), 'the tool call does not show the terminal');
    assert.deepEqual(statuses(bash), ['pending', 'in_progress', 'completed']);
    assert.deepEqual(term.calls.map(([m]) => m).filter((m) => m !== 'output'), ['create', 'wait_for_exit', 'release']);
  } finally {
    await c.close();
  }
});

test('terminal capability: cancel kills the command in the editor terminal and releases it', { timeout }, async () => {
  const ws = workspace();
  const term = terminals();
  // The editor's terminal is outside keel's sandbox, so only an unsandboxed command goes there.
  const c = await connect(ws, { capabilities: { terminal: true }, handlers: term.handlers, args: ['--permission-mode', 'bypassPermissions', '--sandbox', 'off'] });
  try {
    const { sessionId } = await c.newSession();
    const turn = c.prompt(sessionId, 'ACP-TERM-CANCEL sleep');
    await until(() => term.all.has('term-1'), 'the terminal');
    const pid = term.all.get('term-1').proc.pid;
    await c.agent.notify('session/cancel', { sessionId });
    const resp = await turn;
    assert.equal(resp.stopReason, 'cancelled');
    const methods = term.calls.map(([m]) => m);
    assert.ok(methods.includes('kill'), `no terminal/kill in ${methods}`);
    assert.equal(methods.at(-1), 'release');
    assert.ok(!alive(pid), 'the command still runs');
  } finally {
    await c.close();
  }
});

test("the client's MCP server is connected for the session and its tool is called", { timeout }, async () => {
  const ws = workspace();
  const oracle = join(dirname(fileURLToPath(import.meta.url)), '..', 'sdk', 'oracle-mcp.mjs');
  const c = await connect(ws, { handlers: { 'session/request_permission': answer('allow_once') } });
  try {
    const { sessionId } = await c.newSession({
      mcpServers: [{ name: 'oracle', command: process.execPath, args: [oracle], env: [{ name: 'KEEL_AGENT_SDK', value: process.env.KEEL_ACP_SDK }] }],
    });
    const resp = await c.prompt(sessionId, 'ACP-MCP ask the oracle');
    assert.equal(resp.stopReason, 'end_turn');
    assert.equal(text(c.of(sessionId), 'agent_message_chunk'), 'The oracle says 5.');
    const [call] = toolCalls(c.of(sessionId));
    assert.equal(call[0].title, 'oracle: oracle_add');
    assert.equal(statuses(call).at(-1), 'completed');
  } finally {
    await c.close();
  }
});
