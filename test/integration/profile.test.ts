import * as assert from 'node:assert/strict';
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { FindingsUpdate, PhaseContext } from '../../src/core/campaign/phaseContext';
import { silentLogger } from '../../src/core/log';
import { runProfilePhase } from '../../src/core/phases/profile';
import { RunFolder } from '../../src/core/runs/runFolder';
import { TraceBreakdown } from '../../src/core/trace/types';
import { deployAgent } from '../../src/remote/agentDeploy';
import { LocalTransport } from '../../src/remote/localTransport';
import { RunSummary } from '../../src/shared/results';

// The whole profiler phase against the project's simulator (a real HTTP server with vLLM's
// profiler endpoints that writes one Kineto trace per rank at /stop_profile from a known timing
// model): agent on this machine, traces copied into the run folder, analysed in worker threads.

async function startSimulator(args: string[]): Promise<{ url: string; proc: ChildProcess }> {
  const proc = spawn('python3', ['-u', 'simulator/vllm_sim.py', '--port', '0', ...args], { stdio: ['ignore', 'pipe', 'ignore'] });
  const rl = createInterface({ input: proc.stdout! });
  const url = await new Promise<string>((resolve, reject) => {
    rl.once('line', (line) => resolve((JSON.parse(line) as { url: string }).url));
    proc.once('exit', (code) => reject(new Error(`the simulator exited (${code}) before it was ready`)));
  });
  return { url, proc };
}

/** The simulator's own statement of a batch-1 decode step: the known answer. */
function expectedBatch1(): { step_ms: number; ms: Record<string, number> } {
  const d = JSON.parse(execFileSync('python3', ['simulator/vllm_sim.py', '--describe'], { encoding: 'utf8' })) as {
    expected_breakdown: Record<string, { step_ms: number; ms: Record<string, number> }>;
  };
  return d.expected_breakdown['1'];
}

// The simulator's category names, as the analyzer's kernel families name them.
const CATEGORY: Record<string, string> = {
  allreduce: 'all-reduce',
  nccl_allreduce: 'all-reduce',
  nccl_allgather: 'nccl all-gather',
  moe_gemm: 'moe gemm',
  moe_routing: 'moe routing',
  quantized_gemm: 'quantized gemm',
  index_gather: 'index/gather',
};

describe('profiler phase against the simulator', function () {
  this.timeout(180_000);
  const workspace = mkdtempSync(join(tmpdir(), 'ib-profile-ws-'));
  const cache = mkdtempSync(join(tmpdir(), 'ib-profile-cache-'));
  let sim: { url: string; proc: ChildProcess } | undefined;
  afterEach(() => {
    sim?.proc.kill('SIGTERM');
    sim = undefined;
  });

  async function context(url: string, sink: { runs: RunSummary[]; findings: FindingsUpdate[] }): Promise<PhaseContext> {
    const transport = new LocalTransport();
    const wrapped = Object.create(transport) as LocalTransport;
    wrapped.exec = (argv, options = {}) => transport.exec(argv, { ...options, env: { XDG_CACHE_HOME: cache, ...options.env } });
    const agent = await deployAgent(wrapped, 'dist/agent.pyz', 'python3');
    return {
      target: { name: 'sim', kind: 'local', serverUrl: url, python: 'python3' },
      transport: wrapped,
      agent,
      workspace,
      log: silentLogger,
      sink: { runChanged: (r) => sink.runs.push(r), findings: (f) => sink.findings.push(f) },
    };
  }

  it('finds the known decode-step breakdown in the traces of all 8 ranks (all-reduce 51.5%)', async () => {
    const traceDir = mkdtempSync(join(tmpdir(), 'ib-profile-traces-'));
    sim = await startSimulator(['--profiler-dir', traceDir]);
    const sink = { runs: [] as RunSummary[], findings: [] as FindingsUpdate[] };
    const outcome = await runProfilePhase(await context(sim.url, sink), { concurrency: 1, outputLen: 16 });
    assert.equal(outcome.summary.status, 'completed', outcome.summary.reason);

    const b = outcome.breakdown!;
    assert.equal(b.ranks.length, 8);
    assert.deepEqual(
      b.ranks.map((r) => r.rank),
      [0, 1, 2, 3, 4, 5, 6, 7],
    );
    for (const r of b.ranks) {
      assert.equal(r.prefill.count, 1, 'the request joins in one prefill step');
      assert.equal(r.decode.count, 15);
    }
    const expected = expectedBatch1();
    // Step wall time: first kernel start to last kernel end, so the simulator's idle gap after the
    // last kernel (its idle time over ~1350 kernels, under 1 us) is not in it: 0.01% tolerance.
    assert.ok(Math.abs(b.overall.stepMs!.mean - expected.step_ms) < 1e-4 * expected.step_ms, `step ${b.overall.stepMs!.mean} ms vs ${expected.step_ms}`);
    // vLLM's custom all-reduce and NCCL's are one category: the simulator's parts of it add up.
    const expectedByCategory = new Map<string, number>();
    for (const [simCategory, ms] of Object.entries(expected.ms)) {
      const category = CATEGORY[simCategory] ?? simCategory;
      expectedByCategory.set(category, (expectedByCategory.get(category) ?? 0) + ms);
    }
    for (const [category, ms] of expectedByCategory) {
      if (ms <= 0) continue;
      const ours = b.overall.categories.find((c) => c.category === category);
      assert.ok(ours, `no ${category} in the breakdown`);
      assert.ok(Math.abs(ours.msPerStep - ms) < 0.002, `${category}: ${ours.msPerStep} ms vs ${ms} ms`);
    }
    assert.match(b.headline, /^all-reduce 51\.5% \(11\.17 ms\) of a 21\.70 ms decode step \(8 ranks, 120 decode steps; steps from .*step annotation\)$/);

    // Everything is in the run folder, and the views and the findings document got it.
    const run = RunFolder.open(outcome.run.dir);
    assert.equal(run.info.status, 'completed');
    assert.equal(run.info.simulated, true);
    assert.equal(readdirSync(join(run.dir, 'traces')).filter((f) => f.endsWith('.pt.trace.json.gz')).length, 8);
    assert.ok(existsSync(join(run.dir, 'breakdown.json')));
    assert.equal(run.readResult<TraceBreakdown>()!.headline, b.headline);
    const last = sink.runs.at(-1)!;
    assert.equal(last.status, 'completed');
    assert.equal(last.headline, b.headline);
    assert.ok(
      sink.runs.some((r) => r.profile?.stage === 'stop'),
      'progress while the ranks flush',
    );
    const findings = sink.findings.at(-1)!;
    assert.match(findings.lines[0], /all-reduce 51\.5%/);
    assert.match(findings.lines.join('\n'), /Simulator/);
    const categories = findings.tables.find((t) => t.id === 'profile-categories')!;
    assert.equal(categories.rows[0].category, 'all-reduce');
    assert.ok(findings.tables.some((t) => t.id.startsWith('profile-top-kernels')));
  });

  it('fails with the way to enable the profiler when the server has none', async () => {
    sim = await startSimulator([]);
    const sink = { runs: [] as RunSummary[], findings: [] as FindingsUpdate[] };
    const outcome = await runProfilePhase(await context(sim.url, sink), { concurrency: 1, outputLen: 4 });
    assert.equal(outcome.summary.status, 'failed');
    assert.match(outcome.summary.reason ?? '', /answered 404 on \/start_profile.*--profiler-dir/);
    assert.equal(sink.runs.at(-1)!.status, 'failed');
    // A failed attempt writes nothing into the findings document (no "0 trace files analysed" block).
    assert.deepEqual(sink.findings, []);
    assert.equal(RunFolder.open(outcome.run.dir).info.status, 'failed');
  });
});
