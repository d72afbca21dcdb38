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

test('PreSkillShellCommand runs before a command\'s ! expansion; deny keeps it from running', { timeout }, async () => {
  const files = { '.claude/commands/shell-cmd.md': 'PRB-SHELL-CMD-BODY: !`touch shell-ran.txt && echo RAN`\n' };
  const seen = [];
  const hook = (decision) => [{ hooks: [async (input) => { seen.push(input); return decision ? { hookSpecificOutput: { hookEventName: 'PreSkillShellCommand', permissionDecision: decision, permissionDecisionReason: 'PRB-NO-SHELL' } } : {}; }] }];
  const denied = workspace(files);
  await run('/shell-cmd', denied, { extraArgs: { trust: null }, allowedTools: ['Bash'], hooks: { PreSkillShellCommand: hook('deny') } });
  assert.equal(seen.length, 1, 'the hook was not called');
  assert.equal(seen[0].hook_event_name, 'PreSkillShellCommand');
  assert.equal(seen[0].tool_name, 'Bash');
  assert.match(seen[0].tool_input.command, /touch shell-ran.txt/);
  assert.equal(seen[0].command_name, 'shell-cmd');
  assert.equal(seen[0].invoked_by, 'user');
  assert.ok(!existsSync(denied.file('shell-ran.txt')), 'the command ran although the hook denied it');

  const allowed = workspace(files);
  await run('/shell-cmd', allowed, { extraArgs: { trust: null }, allowedTools: ['Bash'], hooks: { PreSkillShellCommand: hook('allow') } });
  assert.ok(existsSync(allowed.file('shell-ran.txt')), 'an allowing hook kept the command from running');
});
