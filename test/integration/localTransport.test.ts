import * as assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { getEventListeners } from 'node:events';
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { deployAgent } from '../../src/remote/agentDeploy';
import { LocalTransport } from '../../src/remote/localTransport';
import { execText } from '../../src/remote/transport';

function alive(pattern: string): string[] {
  try {
    return execFileSync('pgrep', ['-f', pattern]).toString().trim().split('\n').filter(Boolean);
  } catch {
    return [];
  }
}

describe('local transport', () => {
  it('streams output and reports the exit code', async () => {
    const t = new LocalTransport();
    const { stdout, result } = await execText(t, ['sh', '-c', 'echo out; echo err >&2; exit 3']);
    assert.equal(stdout, 'out\n');
    assert.equal(result.code, 3);
  });

  it('cancel leaves no process of the command behind, grandchildren included', async () => {
    const t = new LocalTransport();
    const marker = `ib-cancel-${process.pid}-${Date.now()}`;
    const handle = t.exec(['sh', '-c', `sleep 300 & sleep 301 & echo started; wait # ${marker}`]);
    await new Promise<void>((resolve) => handle.stdout.once('data', () => resolve()));
    assert.ok(alive(marker).length > 0);
    await handle.cancel();
    const result = await handle.done;
    assert.equal(result.signal, 'SIGTERM');
    assert.deepEqual(alive(marker), []);
    assert.deepEqual(alive('sleep 30[01]').filter(Boolean).length, 0);
  });

  it("leaves no listener on a run's signal once its commands are done, and still cancels the one running", async () => {
    const t = new LocalTransport();
    const run = new AbortController();
    // A phase runs dozens of short commands under one signal: each finished one must let go of it.
    for (let i = 0; i < 15; i++) await execText(t, ['true'], { signal: run.signal });
    assert.equal(getEventListeners(run.signal, 'abort').length, 0);
    const handle = t.exec(['sh', '-c', 'echo started; sleep 300'], { signal: run.signal });
    await new Promise<void>((resolve) => handle.stdout.once('data', () => resolve()));
    assert.equal(getEventListeners(run.signal, 'abort').length, 1);
    run.abort();
    assert.equal((await handle.done).signal, 'SIGTERM');
    assert.equal(getEventListeners(run.signal, 'abort').length, 0);
  });

  it('deploys the agent once per content hash, into a folder private to the user', async () => {
    const home = mkdtempSync(join(tmpdir(), 'ib-home-'));
    const t = new LocalTransport();
    const env = { XDG_CACHE_HOME: home };
    const first = await deployAgent(withEnv(t, env), 'dist/agent.pyz', 'python3');
    const again = await deployAgent(withEnv(t, env), 'dist/agent.pyz', 'python3');
    assert.equal(first.path, again.path);
    assert.match(first.path, /agent-[0-9a-f]{16}\.pyz$/);
    const mode = execFileSync('stat', ['-c', '%a', join(home, 'inference-bench')])
      .toString()
      .trim();
    assert.equal(mode, '700');
    const { stdout } = await execText(t, ['python3', first.path, '--help']);
    assert.match(stdout, /usage/);
  });
});

/** The same transport with extra environment on every command (the cache folder, here). */
function withEnv(t: LocalTransport, env: Record<string, string>): LocalTransport {
  const wrapped = Object.create(t) as LocalTransport;
  wrapped.exec = (argv, options = {}) => t.exec(argv, { ...options, env: { ...env, ...options.env } });
  return wrapped;
}
