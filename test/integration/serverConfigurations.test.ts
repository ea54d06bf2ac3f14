import * as assert from 'node:assert/strict';
import { execFile, execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { RunMeta } from '../../src/core/runs/runFolder';
import { ConfigurationsCompared } from '../../src/core/server/configurationsCompared';
import { makeKey, startSshd, Sshd, writeClientConfig } from '../support/sshd';
import { listening, startUserServer, UserServer } from '../support/userServer';

// `infbench configs` over a real SSH connection (a private sshd on loopback) against a real server
// process the user started: the simulator mimicking vLLM 0.16, whose decode step is a flag of its
// command line, so each configuration's TPOT is known from the timing model. What the user checks:
// each configuration measured as it should be, the one that cannot start said, and the server's
// command line after the comparison the one it had before.

const pexec = promisify(execFile);
const USER = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
const PROMPT = 32;
const OUTPUT = 32;

/** The timing model's single-stream TPOT (ms) for a decode step of `baseMs` + 0.05 ms per running request. */
async function modelTpot(baseMs: number): Promise<number> {
  const py = [
    'import json, sys',
    "sys.path.insert(0, 'simulator')",
    'import sim_timing as tm',
    `m = tm.TimingModel(${baseMs}, 0.05, 0.002, 256)`,
    `print(json.dumps(tm.predict_single_stream(m, ${PROMPT}, ${OUTPUT})))`,
  ].join('\n');
  return (JSON.parse((await pexec('python3', ['-c', py])).stdout) as { tpot_ms: number }).tpot_ms;
}

describe('server configurations compared over SSH: each started, measured by the same workload, the original put back', function () {
  this.timeout(180_000);
  const dir = mkdtempSync(join(tmpdir(), 'ib-configs-'));
  let sshd: Sshd;
  let configFile: string;
  let user: UserServer | undefined;

  before(async () => {
    const key = makeKey(dir, 'client');
    sshd = await startSshd({ authorizedKeys: [key.publicLine] });
    configFile = writeClientConfig(
      join(dir, 'client-config'),
      { gpubox: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${USER}`, `IdentityFile ${key.privateFile}`, 'IdentityAgent none'] },
      [sshd.knownHostsLine],
    ).configFile;
  });
  after(async () => {
    user?.kill();
    await sshd?.stop();
  });

  it('measures each configuration as its flags make the server, says the one that does not start, and puts the original command line back', async () => {
    // The user's server, started from their shell: decode steps of 4 ms.
    user = await startUserServer([
      '--mimic',
      'vllm-0.16',
      '--startup-seconds',
      '1',
      '--step-base-ms',
      '4',
      '--step-per-seq-ms',
      '0.05',
      '--prefill-per-token-ms',
      '0.002',
    ]);
    const { url, port, original } = user;
    const workspace = join(dir, 'ws');
    mkdirSync(workspace);
    const out = join(workspace, 'configs.json');
    const child = spawn(
      process.execPath,
      [
        resolve('dist/cli.js'),
        'configs',
        '--target',
        'gpubox',
        '--ssh-config',
        configFile,
        '--url',
        url,
        '--workspace',
        workspace,
        '--config',
        'as-started:',
        '--config',
        'slow-steps: --step-base-ms 8',
        '--config',
        'bad-flag: --no-such-flag',
        '--concurrency',
        '1',
        '--requests',
        '6',
        '--input-len',
        String(PROMPT),
        '--output-len',
        String(OUTPUT),
        '--warmup',
        '1',
        // Each configuration judged on its own: 4 ms steps meet a 6 ms TPOT, 8 ms steps do not.
        '--slo',
        'tpot_p50<=6',
        '--yes',
        '--out',
        out,
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout!.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr!.on('data', (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number | null>((r) => child.on('exit', r));
    // One configuration was not measured: the command says so in its exit code.
    assert.equal(code, 1, stderr);
    // The consent showed every configuration's command, the user's server by its pid.
    assert.match(stderr, new RegExp(`pid ${original.pid}`));
    assert.match(stderr, /slow-steps: .*vllm_sim\.py.*--step-base-ms 8/);
    assert.match(stderr, /bad-flag: .*--no-such-flag/);
    // What each configuration changes, flag by flag, not "adds 8 / removes 4".
    assert.match(stderr, /slow-steps sets --step-base-ms 8 \(was 4\)/);
    assert.match(stderr, /bad-flag adds --no-such-flag/);
    const compared = JSON.parse(readFileSync(out, 'utf8')) as ConfigurationsCompared;
    assert.deepEqual(
      compared.configurations.map((c) => c.name),
      ['as-started', 'slow-steps', 'bad-flag'],
    );
    const [asStarted, slow, bad] = compared.configurations;
    for (const [c, baseMs] of [
      [asStarted, 4],
      [slow, 8],
    ] as const) {
      assert.equal(c.status, 'completed', c.error);
      const tpot = c.levels![0].median_tpot_ms as number;
      const want = await modelTpot(baseMs);
      assert.ok(Math.abs(tpot - want) <= want * 0.05 + 0.2, `${c.name}: TPOT ${tpot.toFixed(2)} ms, the timing model says ${want.toFixed(2)} ms`);
    }
    assert.match(asStarted.slo?.line ?? '', /^c=1 meets TPOT p50 ≤ 6 ms \(the highest load run\)$/);
    // The breaking figure is the measured one, which may read a hair either side of the 8 ms step (7.997 ms, say).
    const breaks = /^no load is shown to meet TPOT p50 ≤ 6 ms: c=1 already breaks TPOT p50 \(TPOT p50 (\d+\.\d+) ms against 6 ms\)$/.exec(slow.slo?.line ?? '');
    assert.ok(breaks, slow.slo?.line);
    const slowTpot = await modelTpot(8);
    assert.ok(Math.abs(Number(breaks[1]) - slowTpot) <= slowTpot * 0.05 + 0.2, `${breaks[1]} ms, the timing model says ${slowTpot.toFixed(2)} ms`);
    assert.match(stdout, /slow-steps \(configuration \w+\): .*\n(.*\n)? {2}SLO: no load is shown to meet TPOT p50/);
    // Each configuration's run carries its name and identity, as the server it measured was started.
    for (const c of [asStarted, slow]) {
      const meta = JSON.parse(readFileSync(join(workspace, '.inference-bench', 'runs', c.runId!, 'meta.json'), 'utf8')) as RunMeta;
      assert.equal(meta.configuration?.name, c.name);
      assert.equal(meta.configuration?.id, c.id);
      assert.match(meta.configuration?.id ?? '', /^[0-9a-f]{12}$/);
    }
    assert.notEqual(asStarted.id, slow.id);
    // The server's own words on why it did not start.
    assert.match(bad.error ?? '', /no-such-flag/);
    assert.equal(bad.levels, undefined);
    // The table: the slower configuration against the first, at the same load.
    assert.match(stdout, /TPOT vs as-started %/);
    // Put back: the same command line, started anew by the tool (the comparison restarted it).
    const after = listening(port);
    assert.ok(after, 'nothing serves the port after the comparison');
    assert.deepEqual(after.argv, original.argv);
    assert.notEqual(after.pid, original.pid);
  });
});
