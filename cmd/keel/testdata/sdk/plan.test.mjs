// Plan mode as Claude Code has it: the model is told, only read-only tools run and others are
// asked with the mode as the reason, ExitPlanMode presents the plan over canUseTool (approved:
// plan mode ends; refused: the feedback reaches the model), headless it is refused with the
// plan in the result, and an agent definition's permissionMode: plan behaves the same.
import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { test } from 'node:test';
import { run, timeout, toolResults, resultText, workspace } from './harness.mjs';

function recorder(answer) {
  const asked = [];
  return { asked, canUseTool: async (toolName, input, opts) => { asked.push({ toolName, input, opts }); return answer(toolName, input, opts); } };
}

test('plan approved: writes asked with reason mode, ExitPlanMode asked, then the plan is carried out', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder((toolName, input, opts) => {
    if (toolName === 'Write' && opts.decisionReasonType === 'mode') return { behavior: 'deny', message: 'PRB-NOT-WHILE-PLANNING' };
    return { behavior: 'allow', updatedInput: input };
  });
  const r = await run('PRB-PLAN-OK plan then write', ws, { permissionMode: 'plan', canUseTool });
  assert.equal(r.error, undefined, String(r.error));
  assert.equal(r.init.permissionMode, 'plan');
  assert.ok(r.init.tools.includes('ExitPlanMode'), `ExitPlanMode not offered in plan mode: ${r.init.tools}`);
  assert.deepEqual(asked.map((a) => a.toolName), ['Write', 'ExitPlanMode', 'Write'], JSON.stringify([asked.map((a) => a.opts), toolResults(r.messages)]));
  assert.equal(asked[0].opts.decisionReasonType, 'mode');
  assert.match(asked[1].input.plan, /Write plan-done.txt/);
  assert.notEqual(asked[2].opts.decisionReasonType, 'mode', 'still in plan mode after the approval');
  assert.ok(!existsSync(ws.file('plan-early.txt')), 'a write ran in plan mode');
  assert.ok(existsSync(ws.file('plan-done.txt')), 'the approved plan was not carried out');
  assert.equal(r.result.result, 'Plan carried out.');
  const status = r.messages.filter((m) => m.type === 'system' && m.subtype === 'status').map((m) => m.permissionMode);
  assert.ok(status.includes('default'), `no status line with the new mode: ${JSON.stringify(status)}`);
});

test('plan refused: the feedback reaches the model and plan mode stays', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder(() => ({ behavior: 'deny', message: 'PRB-KEEP-PLANNING add tests first' }));
  const r = await run('PRB-PLAN-NO plan something', ws, { permissionMode: 'plan', canUseTool });
  assert.deepEqual(asked.map((a) => a.toolName), ['ExitPlanMode']);
  const [res] = toolResults(r.messages);
  assert.equal(res.is_error, true);
  assert.match(resultText(res), /PRB-KEEP-PLANNING/);
  assert.equal(r.result.result, 'Still planning.');
});

test('plan headless: refused, with the plan in the result', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-PLAN-NO plan something', ws, { permissionMode: 'plan' });
  const [res] = toolResults(r.messages);
  assert.equal(res.is_error, true);
  assert.match(resultText(res), /PRB-THE-PLAN/);
  const denial = r.result.permission_denials.find((d) => d.tool_name === 'ExitPlanMode');
  assert.ok(denial, 'ExitPlanMode not among the denials');
  assert.match(denial.tool_input.plan, /PRB-THE-PLAN/);
});

test('not in plan mode: ExitPlanMode is not offered', { timeout }, async () => {
  const ws = workspace();
  const r = await run('PRB-HELLO hi', ws, { permissionMode: 'default' });
  assert.ok(!r.init.tools.includes('ExitPlanMode'), 'ExitPlanMode offered outside plan mode');
});

test('an agent with permissionMode plan gets ExitPlanMode, asked over canUseTool', { timeout }, async () => {
  const ws = workspace();
  const { asked, canUseTool } = recorder((_, input) => ({ behavior: 'allow', updatedInput: input }));
  const agents = { planner: { description: 'Plans changes', prompt: 'You plan.', permissionMode: 'plan' } };
  const r = await run('PRB-PLAN-AGENT delegate', ws, { agents, canUseTool, permissionMode: 'default' });
  assert.equal(r.result.result, 'Parent saw the planner.');
  const exit = asked.find((a) => a.toolName === 'ExitPlanMode');
  assert.ok(exit, `the planner's plan was not asked about: ${JSON.stringify(asked.map((a) => a.toolName))}`);
  assert.match(exit.input.plan, /PRB-PLANNER-PLAN/);
});
