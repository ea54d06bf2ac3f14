import * as assert from 'node:assert/strict';
import { buildBudget } from '../../../src/core/explain/budget';
import { rowFor } from '../../../src/core/explain/budgetNumbers';
import { budgetFindings } from '../../../src/core/explain/findings';
import { MicroInput, microInputFrom, profileInputFrom } from '../../../src/core/explain/inputs';
import { readLinearCurve, readSizeCurve } from '../../../src/core/explain/interpolate';
import { allReducesPerStep, expertSpread, KIMI_K25_TP8 } from '../../../src/core/explain/modelStructure';
import { renderMarkdownTable } from '../../../src/core/findings/markdownTable';
import { placeOf } from '../../../src/core/findings/sections';

// The seed scenario's decode step at batch 1, as the simulator's timing model writes it down
// (simulator/sim_timing.py, preset kimi-k25-tp8): fixed busy ms per category plus 0.2 ms per running
// sequence split 50/40/10 over attention, MoE GEMM and quantized GEMM; idle is the rest of 21.7 ms.
const SIM_MS: Record<string, number> = {
  allreduce: 10.919,
  nccl_allreduce: 0.251,
  nccl_allgather: 0.06,
  moe_gemm: 3.9 + 0.08,
  quantized_gemm: 2.1 + 0.02,
  gemm: 0.45,
  attention: 1.2 + 0.1,
  moe_routing: 0.4,
  norm: 0.42,
  activation: 0.2,
  rotary: 0.12,
  elementwise: 0.22,
  memory: 0.05,
  other: 0.02,
};
const STEP_MS = 21.7;
const IDLE_MS = STEP_MS - Object.values(SIM_MS).reduce((a, b) => a + b, 0);

/** A ProfileSummary as the shared results type holds it (microseconds), for `ranks` identical ranks. */
function profileResult(ranks = 8, stepMs = STEP_MS) {
  const byCategory = Object.fromEntries(Object.entries(SIM_MS).map(([c, ms]) => [c, ms * 1000]));
  return {
    categories: Object.keys(SIM_MS),
    ranks: Array.from({ length: ranks }, (_, rank) => ({
      rank,
      step_us: stepMs * 1000,
      by_category: { ...byCategory, idle: (stepMs - STEP_MS + IDLE_MS) * 1000 },
    })),
    kernels: [],
    steps: 50,
    kernels_per_step: 1200,
  };
}

// Micro points made by formula: an all-reduce costs 40 us at any decode size (latency-bound) and
// moves 256 MiB at 360 GB/s busbw; every GEMM takes 3 us at M=1 and 3 + 0.5*(M-1) us above; a kernel
// launched from a CUDA graph leaves a 1 us gap.
function microResult(): MicroInput {
  const gemm = KIMI_K25_TP8.linears.flatMap((l) => [1, 2, 4, 8].map((m) => ({ shape: l.name, m, n: l.n, k: l.k, time_us: 3 + 0.5 * (m - 1) })));
  const big = 256 * 1024 * 1024;
  const bigUs = ((big * 14) / 8 / 360e9) * 1e6;
  return {
    runId: 'micro-1',
    model: KIMI_K25_TP8,
    world_size: 8,
    gemm,
    allreduce: [
      { size_bytes: 8192, time_us: 40, busbw_gbps: 0.36 },
      { size_bytes: 16384, time_us: 40, busbw_gbps: 0.72 },
      { size_bytes: big, time_us: bigUs, busbw_gbps: 360 },
    ],
    launch: [
      { mode: 'eager', us_per_kernel: 4 },
      { mode: 'graph', us_per_kernel: 1 },
    ],
  };
}

const macro = (tpot: number, concurrency = 1) => ({
  runId: 'macro-1',
  levels: [{ max_concurrency: concurrency, median_tpot_ms: tpot, mean_tpot_ms: tpot + 0.1, p99_tpot_ms: tpot + 1 }],
});

describe('decode-step budget', () => {
  it('weighs expert parallelism at the same batch: the all-to-alls of a cluster micro run against the all-reduce profiled today', () => {
    // A cluster run's result as runMicroPhase writes it: collectives across and within hosts, and the plan that sized them.
    // All-to-all by formula: 30 us at any decode size across the hosts (60 us within one, which must not be read).
    const sizes = [1, 8, 64].map((m) => ({ m, bytes: Math.ceil((Math.ceil(m / 8) * 8 * 7168) / 8) * 8 * 2 }));
    const points = sizes.flatMap(({ m, bytes }) => [
      { kind: 'alltoall', scope: 'inter-node', mode: 'graph', bytes, us: 30, world_size: 8, m },
      { kind: 'alltoall', scope: 'intra-node', mode: 'graph', bytes, us: 60, world_size: 4, m },
      { kind: 'allreduce', scope: 'inter-node', mode: 'graph', bytes: m * 7168 * 2, us: 40, world_size: 8, m },
    ]);
    const result = {
      points,
      device: { name: 'NVIDIA H200', kind: 'gpu' },
      model: { name: 'kimi-k2.5' },
      cluster: { plan: { moe_layers: 60, top_k: 8, hidden: 7168, world_size: 8, layers: 61 } },
    };
    const micro = microInputFrom('micro-cluster', result);
    assert.deepEqual(
      micro.alltoall!.map((p) => p.time_us),
      [30, 30, 30],
      'the collectives across the hosts are the ones read',
    );
    const b = buildBudget({ profile: profileInputFrom('p', profileResult())!, micro });
    // Batch 1 over 8 ranks: 1 token per rank x top-8 x 7168 x 2 B = 112 KiB per all-to-all; 2 x 60 MoE layers x 30 us = 3.6 ms.
    const reading = b.readings.find((r) => r.startsWith('Expert parallelism instead'));
    assert.equal(
      reading,
      'Expert parallelism instead, at batch 1: 120 all-to-alls per step (dispatch and combine per MoE layer) of 112 KiB (1 token(s) per rank × top-8, 8 ranks) ' +
        'would take 3.60 ms at 30.0 µs each (micro run micro-cluster), against 11.17 ms of all-reduce per step today (profiled): 7.57 ms less. ' +
        'Attention would then run data-parallel; its cost is not in this figure.',
    );
  });

  it('says all-reduce takes 11.17 ms of the simulated 21.7 ms step, and the profiled parts add up to the step', () => {
    const profile = profileInputFrom('profile-1', profileResult())!;
    const b = buildBudget({ profile, macro: macro(22.0), micro: microResult() });
    const ar = b.rows.find((r) => r.key === 'allreduce')!;
    assert.ok(Math.abs(ar.profiled_ms! - 11.17) < 1e-9);
    assert.ok(Math.abs(ar.share! - 11.17 / 21.7) < 1e-9);
    assert.deepEqual(ar.categories.sort(), ['allreduce', 'nccl_allreduce']);
    assert.equal(b.rows[0].key, 'allreduce', 'the largest row comes first');
    assert.equal(b.rows[b.rows.length - 1].key, 'idle', 'idle comes last');
    const total = b.rows.reduce((s, r) => s + (r.profiled_ms ?? 0), 0);
    assert.ok(Math.abs(total - STEP_MS) < 1e-9, `rows add up to ${total}`);
    assert.match(b.readings[0], /^All-reduce takes 11\.17 ms of 21\.70 ms per step \(51\.5%\): 123 calls of 14 KiB/);
  });

  it('predicts all-reduce as calls x micro time at the decode message size, with the bandwidth floor', () => {
    const b = buildBudget({ profile: profileInputFrom('p', profileResult())!, micro: microResult() });
    // 61 layers x 2 + 1 embedding all-reduce = 123 calls of 1 x 7168 x 2 B = 14 KiB, 40 us each.
    assert.equal(allReducesPerStep(KIMI_K25_TP8), 123);
    const ar = b.rows.find((r) => r.key === 'allreduce')!;
    assert.ok(Math.abs(ar.predicted_ms! - (123 * 40) / 1000) < 1e-9);
    assert.ok(Math.abs(ar.gap_ms! - (11.17 - 4.92)) < 1e-9);
    // Floor: 14336 B x 2(8-1)/8 / 360 GB/s = 0.0697 us per call, 8.57 us per step.
    const floorPerCall = ((14336 * 14) / 8 / 360e9) * 1e6;
    assert.ok(b.readings[0].includes(`${floorPerCall.toFixed(2)} us per call`), b.readings[0]);
    assert.ok(b.readings[0].includes('latency, not bandwidth, bounds it'));
    assert.ok(b.readings[0].includes('6.25 ms per step is waiting beyond the collective itself'));
  });

  it("predicts GEMMs at the step's M, and no routed experts from a micro run without the copy peak, saying what to run", () => {
    const b = buildBudget({ profile: profileInputFrom('p', profileResult())!, micro: microResult() });
    // Dense: 61 x 4 attention + 60 x 3 shared/router + dense MLP 2 + lm_head 1 = 427 GEMMs x 3 us.
    assert.ok(Math.abs(b.rows.find((r) => r.key === 'gemm')!.predicted_ms! - (427 * 3) / 1000) < 1e-9);
    // Routed experts run as one fused kernel per layer, priced at the copy bandwidth: micro-1 has none,
    // so no figure (960 one-expert GEMMs would price another kernel), and the caveat says what to run.
    const moe = b.rows.find((r) => r.key === 'moe_gemm')!;
    assert.equal(moe.predicted_ms, undefined);
    assert.ok(moe.profiled_ms! > 0);
    assert.match(
      b.caveats.join('\n'),
      /Micro run micro-1 has no memory-copy peak \(its peak part was skipped\), so the routed experts \(moe\.gate_up, moe\.down\) are not predicted: .*Run micro again with its peak part \(without --skip peak\)/,
    );
    // Idle against 1200 kernels x 1 us (graph replay).
    const idle = b.rows.find((r) => r.key === 'idle')!;
    assert.ok(Math.abs(idle.predicted_ms! - 1.2) < 1e-9);
    assert.ok(Math.abs(b.predicted_ms! - (123 * 40 + 427 * 3 + 1200) / 1000) < 1e-9);
  });

  it('at batch 4 spreads the tokens over the experts they hit and reads their weights once at the copy bandwidth', () => {
    // Weights in bf16 plus the activations in and out: bytes grow linearly with M, as micro counts them.
    const micro = microResult();
    const withBytes = { ...micro, copy_tbps: 4, gemm: micro.gemm.map((p) => ({ ...p, bytes: 2 * (p.n * p.k + p.m * (p.n + p.k)) })) };
    const b = buildBudget({ profile: { ...profileInputFrom('p', profileResult())!, batch: 4 }, micro: withBytes });
    const { distinct, tokensPerExpert } = expertSpread(384, 8, 4);
    assert.ok(distinct > 31 && distinct < 32, `4 tokens x 8 experts hit ${distinct} distinct experts`);
    const fusedUs = (n: number, k: number) => Math.max(3 + 0.5 * (tokensPerExpert - 1), (distinct * 2 * (n * k + tokensPerExpert * (n + k))) / (4 * 1e6));
    const expected = (60 * (fusedUs(512, 7168) + fusedUs(7168, 256))) / 1000;
    assert.ok(Math.abs(b.rows.find((r) => r.key === 'moe_gemm')!.predicted_ms! - expected) < 1e-9);
    // The message grows with the batch: 4 x 7168 x 2 B = 56 KiB, above micro's 16 KiB point.
    assert.ok(b.readings[0].includes('123 calls of 56 KiB'));
  });

  it("predicts nothing from a micro run made on a CPU, but still counts the step's all-reduces from its model", () => {
    const b = buildBudget({ profile: profileInputFrom('p', profileResult())!, micro: { ...microResult(), on_cpu: true } });
    assert.ok(b.rows.every((r) => r.predicted_ms === undefined));
    assert.equal(b.predicted_ms, undefined);
    assert.equal(b.readings[0], 'All-reduce takes 11.17 ms of 21.70 ms per step (51.5%): 123 calls of 14 KiB, 90.8 us each.');
    assert.match(b.caveats.join('\n'), /ran on a CPU .*nothing is predicted from them/);
    assert.equal(b.runs.micro, 'micro-1');
    assert.deepEqual(
      b.missing.map((m) => m.phase),
      ['macro'],
      'micro ran, so it is not missing',
    );
  });

  it('reads a served TPOT within noise of the profiled step as agreement, not as host time or a profiler slowed', () => {
    for (const served of [21.72, 21.68]) {
      const b = buildBudget({ profile: profileInputFrom('p', profileResult())!, macro: macro(served) });
      const gap = b.gaps.find((g) => g.key === 'host_overhead')!;
      assert.match(gap.reading, /^Served TPOT 21\.\d\d ms and the profiled step 21\.70 ms agree to 0\.1%: a token takes one GPU step/);
      assert.doesNotMatch(b.readings.join('\n'), /profiler slowed|outside the GPU step/);
    }
  });

  it('names the gap between served TPOT and the profiled step as time outside the GPU', () => {
    const b = buildBudget({ profile: profileInputFrom('p', profileResult())!, macro: macro(22.0) });
    const gap = b.gaps.find((g) => g.key === 'host_overhead')!;
    assert.ok(Math.abs(gap.ms - 0.3) < 1e-9);
    assert.match(gap.reading, /Served TPOT 22\.00 ms vs profiled step 21\.70 ms: 0\.30 ms per token \(1\.4%\) is spent outside the GPU step/);
    assert.deepEqual(
      b.missing.map((m) => m.phase),
      ['micro'],
    );
  });

  it('uses the macro level at the profiled batch, and says so when only another concurrency exists', () => {
    const profile = { ...profileInputFrom('p', profileResult())!, batch: 8 };
    const exact = buildBudget({
      profile,
      macro: {
        runId: 'm',
        levels: [
          { max_concurrency: 1, median_tpot_ms: 21.7 },
          { max_concurrency: 8, median_tpot_ms: 23.1 },
        ],
      },
    });
    assert.equal(exact.measured.tpot!.median_ms, 23.1);
    assert.equal(exact.caveats.length, 0);
    const near = buildBudget({
      profile,
      macro: {
        runId: 'm',
        levels: [
          { max_concurrency: 1, median_tpot_ms: 21.7 },
          { max_concurrency: 16, median_tpot_ms: 24.9 },
        ],
      },
    });
    assert.equal(near.measured.tpot!.concurrency, 16);
    assert.match(near.caveats.join('\n'), /no level at concurrency 8; its nearest, 16, stands in/);
  });

  it('says which phases are missing and what each would add', () => {
    const b = buildBudget({ macro: macro(21.7) });
    assert.deepEqual(b.missing.map((m) => m.phase).sort(), ['micro', 'profile']);
    assert.match(b.missing.find((m) => m.phase === 'profile')!.command, /^infbench profile/);
    assert.ok(b.rows.length === 0);
    assert.match(b.readings.join('\n'), /21\.70 ms per token \(46\.1 tok\/s per stream\)/);
  });

  it("without a profile, draws micro's parts and what micro leaves unexplained of the served TPOT", () => {
    const b = buildBudget({ macro: macro(21.7), micro: microResult() });
    const parts = b.view.bars.filter((x) => x.kind === 'part');
    assert.deepEqual(
      parts.map((p) => p.source),
      parts.map(() => 'micro'),
    );
    const unpredicted = b.view.bars.find((x) => x.key === 'unpredicted')!;
    assert.ok(Math.abs(unpredicted.base_ms + unpredicted.ms - 21.7) < 1e-9);
  });

  it('gives the waterfall bars that stack to the step, and a gap bar from the step to the TPOT', () => {
    const b = buildBudget({ profile: profileInputFrom('p', profileResult())!, macro: macro(22.0), micro: microResult() });
    const bars = b.view.bars;
    assert.deepEqual(
      bars.slice(0, 3).map((x) => x.key),
      ['tpot', 'host_gap', 'step'],
    );
    const parts = bars.filter((x) => x.kind === 'part');
    for (let i = 1; i < parts.length; i++) assert.ok(Math.abs(parts[i].base_ms - (parts[i - 1].base_ms + parts[i - 1].ms)) < 1e-9);
    const last = parts[parts.length - 1];
    assert.ok(Math.abs(last.base_ms + last.ms - STEP_MS) < 1e-9);
    const gap = bars.find((x) => x.key === 'host_gap')!;
    assert.ok(Math.abs(gap.base_ms + gap.ms - 22.0) < 1e-9);
    assert.equal(parts.find((p) => p.key === 'allreduce')!.predicted_ms, 4.92);
  });

  it('names the slowest rank when ranks differ by more than 2%', () => {
    const result = profileResult();
    result.ranks[5].step_us = 23_000;
    result.ranks[5].by_category.idle += 1300;
    const b = buildBudget({ profile: profileInputFrom('p', result)! });
    assert.match(b.readings.join('\n'), /Rank 5 is the slowest at 23\.00 ms per step, 1\.30 ms over the fastest/);
  });

  it('writes a findings section with the account, the categories and the missing phases as tables', () => {
    const b = buildBudget({ profile: profileInputFrom('p', profileResult())!, micro: microResult() });
    const update = budgetFindings(b);
    assert.equal(update.heading, 'Decode-step budget at batch 1');
    assert.equal((placeOf(update.sectionId) as { title?: string }).title, 'Where the milliseconds go');
    assert.deepEqual(
      update.tables.map((t) => t.id),
      ['budget-totals', 'budget-categories', 'budget-missing'],
    );
    const md = renderMarkdownTable(update.tables[1]);
    assert.match(md, /\| all-reduce +\| +11\.170 \| +51\.5 \| +4\.920 \| +6\.250 \|/);
    assert.match(update.lines.join('\n'), /^All-reduce takes 11\.17 ms/);
  });

  it('folds trace category names of either spelling into the same rows', () => {
    assert.equal(rowFor('all-reduce').key, 'allreduce');
    assert.equal(rowFor('NCCL AllReduce').key, 'allreduce');
    assert.equal(rowFor('nccl_allgather').key, 'collective');
    assert.equal(rowFor('quantized GEMM').key, 'gemm');
    assert.equal(rowFor('MoE GEMM').key, 'moe_gemm');
    assert.equal(rowFor('moe_routing').key, 'moe_routing');
    assert.equal(rowFor('attention').key, 'attention');
  });
});

describe('reading micro curves between measured sizes', () => {
  it('interpolates all-reduce time log-log between sizes, holds below the range and scales above it', () => {
    const pts = [
      { x: 1024, y: 10 },
      { x: 4096, y: 40 },
    ];
    assert.equal(readSizeCurve(pts, 2048)!.value.toFixed(6), (20).toFixed(6));
    assert.deepEqual(readSizeCurve(pts, 512), { value: 10, where: 'below' });
    assert.deepEqual(readSizeCurve(pts, 8192), { value: 80, where: 'above' });
  });

  it('interpolates GEMM time linearly in M and holds the nearest M outside the range', () => {
    const pts = [
      { x: 1, y: 3 },
      { x: 8, y: 6.5 },
    ];
    assert.equal(readLinearCurve(pts, 4)!.value, 3 + (3 / 7) * 3.5);
    assert.equal(readLinearCurve(pts, 64)!.value, 6.5);
  });
});

describe('budget inputs from phase results', () => {
  it('reads micro points tagged by kind, as the micro run logs them', () => {
    const input = microInputFrom('m', {
      model: { name: 'kimi-k2.5' },
      points: [
        { kind: 'allreduce', point: { size_bytes: 16384, time_us: 20, busbw_gbps: 1.4, world_size: 8 } },
        { kind: 'gemm', point: { shape: 'moe.gate_up', m: 1, n: 512, k: 7168, time_us: 5 } },
        { kind: 'launch', point: { mode: 'cuda_graph', us_per_kernel: 1.5 } },
        { kind: 'peak', point: { gpu: 'H200', busbw_gbps: 450 } },
      ],
    });
    assert.equal(input.allreduce[0].time_us, 20);
    assert.equal(input.gemm[0].shape, 'moe.gate_up');
    assert.deepEqual(input.launch, [{ mode: 'graph', us_per_kernel: 1.5 }]);
    assert.equal(input.peak_busbw_gbps, 450);
    assert.equal(input.world_size, 8);
    assert.equal(input.model?.name, 'kimi-k2.5', 'a model name with a preset gives the structure');
  });

  it("reads the micro agent's result: flat points, graph all-reduce times preferred, the model's shapes and counts", () => {
    // Field names as agent/infbench_agent/micro/command.py writes them (`us`, `bytes`, `mode`, `per_step`).
    const input = microInputFrom('m', {
      device: { name: 'NVIDIA H200', kind: 'gpu' },
      model: { name: 'kimi-k2.5', source: 'preset', hidden: 7168, layers: 61, dtype: 'bf16', quant: 'int4' },
      tp: 8,
      shapes: [
        { name: 'moe.gate_up', n: 512, k: 7168, per_step: 480, note: 'one expert; M = tokens routed to it (384 experts, 8 active per token)' },
        { name: 'attn.o_proj', n: 7168, k: 1024, per_step: 61, note: '' },
      ],
      allreduce: { backend: 'nccl', world_size: 8 },
      points: [
        { kind: 'gemm', shape: 'moe.gate_up', m: 1, n: 512, k: 7168, per_step: 480, us: 6.5 },
        { kind: 'allreduce', bytes: 14336, us: 31, mode: 'eager', busbw_gbps: 0.8, world_size: 8 },
        { kind: 'allreduce', bytes: 14336, us: 12, mode: 'graph', busbw_gbps: 2.1, world_size: 8 },
        { kind: 'launch', mode: 'eager', us_per_kernel: 5.1 },
        { kind: 'launch', mode: 'graph', us_per_kernel: 1.2 },
        { kind: 'peak', what: 'copy', tbps: 4.3 },
      ],
    });
    assert.deepEqual(
      input.allreduce.map((p) => p.time_us),
      [12],
      'CUDA-graph all-reduce times, as vLLM decodes',
    );
    assert.equal(input.gemm[0].time_us, 6.5);
    assert.equal(input.world_size, 8);
    assert.equal(input.gpu, 'NVIDIA H200');
    assert.equal(input.model?.source, 'micro run m');
    assert.deepEqual(input.model?.experts, { total: 384, active: 8 });
    assert.equal(input.model?.linears.find((l) => l.name === 'moe.gate_up')?.routedExpert, true);
    const b = buildBudget({ micro: input });
    assert.ok(Math.abs(b.rows.find((r) => r.key === 'allreduce')!.predicted_ms! - (123 * 12) / 1000) < 1e-9);
    // A copy peak but GEMM points without bytes (an older agent): the fused kernel has no price, and 480
    // one-expert GEMMs of 6.5 us (3.1 ms) would be another kernel's time: no figure, and why.
    assert.equal(b.rows.find((r) => r.key === 'moe_gemm')?.predicted_ms, undefined);
    assert.match(
      b.caveats.join('\n'),
      /Micro run m has no bytes on its GEMM points \(an older micro run\), so the routed experts \(moe\.gate_up\) are not predicted/,
    );
    assert.match(b.caveats.join('\n'), /measured none of the dense GEMM shapes \(attn\.o_proj 7168x1024\)/);
  });

  it('reads a breakdown given in milliseconds per category and fills idle from the step', () => {
    const p = profileInputFrom('p', {
      step_ms: 10,
      categories: [
        { category: 'gemm', ms: 6 },
        { category: 'attention', ms: 3 },
      ],
      batch: 2,
    })!;
    assert.equal(p.batch, 2);
    assert.equal(p.by_category_ms.idle, 1);
  });
});
