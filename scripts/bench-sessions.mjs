// The measuring half of scripts/bench-sessions.sh: N concurrent Agent SDK sessions, each one
// CLI process fed T prompts through streaming input (the next once the previous result
// arrived), first all with keel, then all with the Claude Code binary of the SDK package.
// Each process runs under /usr/bin/time: the sum of the processes' peak RSS, their CPU time
// (user + system) and the queries per minute over the wall time of the whole batch.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';

const sessions = Number(process.argv[2] || 40);
const turns = Number(process.argv[3] || 5);
const modules = join(process.env.KEEL_AGENT_SDK, 'node_modules');
const { query } = await import(pathToFileURL(join(modules, '@anthropic-ai/claude-agent-sdk/sdk.mjs')).href);
const claude = join(modules, '@anthropic-ai/claude-agent-sdk-linux-x64/claude');
const work = process.env.BENCH_WORK;

function env(name, i) {
  const home = join(work, `home-${name}-${i}`);
  mkdirSync(join(home, 'proj'), { recursive: true });
  return {
    cwd: join(home, 'proj'),
    env: { PATH: process.env.PATH, HOME: home, KEEL_HOME: join(home, '.keel'), ANTHROPIC_BASE_URL: process.env.ANTHROPIC_BASE_URL,
      ANTHROPIC_API_KEY: 'sk-ant-bench', CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1', DISABLE_TELEMETRY: '1',
      DISABLE_AUTOUPDATER: '1', DISABLE_ERROR_REPORTING: '1' },
  };
}

// session runs one CLI process through turns prompts and returns its peak RSS (MiB) and CPU
// seconds.
async function session(name, bin, i) {
  const e = env(name, i);
  let stats = { rss: NaN, cpu: NaN };
  let exited;
  let next;
  async function* prompts() {
    for (let t = 0; t < turns; t++) {
      yield { type: 'user', message: { role: 'user', content: `say hello ${t}` }, parent_tool_use_id: null, session_id: '' };
      await new Promise((resolve) => { next = resolve; });
    }
  }
  const q = query({ prompt: prompts(), options: {
    pathToClaudeCodeExecutable: bin, cwd: e.cwd, env: e.env,
    spawnClaudeCodeProcess: ({ command, args, cwd, env, signal }) => {
      const p = spawn('/usr/bin/time', ['-f', 'stats %M %U %S', command, ...args], { cwd, env, signal, stdio: ['pipe', 'pipe', 'pipe'] });
      let errText = '';
      p.stderr.on('data', (d) => { errText += d; });
      exited = new Promise((resolve) => p.on('close', () => {
        const m = /stats (\d+) ([\d.]+) ([\d.]+)/.exec(errText);
        if (m) stats = { rss: Number(m[1]) / 1024, cpu: Number(m[2]) + Number(m[3]) };
        resolve();
      }));
      return p;
    },
  } });
  // After the last result the prompt stream ends, so the CLI sees its input close and exits
  // on its own (a killed process would report no figures).
  let results = 0;
  for await (const m of q) {
    if (m.type !== 'result') continue;
    if (m.is_error) throw new Error(`${name} session ${i}: error result`);
    results++;
    next();
  }
  await exited;
  if (results !== turns) throw new Error(`${name} session ${i}: ${results} of ${turns} results`);
  return stats;
}

async function batch(name, bin) {
  const start = performance.now();
  const all = await Promise.all(Array.from({ length: sessions }, (_, i) => session(name, bin, i)));
  const wall = (performance.now() - start) / 1000;
  const measured = all.filter((x) => !Number.isNaN(x.rss));
  if (measured.length !== all.length) console.log(`${name}: ${all.length - measured.length} processes reported no figures`);
  const sum = (k) => measured.reduce((s, x) => s + x[k], 0);
  return { wall, rss: sum('rss'), cpu: sum('cpu'), qpm: (sessions * turns) / (wall / 60) };
}

console.log(`${sessions} concurrent SDK sessions, ${turns} queries each (streaming input), scripted model on 127.0.0.1`);
const res = { keel: await batch('keel', process.env.KEEL_BIN) };
// KEEL_BASELINE_BIN: an older keel measured in the same run, for before/after figures.
if (process.env.KEEL_BASELINE_BIN) res.baseline = await batch('baseline', process.env.KEEL_BASELINE_BIN);
res.claude = await batch('claude', claude);
for (const [name, r] of Object.entries(res)) {
  console.log(`${name.padEnd(7)} wall ${r.wall.toFixed(1)} s   ${r.qpm.toFixed(0)} queries/min   summed peak RSS ${r.rss.toFixed(0)} MiB   CPU ${r.cpu.toFixed(1)} s`);
}
for (const name of ['keel', 'baseline'].filter((n) => res[n])) {
  const r = res[name];
  console.log(`${name}/claude: summed peak RSS ${(r.rss / res.claude.rss).toFixed(3)}, CPU ${(r.cpu / res.claude.cpu).toFixed(3)}; queries per minute ${(r.qpm / res.claude.qpm).toFixed(1)}x`);
}
