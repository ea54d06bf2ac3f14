import * as assert from 'node:assert/strict';
import { ChildProcess, execFileSync, spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { RunningSimulator, startSimulator } from '../../src/core/macro/simulator';
import { KeyPair, makeKey, sshdSessionTree, startSshd, Sshd, writeClientConfig } from '../support/sshd';
import { waitFor } from '../support/waitFor';

// Every way the CLI can be stopped mid-run, against a real OpenSSH sshd on loopback: Ctrl-C,
// SIGTERM (a CI timeout), SIGHUP (a closed terminal) and a network path that dies without a word.
// Each must mark the run, keep what was measured, and leave no process on the host, which `ps`
// checks afterwards (the host is this machine: the sshd listens on 127.0.0.1).
const USER = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();

function pgrep(pattern: string): number[] {
  const r = spawnSync('pgrep', ['-f', pattern], { encoding: 'utf8' });
  return r.stdout
    .trim()
    .split('\n')
    .filter(Boolean)
    .map(Number)
    .filter((pid) => pid !== process.pid);
}

interface CliRun {
  child: ChildProcess;
  stderr: () => string;
  exited: Promise<{ code: number | null; signal: string | null }>;
}

describe('stopping the CLI mid-run over SSH', function () {
  this.timeout(90_000);
  const dir = mkdtempSync(join(tmpdir(), 'ib-cli-stop-'));
  const cache = join(dir, 'cache');
  let key: KeyPair;
  let sshd: Sshd;
  let sim: RunningSimulator;
  let profiling: RunningSimulator;
  let configFile: string;

  before(async () => {
    assert.ok(existsSync('dist/cli.js') && existsSync('dist/agent.pyz'), 'dist/ is missing: run `npm run build` first');
    mkdirSync(cache, { mode: 0o700 });
    key = makeKey(dir, 'client_ed25519');
    sshd = await startSshd({ authorizedKeys: [key.publicLine], extraConfig: [`SetEnv XDG_CACHE_HOME=${cache}`] });
    // A short keepalive, so that the CLI notices a dead path in seconds rather than a minute.
    configFile = writeClientConfig(
      join(dir, 'ssh'),
      {
        gpu: [
          'HostName 127.0.0.1',
          `Port ${sshd.port}`,
          `User ${USER}`,
          `IdentityFile ${key.privateFile}`,
          'IdentityAgent none',
          'ServerAliveInterval 1',
          'ServerAliveCountMax 2',
        ],
      },
      [sshd.knownHostsLine],
    ).configFile;
    sim = await startSimulator({ port: 0 });
    profiling = await startSimulator({ port: 0, profilerDir: join(dir, 'traces') });
  });

  after(async () => {
    await sim?.stop();
    await profiling?.stop();
    await sshd?.stop();
  });

  /** `infbench <phase>` on the SSH target; each run gets its own workspace. */
  function cli(workspace: string, args: string[], url = sim.url): CliRun {
    const child = spawn(
      process.execPath,
      [resolve('dist/cli.js'), ...args, '--target', 'gpu', '--ssh-config', configFile, '--url', url, '--workspace', workspace],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stderr = '';
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    child.stdout!.resume();
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => child.on('exit', (code, signal) => r({ code, signal })));
    return { child, stderr: () => stderr, exited };
  }

  /** A macro run of many short levels; resolves once the first level is printed. */
  async function macroUnderway(name: string) {
    const workspace = join(dir, name);
    mkdirSync(workspace);
    const out = join(workspace, 'out.json');
    const run = cli(workspace, [
      'macro',
      '--concurrency',
      Array(40).fill(1).join(','),
      '--requests',
      '3',
      '--input-len',
      '16',
      '--output-len',
      '16',
      '--warmup',
      '0',
      '--out',
      out,
    ]);
    await waitFor('the first level finished', () => /c=1: 3 ok/.test(run.stderr()), 30_000);
    return { ...run, workspace, out };
  }

  function runFolder(workspace: string): { meta: { status: string; reason?: string }; result?: { levels: unknown[] } } {
    const root = join(workspace, '.inference-bench', 'runs');
    const [id] = readdirSync(root);
    const resultFile = join(root, id, 'result.json');
    return {
      meta: JSON.parse(readFileSync(join(root, id, 'meta.json'), 'utf8')) as { status: string; reason?: string },
      result: existsSync(resultFile) ? (JSON.parse(readFileSync(resultFile, 'utf8')) as { levels: unknown[] }) : undefined,
    };
  }

  /** The agent of this test's simulator, as ps on the host lists it. */
  const agentProcesses = () => pgrep(`agent-[0-9a-f]+\\.pyz .*macro --url ${sim.url}`);

  function assertStoppedCleanly(run: CliRun & { workspace: string; out: string }, status: string, reason: RegExp) {
    assert.doesNotMatch(run.stderr(), /\n\s+at .*\(.*:\d+:\d+\)|SshError|Unhandled|uncaught/i, `a stack trace or crash on stderr:\n${run.stderr()}`);
    const { meta, result } = runFolder(run.workspace);
    assert.equal(meta.status, status, meta.reason);
    assert.match(meta.reason ?? '', reason);
    assert.ok((result?.levels.length ?? 0) >= 1, 'result.json keeps the finished levels');
    const out = JSON.parse(readFileSync(run.out, 'utf8')) as { levels: unknown[] };
    assert.equal(out.levels.length, result!.levels.length, '--out holds what result.json holds');
    assert.deepEqual(agentProcesses(), [], 'ps on the host still lists the agent');
    assert.deepEqual(readdirSync(join(cache, 'inference-bench', 'runs')), [], 'a process-group record is left behind');
  }

  it('Ctrl-C: cancelled, exit 130, the levels kept, nothing left on the host', async () => {
    const run = await macroUnderway('sigint');
    run.child.kill('SIGINT');
    const { code } = await run.exited;
    assert.equal(code, 130, run.stderr());
    assertStoppedCleanly(run, 'cancelled', /Cancelled .*kept/);
  });

  it('Ctrl-C of profile: cancelled, exit 130, no crash, nothing left on the host', async () => {
    const workspace = join(dir, 'profile-sigint');
    mkdirSync(workspace);
    // A decode workload of about half a minute, so that Ctrl-C lands while the server profiles.
    const run = cli(workspace, ['profile', '--concurrency', '2', '--output-len', '1500'], profiling.url);
    await waitFor('the profiled workload started', () => /profile: .*(profil|decode|workload)/i.test(run.stderr()), 30_000);
    await new Promise((r) => setTimeout(r, 1000));
    run.child.kill('SIGINT');
    const { code } = await run.exited;
    assert.equal(code, 130, run.stderr());
    assert.doesNotMatch(run.stderr(), /\n\s+at .*\(.*:\d+:\d+\)|SshError|Unhandled|uncaught/i, `a stack trace or crash on stderr:\n${run.stderr()}`);
    assert.equal(runFolder(workspace).meta.status, 'cancelled');
    assert.deepEqual(pgrep(`agent-[0-9a-f]+\\.pyz .*profile --url ${profiling.url}`), [], 'ps on the host still lists the agent');
    assert.deepEqual(readdirSync(join(cache, 'inference-bench', 'runs')), [], 'a process-group record is left behind');
  });

  it('SIGTERM (a CI timeout): interrupted, exit 143, the levels and --out written, nothing left on the host', async () => {
    const run = await macroUnderway('sigterm');
    run.child.kill('SIGTERM');
    const { code } = await run.exited;
    assert.equal(code, 143, run.stderr());
    assertStoppedCleanly(run, 'interrupted', /SIGTERM.*kept/);
  });

  it('SIGHUP (the terminal closed): interrupted, exit 129, the levels and --out written, nothing left on the host', async () => {
    const run = await macroUnderway('sighup');
    run.child.kill('SIGHUP');
    const { code } = await run.exited;
    assert.equal(code, 129, run.stderr());
    assertStoppedCleanly(run, 'interrupted', /SIGHUP.*kept/);
  });

  it('a network path that dies: the run is marked interrupted and the agent on the host stops by itself', async () => {
    const run = await macroUnderway('partition');
    // Freeze the sshd processes of this connection: nothing is lost or closed, nothing arrives,
    // as when a link dies between the two machines. The listener too, so that no reconnect gets through.
    const frozen = sshdSessionTree(sshd);
    for (const pid of [sshd.process.pid!, ...frozen]) process.kill(pid, 'SIGSTOP');
    const stoppedAt = Date.now();
    try {
      const { code } = await run.exited;
      assert.equal(code, 1, run.stderr());
      assert.ok(Date.now() - stoppedAt < 15_000, `the CLI took ${Date.now() - stoppedAt} ms to give up`);
      const { meta, result } = runFolder(run.workspace);
      assert.equal(meta.status, 'interrupted');
      assert.match(meta.reason ?? '', /dropped/);
      assert.ok((result?.levels.length ?? 0) >= 1, 'result.json keeps the finished levels');
      assert.ok(agentProcesses().length > 0, `the agent on the host outlived the connection (or the test did not cut it): ${run.stderr()}`);
      // The agent hears nothing from its controller and stops itself, within seconds.
      await waitFor('the agent stopped by itself', () => agentProcesses().length === 0, 25_000);
    } finally {
      for (const pid of frozen) process.kill(pid, 'SIGKILL');
      process.kill(sshd.process.pid!, 'SIGCONT');
      for (const pid of agentProcesses()) process.kill(pid, 'SIGKILL');
    }
  });
});
