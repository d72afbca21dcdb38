// The query options: system prompts, setting sources, agents, resume/fork/continue, output
// format, budget, fallback model, thinking, tools and directories: recordings 08e–08g,
// 08j1, 08j2, 08k, 08m–08o and 08q, and the options the issue lists.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { run, timeout, toolResults, workspace } from './harness.mjs';

test('08e systemPrompt string replaces the prompt', { timeout }, async () => {
  const r = await run('PRB-SYSSTRING hi', workspace(), { systemPrompt: 'PRB-SYSPROMPT-CUSTOM You are the probe.' });
  assert.equal(r.result.result, 'Custom system prompt seen.');
});

test('no systemPrompt: the SDK default is a minimal prompt', { timeout }, async () => {
  const r = await run('PRB-SYSDEFAULT hi', workspace());
  assert.equal(r.result.result, 'Minimal system prompt seen.');
});

test('08f systemPrompt preset with append', { timeout }, async () => {
  const r = await run('PRB-SYSAPPEND hi', workspace(), { systemPrompt: { type: 'preset', preset: 'claude_code', append: 'PRB-APPEND-MARK extra rule.' } });
  assert.equal(r.result.result, 'Appended system prompt seen.');
});

test('08g appendSystemPrompt through extraArgs', { timeout }, async () => {
  const r = await run('PRB-SYSEXTRA hi', workspace(), { extraArgs: { 'append-system-prompt': 'PRB-EXTRA-APPEND-MARK' } });
  assert.equal(r.result.result, 'Extra-args append seen.');
});

test('08j1/08j2 settingSources: project loads the memory file, none does not', { timeout }, async () => {
  const ws = workspace({ 'CLAUDE.md': 'PRB-PROJECT-MEMORY follow the probe.\n' });
  const preset = { type: 'preset', preset: 'claude_code' };
  const project = await run('PRB-SETTINGSRC hi', ws, { settingSources: ['project'], systemPrompt: preset });
  assert.equal(project.result.result, 'Project memory seen.');
  const none = await run('PRB-SETTINGSRC hi', ws, { settingSources: [], systemPrompt: preset });
  assert.equal(none.result.result, 'No project memory.');
});

test('08k agents: a programmatic subagent runs with its own prompt', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-AGENTS spawn the helper', ws, { agents: {
    'probe-helper': { description: 'Probe helper agent: answers probe subtasks', prompt: 'PRB-AGENT-SYSPROMPT You are the probe helper.', tools: ['Read'] },
  } });
  assert.ok(r.init.agents.includes('probe-helper'), `init.agents: ${r.init.agents}`);
  assert.equal(r.result.result, 'Parent done: the subagent said 42.');
});

test('08m/08n/08o resume, forkSession and continue keep the history', { timeout }, async () => {
  const ws = workspace();
  const first = await run('PRB-RESUME-ONE the word is PLUM', ws);
  const id = first.init.session_id;
  const resumed = await run('PRB-RESUME-TWO what was the word', ws, { resume: id });
  assert.equal(resumed.result.result, 'The word was PLUM.');
  assert.equal(resumed.init.session_id, id);
  const forked = await run('PRB-RESUME-TWO what was the word', ws, { resume: id, forkSession: true });
  assert.equal(forked.result.result, 'The word was PLUM.');
  assert.notEqual(forked.init.session_id, id);
  const continued = await run('PRB-RESUME-TWO what was the word', ws, { continue: true });
  assert.equal(continued.result.result, 'The word was PLUM.');
});

test('resumeSessionAt drops what came after the message', { timeout }, async () => {
  const ws = workspace();
  const first = await run('PRB-RESUME-ONE the word is PLUM', ws);
  const id = first.init.session_id;
  const at = first.messages.find((m) => m.type === 'assistant').uuid;
  await run('PRB-RESUME-LATER one more turn', ws, { resume: id });
  const kept = await run('PRB-RESUME-AT is it there', ws, { resume: id, forkSession: true });
  assert.equal(kept.result.result, 'The later turn is still there.');
  const cut = await run('PRB-RESUME-AT is it there', ws, { resume: id, resumeSessionAt: at });
  assert.equal(cut.result.result, 'The later turn is gone.');
});

const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false };

test('08q outputFormat json_schema: structured_output', { timeout }, async () => {
  const r = await run('PRB-STRUCT give the answer', workspace(), { outputFormat: { type: 'json_schema', schema } });
  assert.ok(r.init.tools.includes('StructuredOutput'));
  assert.deepEqual(r.result.structured_output, { answer: 'forty-two' });
  assert.equal(r.result.result, '{"answer":"forty-two"}');
});

test('outputFormat: an answer that misses the schema is sent back and corrected', { timeout }, async () => {
  const r = await run('PRB-STRUCT-RETRY give the answer', workspace(), { outputFormat: { type: 'json_schema', schema } });
  const [bad] = toolResults(r.messages);
  assert.equal(bad.is_error, true);
  assert.deepEqual(r.result.structured_output, { answer: 'forty-two' });
});

test('maxBudgetUsd: the turn stops once the budget is spent', { timeout }, async () => {
  const ws = workspace({ 'probe-read.txt': 'budget\n' });
  const r = await run('PRB-BUDGET read forever', ws, { maxBudgetUsd: 0.000001, model: 'claude-sonnet-4-5' });
  assert.equal(r.result.subtype, 'error_max_budget_usd');
  // As Claude Code counts: the request, and the turn its tool results began.
  assert.equal(r.result.num_turns, 2);
  assert.match(r.result.errors[0], /\$0\.000001\b/, 'the budget is printed with the digits that make it non-zero');
});

test('fallbackModel answers when the model is unavailable', { timeout }, async () => {
  const r = await run('PRB-FALLBACK hi', workspace(), { model: 'claude-probe-missing', fallbackModel: 'claude-probe-fallback' });
  assert.equal(r.result.result, 'The fallback model answered.');
});

test('effort, thinking and maxThinkingTokens reach the request', { timeout }, async () => {
  const ws = workspace();
  assert.equal((await run('PRB-THINK hi', ws, { effort: 'high' })).result.result, 'Thought about it.');
  assert.equal((await run('PRB-THINK hi', ws, { thinking: { type: 'enabled', budgetTokens: 4096 } })).result.result, 'Thought about it.');
  assert.equal((await run('PRB-THINK hi', ws, { thinking: { type: 'adaptive' } })).result.result, 'Thought about it.');
  assert.equal((await run('PRB-THINK hi', ws, { maxThinkingTokens: 0 })).result.result, 'Did not think.');
  assert.equal((await run('PRB-THINK hi', ws, { thinking: { type: 'disabled' }, effort: 'high' })).result.result, 'Did not think.');
});

test('tools: only the named built-in tools are offered', { timeout }, async () => {
  const ws = workspace();
  const some = await run('PRB-HELLO hi', ws, { tools: ['Read', 'Glob'] });
  assert.deepEqual(some.init.tools.filter((t) => !t.startsWith('mcp__')), ['Glob', 'Read']);
  const none = await run('PRB-HELLO hi', ws, { tools: [] });
  assert.deepEqual(none.init.tools, []);
});

test('additionalDirectories: a file there can be read', { timeout }, async () => {
  const ws = workspace();
  const extra = join(ws.root, 'extra');
  mkdirSync(extra);
  writeFileSync(join(extra, 'outside.txt'), 'OUTSIDE-CONTENT\n');
  const without = await run('PRB-ADDDIR read the other directory', ws, { permissionMode: 'default' });
  assert.equal(toolResults(without.messages)[0].is_error, true, 'read outside the working directory without asking');
  const r = await run('PRB-ADDDIR read the other directory', ws, { additionalDirectories: [extra], permissionMode: 'default' });
  assert.equal(r.result.result, 'Read the other directory.');
});
