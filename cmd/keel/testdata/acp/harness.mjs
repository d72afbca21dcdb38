// Shared helpers of the suite that drives `keel acp` with the client side of the Agent Client
// Protocol's official TypeScript library. The Go test TestACP (cmd/keel/acp_test.go) builds
// keel, starts the scripted model and runs these files with node's test runner; it passes:
//   KEEL_BIN          the keel binary to start as `keel acp`
//   KEEL_ACP_SDK      the directory the pinned library is installed in (node_modules/…)
//   ANTHROPIC_BASE_URL, ANTHROPIC_API_KEY   the scripted model on 127.0.0.1
//   KEEL_ACP_TIMEOUT_MS   the time limit of one test (scaled by KEEL_TEST_TIMEOUT_SCALE)
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { Readable, Writable } from 'node:stream';
import { pathToFileURL } from 'node:url';
import { makeWorkspace } from '../workspace.mjs';

export const modulesDir = join(process.env.KEEL_ACP_SDK, 'node_modules');
// The unstable entry point: session/fork is still unstable in the published schema.
export const acp = await import(pathToFileURL(join(modulesDir, '@agentclientprotocol/sdk/dist/v1/unstable/acp.js')).href);
export const timeout = Number(process.env.KEEL_ACP_TIMEOUT_MS || 60000);

// workspace makes a project directory and a private home for one test.
export function workspace(files = {}) {
  return makeWorkspace('keel-acp-', files);
}

// spawnKeel starts `keel acp` in ws, its stderr kept for failure messages.
export function spawnKeel(ws, args = []) {
  const proc = spawn(process.env.KEEL_BIN, ['acp', ...args], { cwd: ws.dir, env: ws.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (d) => { stderr += d; });
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => {
    // An exit the test did not ask for (a panic, a race report) shows keel's stderr.
    if (code !== 0) console.error(`keel acp exited with ${code ?? signal}; stderr:\n${stderr}`);
    resolve({ code, signal });
  }));
  return { proc, exited, stderr: () => stderr };
}

// connect starts keel and connects the library's client to it. Every session/update is
// recorded as it arrives — also those that come before the response of the request they
// belong to (session/load's replay, the commands of a new session): the protocol allows it,
// and a client that routed updates only to sessions it already knows would lose them.
// handlers: request handlers by method (session/request_permission, fs/*, terminal/*).
// capabilities: the client capabilities sent in initialize.
export async function connect(ws, { handlers = {}, capabilities = {}, args = [] } = {}) {
  const keel = spawnKeel(ws, args);
  const stream = acp.ndJsonStream(Writable.toWeb(keel.proc.stdin), Readable.toWeb(keel.proc.stdout));
  const updates = [];
  const listeners = new Set();
  let app = acp.client({ name: 'keel-acp-suite' }).onNotification('session/update', ({ params }) => {
    updates.push(params);
    for (const l of listeners) l();
  });
  for (const [method, handler] of Object.entries(handlers)) app = app.onRequest(method, handler);
  const conn = app.connect(stream);
  const agent = conn.agent;
  const init = await agent.request('initialize', {
    protocolVersion: acp.PROTOCOL_VERSION,
    clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false, ...capabilities },
    clientInfo: { name: 'keel-acp-suite', version: '1.0.0' },
  });
  // waitFor resolves with the first update of session sid that pred accepts, counting from
  // index from; it fails the test when the connection closes first.
  const waitFor = (sid, pred, from = 0) => new Promise((resolve, reject) => {
    const check = () => {
      const i = updates.findIndex((u, i) => i >= from && u.sessionId === sid && pred(u.update));
      if (i >= 0) {
        listeners.delete(check);
        resolve(updates[i].update);
      }
    };
    listeners.add(check);
    conn.signal.addEventListener('abort', () => reject(new Error(`keel closed the connection; stderr:\n${keel.stderr()}`)));
    check();
  });
  return {
    keel, conn, agent, init, updates, waitFor,
    of: (sid) => updates.filter((u) => u.sessionId === sid).map((u) => u.update),
    newSession: (extra = {}) => agent.request('session/new', { cwd: ws.dir, mcpServers: [], ...extra }),
    prompt: (sessionId, text) => agent.request('session/prompt', { sessionId, prompt: [{ type: 'text', text }] }),
    // close ends the connection as an editor does — stdin closed — and waits for keel to exit.
    close: async () => {
      keel.proc.stdin.end();
      const exit = await keel.exited;
      conn.close();
      return exit;
    },
  };
}

// text joins the text chunks of one kind (agent_message_chunk, agent_thought_chunk,
// user_message_chunk) of a list of updates.
export function text(updates, kind) {
  return updates.filter((u) => u.sessionUpdate === kind && u.content.type === 'text').map((u) => u.content.text).join('');
}

// toolCalls groups the tool_call and tool_call_update updates by tool call id, in order.
export function toolCalls(updates) {
  const calls = new Map();
  for (const u of updates) {
    if (u.sessionUpdate !== 'tool_call' && u.sessionUpdate !== 'tool_call_update') continue;
    if (!calls.has(u.toolCallId)) calls.set(u.toolCallId, []);
    calls.get(u.toolCallId).push(u);
  }
  return [...calls.values()];
}

// statuses are the statuses a tool call went through.
export function statuses(call) {
  return call.map((u) => u.status).filter(Boolean);
}

// answer returns a request_permission handler that picks optionId (allow_once, allow_always,
// reject_once, reject_always) and records each request in asked.
export function answer(optionId, asked = []) {
  return ({ params }) => {
    asked.push(params);
    assert.ok(params.options.some((o) => o.optionId === optionId), `no option ${optionId}: ${JSON.stringify(params.options)}`);
    return { outcome: { outcome: 'selected', optionId } };
  };
}

// alive reports whether a process with pid runs. A zombie has ended: it waits only for its
// parent to collect its status — for a command under bubblewrap killed with its launcher, the
// machine's init, which in a container may never do so.
export function alive(pid) {
  try {
    process.kill(pid, 0);
  } catch {
    return false;
  }
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch {
    return false;
  }
}

// until polls cond every 20 ms until it holds or the test's time runs out.
export async function until(cond, what) {
  const deadline = Date.now() + timeout;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// commandPid is the pid, as this test sees it, of the process named comm whose working
// directory is dir: a sandboxed command's own $$ is its pid inside the sandbox's PID
// namespace, which means nothing out here. 0 when there is none.
export function commandPid(dir, comm) {
  const want = statSync(dir);
  for (const name of readdirSync('/proc')) {
    if (!/^[0-9]+$/.test(name)) continue;
    try {
      if (readFileSync(`/proc/${name}/comm`, 'utf8').trim() !== comm) continue;
      const cwd = statSync(`/proc/${name}/cwd`);
      if (cwd.dev === want.dev && cwd.ino === want.ino) return Number(name);
    } catch {
      // gone meanwhile, or not ours to look at
    }
  }
  return 0;
}
