// Hook decisions in Claude Code's order, structured output retries, mcpServerStatus tools and
// partial tool input.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { run, timeout, workspace } from './harness.mjs';

function recorder(answer) {
  const asked = [];
  return { asked, canUseTool: async (toolName, input, opts) => { asked.push({ toolName, input, opts }); return answer(toolName, input, opts); } };
}

function askHook(reason) {
  return [{ matcher: 'Bash', hooks: [async () => ({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'ask', permissionDecisionReason: reason } })] }];
}

test('PreToolUse ask asks canUseTool (reason type hook) although an allow rule matches', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder((_, input) => ({ behavior: 'allow', updatedInput: input }));
  const r = await run('PRB-HOOK-ASK create a file', ws, { allowedTools: ['Bash'], canUseTool, hooks: { PreToolUse: askHook('PRB-HOOK-WANTS-A-PERSON') } });
  assert.equal(asked.length, 1, 'the allow rule answered instead of the question the hook asked for');
  assert.equal(asked[0].toolName, 'Bash');
  assert.equal(asked[0].opts.decisionReasonType, 'hook');
  assert.match(asked[0].opts.decisionReason, /PRB-HOOK-WANTS-A-PERSON/);
  assert.ok(existsSync(ws.file('hook-asked.txt')));
});

test('PreToolUse ask answered no: the call does not run', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder(() => ({ behavior: 'deny', message: 'no' }));
  const r = await run('PRB-HOOK-ASK create a file', ws, { allowedTools: ['Bash'], canUseTool, hooks: { PreToolUse: askHook('PRB-HOOK-WANTS-A-PERSON') } });
  assert.equal(asked.length, 1);
  assert.ok(!existsSync(ws.file('hook-asked.txt')));
  assert.equal(r.result.permission_denials.length, 1);
});

test('PreToolUse ask: a deny rule still wins without asking', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder((_, input) => ({ behavior: 'allow', updatedInput: input }));
  await run('PRB-HOOK-ASK create a file', ws, { disallowedTools: ['Bash'], canUseTool, hooks: { PreToolUse: askHook('x') } });
  assert.equal(asked.length, 0);
  assert.ok(!existsSync(ws.file('hook-asked.txt')));
});
