// Sessions beyond one connection: load (the conversation replayed before the answer), list,
// resume, fork and close; the model and effort options.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { answer, connect, text, timeout, toolCalls, workspace } from './harness.mjs';

// remember runs one turn that leaves a secret and a tool call in a new session, closes the
// connection, and returns the session's id.
async function remember(ws) {
  const c = await connect(ws, { handlers: { 'session/request_permission': answer('allow_once') } });
  const { sessionId } = await c.newSession();
  assert.equal((await c.prompt(sessionId, 'ACP-REMEMBER the secret')).stopReason, 'end_turn');
  assert.equal((await c.prompt(sessionId, 'ACP-ONE-TOOL then run this')).stopReason, 'end_turn');
  const exit = await c.close();
  assert.equal(exit.code, 0, 'keel did not exit cleanly when stdin closed');
  return sessionId;
}

test('session/load replays the conversation before it answers, then continues it', { timeout }, async () => {
  const ws = workspace();
  const sessionId = await remember(ws);
  const c = await connect(ws);
  try {
    const resp = await c.agent.request('session/load', { sessionId, cwd: ws.dir, mcpServers: [] });
    // Everything replayed was recorded before the response resolved.
    const replayed = c.of(sessionId);
    assert.equal(text(replayed, 'user_message_chunk'), 'ACP-REMEMBER the secretACP-ONE-TOOL then run this');
    assert.equal(text(replayed, 'agent_message_chunk'), 'I will remember ACP-SECRET-42.Running one command.One tool done.');
    const [bash] = toolCalls(replayed);
    assert.equal(bash[0].title, 'Bash: echo one-tool');
    assert.equal(bash.at(-1).status, 'completed');
    assert.match(bash.at(-1).content[0].content.text, /one-tool/);
    assert.equal(resp.modes.currentModeId, 'default');
    const after = await c.prompt(sessionId, 'ACP-FORK-CHECK do you remember');
    assert.equal(after.stopReason, 'end_turn');
    assert.equal(text(c.of(sessionId), 'agent_message_chunk').endsWith('The fork remembers the secret.'), true);
  } finally {
    await c.close();
  }
});

test('session/list, resume, fork and close', { timeout }, async () => {
  const ws = workspace();
  const sessionId = await remember(ws);
  const c = await connect(ws);
  try {
    const list = await c.agent.request('session/list', { cwd: ws.dir });
    assert.deepEqual(list.sessions.map((s) => s.sessionId), [sessionId]);
    assert.equal(list.sessions[0].cwd, ws.dir);
    assert.match(list.sessions[0].title, /ACP-REMEMBER/);

    await c.agent.request('session/resume', { sessionId, cwd: ws.dir, mcpServers: [] });
    assert.equal(c.of(sessionId).filter((u) => u.sessionUpdate === 'user_message_chunk').length, 0, 'resume replayed the conversation');

    const fork = await c.agent.request('session/fork', { sessionId, cwd: ws.dir, mcpServers: [] });
    assert.notEqual(fork.sessionId, sessionId);
    const resp = await c.prompt(fork.sessionId, 'ACP-FORK-CHECK do you remember');
    assert.equal(resp.stopReason, 'end_turn');
    assert.equal(text(c.of(fork.sessionId), 'agent_message_chunk'), 'The fork remembers the secret.');

    const after = await c.agent.request('session/list', { cwd: ws.dir });
    assert.deepEqual(new Set(after.sessions.map((s) => s.sessionId)), new Set([sessionId, fork.sessionId]));

    await c.agent.request('session/close', { sessionId: fork.sessionId });
    await assert.rejects(c.prompt(fork.sessionId, 'ACP-STREAM hello'), (e) => e.code === -32002);
  } finally {
    await c.close();
  }
});

test('session/load of an unknown session: resource not found', { timeout }, async () => {
  const ws = workspace();
  const c = await connect(ws);
  try {
    await assert.rejects(c.agent.request('session/load', { sessionId: 'no-such-session', cwd: ws.dir, mcpServers: [] }), (e) => e.code === -32002);
  } finally {
    await c.close();
  }
});

test('model and effort: config options, set_config_option, and the unstable set_model', { timeout }, async () => {
  const ws = workspace();
  const c = await connect(ws);
  try {
    const { sessionId, configOptions } = await c.newSession();
    const model = configOptions.find((o) => o.id === 'model');
    const effort = configOptions.find((o) => o.id === 'effort');
    assert.equal(model.category, 'model');
    assert.equal(effort.category, 'thought_level');
    assert.equal(effort.currentValue, 'off');
    const haiku = model.options.find((o) => o.name.startsWith('haiku'));
    assert.ok(haiku, `no haiku among ${JSON.stringify(model.options)}`);

    const set = await c.agent.request('session/set_config_option', { sessionId, configId: 'model', value: haiku.value });
    assert.equal(set.configOptions.find((o) => o.id === 'model').currentValue, haiku.value);
    assert.equal(text(await promptUpdates(c, sessionId, 'ACP-MODEL which model'), 'agent_message_chunk'), 'Haiku answered.');

    const high = await c.agent.request('session/set_config_option', { sessionId, configId: 'effort', value: 'high' });
    assert.equal(high.configOptions.find((o) => o.id === 'effort').currentValue, 'high');
    assert.equal(text(await promptUpdates(c, sessionId, 'ACP-EFFORT think'), 'agent_message_chunk'), 'Thinking was on.');

    await assert.rejects(c.agent.request('session/set_config_option', { sessionId, configId: 'effort', value: 'extreme' }),
      (e) => e.code === -32602 && /low, medium, high/.test(JSON.stringify(e.data)));
    await assert.rejects(c.agent.request('session/set_config_option', { sessionId, configId: 'model', value: 'gpt-0' }), (e) => e.code === -32602);

    // Editors that predate config options pick the model with session/set_model.
    const first = model.options[0].value;
    await c.agent.request('session/set_model', { sessionId, modelId: first });
    const now = await c.agent.request('session/set_config_option', { sessionId, configId: 'effort', value: 'off' });
    assert.equal(now.configOptions.find((o) => o.id === 'model').currentValue, first);
  } finally {
    await c.close();
  }
});

// promptUpdates runs one prompt and returns the updates it produced.
async function promptUpdates(c, sessionId, prompt) {
  const from = c.of(sessionId).length;
  const resp = await c.prompt(sessionId, prompt);
  assert.equal(resp.stopReason, 'end_turn');
  return c.of(sessionId).slice(from);
}
