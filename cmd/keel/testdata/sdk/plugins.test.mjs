// The Agent SDK's plugins option: local plugin folders reach keel as --plugin-dir, their
// commands are supportedCommands() and run as /plugin:command, their agents are
// supportedAgents(), and init lists them in plugins (and what failed in plugin_errors).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { collect, start, timeout, userMessage, workspace } from './harness.mjs';

test('plugins: [{type: "local", path}] loads the plugin; a missing folder is a plugin_errors entry', { timeout }, async () => {
  const ws = workspace({
    'plug/.claude-plugin/plugin.json': JSON.stringify({ name: 'sdkplug', version: '2.0.0', description: 'A plugin from the SDK.' }),
    'plug/commands/greet.md': '---\ndescription: Greets whoever is named.\nargument-hint: WHO\n---\nPRB-PLUGIN-CMD greet $ARGUMENTS\n',
    'plug/agents/aide.md': '---\nname: aide\ndescription: Aids with plugin work.\n---\nYou aid.\n',
  });
  let ready;
  const asked = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await asked;
    yield userMessage('/sdkplug:greet the SDK');
  }
  const q = start(prompts(), ws, { plugins: [{ type: 'local', path: ws.file('plug') }, { type: 'local', path: ws.file('missing') }] });
  const commands = await q.supportedCommands();
  const greet = commands.find((c) => c.name === 'sdkplug:greet');
  assert.ok(greet, JSON.stringify(commands.map((c) => c.name)));
  assert.equal(greet.description, 'Greets whoever is named.');
  assert.equal(greet.argumentHint, 'WHO');
  const agents = await q.supportedAgents();
  assert.ok(agents.some((a) => a.name === 'sdkplug:aide'), JSON.stringify(agents.map((a) => a.name)));
  ready();
  const r = await collect(q);
  assert.equal(r.error, undefined);
  assert.equal(r.result.subtype, 'success');
  assert.match(r.assistantText, /The plugin's command reached the model/);
  assert.deepEqual(r.init.plugins, [{ name: 'sdkplug', path: ws.file('plug'), version: '2.0.0', source: 'sdkplug@inline' }]);
  assert.ok(r.init.slash_commands.includes('sdkplug:greet'));
  assert.equal(r.init.plugin_errors.length, 1, JSON.stringify(r.init.plugin_errors));
  const [err] = r.init.plugin_errors;
  assert.equal(err.plugin, 'inline[1]');
  assert.equal(err.type, 'path-not-found');
  assert.equal(err.path, ws.file('missing'));
  assert.match(err.message, /does not exist/);
});

test('pluginDelivery "initialize" sends the plugins in initialize; plugins_applied says they loaded', { timeout }, async () => {
  const ws = workspace({
    'viainit/commands/greet.md': '---\ndescription: Greets.\n---\nPRB-PLUGIN-CMD greet $ARGUMENTS\n',
  });
  let ready;
  const asked = new Promise((resolve) => { ready = resolve; });
  async function* prompts() {
    await asked;
    yield userMessage('/viainit:greet the SDK');
  }
  const q = start(prompts(), ws, { plugins: [{ type: 'local', path: ws.file('viainit') }], pluginDelivery: 'initialize' });
  const init = await q.initializationResult();
  assert.equal(init.plugins_applied, true, JSON.stringify(init).slice(0, 400));
  assert.ok(init.commands.some((c) => c.name === 'viainit:greet'), JSON.stringify(init.commands.map((c) => c.name)));
  ready();
  const r = await collect(q);
  assert.equal(r.result.subtype, 'success');
  assert.match(r.assistantText, /The plugin's command reached the model/);
  assert.deepEqual(r.init.plugins.map((p) => p.source), ['viainit@inline']);
});
