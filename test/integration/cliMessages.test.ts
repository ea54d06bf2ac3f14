import * as assert from 'node:assert/strict';
import { execFile, execFileSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { RunningSimulator, startSimulator } from '../../src/core/macro/simulator';
import { KeyPair, makeKey, startSshd, Sshd, writeClientConfig } from '../support/sshd';

// What the CLI says when something a user can fix is wrong: each message names the problem and the
// flag that fixes it, instead of the error code of whatever broke underneath.
const USER = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();

describe('CLI messages for problems the user can fix', function () {
  this.timeout(60_000);
  const dir = mkdtempSync(join(tmpdir(), 'ib-cli-msg-'));
  const cache = join(dir, 'cache');
  let sim: RunningSimulator;
  let stalled: RunningSimulator;
  let key: KeyPair;
  let sshd: Sshd;
  let configFile: string;

  before(async () => {
    assert.ok(existsSync('dist/cli.js') && existsSync('dist/agent.pyz'), 'dist/ is missing: run `npm run build` first');
    mkdirSync(cache, { mode: 0o700 });
    sim = await startSimulator({ port: 0, zeroCost: true });
    // A server that takes every request and then sends nothing back for a minute: frozen, as far as a run can tell.
    stalled = await startSimulator({ port: 0, faults: ['slow:every=1:ms=60000'] });
    key = makeKey(dir, 'client_ed25519');
    sshd = await startSshd({ authorizedKeys: [key.publicLine], extraConfig: [`SetEnv XDG_CACHE_HOME=${cache}`] });
    configFile = writeClientConfig(
      join(dir, 'ssh'),
      {
        gpu: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${USER}`, `IdentityFile ${key.privateFile}`, 'IdentityAgent none'],
      },
      [sshd.knownHostsLine],
    ).configFile;
  });

  after(async () => {
    await Promise.all([sim?.stop(), stalled?.stop()]);
    await sshd?.stop();
  });

  function cli(args: string[]): Promise<{ code: number; stdout: string; stderr: string; ms: number }> {
    const started = Date.now();
    return new Promise((res) => {
      execFile(process.execPath, [resolve('dist/cli.js'), ...args], { env: { ...process.env, XDG_CACHE_HOME: cache } }, (err, stdout, stderr) =>
        res({ code: err ? Number((err as { code?: number }).code ?? -1) : 0, stdout, stderr, ms: Date.now() - started }),
      );
    });
  }

  function workspace(name: string): string {
    const ws = join(dir, name);
    mkdirSync(ws);
    return ws;
  }

  it('a wrong --python: says the interpreter was not found and how to name the right one (local and SSH)', async () => {
    for (const target of [
      ['--target', 'local'],
      ['--target', 'gpu', '--ssh-config', configFile],
    ]) {
      const r = await cli([
        'macro',
        ...target,
        '--python',
        '/opt/no-such-venv/bin/python3',
        '--url',
        sim.url,
        '--concurrency',
        '1',
        '--workspace',
        workspace(`python-${target[1]}`),
      ]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, /The Python interpreter "\/opt\/no-such-venv\/bin\/python3" was not found on (local|ssh gpu).*--python/);
      assert.doesNotMatch(r.stderr, /exit code 127; 0 events/);
    }
  });

  it('a frozen server: --request-timeout bounds each request, and a level whose requests all stall stops the run', async () => {
    const ws = workspace('stalled');
    const r = await cli([
      'macro',
      '--url',
      stalled.url,
      '--concurrency',
      '1,1,1',
      '--requests',
      '2',
      '--input-len',
      '16',
      '--output-len',
      '4',
      '--warmup',
      '0',
      '--request-timeout',
      '1.5',
      '--workspace',
      ws,
      '--out',
      join(ws, 'out.json'),
    ]);
    assert.equal(r.code, 1, r.stderr);
    // Two requests of 1.5 s, not three levels of them (nor 600 s each).
    assert.ok(r.ms < 20_000, `took ${r.ms} ms`);
    assert.match(
      r.stderr,
      /answered none in time: every request of c=1 stalled: each was unfinished after 1\.5 s.*raise --stall-timeout and --request-timeout/,
    );
    const out = JSON.parse(readFileSync(join(ws, 'out.json'), 'utf8')) as { levels: { failures: Record<string, number> }[] };
    assert.equal(out.levels.length, 1);
    assert.deepEqual(out.levels[0].failures, { timeout: 2 });
  });

  it('refuses a --findings file outside the workspace and leaves it as it was, before running anything', async () => {
    const ws = workspace('findings');
    const elsewhere = join(dir, 'someone-elses.md');
    writeFileSync(elsewhere, '# Not a findings document\n');
    for (const given of [elsewhere, '../someone-elses.md']) {
      const r = await cli(['macro', '--url', sim.url, '--concurrency', '1', '--workspace', ws, '--findings', given]);
      assert.equal(r.code, 2, r.stderr);
      assert.match(r.stderr, /--findings .*someone-elses\.md is outside the workspace .*nothing was written there.*--workspace/);
    }
    assert.equal(readFileSync(elsewhere, 'utf8'), '# Not a findings document\n');
    assert.equal(existsSync(join(ws, '.inference-bench')), false, 'a run was started');
  });
});
