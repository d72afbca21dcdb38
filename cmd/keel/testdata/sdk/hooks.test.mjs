// The SDK's hook callbacks (hook_callback) and settings hooks for the events the SDK knows:
// recordings 05a and 05b, and the events the issue lists.
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';
import { collect, run, start, timeout, toolResults, resultText, userMessage, workspace } from './harness.mjs';

// hook returns a HookCallbackMatcher list that records each input and answers with answer(input).
function hook(answer = () => ({}), matcher) {
  const inputs = [];
  const matchers = [{ matcher, hooks: [async (input, toolUseID) => { inputs.push({ input, toolUseID }); return answer(input); }] }];
  return { inputs, matchers };
}

test('05a PreToolUse deny: the reason reaches the model and the denial is listed', { timeout }, async () => {
  const ws = workspace();
  const pre = hook(() => ({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'deny', permissionDecisionReason: 'PRB-HOOK-DENIED by the probe' } }), 'Bash');
  const r = await run('PRB-HOOK-PRE create a file', ws, { allowedTools: ['Bash'], hooks: { PreToolUse: pre.matchers } });
  assert.equal(pre.inputs.length, 1);
  const { input, toolUseID } = pre.inputs[0];
  assert.equal(input.hook_event_name, 'PreToolUse');
  assert.equal(input.tool_name, 'Bash');
  assert.equal(input.tool_input.command, 'touch hooked.txt');
  assert.equal(input.cwd, ws.dir);
  assert.equal(input.session_id, r.init.session_id);
  assert.ok(input.transcript_path, 'no transcript_path');
  assert.equal(toolUseID, input.tool_use_id);
  const [res] = toolResults(r.messages);
  assert.equal(res.is_error, true);
  assert.match(resultText(res), /PRB-HOOK-DENIED/);
  assert.ok(!existsSync(ws.file('hooked.txt')));
  assert.equal(r.result.permission_denials.length, 1);
});

test('PreToolUse allow, updatedInput and additionalContext', { timeout }, async () => {
  const ws = workspace();
  const pre = hook((input) => ({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow',
    updatedInput: { ...input.tool_input, command: 'touch rewritten-by-hook.txt' }, additionalContext: 'PRB-PRE-CONTEXT' } }));
  const r = await run('PRB-HOOK-PRE create a file', ws, { permissionMode: 'default', hooks: { PreToolUse: pre.matchers } });
  assert.ok(existsSync(ws.file('rewritten-by-hook.txt')), 'the hook allowed and rewrote the call');
  assert.ok(!existsSync(ws.file('hooked.txt')));
  assert.equal(r.result.result, 'Saw the PreToolUse context.');
});

test('05b PostToolUse: the hook sees the tool response; its context reaches the model', { timeout }, async () => {
  const ws = workspace({ 'probe-read.txt': 'POSTHOOK-CONTENT-5150\n' });
  const post = hook(() => ({ hookSpecificOutput: { hookEventName: 'PostToolUse', additionalContext: 'PRB-POST-CONTEXT' } }), 'Read');
  const r = await run('PRB-HOOK-POST read the probe file', ws, { hooks: { PostToolUse: post.matchers } });
  assert.equal(post.inputs.length, 1);
  const { input } = post.inputs[0];
  assert.equal(input.tool_name, 'Read');
  assert.match(JSON.stringify(input.tool_response), /POSTHOOK-CONTENT-5150/);
  assert.equal(r.result.result, 'Saw the PostToolUse context.');
});

test('PostToolUseFailure: a failed call has its own event', { timeout }, async () => {
  const ws = workspace();
  const fail = hook();
  const post = hook();
  await run('PRB-HOOK-FAIL read a missing file', ws, { hooks: { PostToolUseFailure: fail.matchers, PostToolUse: post.matchers } });
  assert.equal(fail.inputs.length, 1);
  assert.equal(fail.inputs[0].input.tool_name, 'Read');
  assert.ok(fail.inputs[0].input.error, 'no error in the input');
  assert.equal(post.inputs.length, 0, 'PostToolUse fired for a failed call');
});

test('UserPromptSubmit: sees the prompt, adds context, can block', { timeout }, async () => {
  const ws = workspace();
  const submit = hook((input) => (input.prompt.includes('BLOCK-ME')
    ? { decision: 'block', reason: 'PRB-PROMPT-BLOCKED' }
    : { hookSpecificOutput: { hookEventName: 'UserPromptSubmit', additionalContext: 'PRB-PROMPT-CONTEXT-ADDED' } }));
  const r = await run('PRB-HOOK-PROMPT hello', ws, { hooks: { UserPromptSubmit: submit.matchers } });
  assert.equal(submit.inputs[0].input.prompt, 'PRB-HOOK-PROMPT hello');
  assert.equal(r.result.result, 'Saw the prompt context.');
  const b = await run('PRB-HOOK-PROMPT BLOCK-ME', ws, { hooks: { UserPromptSubmit: submit.matchers } });
  assert.equal(b.result.is_error, true);
  assert.match(b.result.errors.join(' '), /PRB-PROMPT-BLOCKED/);
});

test('SessionStart: source startup; its context joins the first prompt', { timeout }, async () => {
  const ws = workspace();
  const start = hook(() => ({ hookSpecificOutput: { hookEventName: 'SessionStart', additionalContext: 'PRB-START-CONTEXT-ADDED' } }));
  const r = await run('PRB-HOOK-START hello', ws, { hooks: { SessionStart: start.matchers } });
  assert.equal(start.inputs.length, 1);
  assert.equal(start.inputs[0].input.source, 'startup');
  assert.equal(r.result.result, 'Saw the session start context.');
});

test('SessionEnd: the callback runs when the query ends, after the result, with reason other', { timeout }, async () => {
  const ws = workspace();
  const order = [];
  const end = hook(() => { order.push('SessionEnd'); return {}; });
  const r = await run('PRB-HELLO say hello', ws, { hooks: { SessionEnd: end.matchers } }, (m) => { if (m.type === 'result') order.push('result'); });
  assert.equal(r.error, undefined);
  assert.equal(r.result.subtype, 'success');
  // The SDK closed stdin after the result; the callback still ran before the query ended.
  assert.deepEqual(order, ['result', 'SessionEnd']);
  const { input } = end.inputs[0];
  assert.equal(input.hook_event_name, 'SessionEnd');
  assert.equal(input.reason, 'other');
  assert.equal(input.session_id, r.init.session_id);
  assert.ok(input.transcript_path, 'no transcript_path');
});

test('Stop: a block sends the model back to work, once', { timeout }, async () => {
  const ws = workspace();
  const stop = hook((input) => (input.stop_hook_active ? {} : { decision: 'block', reason: 'PRB-STOP-REASON keep going' }));
  const r = await run('PRB-HELLO say hello', ws, { hooks: { Stop: stop.matchers } });
  assert.equal(stop.inputs.length, 2);
  assert.equal(stop.inputs[0].input.stop_hook_active, false);
  assert.equal(stop.inputs[1].input.stop_hook_active, true);
  assert.equal(r.result.result, 'Continued after the Stop hook.');
});

test('SubagentStart and SubagentStop around an Agent call', { timeout }, async () => {
  const ws = workspace();
  const start = hook();
  const stop = hook();
  const r = await run('PRB-SPAWN start a helper', ws, { hooks: { SubagentStart: start.matchers, SubagentStop: stop.matchers } });
  assert.equal(r.result.result, 'Parent done.');
  assert.equal(start.inputs.length, 1);
  assert.equal(start.inputs[0].input.agent_type, 'general-purpose');
  assert.ok(start.inputs[0].input.agent_id);
  assert.equal(stop.inputs.length, 1);
  assert.equal(stop.inputs[0].input.agent_id, start.inputs[0].input.agent_id);
});

test('PreCompact and PostCompact around /compact', { timeout }, async () => {
  const ws = workspace();
  const pre = hook();
  const post = hook();
  async function* prompts() {
    yield { type: 'user', session_id: '', parent_tool_use_id: null, message: { role: 'user', content: 'PRB-HELLO say hello' } };
    yield { type: 'user', session_id: '', parent_tool_use_id: null, message: { role: 'user', content: '/compact' } };
  }
  const r = await run(prompts(), ws, { hooks: { PreCompact: pre.matchers, PostCompact: post.matchers } });
  assert.equal(pre.inputs.length, 1);
  assert.equal(pre.inputs[0].input.trigger, 'manual');
  assert.equal(post.inputs.length, 1);
  assert.match(post.inputs[0].input.compact_summary, /PRB-SUMMARY/);
  assert.ok(r.messages.some((m) => m.type === 'system' && m.subtype === 'compact_boundary'));
});

test('Notification and PermissionRequest before a question; PermissionDenied after a denial', { timeout }, async () => {
  const ws = workspace();
  const note = hook();
  const request = hook();
  const denied = hook();
  const r = await run('PRB-NOPROMPT create a file', ws, { hooks: { Notification: note.matchers, PermissionRequest: request.matchers, PermissionDenied: denied.matchers } });
  assert.equal(request.inputs.length, 1);
  assert.equal(request.inputs[0].input.tool_name, 'Bash');
  assert.ok(Array.isArray(request.inputs[0].input.permission_suggestions));
  assert.equal(note.inputs.length, 1);
  assert.equal(note.inputs[0].input.notification_type, 'permission_prompt');
  assert.equal(denied.inputs.length, 1);
  assert.equal(denied.inputs[0].input.tool_use_id, toolResults(r.messages)[0].tool_use_id);
  assert.ok(denied.inputs[0].input.reason);
});

test('PermissionRequest answers the question itself', { timeout }, async () => {
  const ws = workspace();
  const request = hook(() => ({ hookSpecificOutput: { hookEventName: 'PermissionRequest', decision: { behavior: 'allow' } } }));
  await run('PRB-NOPROMPT create a file', ws, { hooks: { PermissionRequest: request.matchers } });
  assert.ok(existsSync(ws.file('noprompt.txt')), 'the hook allowed the call');
});

test('settings hooks: user settings, new events, hook_started/hook_response with includeHookEvents', { timeout }, async () => {
  const ws = workspace({ 'CLAUDE.md': 'project memory\n' });
  const log = join(ws.root, 'hooks.log');
  const cmd = (name) => ({ type: 'command', command: `cat > /dev/null; echo ${name} >> ${log}` });
  mkdirSync(join(ws.home, '.keel'), { recursive: true });
  writeFileSync(join(ws.home, '.keel', 'settings.json'), JSON.stringify({ hooks: {
    SessionStart: [{ hooks: [cmd('SessionStart')] }],
    InstructionsLoaded: [{ hooks: [cmd('InstructionsLoaded')] }],
    UserPromptSubmit: [{ hooks: [cmd('UserPromptSubmit')] }],
    Stop: [{ hooks: [cmd('Stop')] }],
    SessionEnd: [{ hooks: [cmd('SessionEnd')] }],
  } }));
  const r = await run('PRB-HELLO say hello', ws, { includeHookEvents: true });
  assert.equal(r.result.subtype, 'success');
  const ran = readFileSync(log, 'utf8').trim().split('\n');
  for (const ev of ['SessionStart', 'InstructionsLoaded', 'UserPromptSubmit', 'Stop', 'SessionEnd']) {
    assert.ok(ran.includes(ev), `${ev} did not run: ${ran}`);
  }
  const started = r.messages.filter((m) => m.type === 'system' && m.subtype === 'hook_started');
  const responses = r.messages.filter((m) => m.type === 'system' && m.subtype === 'hook_response');
  assert.ok(started.some((m) => m.hook_event === 'UserPromptSubmit'));
  const resp = responses.find((m) => m.hook_event === 'UserPromptSubmit');
  assert.equal(resp.outcome, 'success');
  assert.equal(resp.hook_id, started.find((m) => m.hook_event === 'UserPromptSubmit').hook_id);
});

test('PreModelSwitch and PostModelSwitch around setModel; a refusal keeps the model', { timeout }, async () => {
  const ws = workspace();
  const pre = hook((input) => (input.to_model === 'claude-refused'
    ? { hookSpecificOutput: { hookEventName: 'PreModelSwitch', permissionDecision: 'deny', permissionDecisionReason: 'PRB-NO-SWITCH' } } : {}));
  const post = hook();
  let ready;
  const switched = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await switched;
    yield userMessage('PRB-NEWMODEL hi');
  }
  const q = start(prompts(), ws, { model: 'claude-probe-first', hooks: { PreModelSwitch: pre.matchers, PostModelSwitch: post.matchers } });
  await q.setModel('claude-probe-second');
  await assert.rejects(q.setModel('claude-refused'), /PRB-NO-SWITCH/);
  ready();
  const r = await collect(q);
  assert.equal(r.init.model, 'claude-probe-second');
  assert.equal(pre.inputs[0].input.from_model, 'claude-probe-first');
  assert.equal(pre.inputs[0].input.to_model, 'claude-probe-second');
  assert.equal(pre.inputs[0].input.source, 'sdk');
  assert.equal(post.inputs.length, 1, 'PostModelSwitch ran for the refused switch');
});

test('ConfigChange before applyFlagSettings; a block refuses the change', { timeout }, async () => {
  const ws = workspace();
  const change = hook((input) => (JSON.stringify(input).includes('policy_settings') ? { decision: 'block', reason: 'PRB-NO-CHANGE' } : {}));
  let ready;
  const tried = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await tried;
    yield userMessage('PRB-HELLO hi');
  }
  const q = start(prompts(), ws, { hooks: { ConfigChange: change.matchers } });
  await assert.rejects(q.applyFlagSettings({ permissions: { allow: ['Bash'] } }), /PRB-NO-CHANGE/);
  ready();
  await collect(q);
  assert.equal(change.inputs[0].input.source, 'policy_settings');
});

test('StopFailure when the model request fails', { timeout }, async () => {
  const ws = workspace();
  const fail = hook();
  await run('PRB-APIERR trigger an API error', ws, { hooks: { StopFailure: fail.matchers } });
  assert.equal(fail.inputs.length, 1);
  assert.equal(fail.inputs[0].input.error, 'invalid_request');
  assert.match(fail.inputs[0].input.error_details, /PRB-APIERR-MSG/);
});

test('CwdChanged, DirectoryAdded, InstructionsLoaded and Setup', { timeout }, async () => {
  const ws = workspace({ 'CLAUDE.md': 'project memory\n' });
  mkdirSync(join(ws.root, 'extra'));
  const cwd = hook();
  const dir = hook();
  const loaded = hook();
  const setup = hook();
  async function* prompts() {
    yield userMessage('PRB-CD enter sub');
    yield userMessage(`/add-dir ${join(ws.root, 'extra')}`);
  }
  const r = await run(prompts(), ws, { allowedTools: ['Bash'], extraArgs: { init: null },
    hooks: { CwdChanged: cwd.matchers, DirectoryAdded: dir.matchers, InstructionsLoaded: loaded.matchers, Setup: setup.matchers } });
  assert.equal(r.results.length, 2);
  assert.equal(r.results[1].subtype, 'success', JSON.stringify(r.results[1]));
  assert.equal(setup.inputs.length, 1);
  assert.equal(setup.inputs[0].input.trigger, 'init');
  assert.ok(loaded.inputs.some((h) => h.input.file_path === ws.file('CLAUDE.md') && h.input.load_reason === 'session_start'),
    JSON.stringify(loaded.inputs.map((h) => h.input.file_path)));
  assert.equal(cwd.inputs.length, 1);
  assert.equal(cwd.inputs[0].input.old_cwd, ws.dir);
  assert.equal(cwd.inputs[0].input.new_cwd, ws.file('sub'));
  assert.equal(dir.inputs.length, 1);
  assert.equal(dir.inputs[0].input.directory, join(ws.root, 'extra'));
});

test('UserPromptExpansion for a /command; MessageDisplay changes what is shown', { timeout }, async () => {
  const ws = workspace({ '.claude/commands/probe-cmd.md': 'PRB-COMMAND-BODY run with $ARGUMENTS\n' });
  const expand = hook();
  const display = hook((input) => (input.delta.includes('PRB-ORIGINAL-TEXT')
    ? { hookSpecificOutput: { hookEventName: 'MessageDisplay', displayContent: 'PRB-SHOWN-TEXT' } } : {}));
  const r = await run('/probe-cmd some-arg', ws, { hooks: { UserPromptExpansion: expand.matchers } });
  assert.equal(r.result.result, 'The command ran.');
  assert.equal(expand.inputs.length, 1);
  assert.equal(expand.inputs[0].input.command_name, 'probe-cmd');
  assert.equal(expand.inputs[0].input.command_args, 'some-arg');
  const shown = await run('PRB-DISPLAY say it', ws, { hooks: { MessageDisplay: display.matchers } });
  assert.equal(shown.assistantText, 'PRB-SHOWN-TEXT');
  assert.equal(display.inputs[0].input.final, true);
});

test('a background agent after the result: the session stays running, so its hook callbacks are answered', { timeout }, async () => {
  const ws = workspace({ 'progress.txt': 'progress probe\n' });
  const pre = hook(() => ({ hookSpecificOutput: { hookEventName: 'PreToolUse', permissionDecision: 'allow' } }));
  const states = [];
  const r = await run('PRB-PROGRESS-BG look', ws, { hooks: { PreToolUse: pre.matchers } }, (m) => {
    if (m.type === 'result') states.push('result');
  });
  assert.equal(r.error, undefined);
  assert.ok(pre.inputs.some(({ input }) => input.tool_name === 'Read'), `PreToolUse saw ${JSON.stringify(pre.inputs.map((i) => i.input.tool_name))}`);
  assert.deepEqual(states, ['result', 'result'], 'the report turn has its own result');
  assert.equal(r.results.at(-1).result, 'The background agent reported.');
  const [res] = toolResults(r.messages.filter((m) => m.parent_tool_use_id));
  assert.match(resultText(res), /progress probe/);
});
