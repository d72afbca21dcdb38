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

const schema = { type: 'object', properties: { answer: { type: 'string' } }, required: ['answer'], additionalProperties: false };

test('structured output that never fits: five tries, then error_max_structured_output_retries', { timeout }, async () => {
  const r = await run('PRB-SO-BAD give the answer', workspace(), { outputFormat: { type: 'json_schema', schema } });
  assert.equal(r.result.subtype, 'error_max_structured_output_retries', JSON.stringify(r.result.errors));
  const tries = r.messages.filter((m) => m.type === 'assistant').length;
  assert.equal(tries, 5, 'the answer was not asked for five times');
  assert.equal(r.result.num_turns, 6);
});

test('num_turns as Claude Code counts: a Read, then the structured answer, is three turns', { timeout }, async () => {
  const ws = workspace({ 'probe-read.txt': 'structured probe\n' });
  const r = await run('PRB-SO-READ read, then answer', ws, { outputFormat: { type: 'json_schema', schema } });
  assert.deepEqual(r.result.structured_output, { answer: 'read' });
  assert.equal(r.result.num_turns, 3);
});

test('mcpServerStatus lists each server\'s tools with annotations, its config and source', { timeout }, async () => {
  const { sdk, zod, start, collect, userMessage } = await import('./harness.mjs');
  const z = zod.z ?? zod;
  const server = sdk.createSdkMcpServer({ name: 'probe', version: '1.0.0', tools: [
    sdk.tool('probe_look', 'Look something up', { q: z.string() }, async () => ({ content: [{ type: 'text', text: 'x' }] }), { annotations: { readOnlyHint: true } }),
    sdk.tool('probe_write', 'Write something', { v: z.string() }, async () => ({ content: [{ type: 'text', text: 'x' }] }), { annotations: { destructiveHint: true } }),
  ] });
  const ws = workspace();
  let done;
  const asked = new Promise((resolve) => { done = resolve; });
  async function* prompts() {
    yield userMessage('PRB-HELLO hi');
    await asked;
  }
  const q = start(prompts(), ws, { mcpServers: { probe: server } });
  let status;
  const r = collect(q, async (m) => {
    if (m.type === 'result' && !status) {
      status = await q.mcpServerStatus();
      done();
      q.interrupt().catch(() => {});
    }
  });
  await asked;
  q.close?.();
  await r;
  const probe = status.find((s) => s.name === 'probe');
  assert.ok(probe, JSON.stringify(status));
  assert.equal(probe.source, 'sdk');
  assert.equal(probe.config?.type, 'sdk');
  const byName = Object.fromEntries((probe.tools || []).map((t) => [t.name, t]));
  assert.deepEqual(Object.keys(byName).sort(), ['probe_look', 'probe_write']);
  assert.equal(byName.probe_look.annotations?.readOnly, true);
  assert.equal(byName.probe_write.annotations?.destructive, true);
});

test('a tool\'s input streams as several input_json_delta events, as the provider streams it', { timeout }, async () => {
  const ws = workspace({ 'probe-read.txt': 'partial tool probe\n' });
  const r = await run('PRB-READ read the probe file', ws, { includePartialMessages: true });
  const events = r.messages.filter((m) => m.type === 'stream_event' && !m.parent_tool_use_id).map((m) => m.event);
  const start = events.findIndex((e) => e.type === 'content_block_start' && e.content_block.type === 'tool_use');
  assert.ok(start >= 0, 'no tool_use block streamed');
  const index = events[start].index;
  assert.equal(events[start].content_block.name, 'Read');
  const deltas = events.filter((e) => e.type === 'content_block_delta' && e.index === index && e.delta.type === 'input_json_delta');
  assert.ok(deltas.length > 1, `the input arrived in ${deltas.length} input_json_delta event(s)`);
  assert.deepEqual(JSON.parse(deltas.map((d) => d.delta.partial_json).join('')), { file_path: 'probe-read.txt' });
  const starts = events.filter((e) => e.type === 'content_block_start' && e.content_block.type === 'tool_use');
  assert.equal(starts.length, 1, 'the tool block was sent twice');
  const stopAt = events.findIndex((e, i) => i > start && e.type === 'content_block_stop' && e.index === index);
  assert.ok(stopAt > start, 'the tool block was not closed');
});
