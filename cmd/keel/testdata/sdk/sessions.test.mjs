// The SDK's session functions (listSessions, getSessionMessages, getSessionInfo,
// renameSession, forkSession) against sessions keel wrote, and keel resuming sessions the SDK
// and Claude Code wrote: with nothing set but HOME, as a program using the SDK runs. keel,
// driven as the SDK's CLI, keeps its transcripts where the SDK looks
// (${CLAUDE_CONFIG_DIR:-~/.claude}/projects).
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { run, sdk, timeout, workspace } from './harness.mjs';

const here = dirname(fileURLToPath(import.meta.url));

// The SDK's functions find their home once per process: the tests of this file share one,
// each with a project directory of its own.
const home = workspace().home;
process.env.HOME = home;
delete process.env.CLAUDE_CONFIG_DIR;

// plainWorkspace is a workspace whose environment names no keel or Claude directory: only
// HOME, which this process shares, so the SDK's functions and keel look in the same home.
function plainWorkspace(files) {
  const ws = workspace(files);
  ws.home = home;
  ws.env.HOME = home;
  delete ws.env.KEEL_HOME;
  delete ws.env.CLAUDE_CONFIG_DIR;
  return ws;
}

// munge is the project folder name Claude Code gives a working directory.
const munge = (dir) => dir.replace(/[^a-zA-Z0-9]/g, '-');

test('session functions see keel sessions, and keel resumes a fork the SDK made', { timeout }, async () => {
  const ws = plainWorkspace();
  const first = await run('PRB-SESS-ONE remember the word FIG', ws);
  assert.equal(first.result.subtype, 'success');
  const id = first.result.session_id;

  const list = await sdk.listSessions({ dir: ws.dir });
  assert.deepEqual(list.map((s) => s.sessionId), [id], 'listSessions does not see the session keel wrote');
  assert.match(list[0].firstPrompt || list[0].summary, /PRB-SESS-ONE/);

  const msgs = await sdk.getSessionMessages(id, { dir: ws.dir });
  assert.deepEqual(msgs.map((m) => m.type), ['user', 'assistant']);
  assert.match(JSON.stringify(msgs[1].message), /The word is FIG/);

  await sdk.renameSession(id, 'Fig session', { dir: ws.dir });
  const info = await sdk.getSessionInfo(id, { dir: ws.dir });
  assert.equal(info?.customTitle, 'Fig session');

  const fork = await sdk.forkSession(id, { dir: ws.dir });
  assert.ok(fork.sessionId && fork.sessionId !== id);
  const resumed = await run('PRB-SESS-TWO what was the word', ws, { resume: fork.sessionId });
  assert.equal(resumed.result.result, 'The word was FIG.', 'keel did not resume the fork the SDK wrote');
  assert.equal(resumed.result.session_id, fork.sessionId);

  // keel's own listing shows the same history, the newest first, with the SDK's title.
  const out = execFileSync(process.env.KEEL_BIN, ['sessions', 'list', '--json'], { cwd: ws.dir, env: ws.env, encoding: 'utf8' });
  const listed = JSON.parse(out);
  assert.deepEqual(listed.map((s) => s.id), [fork.sessionId, id]);
  assert.equal(listed[1].title, 'Fig session');
});

test('a session Claude Code 2.1 wrote resumes with its history', { timeout }, async () => {
  const ws = plainWorkspace({ 'probe-cc.txt': 'code word: HERON-5521\n' });
  const fixture = join(here, '..', '..', '..', '..', 'internal', 'transcript', 'testdata', 'claude-code-2.1.jsonl');
  const id = '5f0c8a52-3b1e-4c9a-9d57-2c1f6a7e8b90';
  const dir = join(ws.home, '.claude', 'projects', munge(ws.dir));
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, `${id}.jsonl`), readFileSync(fixture, 'utf8').replaceAll('/home/user/proj', ws.dir));

  const before = await sdk.getSessionMessages(id, { dir: ws.dir });
  const r = await run('PRB-CC-AGAIN say the code word again', ws, { resume: id });
  assert.equal(r.error, undefined, String(r.error));
  assert.equal(r.result.result, 'Again: HERON-5521.', 'the resumed request did not carry the Claude Code history');
  assert.equal(r.result.session_id, id);
  assert.ok(!JSON.stringify(r.messages).match(/damaged|repair/i), 'the Claude Code file was reported as damaged');
  const after = await sdk.getSessionMessages(id, { dir: ws.dir });
  assert.equal(after.length, before.length + 2, 'the SDK does not read the turn keel appended');
});

test('continue finds the newest session in either place', { timeout }, async () => {
  const ws = plainWorkspace();
  // A keel session of the terminal (written under ~/.keel), then one through the SDK.
  execFileSync(process.env.KEEL_BIN, ['-p', 'PRB-SESS-ONE remember the word FIG'], { cwd: ws.dir, env: { ...ws.env, CLAUDE_CODE_ENTRYPOINT: '' }, encoding: 'utf8' });
  const sdkRun = await run('PRB-HELLO hi', ws);
  const cont = await run('PRB-HELLO again', ws, { continue: true });
  assert.equal(cont.result.session_id, sdkRun.result.session_id, 'continue did not pick the newest session');
  const all = await sdk.listSessions({ dir: ws.dir });
  assert.equal(all.length, 1, 'the SDK sees the sessions written where it looks');
  const out = JSON.parse(execFileSync(process.env.KEEL_BIN, ['sessions', 'list', '--json'], { cwd: ws.dir, env: ws.env, encoding: 'utf8' }));
  assert.equal(out.length, 2, 'keel sessions lists both places');
  assert.equal(out[0].id, sdkRun.result.session_id);
});
