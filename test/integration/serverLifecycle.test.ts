import * as assert from 'node:assert/strict';
import { execFileSync, spawn, spawnSync } from 'node:child_process';
import { closeSync, existsSync, mkdtempSync, openSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PhaseContext } from '../../src/core/campaign/phaseContext';
import { parseTarget, Target } from '../../src/core/config/target';
import { silentLogger } from '../../src/core/log';
import { runProfilePhase } from '../../src/core/phases/profile';
import { withProfilerServer, withServerStopped, withServerStoppedThenProfiler } from '../../src/core/server/phaseServer';
import {
  pendingServerChanges,
  ServerChange,
  ServerChangeRecord,
  ServerContext,
  ServerControlError,
  ServerProgress,
  ServerStep,
} from '../../src/core/server/serverChange';
import { bundledAgentPath, deployAgent } from '../../src/remote/agentDeploy';
import { ServerRecipe } from '../../src/remote/agentProtocol';
import { openTransport } from '../../src/remote/openTransport';
import { Transport } from '../../src/remote/transport';
import { freePort, makeKey, startSshd, Sshd, writeClientConfig } from '../support/sshd';
import { listening, processAsSeen, startUserServer, UserServer } from '../support/userServer';

// The server's lifecycle over a real SSH connection (a private sshd on loopback) against real
// processes: the simulator mimicking vLLM 0.16, started as a user would with a short start-up
// (weights, CUDA graphs, ready, in vLLM's words), adopted, stopped, restarted with the profiler and
// put back by the agent. What the user checks: the server's command line before and after.

const USER = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
const STARTUP_S = '1.5';

/** The simulator started as from the user's shell, its output into a log of its own (`> server.log 2>&1`): where a restart writes and the tool follows. */
function spawnUserServer(args: string[], log: string): void {
  const fd = openSync(log, 'a');
  spawn('python3', ['-u', 'simulator/vllm_sim.py', ...args], { stdio: ['ignore', fd, fd], detached: true }).unref();
  closeSync(fd);
}

async function health(url: string): Promise<number | undefined> {
  try {
    return (await fetch(`${url}/health`)).status;
  } catch {
    return undefined;
  }
}

describe('the server lifecycle over SSH: adopt, stop, restart with the profiler, restore', function () {
  this.timeout(120_000);
  const dir = mkdtempSync(join(tmpdir(), 'ib-server-'));
  let sshd: Sshd;
  let sshConfig: string;
  let transport: Transport;
  let ctx: ServerContext;
  let port: number;
  let url: string;
  let originalArgv: string[];

  before(async () => {
    const key = makeKey(dir, 'client');
    sshd = await startSshd({ authorizedKeys: [key.publicLine] });
    sshConfig = writeClientConfig(
      join(dir, 'client-config'),
      { gpubox: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${USER}`, `IdentityFile ${key.privateFile}`, 'IdentityAgent none'] },
      [sshd.knownHostsLine],
    ).configFile;
  });
  after(async () => sshd?.stop());

  beforeEach(async () => {
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    // The user's server: started outside the tool, in a session of its own, as from their shell.
    spawnUserServer(['--mimic', 'vllm-0.16', '--port', String(port), '--startup-seconds', STARTUP_S], join(dir, `server-${port}.log`));
    const deadline = Date.now() + 20_000;
    while ((await health(url)) !== 200) {
      if (Date.now() > deadline) throw new Error('the simulator did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    originalArgv = listening(port)!.argv;
    const target: Target = { name: 'gpubox', kind: 'ssh', host: 'gpubox', serverUrl: url, python: 'python3' };
    transport = await openTransport({ ...target, configFile: sshConfig, home: dir });
    const agent = await deployAgent(transport, bundledAgentPath(), target.python);
    ctx = { target, transport, agent, workspace: dir, log: silentLogger };
  });

  afterEach(async () => {
    await transport?.close();
    // Whatever serves the port now is this test's (the original or the tool's restart of it).
    const left = listening(port);
    if (left) process.kill(left.pid, 'SIGKILL');
  });

  it('stops the server for micro after a yes that shows the exact pid, and starts the same command again', async () => {
    const before = listening(port)!;
    const asked: ServerStep[] = [];
    const progress: ServerProgress[] = [];
    const { value: duringMicro, change } = await withServerStopped(
      ctx,
      'micro',
      {
        consent: async (step) => {
          asked.push(step);
          return true;
        },
        onProgress: (p) => progress.push(p),
      },
      async () => ({ health: await health(url), listening: listening(port) }),
    );
    assert.equal(asked.length, 1);
    assert.match(asked[0].commands[0], new RegExp(`^kill -TERM ${before.pid} `));
    assert.equal(duringMicro.health, undefined, 'nothing answers while micro runs');
    assert.equal(duringMicro.listening, undefined);

    const after = listening(port)!;
    assert.deepEqual(after.argv, originalArgv, 'the same command line runs again');
    assert.notEqual(after.pid, before.pid);
    assert.equal(await health(url), 200);
    // The start-up log came through in vLLM's words, stage by stage.
    assert.ok(progress.some((p) => p.line?.includes('Loading weights took')));
    for (const stage of ['stopped', 'starting', 'weights', 'cuda_graphs', 'ready'] as const)
      assert.ok(
        progress.some((p) => p.stage === stage),
        `no ${stage} stage`,
      );
    const record = JSON.parse(readFileSync(join(change.dir, 'change.json'), 'utf8')) as ServerChangeRecord;
    assert.equal(record.state, 'restored');
    assert.deepEqual(
      record.history.map((h) => h.state),
      ['adopted', 'stopping', 'stopped', 'restoring', 'starting', 'restored'],
    );
    assert.ok(existsSync(join(change.dir, 'original-recipe.json')));
  });

  it('leaves the server running when the stop is not agreed to', async () => {
    const before = listening(port)!;
    await assert.rejects(
      withServerStopped(ctx, 'micro', { consent: async () => false }, async () => assert.fail('micro ran without a yes')),
      (err: ServerControlError) => err.code === 'declined',
    );
    assert.equal(listening(port)!.pid, before.pid);
  });

  it('restarts with the profiler flag of vLLM 0.16, profiles through it, and puts the original back', async () => {
    let during: { argv: string[] } | undefined;
    let step: ServerStep | undefined;
    const { value: profile } = await withProfilerServer(
      ctx,
      'profile',
      {
        profilerDir: join(dir, 'traces'),
        consent: async (s) => {
          step = s;
          return true;
        },
      },
      async () => {
        during = listening(port);
        const phase: PhaseContext = { ...ctx, sink: { runChanged: () => undefined, findings: () => undefined } };
        return runProfilePhase(phase, { concurrency: 1, outputLen: 8 });
      },
    );
    const config = JSON.stringify({ profiler: 'torch', torch_profiler_dir: join(dir, 'traces') });
    assert.equal(step!.changes[0], `adds --profiler-config '${config}'`);
    assert.deepEqual(during!.argv, [...originalArgv, '--profiler-config', config], 'the server ran with the profiler flag');
    assert.equal(profile.summary.status, 'completed', profile.summary.reason);
    assert.ok(profile.traces.length > 0, 'traces were written by the restarted server');
    assert.deepEqual(listening(port)!.argv, originalArgv, 'the original command line is back');
    assert.equal(await health(url), 200);
  });

  it('Run All: stopped once for micro, started with the profiler after it (one start, not two), profiled, and the original put back', async () => {
    const before = listening(port)!;
    const asked: ServerStep[] = [];
    const {
      value: duringMicro,
      change,
      handedOver,
    } = await withServerStoppedThenProfiler(
      ctx,
      'micro, then profile',
      {
        profilerDir: join(dir, 'traces-after-micro'),
        consent: async (step) => {
          asked.push(step);
          return true;
        },
      },
      async () => ({ health: await health(url) }),
    );
    const config = JSON.stringify({ profiler: 'torch', torch_profiler_dir: join(dir, 'traces-after-micro') });
    assert.equal(asked.length, 1, 'one consent for the stop and the start with the profiler');
    assert.match(asked[0].commands[0], new RegExp(`^kill -TERM ${before.pid} `));
    assert.match(asked[0].commands[1], /--profiler-config/);
    assert.equal(duringMicro.health, undefined, 'nothing answers while micro runs');
    assert.equal(handedOver, true);
    assert.deepEqual(listening(port)!.argv, [...originalArgv, '--profiler-config', config], 'after micro the server runs with the profiler flag');
    // The profile run (another connection, as Run All's next phase) profiles it and restores the original.
    const phase: PhaseContext = { ...ctx, sink: { runChanged: () => undefined, findings: () => undefined } };
    const profile = await runProfilePhase(phase, { concurrency: 1, outputLen: 8 });
    assert.equal(profile.summary.status, 'completed', profile.summary.reason);
    await ServerChange.open(ctx, change.dir).restore();
    assert.deepEqual(listening(port)!.argv, originalArgv, 'the original command line is back');
    const record = JSON.parse(readFileSync(join(change.dir, 'change.json'), 'utf8')) as ServerChangeRecord;
    assert.deepEqual(
      record.history.map((h) => h.state),
      ['adopted', 'stopping', 'stopped', 'starting', 'changed', 'restoring', 'starting', 'restored'],
    );
  });

  it('Cancel during the restart stops the server being started, by the identity it started with, and puts the original back', async () => {
    const abort = new AbortController();
    let sawStart = false;
    await assert.rejects(
      withProfilerServer(
        ctx,
        'profile',
        {
          profilerDir: join(dir, 'traces'),
          signal: abort.signal,
          consent: async () => true,
          onProgress: (p) => {
            // The profiler server is loading its weights: the user presses Cancel.
            if (p.stage === 'weights' && !sawStart) {
              sawStart = true;
              abort.abort();
            }
          },
        },
        async () => assert.fail('the phase ran after Cancel'),
      ),
      (err: ServerControlError) => err.code === 'cancelled',
    );
    assert.ok(sawStart);
    assert.deepEqual(listening(port)!.argv, originalArgv);
    assert.equal(await health(url), 200);
    assert.deepEqual(pendingServerChanges(dir, 'gpubox'), [], 'nothing left to restore');
  });

  it('a start that fails on a bad flag says the log tail, and the original is put back', async () => {
    const { change } = await ServerChange.adopt(ctx, 'a bad flag');
    await change.stop();
    const bad: ServerRecipe = { ...change.record.original, argv: [...change.record.original.argv, '--no-such-flag'] };
    await assert.rejects(change.start(bad), (err: ServerControlError) => {
      assert.equal(err.code, 'server_start_failed');
      assert.match(err.message, /exited with code 2 while starting/);
      assert.match(err.message, /unrecognized arguments: --no-such-flag/);
      return true;
    });
    await change.restore();
    assert.deepEqual(listening(port)!.argv, originalArgv);
  });

  it('a server under a manager the tool does not drive: the command is said, and the tool waits until the user has run it', async () => {
    const { change } = await ServerChange.adopt(ctx, 'micro');
    await change.stop();
    // As if the server were a container seen from the host: the agent does not start it, it says how.
    const inContainer: ServerRecipe = { ...change.record.original, manager: { kind: 'docker', container: '0123456789ab' } };
    let said = '';
    let userStarted: number | undefined;
    const started = await change.start(inContainer, {
      onProgress: (p) => {
        if (!said && /docker start 0123456789ab/.test(p.message)) {
          said = p.message;
          // The user runs it (here: the same command line, by hand).
          const proc = spawn(originalArgv[0], originalArgv.slice(1), { stdio: 'ignore', detached: true });
          proc.unref();
          userStarted = proc.pid;
        }
      },
    });
    assert.match(said, /Waiting for the server to answer/);
    assert.equal(started.recipe?.identity?.pid, userStarted, 'the server the user started is adopted as it runs');
    assert.deepEqual(listening(port)!.argv, originalArgv);
  });

  it('a connection lost after the stop leaves a record, and the next connection restores from it', async () => {
    const { change } = await ServerChange.adopt(ctx, 'micro');
    await change.stop();
    await transport.close();
    assert.equal(listening(port), undefined);

    const pending = pendingServerChanges(dir, 'gpubox');
    assert.equal(pending.length, 1);
    assert.equal(pending[0].record.state, 'stopped');
    transport = await openTransport({ ...ctx.target, configFile: sshConfig, home: dir } as Target & { configFile: string; home: string });
    const agent = await deployAgent(transport, bundledAgentPath(), 'python3');
    await ServerChange.open({ ...ctx, transport, agent }, pending[0].dir).restore();
    assert.deepEqual(listening(port)!.argv, originalArgv);
    assert.deepEqual(pendingServerChanges(dir, 'gpubox'), []);
  });
});

describe('infbench server and the phases’ server flags (local target)', function () {
  this.timeout(180_000);
  const ws = mkdtempSync(join(tmpdir(), 'ib-server-cli-'));
  let port: number;
  let url: string;
  let originalArgv: string[];

  function cli(args: string[]) {
    return spawnSync('node', ['dist/cli.js', ...args, '--target', 'local', '--python', 'python3', '--url', url, '--workspace', ws], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }

  beforeEach(async () => {
    port = await freePort();
    url = `http://127.0.0.1:${port}`;
    spawnUserServer(['--mimic', 'vllm-0.16', '--port', String(port), '--startup-seconds', STARTUP_S], join(ws, `server-${port}.log`));
    const deadline = Date.now() + 20_000;
    while ((await health(url)) !== 200) {
      if (Date.now() > deadline) throw new Error('the simulator did not start');
      await new Promise((r) => setTimeout(r, 100));
    }
    originalArgv = listening(port)!.argv;
  });

  afterEach(() => {
    const left = listening(port);
    if (left) process.kill(left.pid, 'SIGKILL');
  });

  it('shows the exact commands and changes nothing without a yes', () => {
    const before = listening(port)!;
    const r = cli(['server', 'restart', '--with-profiler', 'auto']);
    assert.equal(r.status, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`\\$ kill -TERM ${before.pid} `));
    assert.match(r.stderr, /adds --profiler-config '\{"profiler":"torch","torch_profiler_dir":"[^']+"\}'/);
    assert.match(r.stderr, /Pass --yes to agree/);
    assert.equal(listening(port)!.pid, before.pid, 'still the same process');
  });

  it('restarts with the profiler on --yes, and `restore` puts the same command line back', () => {
    const status = cli(['server', 'status']);
    assert.equal(status.status, 0, status.stderr);
    assert.match(status.stdout, /Server at .*: vllm 0\.16\.0, pid \d+/);
    assert.match(status.stdout, /Run by: process/);
    const restart = cli(['server', 'restart', '--with-profiler', 'auto', '--yes']);
    assert.equal(restart.status, 0, restart.stderr);
    assert.match(restart.stderr, /\| INFO .*Loading weights took/);
    const during = listening(port)!.argv;
    assert.deepEqual(during.slice(0, originalArgv.length), originalArgv);
    assert.equal(during[originalArgv.length], '--profiler-config');
    // Another phase now says the server is not as it was, and how to put it back.
    const again = cli(['server', 'status']);
    assert.match(again.stderr, /was changed for infbench server restart and not put back .*infbench server restore --target local/);
    const restore = cli(['server', 'restore', '--yes']);
    assert.equal(restore.status, 0, restore.stderr);
    assert.deepEqual(listening(port)!.argv, originalArgv);
  });

  it('restart --recipe FILE starts the recipe the user wrote, over the adopted environment', async () => {
    const file = join(ws, 'recipe.json');
    const edited = [...originalArgv, '--served-model-name', 'edited-by-user'];
    writeFileSync(file, JSON.stringify({ argv: edited, env: { VLLM_LOGGING_LEVEL: 'DEBUG' } }));
    const r = cli(['server', 'restart', '--recipe', file, '--yes']);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /adds --served-model-name edited-by-user/);
    assert.match(r.stderr, /sets VLLM_LOGGING_LEVEL=DEBUG/);
    assert.deepEqual(listening(port)!.argv, edited);
    const models = (await (await fetch(`${url}/v1/models`)).json()) as { data: { id: string }[] };
    assert.equal(models.data[0].id, 'edited-by-user');
    const env = readFileSync(`/proc/${listening(port)!.pid}/environ`, 'utf8').split('\0');
    assert.ok(env.includes('VLLM_LOGGING_LEVEL=DEBUG'));
    assert.ok(
      env.some((e) => e.startsWith('PATH=')),
      "the adopted environment is kept under the user's variables",
    );
  });

  it('profile --restart-with-profiler captures a bounded steady state (delay and max iterations) and puts the original back', () => {
    const r = cli([
      'profile',
      '--restart-with-profiler',
      '--profiler-delay-iterations',
      '4',
      '--profiler-max-iterations',
      '6',
      '--yes',
      '--concurrency',
      '1',
      '--output-len',
      '16',
      '--json',
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(
      r.stderr,
      /adds --profiler-config '\{"profiler":"torch","torch_profiler_dir":"[^"]+","delay_iterations":4,"max_iterations":6,"ignore_frontend":true\}'/,
    );
    const breakdown = JSON.parse(r.stdout) as { ranks: { prefill: { count: number }; decode: { count: number } }[] };
    // 16 steps ran (1 prefill, 15 decode): the first 4 skipped, the next 6 recorded — decode steps only.
    for (const rank of breakdown.ranks) {
      assert.equal(rank.prefill.count, 0);
      assert.equal(rank.decode.count, 6);
    }
    assert.deepEqual(listening(port)!.argv, originalArgv);
  });

  it('a recipe setting with no command line is refused with the field named, before anything runs', () => {
    assert.throws(
      () => parseTarget({ name: 'gpubox', host: 'gpubox', serverRecipe: { cwd: '/srv' } }),
      /inferenceBench\.targets "gpubox": "serverRecipe": a server recipe needs "argv"/,
    );
  });

  (existsSync('/usr/bin/python3') ? it : it.skip)('micro --stop-server measures with the server stopped and starts it again', () => {
    const before = listening(port)!;
    const r = spawnSync(
      'node',
      [
        'dist/cli.js',
        'micro',
        '--stop-server',
        '--yes',
        '--target',
        'local',
        '--python',
        '/usr/bin/python3',
        '--url',
        url,
        '--workspace',
        ws,
        '--shape',
        'tiny=64x64',
        '--m',
        '1',
        '--skip',
        'allreduce,launch,peak',
        '--device',
        'cpu',
        '--repeats',
        '1',
        '--json',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, new RegExp(`kill -TERM ${before.pid} `));
    assert.match(r.stderr, /server: stopped: pid \d+ ended after [\d.]+ s\n/);
    const result = JSON.parse(r.stdout) as { points: { kind: string }[] };
    assert.ok(result.points.some((p) => p.kind === 'gemm'));
    const after = listening(port)!;
    assert.notEqual(after.pid, before.pid);
    assert.deepEqual(after.argv, originalArgv);
  });
});

/** A shell's environment of about 35 variables: a site's own settings, a secret, and what a login sets. */
function siteEnvironment(): Record<string, string> {
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    HOME: process.env.HOME ?? '/root',
    USER,
    LOGNAME: USER,
    SHELL: '/bin/bash',
    LANG: 'C.UTF-8',
    TERM: 'xterm-256color',
    SITE_SETTING: 'abc',
    SITE_QUEUE: 'batch-7',
    SITE_NOTE: "two words; it's $quoted",
    HF_TOKEN: `hf_${'q9w8e7r6'.repeat(4)}`,
    VLLM_LOGGING_LEVEL: 'INFO',
    CUDA_DEVICE_ORDER: 'PCI_BUS_ID',
  };
  for (let i = 0; i < 19; i++) env[`LAB_VAR_${String(i).padStart(2, '0')}`] = `value ${i}`;
  return env;
}

describe('the original server put back exactly, through infbench over SSH: command line, folder, whole environment, log file', function () {
  this.timeout(180_000);
  const dir = mkdtempSync(join(tmpdir(), 'ib-exact-'));
  const ws = join(dir, 'workspace');
  let sshd: Sshd;
  let configFile: string;
  let user: UserServer;
  let folder: string;

  function cli(args: string[]) {
    return spawnSync('node', ['dist/cli.js', ...args, '--target', 'gpubox', '--ssh-config', configFile, '--url', user.url, '--workspace', ws], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'pipe'],
    });
  }

  before(async () => {
    const key = makeKey(dir, 'client');
    sshd = await startSshd({ authorizedKeys: [key.publicLine] });
    configFile = writeClientConfig(
      join(dir, 'client-config'),
      { gpubox: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${USER}`, `IdentityFile ${key.privateFile}`, 'IdentityAgent none'] },
      [sshd.knownHostsLine],
    ).configFile;
    // The user's server in its own folder, from a shell with its own environment: `python3 -u .../vllm_sim.py ... > its-own.log 2>&1`.
    folder = mkdtempSync(join(dir, 'my-server-'));
    user = await startUserServer(['--mimic', 'vllm-0.16', '--startup-seconds', STARTUP_S], folder, 30_000, {
      env: siteEnvironment(),
      log: join(folder, 'its-own.log'),
      simulator: resolve('simulator/vllm_sim.py'),
    });
  });
  after(async () => {
    user?.kill();
    await sshd?.stop();
  });

  it('restarts with the profiler and restores: the same cmdline, cwd, environ and fd targets; the restore shown in full before it runs', () => {
    const before = processAsSeen(user.original.pid);
    assert.ok(before.environ.length >= 35, `the shell gave ${before.environ.length} variables`);
    assert.equal(before.fd1, join(folder, 'its-own.log'));

    const restart = cli(['server', 'restart', '--with-profiler', 'auto', '--yes']);
    assert.equal(restart.status, 0, restart.stderr);
    // Its start-up log followed from the user's own file, while the tool waited for it.
    assert.match(restart.stderr, /\| INFO .*Loading weights took/);
    const variant = processAsSeen(listening(user.port)!.pid);
    assert.deepEqual(variant.environ, before.environ, 'the profiler restart has the original environment (its change is a flag)');
    assert.deepEqual([variant.fd1, variant.fd2], [before.fd1, before.fd2], 'and writes to the same log');
    assert.deepEqual(variant.cmdline.slice(0, before.cmdline.length), before.cmdline);

    // Without --yes and with no terminal: the restore is shown, and nothing is done.
    const shown = cli(['server', 'restore']);
    assert.equal(shown.status, 1, shown.stderr);
    const log = join(folder, 'its-own.log');
    const start = shown.stderr.split('\n').find((l) => l.includes(`cd ${folder} && `));
    assert.ok(start, `the start command with its folder:\n${shown.stderr}`);
    assert.ok(start.endsWith(`setsid ${before.cmdline.join(' ')} >> ${log} 2>&1`), start);
    assert.match(start, / SITE_SETTING=abc /, 'the site variable the shell on the host lacks');
    assert.match(start, / HF_TOKEN=REDACTED /, 'a secret, filled in on the host');
    assert.match(shown.stderr, new RegExp(`\\$ kill -TERM ${listening(user.port)!.pid} `));
    assert.match(shown.stderr, /the original: environment: all \d+ variables the process had/);
    assert.match(shown.stderr, new RegExp(`the original: stdout and stderr: appended to the file ${log}, as before`));
    assert.match(shown.stderr, /Pass --yes to agree/);
    assert.deepEqual(processAsSeen(listening(user.port)!.pid), variant, 'nothing was done without a yes');

    const restore = cli(['server', 'restore', '--yes']);
    assert.equal(restore.status, 0, restore.stderr);
    const after = listening(user.port)!;
    assert.notEqual(after.pid, user.original.pid);
    const seen = processAsSeen(after.pid);
    assert.deepEqual(
      seen.environ.filter((e) => !before.environ.includes(e)),
      [],
      'no variable the original did not have',
    );
    assert.deepEqual(
      before.environ.filter((e) => !seen.environ.includes(e)),
      [],
      'every variable the original had',
    );
    assert.deepEqual(seen, before);
    // Three start-ups in the user's log: the original's lines kept, the others appended.
    assert.equal(readFileSync(log, 'utf8').split('Loading weights took').length - 1, 3);
    // The secret stayed on the host: nothing in the workspace holds it.
    const kept = readdirSync(join(ws, '.inference-bench', 'server'), { recursive: true, withFileTypes: true })
      .filter((e) => e.isFile())
      .map((e) => readFileSync(join(e.parentPath ?? (e as unknown as { path: string }).path, e.name), 'utf8'));
    assert.ok(kept.length > 0);
    assert.ok(!kept.some((text) => text.includes('q9w8e7r6')), 'the token is not in the change records');
  });
});
