// The measuring half of scripts/bench-sdk.sh: runs one query() turn N times with keel and N
// times with the Claude Code binary of the SDK package, alternating, after a warm-up of each.
// Each CLI process runs under /usr/bin/time, whose maximum resident set size is its peak RSS.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const runs = Number(process.argv[2] || 10);
const modules = join(process.env.KEEL_AGENT_SDK, 'node_modules');
const { query } = await import(pathToFileURL(join(modules, '@anthropic-ai/claude-agent-sdk/sdk.mjs')).href);
const claude = join(modules, '@anthropic-ai/claude-agent-sdk-linux-x64/claude');
const work = process.env.BENCH_WORK;

function env(name) {
  const home = join(work, `home-${name}`);
  mkdirSync(join(home, 'proj'), { recursive: true });
  return {
    home, cwd: join(home, 'proj'),
    env: { PATH: process.env.PATH, HOME: home, KEEL_HOME: join(home, '.keel'), ANTHROPIC_BASE_URL: process.env.ANTHROPIC_BASE_URL,
      ANTHROPIC_API_KEY: 'sk-ant-bench', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1', DISABLE_ERROR_REPORTING: '1' },
  };
}

async function once(name, bin) {
  const e = env(name);
  let rss = NaN;
  const start = performance.now();
  const q = query({ prompt: 'say hello', options: {
    pathToClaudeCodeExecutable: bin, cwd: e.cwd, env: e.env,
    spawnClaudeCodeProcess: ({ command, args, cwd, env, signal }) => {
      const p = spawn('/usr/bin/time', ['-f', 'maxrss %M', command, ...args], { cwd, env, signal, stdio: ['pipe', 'pipe', 'pipe'] });
      let errText = '';
      p.stderr.on('data', (d) => { errText += d; });
      p.exited = new Promise((resolve) => p.on('close', () => {
        const m = /maxrss (\d+)/.exec(errText);
        if (m) rss = Number(m[1]) / 1024;
        resolve();
      }));
      procs.push(p);
      return p;
    },
  } });
  let result;
  for await (const m of q) if (m.type === 'result') result = m;
  const wall = performance.now() - start;
  await procs.at(-1).exited;
  if (!result || result.is_error) throw new Error(`${name}: no successful result`);
  return { wall, rss };
}
const procs = [];

const stats = (xs) => {
  const s = xs.filter((x) => !Number.isNaN(x)).sort((a, b) => a - b);
  return { min: s[0], median: s[Math.floor(s.length / 2)], max: s.at(-1) };
};
const fmt = (v, unit) => `${v.toFixed(unit === 'ms' ? 0 : 1)} ${unit}`;

await once('keel', process.env.KEEL_BIN);
await once('claude', claude);
const res = { keel: [], claude: [] };
for (let i = 0; i < runs; i++) {
  res.keel.push(await once('keel', process.env.KEEL_BIN));
  res.claude.push(await once('claude', claude));
}
console.log(`one query() turn, ${runs} runs each (alternating), scripted model on 127.0.0.1; min / median / max`);
for (const [name, rows] of Object.entries(res)) {
  const w = stats(rows.map((r) => r.wall));
  const m = stats(rows.map((r) => r.rss));
  console.log(`${name.padEnd(7)} wall ${fmt(w.min, 'ms')} / ${fmt(w.median, 'ms')} / ${fmt(w.max, 'ms')}   peak RSS ${fmt(m.min, 'MiB')} / ${fmt(m.median, 'MiB')} / ${fmt(m.max, 'MiB')}`);
}
const ratio = stats(res.claude.map((r, i) => r.wall / res.keel[i].wall));
console.log(`claude/keel wall ratio, pair by pair: ${ratio.min.toFixed(1)} / ${ratio.median.toFixed(1)} / ${ratio.max.toFixed(1)}`);
