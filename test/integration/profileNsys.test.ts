import * as assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { NsysBreakdown, placeOf } from '../../src/core/trace/nsysModules';
import { makeKey, startSshd, Sshd, writeClientConfig } from '../support/sshd';
import { listening, startUserServer, UserServer } from '../support/userServer';

// `infbench profile --profiler nsys` end to end over a real SSH connection (a private sshd on
// loopback) against the simulator mimicking vLLM 0.16: the server restarted under nsys after a yes
// that shows the exact command, the capture bounded by /start_profile and /stop_profile, the server
// stopped so that the report is written, the report exported and read on the host, the layer and
// module breakdown here, and the original put back.
//
// No Nsight Systems runs here (this machine has no GPU and no nsys): test/support/fake-nsys/nsys is
// a STAND-IN, given as the target's nsys, that runs the server as nsys does (a parent that forwards
// SIGTERM) and has the simulator write, at exit, the SQLite report of its profiled steps
// (simulator/sim_nsys.py, the schema of Nsight Systems 2025.3's exports). Its export copies it.

const USER = execFileSync('id', ['-un'], { encoding: 'utf8' }).trim();
const FAKE_NSYS = resolve('test/support/fake-nsys/nsys');
const LAYERS = 3;
// Every step the same length whatever its batch and prompt, so that the per-step answer is exact.
const TIMING = ['--layers', String(LAYERS), '--step-per-seq-ms', '0', '--prefill-per-token-ms', '0'];

/** The simulator's own statement of one step's kernel time per module path (ms): the known answer. */
function expectedModules(): Record<string, number> {
  const code = [
    'import json, sys',
    "sys.path.insert(0, 'simulator')",
    'import sim_nsys, sim_timing as tm',
    'm = tm.with_overrides(tm.PRESETS[tm.DEFAULT_PRESET].timing, None, 0.0, 0.0, None)',
    `print(json.dumps(sim_nsys.expected_modules(m, ${LAYERS}, 4)))`,
  ].join('\n');
  return JSON.parse(execFileSync('python3', ['-c', code], { encoding: 'utf8' })) as Record<string, number>;
}

describe('infbench profile --profiler nsys over SSH: restart under nsys, bounded capture, report read on the host, original put back', function () {
  this.timeout(180_000);
  const dir = mkdtempSync(join(tmpdir(), 'ib-nsys-'));
  const ws = join(dir, 'workspace');
  let sshd: Sshd;
  let configFile: string;
  let user: UserServer;

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
    user = await startUserServer(['--mimic', 'vllm-0.16', ...TIMING], mkdtempSync(join(dir, 'my-server-')), 30_000, {
      simulator: resolve('simulator/vllm_sim.py'),
    });
  });
  after(async () => {
    user?.kill();
    await sshd?.stop();
  });

  it('without a yes shows the exact nsys command and changes nothing', () => {
    const r = cli(['profile', '--profiler', 'nsys', '--nsys', FAKE_NSYS]);
    assert.equal(r.status, 1, r.stderr);
    assert.ok(r.stderr.includes(`${FAKE_NSYS} profile --trace=cuda,nvtx --cuda-graph-trace=node --sample=none`), r.stderr);
    assert.match(r.stderr, /--enable-layerwise-nvtx-tracing/);
    assert.match(r.stderr, /not agreed to/);
    assert.equal(listening(user.port)!.pid, user.original.pid, 'the original still serves');
  });

  it('where the host has no such nsys, says how to get it and leaves the server alone', () => {
    const r = cli(['profile', '--profiler', 'nsys', '--nsys', '/no/such/nsys', '--yes']);
    assert.equal(r.status, 1, r.stderr);
    assert.match(
      r.stderr,
      /Nsight Systems cannot profile the server on gpubox: The nsys set for this target \(\/no\/such\/nsys\) is not an executable file here/,
    );
    assert.match(r.stderr, /apt-get install nsight-systems-cli/);
    assert.equal(listening(user.port)!.pid, user.original.pid, 'the original still serves');
  });

  it("breaks the step down by layer and module as the simulator's timing model says, and puts the original back", () => {
    const r = cli([
      'profile',
      '--profiler',
      'nsys',
      '--nsys',
      FAKE_NSYS,
      '--yes',
      '--concurrency',
      '4',
      '--output-len',
      '12',
      '--json',
      '--findings',
      'findings.md',
    ]);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stderr, /the Nsight Systems report is written: \S+infbench-nsys\.nsys-rep \(\d+\.\d MB\)/);
    assert.match(r.stderr, /nsys export --type sqlite/);
    const out = JSON.parse(r.stdout) as { nsys: NsysBreakdown; overall: { categories: { category: string }[] } };
    const rank = out.nsys.ranks[0];
    // 12 tokens each: 13 steps when the 4 requests join in one step, one more for each step a late one joins after.
    assert.ok(rank.steps >= 13 && rank.steps <= 16, `${rank.steps} steps between /start_profile and /stop_profile`);

    const expected = new Map<string, number>();
    const perLayer = new Map<number, number>();
    for (const [path, ms] of Object.entries(expectedModules())) {
      const place = path.startsWith('(') ? { layer: null, type: path } : placeOf(path);
      expected.set(place.type, (expected.get(place.type) ?? 0) + ms);
      if (place.layer !== null) perLayer.set(place.layer, (perLayer.get(place.layer) ?? 0) + ms);
    }
    const got = new Map(rank.modules.filter((m) => m.module !== '(idle)').map((m) => [m.module, m.msPerStep]));
    assert.deepEqual([...got.keys()].sort(), [...expected.keys()].sort());
    for (const [type, ms] of expected) assert.ok(Math.abs(got.get(type)! - ms) <= Math.max(0.002, ms * 0.01), `${type}: ${got.get(type)} ms, expected ${ms}`);
    assert.deepEqual(
      rank.layers.map((l) => l.layer),
      [0, 1, 2],
    );
    for (const l of rank.layers) assert.ok(Math.abs(l.msPerStep - perLayer.get(l.layer)!) <= perLayer.get(l.layer)! * 0.01, `layer ${l.layer}`);
    assert.ok(out.overall.categories.length > 3, 'the kernel categories of the same steps, from the Kineto traces');

    // The original is back: the same command line, and nothing of nsys left running.
    const now = listening(user.port)!;
    assert.deepEqual(now.argv, user.original.argv);
    // The run folder holds the records and Kineto traces; the findings document the module table and its sentence.
    const runs = join(ws, '.inference-bench', 'runs');
    const run = readdirSync(runs).find((d) => d.includes('profile'))!;
    assert.ok(existsSync(join(runs, run, 'nsys-breakdown.json')));
    assert.ok(readdirSync(join(runs, run, 'nsys')).some((f) => f.endsWith('.records.jsonl')));
    const text = readFileSync(join(ws, 'findings.md'), 'utf8');
    assert.match(text, /by layer and module/);
    const top = [...expected.entries()].filter(([t]) => !t.startsWith('(')).sort((a, b) => b[1] - a[1])[0][0];
    assert.equal(rank.modules.filter((m) => m.module !== '(idle)')[0].module, top);
    assert.match(text, /take \d+(\.\d)?% of a decode step \([\d.]+ ms of [\d.]+ ms, \d+ steps\)/);
    assert.match(text, /\| module +\| ms per step \| % of step \| kernels per step \|/);
    assert.match(text, /\| layer \| ms per step \| % of step \| modules \(ms per step\) +\|/);
  });

  it('sets its kernel categories against the torch profile of the same server, within 3 points of kernel time', () => {
    const common = ['--yes', '--concurrency', '4', '--output-len', '12', '--findings', 'findings.md'];
    const torch = cli(['profile', '--restart-with-profiler', ...common]);
    assert.equal(torch.status, 0, torch.stderr);
    const r = cli(['profile', '--profiler', 'nsys', '--nsys', FAKE_NSYS, ...common]);
    assert.equal(r.status, 0, r.stderr);
    const runs = join(ws, '.inference-bench', 'runs');
    const [torchRun, nsysRun] = readdirSync(runs)
      .filter((d) => d.includes('profile'))
      .sort()
      .slice(-2);
    const out = JSON.parse(readFileSync(join(runs, nsysRun, 'result.json'), 'utf8')) as {
      agreement?: { torchRunId: string; maxDiffPoints: number; categories: { category: string }[] };
    };
    assert.equal(out.agreement?.torchRunId, torchRun, 'set against the torch profile just made of the same server');
    assert.ok(out.agreement!.maxDiffPoints <= 3, `${out.agreement!.maxDiffPoints} points apart`);
    assert.ok(out.agreement!.categories.length > 3);
    const text = readFileSync(join(ws, 'findings.md'), 'utf8');
    assert.match(
      text,
      new RegExp(
        `Against the torch profile of the same server configuration \\(run \`${torchRun}\`\\), the kernel categories agree within \\d+\\.\\d\\d points`,
      ),
    );
    assert.match(text, /\| category +\| nsys % \| torch % \| points apart \|/);
    assert.deepEqual(listening(user.port)!.argv, user.original.argv);
  });
});
