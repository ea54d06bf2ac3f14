import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { PhaseContext } from '../../src/core/campaign/phaseContext';
import { Target } from '../../src/core/config/target';
import { silentLogger } from '../../src/core/log';
import { microAgentArgs, MicroOptionsError } from '../../src/core/micro/options';
import { MicroPoint, microHeadline, microTables } from '../../src/core/micro/tables';
import { decodePoint } from '../../src/core/phases/collectives';
import { runMicroPhase } from '../../src/core/phases/micro';
import { CollectivePlan } from '../../src/remote/agentProtocol';
import { RunFolder } from '../../src/core/runs/runFolder';
import { bundledAgentPath, deployAgent } from '../../src/remote/agentDeploy';
import { openTransport } from '../../src/remote/openTransport';
import { RunSummary } from '../../src/shared/results';
import { makeKey, startSshd, Sshd, writeClientConfig } from '../support/sshd';

// The CPU runs use Debian's interpreter, which has python3-torch (scripts/setup-test-env.sh installs it),
// the way a user names the server's Python in a target.
const TORCH_PYTHON = process.env.INFBENCH_TORCH_PYTHON ?? '/usr/bin/python3';
const HAS_TORCH = spawnSync(TORCH_PYTHON, ['-c', 'import torch'], { encoding: 'utf8' }).status === 0;
const FIXTURES = resolve('test/fixtures/micro');
const FAKE_SMI = resolve('test/support/fake-nvidia-smi');
const USER = spawnSync('id', ['-un'], { encoding: 'utf8' }).stdout.trim();

function fixturePoints(file: string): MicroPoint[] {
  return readFileSync(join(FIXTURES, file), 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((l) => JSON.parse(l))
    .filter((e) => e.type === 'micro.point')
    .map((e) => ({ ...e.point, kind: e.kind }));
}

describe('micro phase', function () {
  this.timeout(120_000);

  describe('cluster collectives on one H200 (world size 1, NCCL), Kimi-K2.5 sizes', () => {
    const events = (file: string) =>
      readFileSync(join(FIXTURES, file), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l));
    const plan = events('h200-collective-ws1.plan.jsonl').find((e) => e.type === 'result').result.plan as CollectivePlan;
    const points = events('h200-collective-ws1.events.jsonl')
      .filter((e) => e.type === 'micro.point')
      .map((e) => decodePoint(e.kind, e.point, plan));
    const byId = new Map(microTables(points, { model: plan }).map((t) => [t.id, t]));

    it('times the all-to-all eager and from a CUDA graph at each decode size, and the all-reduce eager only', () => {
      const a2a = byId.get('micro-alltoall-intra-node')!;
      assert.equal(a2a.title, 'All-to-all within one host (nccl, 1 process, bf16)');
      // ceil(M / 1) tokens x top-8 x 7168 x 2 bytes: one row per M, the graph time under the eager one.
      assert.deepEqual(
        a2a.rows.map((r) => r.bytes),
        plan.m.map((m) => m * 8 * 7168 * 2),
      );
      for (const row of a2a.rows) {
        assert.ok((row.graph_us as number) < (row.eager_us as number), `graph ${row.graph_us} < eager ${row.eager_us}`);
        assert.equal(row.busbw, 0);
      }
      const ar = byId.get('micro-allreduce-intra-node')!;
      assert.ok(ar.rows.every((r) => r.graph_us === undefined && typeof r.eager_us === 'number'));
    });

    it('budgets 2 all-reduces per layer against 2 all-to-alls per MoE layer at each M', () => {
      const budget = byId.get('micro-ep-budget')!;
      assert.equal(budget.rows.length, plan.m.length);
      const arAt = (m: number) => points.find((p) => p.kind === 'allreduce' && p.m === m && p.mode === 'eager')!.us as number;
      const a2aAt = (m: number) => points.find((p) => p.kind === 'alltoall' && p.m === m && p.mode === 'graph')!.us as number;
      for (const row of budget.rows) {
        const m = row.m as number;
        assert.equal(row.tp_ms, (2 * 61 * arAt(m)) / 1000);
        assert.equal(row.ep_ms, (2 * 60 * a2aAt(m)) / 1000);
      }
    });
  });

  describe('tables from a real H200 run (Kimi-K2.5 shapes at TP=8)', () => {
    const points = fixturePoints('h200-kimi-k2.5-tp8.events.jsonl');
    const tables = microTables(points);
    const byId = new Map(tables.map((t) => [t.id, t]));

    it('has one GEMM row per shape and one column per M, with the expert split of TP=8', () => {
      const time = byId.get('micro-gemm-us')!;
      const shapes = [...new Set(points.filter((p) => p.kind === 'gemm').map((p) => p.shape))];
      assert.equal(time.rows.length, shapes.length);
      assert.deepEqual(
        time.columns.slice(2).map((c) => c.label),
        ['M=1', 'M=2', 'M=4', 'M=8', 'M=16', 'M=32', 'M=64', 'M=128', 'M=256'],
      );
      const gateUp = time.rows.find((r) => r.shape === 'moe.gate_up')!;
      assert.equal(gateUp.nk, '512×7168');
      assert.equal(time.rows.find((r) => r.shape === 'moe.down')!.nk, '7168×256');
      const measured = points.find((p) => p.kind === 'gemm' && p.shape === 'moe.gate_up' && p.m === 1)!;
      assert.equal(gateUp.m1, measured.us);
    });

    it('reads the percent of peak against the measured copy bandwidth', () => {
      const copy = points.find((p) => p.kind === 'peak' && p.what === 'copy')!;
      const lmHead = points.find((p) => p.kind === 'gemm' && p.shape === 'lm_head' && p.m === 1)!;
      const pct = (100 * (lmHead.tbps as number)) / (copy.tbps as number);
      const cell = byId.get('micro-gemm-bw')!.rows.find((r) => r.shape === 'lm_head')!.m1 as string;
      assert.equal(cell, `${(lmHead.tbps as number).toFixed(2)} (${pct.toFixed(0)}%)`);
      // First principles: a 294 MB weight read at M=1 is memory-bound, near the copy bandwidth.
      assert.ok(pct > 80, `lm_head M=1 at ${pct}% of copy bandwidth`);
    });

    it('headlines the expert GEMM at M=1 and launch overhead eager vs graph', () => {
      const gateUp = points.find((p) => p.kind === 'gemm' && p.shape === 'moe.gate_up' && p.m === 1)!;
      const eager = points.find((p) => p.kind === 'launch' && p.mode === 'eager')!;
      const graph = points.find((p) => p.kind === 'launch' && p.mode === 'graph')!;
      assert.equal(
        microHeadline(points),
        `moe.gate_up M=1: ${(gateUp.us as number).toFixed(1)} µs, ${(gateUp.pct_peak_bw as number).toFixed(0)}% of peak bandwidth · ` +
          `launch ${(eager.us_per_kernel as number).toFixed(1)} µs eager vs ${(graph.us_per_kernel as number).toFixed(1)} µs per kernel from a CUDA graph`,
      );
      assert.ok((eager.us_per_kernel as number) > 3 * (graph.us_per_kernel as number));
    });

    it('tables no all-reduce from one process, which reduces with nobody', () => {
      assert.ok(points.some((p) => p.kind === 'allreduce' && p.world_size === 1));
      assert.equal(byId.get('micro-allreduce'), undefined);
    });
  });

  describe('options', () => {
    it('turns options into the agent command line and names a bad option', () => {
      assert.deepEqual(microAgentArgs({ model: 'kimi-k2.5', tp: 8, m: [1, 8, 64], allowBusy: true, skip: ['allreduce'] }), [
        '--model',
        'kimi-k2.5',
        '--tp',
        '8',
        '--m',
        '1,8,64',
        '--allow-busy',
        '--skip',
        'allreduce',
      ]);
      assert.throws(() => microAgentArgs({ shapes: ['gate_up=512'] }), MicroOptionsError);
      assert.throws(() => microAgentArgs({ m: [0] }), /positive whole number/);
      // No model: the agent asks the server which one it serves.
      assert.deepEqual(microAgentArgs({ m: [1] }, 'http://127.0.0.1:8000').slice(0, 2), ['--server-url', 'http://127.0.0.1:8000']);
    });
  });

  describe('infbench micro', () => {
    it('refuses busy GPUs with the numbers and the server processes, before touching them', () => {
      const ws = mkdtempSync(join(tmpdir(), 'ib-micro-busy-'));
      const r = spawnSync(
        'node',
        ['dist/cli.js', 'micro', '--target', 'local', '--python', 'python3', '--model', 'kimi-k2.5', '--tp', '8', '--workspace', ws],
        { encoding: 'utf8', env: { ...process.env, PATH: `${FAKE_SMI}:${process.env.PATH}` } },
      );
      assert.equal(r.status, 3, r.stderr);
      assert.match(r.stderr, /The GPUs are busy: GPU 0: 127\.0 of 140\.4 GiB used \(90%\)/);
      assert.match(r.stderr, /pid 424242 VLLM::Worker_TP0/);
      // The remedies in the CLI's words: the command line and the flag, in their places in the hint.
      assert.match(r.stderr, /\(`infbench micro --stop-server`; it asks first\); or consent to run anyway: --allow-busy \(/);
      assert.doesNotMatch(r.stderr, /\{\d\}/);
      const run = RunFolder.list(ws)[0];
      assert.equal(run.info.status, 'failed');
      assert.deepEqual(run.readResult<{ points: unknown[] }>()!.points, []);
    });

    (HAS_TORCH ? it : it.skip)('runs on the CPU end to end: run folder, result with every point, findings tables', () => {
      const ws = mkdtempSync(join(tmpdir(), 'ib-micro-cli-'));
      const r = spawnSync(
        'node',
        [
          'dist/cli.js',
          'micro',
          '--target',
          'local',
          '--python',
          TORCH_PYTHON,
          '--config',
          join(FIXTURES, 'tiny-moe'),
          '--tp',
          '2',
          '--m',
          '1,4',
          '--only',
          'moe.gate_up',
          '--device',
          'cpu',
          '--repeats',
          '2',
          '--launch-kernels',
          '50',
          '--ar-max-bytes',
          '2048',
          '--workspace',
          ws,
          '--findings',
          'findings.md',
          '--json',
        ],
        { encoding: 'utf8' },
      );
      assert.equal(r.status, 0, r.stderr);
      const result = JSON.parse(r.stdout) as { points: Record<string, unknown>[]; tp: number; device: { kind: string } };
      assert.equal(result.tp, 2);
      assert.equal(result.device.kind, 'cpu');
      const run = RunFolder.list(ws)[0];
      assert.equal(run.info.status, 'completed');
      const streamed = run
        .readEvents()
        .filter((e) => (e as { type: string }).type === 'micro.point')
        .map((e) => (e as { point: unknown }).point);
      assert.deepEqual(result.points, streamed);
      const kinds = new Set(result.points.map((p) => p.kind));
      assert.deepEqual([...kinds].sort(), ['allreduce', 'gemm', 'launch', 'peak']);
      const doc = readFileSync(join(ws, 'findings.md'), 'utf8');
      // On a CPU the rotated weights may sit in its caches: then the headline says so instead of a share above 100%.
      assert.match(doc, /\*\*CPU only — moe\.gate_up M=1: [\d.]+ µs, (\d+% of peak bandwidth|faster than the measured memory peak \(operands in cache\))/);
      assert.match(doc, /GEMM time \(µs\) by shape and M/);
      assert.match(doc, /\| moe\.gate_up +\| 64×256 +\|/);
      assert.match(doc, /All-reduce \(gloo, 2 processes, fp16\)/);
      assert.match(doc, /Not the server's kernel: Marlin W4A16 needs a GPU/);
    });
  });

  (HAS_TORCH ? it : it.skip)('on a CPU with no sweep given, measures the decode-step shapes at a few M in seconds and says so', () => {
    const ws = mkdtempSync(join(tmpdir(), 'ib-micro-cpu-'));
    // Kimi-K2.5 at TP 8, as Run All Phases asks for it: on a CPU its LM head and dense MLP alone took minutes.
    const r = spawnSync(
      'node',
      [
        'dist/cli.js',
        'micro',
        '--target',
        'local',
        '--python',
        TORCH_PYTHON,
        '--model',
        'kimi-k2.5',
        '--tp',
        '8',
        '--device',
        'cpu',
        '--skip',
        'allreduce,launch',
        '--workspace',
        ws,
        '--json',
      ],
      { encoding: 'utf8' },
    );
    assert.equal(r.status, 0, r.stderr);
    const result = JSON.parse(r.stdout) as { m: number[]; points: { kind: string; shape?: string; n?: number; k?: number }[] };
    assert.deepEqual(result.m, [1, 4, 16]);
    const gemms = result.points.filter((p) => p.kind === 'gemm');
    assert.ok(gemms.length > 0);
    assert.ok(
      gemms.every((p) => (p.n ?? 0) * (p.k ?? 0) <= 8 * 1024 * 1024),
      'a large shape ran on the CPU',
    );
    assert.match(r.stderr, /On a CPU: M 1,4,16, the decode-step shapes \(.*moe\.gate_up.*; \d+ larger ones left out\), 3 repeats/);
  });

  (HAS_TORCH ? describe : describe.skip)('over SSH', () => {
    let sshd: Sshd;
    let sshConfig: string;
    const dir = mkdtempSync(join(tmpdir(), 'ib-micro-ssh-'));

    before(async () => {
      const key = makeKey(dir, 'client');
      sshd = await startSshd({ authorizedKeys: [key.publicLine] });
      sshConfig = writeClientConfig(
        join(dir, 'client-config'),
        {
          gpubox: ['HostName 127.0.0.1', `Port ${sshd.port}`, `User ${USER}`, `IdentityFile ${key.privateFile}`, 'IdentityAgent none'],
        },
        [sshd.knownHostsLine],
      ).configFile;
    });
    after(async () => sshd?.stop());

    it('Cancel mid-sweep keeps the points measured so far and leaves no agent process behind', async () => {
      const target: Target = { name: 'gpubox', kind: 'ssh', host: 'gpubox', serverUrl: 'http://127.0.0.1:9', python: TORCH_PYTHON };
      const transport = await openTransport({ ...target, configFile: sshConfig, home: dir });
      const abort = new AbortController();
      const seen: RunSummary[] = [];
      let agentPath = '';
      try {
        const agent = await deployAgent(transport, bundledAgentPath(), target.python);
        agentPath = agent.path;
        const ctx: PhaseContext = {
          target,
          transport,
          agent,
          workspace: dir,
          log: silentLogger,
          signal: abort.signal,
          sink: {
            runChanged: (run) => {
              seen.push(run);
              if ((run.micro?.points.filter((p) => p.kind === 'gemm').length ?? 0) >= 2) abort.abort();
            },
            findings: () => undefined,
          },
        };
        // Many shapes and Ms on the CPU: far longer than the test waits.
        const outcome = await runMicroPhase(ctx, { model: 'llama-3-8b', tp: 1, device: 'cpu', repeats: 3, skip: ['peak'] });
        assert.equal(outcome.agent.status, 'cancelled');
        assert.equal(outcome.summary.status, 'cancelled');
        const kept = outcome.run.readResult<{ points: MicroPoint[]; partial: boolean }>()!;
        assert.equal(kept.partial, true);
        assert.ok(kept.points.length >= 2 && kept.points.length < 10, `${kept.points.length} points kept`);
        assert.equal(RunFolder.open(outcome.run.dir).info.status, 'cancelled');
        assert.equal(seen.at(-1)!.status, 'cancelled');
      } finally {
        await transport.close();
      }
      // The host is this machine: no process of that agent may outlive the cancel.
      await new Promise((r) => setTimeout(r, 500));
      const left = spawnSync('pgrep', ['-f', `${agentPath} micro`], { encoding: 'utf8' }).stdout.trim();
      assert.equal(left, '', `agent processes left: ${left}`);
    });
  });
});
