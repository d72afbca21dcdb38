// Control requests from the SDK: interrupt, setModel, the query methods, requests keel does
// not implement, and abortController: recordings 07a, 07c, 07d and 08r.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { test } from 'node:test';
import { collect, run, start, timeout, userMessage, workspace } from './harness.mjs';

test('07a interrupt: the turn ends at once and the session goes on', { timeout }, async () => {
  const ws = workspace();
  let interrupted = false;
  let sentAt;
  let next;
  const second = new Promise((resolve) => { next = resolve; });
  async function* prompts() {
    yield userMessage('PRB-SLOW please answer slowly');
    await second;
    yield userMessage('PRB-AFTER-INTERRUPT are you there');
  }
  const q = start(prompts(), ws, { includePartialMessages: true });
  const r = await collect(q, async (m) => {
    if (!interrupted && m.type === 'stream_event' && m.event.type === 'content_block_delta') {
      interrupted = true;
      sentAt = performance.now();
      await q.interrupt();
    }
    if (m.type === 'result' && m.subtype !== 'success') {
      // A figure for the closing note, not an assertion: timings are benchmarks.
      console.log(`interrupt → result: ${(performance.now() - sentAt).toFixed(1)} ms`);
      next();
    }
  });
  assert.ok(interrupted, 'the stream never started');
  assert.equal(r.results.length, 2);
  assert.equal(r.results[0].subtype, 'error_during_execution');
  assert.match(r.results[0].errors.join(' '), /interrupt/i);
  assert.equal(r.results[1].result, 'Answered after the interrupt.', 'the history after the interrupt is not valid');
});

test('07c setModel: the next prompt uses the new model', { timeout }, async () => {
  const ws = workspace();
  let ready;
  const set = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await set;
    yield userMessage('PRB-NEWMODEL hi');
  }
  const q = start(prompts(), ws, { model: 'claude-probe-first' });
  await q.setModel('claude-probe-second');
  ready();
  const r = await collect(q);
  assert.equal(r.init.model, 'claude-probe-second');
  assert.equal(r.result.result, 'The second model answered.');
});

test('07d query methods: MCP status, context usage, commands, models, agents, account', { timeout }, async () => {
  const ws = workspace();
  let ready;
  const asked = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await asked;
    yield userMessage('PRB-HELLO say hello');
  }
  const q = start(prompts(), ws);
  assert.deepEqual(await q.mcpServerStatus(), []);
  const usage = await q.getContextUsage();
  assert.ok(Array.isArray(usage.categories) && usage.categories.length > 0);
  assert.ok(usage.totalTokens > 0 && usage.maxTokens > usage.totalTokens, JSON.stringify(usage).slice(0, 300));
  const commands = await q.supportedCommands();
  assert.ok(commands.some((c) => c.name === 'compact'), JSON.stringify(commands));
  const models = await q.supportedModels();
  assert.ok(models.some((m) => m.value === 'haiku'));
  const agents = await q.supportedAgents();
  assert.ok(agents.some((a) => a.name === 'general-purpose'));
  const account = await q.accountInfo();
  assert.equal(account.apiKeySource, 'ANTHROPIC_API_KEY');
  ready();
  const r = await collect(q);
  assert.equal(r.result.subtype, 'success');
});

test('requests keel does not implement are refused at once, and the session goes on', { timeout }, async () => {
  const ws = workspace();
  let ready;
  const refused = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await refused;
    yield userMessage('PRB-HELLO say hello');
  }
  const q = start(prompts(), ws);
  await assert.rejects(q.reloadPlugins(), /keel does not implement the "reload_plugins" control request/);
  await assert.rejects(q.readMcpResource('nope', 'file:///x'), /keel does not implement/);
  ready();
  const r = await collect(q);
  assert.equal(r.result.subtype, 'success');
});

test('08r abortController: the query stops and the transcript stays valid', { timeout }, async () => {
  const ws = workspace();
  const ac = new AbortController();
  const r = await run('PRB-SLOW please answer slowly', ws, { abortController: ac, includePartialMessages: true }, (m) => {
    if (m.type === 'stream_event' && m.event.type === 'content_block_delta') ac.abort();
  });
  assert.ok(r.error, 'aborting did not end the iteration with an error');
  assert.match(String(r.error), /abort/i);
  // The session on disk is whole: continuing it works.
  const again = await run('PRB-AFTER-INTERRUPT are you there', ws, { continue: true });
  assert.equal(again.result.result, 'Answered after the interrupt.');
  assert.equal(again.init.session_id, r.init.session_id);
});

test('settings: applyFlagSettings applies, getSettings reads, updateSettings writes', { timeout }, async () => {
  const ws = workspace();
  let ready;
  const applied = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await applied;
    yield userMessage('PRB-NOPROMPT create a file');
  }
  const q = start(prompts(), ws, { permissionMode: 'default' });
  await q.applyFlagSettings({ permissions: { allow: ['Bash(touch noprompt.txt)'] } });
  await q.updateSettings('localSettings', { permissions: { deny: ['WebFetch'] } });
  const settings = await q.getSettings();
  assert.ok(settings.effective, JSON.stringify(settings).slice(0, 300));
  ready();
  const r = await collect(q);
  assert.ok(existsSync(ws.file('noprompt.txt')), 'the applied allow rule did not apply');
  assert.deepEqual(r.result.permission_denials, []);
  const local = JSON.parse(readFileSync(ws.file('.keel/settings.local.json'), 'utf8'));
  assert.deepEqual(local.permissions.deny, ['WebFetch']);
});

test('rewindFiles puts the files back as they were before a prompt', { timeout }, async () => {
  const ws = workspace();
  let rewind;
  const done = new Promise((resolve) => { rewind = resolve; });
  async function* prompts() {
    yield userMessage('PRB-REWIND write a file');
    await done;
  }
  let promptID;
  const q = start(prompts(), ws, { permissionMode: 'acceptEdits', extraArgs: { 'replay-user-messages': null } });
  const r = await collect(q, async (m) => {
    if (m.type === 'user' && m.isReplay && !promptID) promptID = m.uuid;
    if (m.type === 'result') {
      assert.ok(existsSync(ws.file('rewind.txt')));
      const dry = await q.rewindFiles(promptID, { dryRun: true });
      assert.equal(dry.canRewind, true);
      assert.deepEqual(dry.filesChanged, [ws.file('rewind.txt')]);
      assert.ok(existsSync(ws.file('rewind.txt')), 'a dry run changed files');
      const real = await q.rewindFiles(promptID);
      assert.equal(real.canRewind, true);
      assert.ok(!existsSync(ws.file('rewind.txt')), 'the file created after the prompt is still there');
      const bad = await q.rewindFiles('no-such-message');
      assert.equal(bad.canRewind, false);
      rewind();
    }
  });
  assert.ok(promptID, 'no replayed prompt with a uuid');
  assert.equal(r.result.subtype, 'success');
});

test('reloadSkills picks up a skill added during the session; setMaxThinkingTokens; stopTask of no task', { timeout }, async () => {
  const ws = workspace();
  let ready;
  const reloaded = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await reloaded;
    yield userMessage('PRB-THINK hi');
  }
  const q = start(prompts(), ws);
  mkdirSync(ws.file('.claude/skills/probe-skill'), { recursive: true });
  writeFileSync(ws.file('.claude/skills/probe-skill/SKILL.md'), '---\nname: probe-skill\ndescription: A skill added mid-session\n---\nDo the probe thing.\n');
  const res = await q.reloadSkills();
  assert.ok(res.commands.some((c) => c.name === 'probe-skill'), JSON.stringify(res.commands));
  await q.setMaxThinkingTokens(4096);
  await assert.rejects(q.stopTask('no-such-task'), /no-such-task/);
  ready();
  const r = await collect(q);
  assert.equal(r.result.result, 'Thought about it.');
  assert.ok(r.init.skills.includes('probe-skill'));
});
