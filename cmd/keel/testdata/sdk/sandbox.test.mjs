// The sandbox's network questions over can_use_tool: a sandboxed Bash command connecting to a
// host that sandbox.network.allowedDomains does not list is put to the SDK's canUseTool as a
// WebFetch request, and the answer decides whether the connection is made.
import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer } from 'node:http';
import { test } from 'node:test';
import { run, timeout, toolResults, resultText, workspace } from './harness.mjs';

// loopbackServer answers every request with a marker, on 127.0.0.1 outside the sandbox.
async function loopbackServer(t) {
  const srv = createServer((_, res) => res.end('PRB-NET-HELLO from the loopback server\n'));
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  t.after(() => srv.close());
  return srv.address().port;
}

// networkRun runs the fetching command with canUseTool answering Bash with allow and the
// network question with netAnswer; it returns the questions and the Bash result's text.
async function networkRun(t, netAnswer) {
  const port = await loopbackServer(t);
  const ws = workspace();
  ws.env.PRB_NET_PORT = String(port);
  const asked = [];
  const canUseTool = async (toolName, input, opts) => {
    asked.push({ toolName, input, opts });
    if (toolName === 'WebFetch' && input.sandboxNetwork) return netAnswer(input);
    return { behavior: 'allow', updatedInput: input };
  };
  const r = await run('PRB-SANDBOX-NET fetch', ws, { canUseTool, permissionMode: 'default', extraArgs: { sandbox: 'workspace-write' } });
  const [res] = toolResults(r.messages);
  assert.ok(res, `no Bash result: ${JSON.stringify(r.messages).slice(0, 2000)}`);
  const text = resultText(res);
  if (/\[Not sandboxed/.test(text) || /sandbox.*(unavailable|cannot start)/i.test(text)) {
    t.skip(`no sandbox on this machine: ${text.slice(0, 300)}`);
    return null;
  }
  return { asked, text, port, r };
}

test('sandbox network: an allowed question lets the connection through', { timeout }, async (t) => {
  const got = await networkRun(t, (input) => ({ behavior: 'allow', updatedInput: input }));
  if (!got) return;
  const net = got.asked.filter((a) => a.toolName === 'WebFetch');
  assert.equal(net.length, 1, `${got.text}\n${JSON.stringify(got.asked)}`);
  assert.equal(net[0].input.host, '127.0.0.1');
  assert.equal(net[0].input.port, got.port);
  assert.match(net[0].input.description, /Network request outside of the sandbox/);
  assert.match(got.text, /PRB-NET-HELLO/, got.text);
});

test('sandbox network: a refused question refuses the connection and says why', { timeout }, async (t) => {
  const got = await networkRun(t, () => ({ behavior: 'deny', message: 'PRB-NET-NO not this host' }));
  if (!got) return;
  assert.equal(got.asked.filter((a) => a.toolName === 'WebFetch').length, 1, `${got.text}\n${JSON.stringify(got.asked)}`);
  assert.doesNotMatch(got.text, /PRB-NET-HELLO/);
  assert.match(got.text, /\[Sandbox: connection refused by the proxy: 127\.0\.0\.1:\d+/, got.text);
  assert.match(got.text, /PRB-NET-NO/, got.text);
});
