// Permission questions over can_use_tool, answers that rewrite the input or add rules, and
// the permission options: recordings 04a–04e, 07b, 08a, 08b, 08b2 and 08c.
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { test } from 'node:test';
import { collect, run, start, timeout, toolResults, resultText, userMessage, workspace } from './harness.mjs';

// recorder is a canUseTool callback that answers with answer(toolName, input, opts) and keeps
// every question.
function recorder(answer) {
  const asked = [];
  const canUseTool = async (toolName, input, opts) => {
    asked.push({ toolName, input, opts });
    return answer(toolName, input, opts);
  };
  return { asked, canUseTool };
}

test('04a canUseTool allow: asked with PermissionUpdate suggestions, then runs', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder((_, input) => ({ behavior: 'allow', updatedInput: input }));
  const r = await run('PRB-PERM-ALLOW create a file', ws, { canUseTool, permissionMode: 'default' });
  assert.equal(asked.length, 1);
  assert.equal(asked[0].toolName, 'Bash');
  assert.equal(asked[0].input.command, 'touch allowed.txt');
  assert.equal(asked[0].opts.toolUseID, r.messages.find((m) => m.type === 'assistant').message.content[0].id);
  const s = asked[0].opts.suggestions;
  assert.ok(Array.isArray(s) && s.length > 0, 'no permission suggestions');
  assert.equal(s[0].type, 'addRules');
  assert.equal(s[0].rules[0].toolName, 'Bash');
  assert.ok(existsSync(ws.file('allowed.txt')));
  assert.equal(r.result.result, 'Tool step done.');
  assert.deepEqual(r.result.permission_denials, []);
});

test('04b canUseTool deny: the message reaches the model; the denial is listed', { timeout }, async () => {
  const ws = workspace();
  const { canUseTool } = recorder(() => ({ behavior: 'deny', message: 'PRB-DENY-REASON the probe says no' }));
  const r = await run('PRB-PERM-DENY create a file', ws, { canUseTool });
  const [res] = toolResults(r.messages);
  assert.equal(res.is_error, true);
  assert.match(resultText(res), /PRB-DENY-REASON/);
  assert.ok(!existsSync(ws.file('denied.txt')));
  assert.equal(r.result.permission_denials.length, 1);
  assert.equal(r.result.permission_denials[0].tool_name, 'Bash');
  assert.equal(r.result.permission_denials[0].tool_input.command, 'touch denied.txt');
});

test('04c updatedPermissions: an always-allow answer stops the asking and is saved', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder((_, input, opts) => ({ behavior: 'allow', updatedInput: input, updatedPermissions: opts.suggestions }));
  const r = await run('PRB-PERM-ALWAYS create the file twice', ws, { canUseTool });
  assert.equal(asked.length, 1, 'asked again after an always-allow answer');
  const results = toolResults(r.messages);
  assert.equal(results.length, 2);
  assert.ok(results.every((b) => !b.is_error), JSON.stringify(results));
  assert.equal(r.result.result, 'Always done.');
  const saved = JSON.parse(readFileSync(ws.file('.keel/settings.local.json'), 'utf8'));
  assert.ok(saved.permissions.allow.some((rule) => rule.startsWith('Bash(')), JSON.stringify(saved));
});

test('04d updatedInput: the rewritten call runs instead', { timeout }, async () => {
  const ws = workspace();
  const { canUseTool } = recorder((_, input) => ({ behavior: 'allow', updatedInput: { ...input, command: 'touch rewritten.txt' } }));
  const r = await run('PRB-PERM-REWRITE create a file', ws, { canUseTool });
  assert.ok(existsSync(ws.file('rewritten.txt')), 'the rewritten command did not run');
  assert.ok(!existsSync(ws.file('original.txt')), 'the original command ran');
  assert.equal(r.result.subtype, 'success');
});

test('04e no canUseTool: nobody is asked, the call is denied and reported', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-NOPROMPT create a file', ws, { permissionMode: 'default' });
  assert.ok(!existsSync(ws.file('noprompt.txt')));
  assert.equal(r.result.permission_denials.length, 1);
  assert.ok(r.messages.some((m) => m.type === 'system' && m.subtype === 'permission_denied' && m.tool_name === 'Bash'));
  assert.equal(toolResults(r.messages)[0].is_error, true);
});

test('08a allowedTools: an allowed tool runs without asking', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder(() => ({ behavior: 'deny', message: 'should not be asked' }));
  const r = await run('PRB-ALLOWEDTOOLS create a file', ws, { allowedTools: ['Bash'], canUseTool });
  assert.equal(asked.length, 0);
  assert.ok(existsSync(ws.file('allowed-tools.txt')));
  assert.equal(r.result.result, 'Tool step done.');
});

test('08b disallowedTools: the tool is not offered', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-HELLO say hello', ws, { disallowedTools: ['Bash'] });
  assert.ok(!r.init.tools.includes('Bash'), `init lists Bash: ${r.init.tools}`);
  assert.ok(r.init.tools.includes('Read'));
});

test('08b2 disallowedTools enforced: a call to it fails without a question', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder(() => ({ behavior: 'allow' }));
  const r = await run('PRB-DISALLOWCALL create a file', ws, { disallowedTools: ['Bash'], canUseTool });
  assert.equal(asked.length, 0);
  assert.equal(toolResults(r.messages)[0].is_error, true);
  assert.ok(!existsSync(ws.file('disallowed.txt')));
});

test('08c permissionMode acceptEdits: an edit runs without asking', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder(() => ({ behavior: 'deny', message: 'should not be asked' }));
  const r = await run('PRB-ACCEPTEDITS write the file', ws, { permissionMode: 'acceptEdits', canUseTool });
  assert.equal(asked.length, 0);
  assert.equal(r.init.permissionMode, 'acceptEdits');
  assert.equal(readFileSync(ws.file('accept.txt'), 'utf8'), 'accepted\n');
});

test('07b setPermissionMode: the new mode applies to the next prompt', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder(() => ({ behavior: 'deny', message: 'should not be asked' }));
  let modeSet;
  const ready = new Promise((resolve) => { modeSet = resolve; });
  async function* prompts() {
    await ready;
    yield userMessage('PRB-SETMODE write the file');
  }
  const q = start(prompts(), ws, { canUseTool, permissionMode: 'default' });
  await q.setPermissionMode('acceptEdits');
  modeSet();
  const r = await collect(q);
  assert.equal(asked.length, 0);
  assert.ok(existsSync(ws.file('mode.txt')));
  assert.equal(r.init.permissionMode, 'acceptEdits');
  assert.ok(r.messages.some((m) => m.type === 'system' && m.subtype === 'status' && m.permissionMode === 'acceptEdits'));
});

test('canUseTool deny with interrupt: the turn ends', { timeout }, async () => {
  const ws = workspace();
  const { canUseTool } = recorder(() => ({ behavior: 'deny', message: 'stop everything', interrupt: true }));
  const r = await run('PRB-PERM-INTERRUPT create a file', ws, { canUseTool });
  assert.ok(!existsSync(ws.file('interrupted.txt')));
  assert.equal(r.result.subtype, 'error_during_execution');
  assert.equal(r.result.num_turns, 1, 'the model was asked again after the interrupt');
});

test('permissionMode auto: the classifier allows without asking', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder(() => ({ behavior: 'deny', message: 'should not be asked' }));
  const r = await run('PRB-AUTO create a file', ws, { permissionMode: 'auto', canUseTool });
  assert.equal(r.init.permissionMode, 'auto');
  assert.equal(asked.length, 0);
  assert.ok(existsSync(ws.file('auto-allowed.txt')));
  assert.ok(r.result.modelUsage['claude-haiku-4-5'] || Object.keys(r.result.modelUsage).length >= 1);
});
