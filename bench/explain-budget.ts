// The decode-step budget against real H200 captures, and what building one costs.
//
//   npx tsx bench/explain-budget.ts
//
// 1. Prediction accuracy: the small Llama-like decoder of test/fixtures/traces/capture.py was traced
//    on an H200 (CUDA graph replay, batch 4), and its GEMM shapes were micro-benchmarked on an H200
//    (test/fixtures/explain/micro-llama-h200.jsonl). Prints the traced GEMM ms per step against what
//    micro's isolated GEMMs add up to, and the traced idle time against micro's launch gap x kernels.
// 2. Cost: builds the budget for the seed scenario (8 ranks, every category, a micro run with the
//    Kimi-K2.5 TP=8 shapes measured on the H200) repeatedly and prints the mean time per budget.
// Run from the repository root.
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { buildBudget } from '../src/core/explain/budget';
import { microInputFrom, profileInputFrom } from '../src/core/explain/inputs';
import { ModelStructure } from '../src/core/explain/modelStructure';
import { analyzeTraceFiles } from '../src/core/trace/analyze';

const agentResult = (file: string) =>
  (
    readFileSync(resolve(file), 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((e: { type: string }) => e.type === 'result') as { result: unknown }
  ).result;

const LLAMA: ModelStructure = {
  name: 'capture.py llama',
  source: 'capture.py',
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

async function main(): Promise<void> {
  const breakdown = await analyzeTraceFiles([resolve('test/fixtures/traces/llama_cudagraph_decode.pt.trace.json.gz')]);
  const profile = profileInputFrom('trace', breakdown, { concurrency: 4 })!;
  const micro = microInputFrom('micro', agentResult('test/fixtures/explain/micro-llama-h200.jsonl'));
  const b = buildBudget({ profile, micro, model: LLAMA });
  const gemm = b.rows.find((r) => r.key === 'gemm')!;
  const idle = b.rows.find((r) => r.key === 'idle')!;
  console.log(`H200, capture.py decoder at batch 4, ${profile.steps} CUDA-graph decode steps of ${profile.step_ms.toFixed(3)} ms`);
  console.log(
    `  GEMM per step: traced ${gemm.profiled_ms!.toFixed(4)} ms, micro predicts ${gemm.predicted_ms!.toFixed(4)} ms (${((100 * gemm.gap_ms!) / gemm.profiled_ms!).toFixed(1)}% traced − predicted)`,
  );
  console.log(`  idle per step: traced ${idle.profiled_ms!.toFixed(4)} ms, launch gaps predict ${idle.predicted_ms!.toFixed(4)} ms (${idle.prediction})`);

  const kimi = microInputFrom('kimi', agentResult('test/fixtures/explain/micro-kimi-tp8-h200.jsonl'));
  const seed = {
    runId: 'seed',
    batch: 1,
    step_ms: 21.7,
    period_ms: 21.74,
    steps: 40,
    kernels_per_step: 2100,
    by_category_ms: {
      'all-reduce': 10.919,
      'nccl all-reduce': 0.251,
      'moe gemm': 3.98,
      'quantized gemm': 2.12,
      gemm: 0.45,
      attention: 1.3,
      'moe routing': 0.4,
      norm: 0.42,
      idle: 1.86,
    },
    ranks: Array.from({ length: 8 }, (_, rank) => ({ rank, step_ms: 21.7 })),
  };
  const macro = { runId: 'macro', levels: [{ max_concurrency: 1, median_tpot_ms: 21.9, mean_tpot_ms: 21.95 }] };
  const n = 2000;
  const t0 = process.hrtime.bigint();
  for (let i = 0; i < n; i++) buildBudget({ profile: seed, micro: kimi, macro });
  const us = Number(process.hrtime.bigint() - t0) / 1000 / n;
  console.log(`budget for the seed scenario (${kimi.gemm.length} micro GEMM points): ${us.toFixed(1)} us per build, mean of ${n}`);
}

void main();
