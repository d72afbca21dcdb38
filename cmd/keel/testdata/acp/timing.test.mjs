// Figures, not assertions (speed targets are benchmarks, not timed tests): the time from
// session/prompt to the first agent_message_chunk and to the end of a one-tool turn against
// the scripted model, and keel's resident memory while idle in an editor session. Printed as
// the test's diagnostics; ACP_TIMING_RUNS sets how many turns are measured (default 5).
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { connect, timeout, workspace } from './harness.mjs';

const runs = Number(process.env.ACP_TIMING_RUNS || 5);

// rss is a process's resident memory in MiB (Linux), or "?".
function rss(pid) {
  try {
    const m = readFileSync(`/proc/${pid}/status`, 'utf8').match(/VmRSS:\s+(\d+) kB/);
    return (Number(m[1]) / 1024).toFixed(1);
  } catch {
    return '?';
  }
}

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

test('timing: first chunk, one-tool turn, idle RSS', { timeout: timeout * 4 }, async (t) => {
  const ws = workspace();
  const c = await connect(ws, { args: ['--permission-mode', 'bypassPermissions'] });
  try {
    const { sessionId } = await c.newSession();
    await c.waitFor(sessionId, (u) => u.sessionUpdate === 'available_commands_update');
    const opened = rss(c.keel.proc.pid);
    const first = [];
    const whole = [];
    for (let i = 0; i < runs; i++) {
      const from = c.updates.length;
      const start = performance.now();
      const chunk = c.waitFor(sessionId, (u) => u.sessionUpdate === 'agent_message_chunk', from).then(() => performance.now() - start);
      const resp = await c.prompt(sessionId, `ACP-ONE-TOOL run ${i}`);
      whole.push(performance.now() - start);
      first.push(await chunk);
      assert.equal(resp.stopReason, 'end_turn');
    }
    t.diagnostic(`prompt → first agent_message_chunk: median ${median(first).toFixed(1)} ms over ${runs} turns`);
    t.diagnostic(`prompt → end of a one-tool turn: median ${median(whole).toFixed(1)} ms over ${runs} turns`);
    t.diagnostic(`keel acp RSS while idle: ${opened} MiB with a new session, ${rss(c.keel.proc.pid)} MiB after ${runs} turns`);
  } finally {
    await c.close();
  }
});
