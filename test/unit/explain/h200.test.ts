import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { agentResult } from './agentLog';
import { buildBudget } from '../../../src/core/explain/budget';
import { microInputFrom, profileInputFrom } from '../../../src/core/explain/inputs';
import { KIMI_K25_TP8, ModelStructure } from '../../../src/core/explain/modelStructure';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';

// Real H200 captures on both sides, made independently: the trace of a small Llama-like decoder
// (test/fixtures/traces, capture.py) and micro-benchmarks of the same GEMM shapes (test/fixtures/explain).
const TRACES = join(__dirname, '..', '..', 'fixtures', 'traces');
const MICRO = join(__dirname, '..', '..', 'fixtures', 'explain');

// capture.py's model: hidden 2048, 4 layers, bf16 F.linear for qkv (6144x2048), o (2048x2048),
// gate_up (11264x2048), down (2048x5632) per layer and lm_head (32000x2048) once; one GPU, no TP.
const CAPTURED_LLAMA: ModelStructure = {
  name: 'capture.py llama',
  source: 'test/fixtures/traces/capture.py',
  hidden: 2048,
  layers: 4,
  tp: 1,
  activationBytes: 2,
  allReducesPerLayer: 0,
  extraAllReduces: 0,
  linears: [
    { name: 'qkv', n: 6144, k: 2048, perStep: 4 },
    { name: 'o_proj', n: 2048, k: 2048, perStep: 4 },
    { name: 'gate_up', n: 11264, k: 2048, perStep: 4 },
    { name: 'down', n: 2048, k: 5632, perStep: 4 },
    { name: 'lm_head', n: 32000, k: 2048, perStep: 1 },
  ],
};

describe('decode-step budget on real H200 captures', () => {
  it("predicts the traced step's GEMM time from micro's isolated GEMMs to within 5%", async () => {
    const breakdown = await analyzeTraceFiles([join(TRACES, 'llama_cudagraph_decode.pt.trace.json.gz')]);
    const profile = profileInputFrom('llama-trace', breakdown, { concurrency: 4 })!;
    const micro = microInputFrom('llama-micro', agentResult(join(MICRO, 'micro-llama-h200.jsonl')));
    assert.equal(micro.gpu, 'NVIDIA H200');
    const b = buildBudget({ profile, micro, model: CAPTURED_LLAMA });
    assert.equal(b.batch, 4);
    const gemm = b.rows.find((r) => r.key === 'gemm')!;
    // 17 GEMMs per step at M = 4 (plus cuBLAS split-K reductions in the trace), ~0.19 ms on both sides.
    assert.ok(gemm.profiled_ms! > 0.15 && gemm.profiled_ms! < 0.25, `traced GEMM ${gemm.profiled_ms} ms per step`);
    const rel = Math.abs(gemm.gap_ms!) / gemm.profiled_ms!;
    assert.ok(
      rel < 0.05,
      `micro predicts ${gemm.predicted_ms!.toFixed(4)} ms, the trace shows ${gemm.profiled_ms!.toFixed(4)} ms (${(rel * 100).toFixed(1)}% apart)`,
    );
    assert.deepEqual(
      gemm.terms!.map((t) => [t.name, t.calls, t.m]),
      [
        ['qkv', 4, 4],
        ['o_proj', 4, 4],
        ['gate_up', 4, 4],
        ['down', 4, 4],
        ['lm_head', 1, 4],
      ],
    );
    assert.match(gemm.prediction!, /^M = 4: 17 GEMMs over 5 shapes, most in gate_up 4 x \d+\.\d us$/);
    assert.ok(!b.rows.some((r) => r.key === 'allreduce'), 'no tensor parallelism, no all-reduce row');
    assert.ok(!b.caveats.some((c) => /all-reduce/.test(c)));
    // Idle against launch gaps: every kernel of the step x micro's CUDA-graph gap per kernel.
    const idle = b.rows.find((r) => r.key === 'idle')!;
    const graphGap = micro.launch.find((l) => l.mode === 'graph')!.us_per_kernel;
    assert.ok(Math.abs(idle.predicted_ms! - (profile.kernels_per_step! * graphGap) / 1000) < 1e-9);
    assert.ok(profile.kernels_per_step! > 200 && profile.kernels_per_step! < 250, `${profile.kernels_per_step} kernels per step`);
    // The parts still add up to the traced step.
    const total = b.rows.reduce((s, r) => s + (r.profiled_ms ?? 0), 0);
    assert.ok(Math.abs(total - profile.step_ms) < 1e-6);
  });

  it("names the eager trace's idle time as more than launch overhead, from the same micro run", async () => {
    const breakdown = await analyzeTraceFiles([join(TRACES, 'llama_eager_decode.pt.trace.json.gz')]);
    const profile = profileInputFrom('llama-eager', breakdown, { concurrency: 4 })!;
    const micro = microInputFrom('llama-micro', agentResult(join(MICRO, 'micro-llama-h200.jsonl')));
    // An eager step launches each kernel from Python; micro's eager launch cost sets what that explains.
    const b = buildBudget({ profile, micro: { ...micro, launch: micro.launch.filter((l) => l.mode === 'eager') }, model: CAPTURED_LLAMA });
    const idle = b.rows.find((r) => r.key === 'idle')!;
    assert.ok(idle.profiled_ms! > 10 * idle.predicted_ms!, `idle ${idle.profiled_ms} ms against ${idle.predicted_ms} ms of launches`);
    assert.match(b.gaps.find((g) => g.key === 'idle_vs_micro')!.reading, /of the idle time is not launch overhead — host syncs, CPU work between kernels/);
    // The GEMMs are the same kernels as under CUDA graphs: still within 5% of micro.
    const gemm = b.rows.find((r) => r.key === 'gemm')!;
    assert.ok(Math.abs(gemm.gap_ms!) / gemm.profiled_ms! < 0.05);
  });

  it("predicts nothing from micro's Kimi-K2.5 TP 8 run beside a one-GPU, three-layer trace, and says why", async () => {
    // The continuous-batching loop of test/fixtures/traces/serving: 3 MoE layers on one H200, graphs, vLLM's names.
    const breakdown = await analyzeTraceFiles([join(TRACES, 'serving', 'graph_names.pt.trace.json.gz')]);
    const profile = profileInputFrom('loop-trace', breakdown, { concurrency: 8 })!;
    const micro = microInputFrom('kimi-micro', agentResult(join(MICRO, 'micro-kimi-tp8-h200.jsonl')));
    const b = buildBudget({ profile, micro });
    assert.ok(
      b.rows.every((r) => r.predicted_ms === undefined),
      `predicted: ${b.rows
        .filter((r) => r.predicted_ms !== undefined)
        .map((r) => r.key)
        .join(', ')}`,
    );
    const why = b.caveats.join('\n');
    assert.match(why, /No prediction from micro run kimi-micro: its model \(kimi-k2\.5 at TP 8, 61 layers, 384 experts, 8 active\) is not the one profiled/);
    assert.match(why, /runs 3 attention kernels, where 61 layers run one to a few each/);
    assert.match(why, /runs no all-reduce, where TP 8 runs 123/);
  });

  for (const trace of ['graph_names', 'graph_long_names']) {
    it(`${trace}: splits idle under CUDA graphs into the wait on cudaGraphLaunch and the rest, the wait within 5% of an independent pass`, async () => {
      const file = `${trace}.pt.trace.json.gz`;
      const breakdown = await analyzeTraceFiles([join(TRACES, 'serving', file)]);
      const profile = profileInputFrom('loop-trace', breakdown, { concurrency: 8 })!;
      const truth = JSON.parse(readFileSync(join(TRACES, 'serving', 'idle_truth.json'), 'utf8'))[file] as { graph_wait_us_per_decode_step: number };
      const b = buildBudget({ profile });
      const idle = b.rows.find((r) => r.key === 'idle')!;
      const expected = truth.graph_wait_us_per_decode_step / 1000;
      assert.ok(Math.abs(idle.graph_launch_ms! - expected) <= 0.05 * expected, `${idle.graph_launch_ms} ms against ${expected} ms`);
      assert.ok(idle.graph_launch_ms! < idle.profiled_ms!);
      assert.match(b.readings.join('\n'), /of it before the graph's first kernel, the GPU waiting while the CPU sits in cudaGraphLaunch/);
      assert.doesNotMatch(b.readings.join('\n'), /host syncs/);
    });
  }

  it("says when micro timed a fallback kernel instead of the server's (no vLLM, so no Marlin)", () => {
    const micro = microInputFrom('kimi-micro', agentResult(join(MICRO, 'micro-kimi-tp8-h200.jsonl')));
    assert.equal(micro.model?.name, 'kimi-k2.5');
    assert.equal(micro.model?.layers, 61);
    assert.deepEqual(micro.model?.experts, KIMI_K25_TP8.experts);
    const b = buildBudget({ micro });
    assert.match(b.caveats.join('\n'), /Micro timed its GEMMs with torch\.matmul bf16 \(cuBLAS\), not the server's kernel \(vLLM is not importable here/);
    // Every Kimi shape was measured, so both GEMM rows are predicted from the H200's own numbers.
    const moe = b.rows.find((r) => r.key === 'moe_gemm')!;
    const gateUp = micro.gemm.find((p) => p.shape === 'moe.gate_up' && p.m === 1)!;
    const down = micro.gemm.find((p) => p.shape === 'moe.down' && p.m === 1)!;
    // As servers run them: one fused kernel per MoE layer and weight (60 layers), reading the 8 experts
    // hit at batch 1 at the H200's measured copy bandwidth — not 480 one-expert GEMMs of each.
    const fusedUs = (p: { bytes?: number; time_us: number }) => Math.max(p.time_us, (8 * p.bytes!) / (micro.copy_tbps! * 1e6));
    assert.ok(Math.abs(moe.predicted_ms! - (60 * (fusedUs(gateUp) + fusedUs(down))) / 1000) < 1e-9);
    assert.ok(moe.predicted_ms! < (480 * (gateUp.time_us + down.time_us)) / 1000 / 3, `${moe.predicted_ms} ms`);
    assert.match(moe.prediction!, /^one fused MoE kernel per layer and weight: moe\.gate_up 60 x/);
    assert.ok(b.rows.find((r) => r.key === 'gemm')!.predicted_ms! > 0);
    assert.ok(!b.caveats.some((c) => /did not measure/.test(c)));
  });
});
