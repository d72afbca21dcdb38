// The project folder and private home one node test runs keel in, shared by the suites that
// drive keel through client libraries (testdata/sdk, testdata/acp).
import { mkdtempSync, mkdirSync, realpathSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

// makeWorkspace makes a project directory holding files and a private home: keel keeps its
// transcripts under KEEL_HOME, so tests never see each other's sessions.
export function makeWorkspace(prefix, files = {}) {
  const root = realpathSync(mkdtempSync(join(tmpdir(), prefix)));
  const dir = join(root, 'proj');
  const home = join(root, 'home');
  mkdirSync(dir, { recursive: true });
  mkdirSync(home, { recursive: true });
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true });
    writeFileSync(join(dir, name), content);
  }
  const env = { ...process.env, HOME: home, KEEL_HOME: join(home, '.keel') };
  return { root, dir, home, env, file: (name) => join(dir, name) };
}
