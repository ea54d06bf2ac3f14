import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { BUILTIN_PATTERNS, workloadSteps } from '../../../src/core/trace/steps';
import { RankBreakdown } from '../../../src/core/trace/types';
import { kinetoTrace, StepSpec } from './kineto';

// Real traces of a small continuous-batching server loop on an H200 (test/fixtures/traces/serving,
// README there): the truth is the loop's own step log (CUDA events), not a pass over the trace.
const DIR = 'test/fixtures/traces/serving';
const tmp = mkdtempSync(join(tmpdir(), 'ib-serving-'));

interface LoggedStep {
  kind: 'prefill' | 'mixed' | 'decode';
  event_ms: number;
}
const logOf = (tag: string) => JSON.parse(readFileSync(join(DIR, `${tag}.steps.json`), 'utf8')) as { steps: LoggedStep[] };
const trace = (tag: string) => join(DIR, `${tag}.pt.trace.json.gz`);
const kinds = (steps: LoggedStep[]) => ({
  prefill: steps.filter((s) => s.kind === 'prefill').length,
  mixed: steps.filter((s) => s.kind === 'mixed').length,
  decode: steps.filter((s) => s.kind === 'decode').length,
});
const mean = (v: number[]) => v.reduce((a, b) => a + b, 0) / v.length;
const kernelMsPerStep = (r: RankBreakdown) => r.decode.categories.reduce((a, c) => a + c.rawMsPerStep, 0);
const near = (actual: number, expected: number, share: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= share * expected, `${what}: ${actual.toFixed(4)} against ${expected.toFixed(4)} (within ${100 * share}%)`);

/** The same trace with its step names taken out: what a server that names no step would have written. */
function withoutNames(tag: string, file = trace(tag)): string {
  const doc = JSON.parse(gunzipSync(readFileSync(file)).toString('utf8')) as { traceEvents: { cat?: string }[] };
  doc.traceEvents = doc.traceEvents.filter((e) => e.cat !== 'user_annotation' && e.cat !== 'gpu_user_annotation');
  const path = join(tmp, `${tag}_unnamed.pt.trace.json.gz`);
  writeFileSync(path, gzipSync(JSON.stringify(doc)));
  return path;
}

describe('steps of a real continuous-batching loop (H200): counted where the trace bears them out', () => {
  for (const tag of ['eager_names', 'graph_names', 'graph_long_names']) {
    it(`${tag}: each kind of step as the loop logged it, the decode step within 3% of the loop's CUDA-event time`, async () => {
      const r = (await analyzeTraceFiles([trace(tag)])).ranks[0];
      const log = logOf(tag).steps;
      assert.equal(r.stepSource, 'annotation');
      assert.equal(r.stepConfidence, 'exact');
      assert.deepEqual({ prefill: r.prefill.count, mixed: r.mixed?.count ?? 0, decode: r.decode.count }, kinds(log));
      near(r.decode.stepMs!.mean, mean(log.filter((s) => s.kind === 'decode').map((s) => s.event_ms)), 0.03, 'decode step ms');
    });
  }

  it("reads vLLM's step names whatever their parentheses hold, the kind from the request counts", () => {
    const kindOf = (name: string) => {
      const p = BUILTIN_PATTERNS.find((x) => x.re.test(name));
      assert.ok(p, `no pattern takes ${name}`);
      return [p.writer, p.kindOf(name)];
    };
    const vllm = "vLLM's step annotation";
    // Forms seen in public vLLM traces (issue 26), and the two of vllm/v1/worker/gpu_worker.py.
    assert.deepEqual(kindOf('execute_context_1(888_788544)_generation_0(0)'), [vllm, 'prefill']);
    assert.deepEqual(kindOf('execute_32_context_0(sq0sk0…)_generation_32(sq32sk55086…)'), [vllm, 'decode']);
    assert.deepEqual(kindOf('execute_8_context_4(sq208sk208)_generation_4(sq4sk180)'), [vllm, 'mixed']);
    assert.deepEqual(kindOf('execute_context_0(0)_generation_4(4)'), [vllm, 'decode']);
    assert.deepEqual(kindOf('execute_new_2_cached_6'), [vllm, 'mixed']);
    assert.deepEqual(kindOf('execute_new_0_cached_8'), [vllm, 'decode']);
  });

  it('with one CUDA graph per step and no names: as many decode steps, each as long and as busy as the same trace cut by its names', async () => {
    const named = (await analyzeTraceFiles([trace('graph_names')])).ranks[0];
    const unnamed = (await analyzeTraceFiles([withoutNames('graph_names')])).ranks[0];
    assert.equal(unnamed.stepSource, 'cuda-graph');
    assert.ok(Math.abs(unnamed.decode.count - named.decode.count) <= 1, `${unnamed.decode.count} decode steps against ${named.decode.count}`);
    // Per step means what it means with names: from the step's input copies to its sampling, not
    // graph launch to graph launch. The first step's input copies, launched before any graph launch,
    // are its own too (they repeat the second step's head): every step as long as named.
    near(unnamed.decode.stepMs!.median, named.decode.stepMs!.median, 0.005, 'median decode step ms');
    near(unnamed.decode.stepMs!.mean, named.decode.stepMs!.mean, 0.005, 'mean decode step ms');
    near(unnamed.decode.stepMs!.min, named.decode.stepMs!.min, 0.005, 'shortest decode step ms');
    near(unnamed.decode.stepMs!.p90, named.decode.stepMs!.p90, 0.005, 'p90 decode step ms');
    near(kernelMsPerStep(unnamed), kernelMsPerStep(named), 0.005, 'kernel ms per decode step');
    assert.match(unnamed.warnings.join(' '), /as many as the sampling kernels \(1 per step\) give/);
  });

  for (const tag of ['graph_unnamed', 'graph_unnamed_sampled_in_graph']) {
    it(`${tag}: decode steps within one of the loop's log, both ways of reading`, async () => {
      const log = kinds(logOf(tag).steps);
      for (const mode of ['auto', 'in-memory'] as const) {
        const r = (await analyzeTraceFiles([trace(tag)], { mode })).ranks[0];
        assert.equal(r.stepSource, 'cuda-graph');
        assert.ok(Math.abs(r.decode.count - log.decode) <= 1, `${mode}: ${r.decode.count} decode steps against ${log.decode}`);
      }
    });
  }

  it("eager_unnamed: decode steps within one of the loop's log, the cut borne out by one sampling per step", async () => {
    const r = (await analyzeTraceFiles([trace('eager_unnamed')])).ranks[0];
    assert.equal(r.stepSource, 'repeating-pattern');
    assert.ok(Math.abs(r.decode.count - kinds(logOf('eager_unnamed').steps).decode) <= 1, `${r.decode.count} decode steps`);
    assert.match(r.warnings.join(' '), /as many steps as the sampling kernels \(1 per step\) give/);
  });

  it("eager_names: the expert loop's dispatch (nonzero, index, index_add_), router softmax and topk sort are named, under 5% left as other", async () => {
    const r = (await analyzeTraceFiles([trace('eager_names')])).ranks[0];
    const share = (category: string) => (r.decode.categories.find((c) => c.category === category)?.rawMsPerStep ?? 0) / kernelMsPerStep(r);
    assert.ok(share('other') < 0.05, `other ${(100 * share('other')).toFixed(1)}% of kernel time per decode step`);
    assert.ok(share('index/gather') > 0.2, `index/gather ${(100 * share('index/gather')).toFixed(1)}%`);
    assert.ok(share('softmax') > 0 && share('sort') > 0);
  });

  it('says a profile of graph capture at start-up is that, with no decode step', async () => {
    const b = await analyzeTraceFiles([trace('graph_capture_only')]);
    const r = b.ranks[0];
    assert.equal(r.decode.count, 0);
    assert.equal(r.prefill.count, 0);
    assert.match(b.headline, /^A CUDA-graph capture profile/);
    assert.doesNotMatch(b.headline, /decode step \(/);
  });
});

describe('public vLLM graph-capture profiles (AMD TraceLens test data, ROCm)', () => {
  for (const name of ['vllm_decode_full', 'vllm_prefilldecode_piecewise']) {
    it(`${name}: a capture profile, no decode step`, async () => {
      const b = await analyzeTraceFiles([join('test/fixtures/traces/public/tracelens', `${name}_graph_capture_rank_0.pt.trace.json.gz`)]);
      assert.equal(b.ranks[0].decode.count, 0);
      assert.match(b.headline, /^A CUDA-graph capture profile: \d+ graph capture call\(s\) and no graph launch/);
    });
  }
});

describe('public vLLM and SGLang serving traces on ROCm (AMD TraceLens test data)', () => {
  const cases: [string, { decode: number; prefill: number; mixed: number }][] = [
    ['vllm_decode_full_graph_execution.json.gz', { decode: 1, prefill: 0, mixed: 0 }],
    ['vllm_prefilldecode_piecewise_graph_execution.json.gz', { decode: 0, prefill: 0, mixed: 1 }],
    ['sglang_decode_sglang_Qwen3-8B_decode.json.gz', { decode: 1, prefill: 0, mixed: 0 }],
  ];
  for (const [file, kinds] of cases) {
    it(`${file}: the steps by kind from their names, and the ROCm kernels in their families (under 3% "other")`, async () => {
      const r = (await analyzeTraceFiles([join('test/fixtures/traces/public/tracelens', file)])).ranks[0];
      assert.equal(r.stepSource, 'annotation');
      assert.deepEqual({ decode: r.decode.count, prefill: r.prefill.count, mixed: r.mixed?.count ?? 0 }, kinds);
      const total = r.kernelTotals.reduce((a, k) => a + k.totalMs, 0);
      const other = r.kernelTotals.filter((k) => k.category === 'other');
      const share = other.reduce((a, k) => a + k.totalMs, 0) / total;
      assert.ok(
        share < 0.03,
        `${(100 * share).toFixed(1)}% other: ${other
          .slice(0, 3)
          .map((k) => k.name.slice(0, 60))
          .join(' | ')}`,
      );
    });
  }
});

describe('steps with no names need two witnesses that agree', () => {
  /** One decode pass of four identical layers, replayed by one graph launch per step, nothing eager: layers look like passes. */
  const layeredGraphSteps = (n: number): StepSpec[] =>
    Array.from({ length: n }, () => ({
      graph: true,
      gapAfter: 300,
      kernels: Array.from({ length: 4 }, (_, l) => [
        { name: 'nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT', at: 60 * l, dur: 40 },
        { name: 'void flash::flash_fwd_splitkv_kernel<...>', at: 60 * l + 40, dur: 15 },
      ]).flat(),
    }));

  it('does not take layers for passes: 20 graph launches against a unit that repeats 80 times is "steps could not be identified", totals only', async () => {
    const b = await analyzeTraceFiles([join(tmp, 'layers.json')].map((p) => (writeFileSync(p, kinetoTrace(layeredGraphSteps(20))), p)));
    const r = b.ranks[0];
    assert.equal(r.stepSource, 'none');
    assert.equal(r.decode.count, 0);
    assert.match(b.headline, /^Steps could not be identified/);
    assert.match(b.headline, /20 CUDA graph launches/);
    assert.match(b.headline, /Totals over the capture: 160 kernels/);
  });

  it('with piecewise graphs (several launches a step) and no names: the repeating pass, as one sampling per step gives', async () => {
    // test/fixtures/traces/servers: a vLLM 0.26+ rank replaying four graphs per decode step; truth.json: 2 prefill, 1 mixed, 30 decode.
    const named = 'test/fixtures/traces/servers/vllm-0.26-piecewise-tp2/dp0_pp0_tp0_dcp0_ep0_rank0.1796115891487369708.pt.trace.json.gz';
    const r = (await analyzeTraceFiles([withoutNames('piecewise', named)])).ranks[0];
    assert.equal(r.stepSource, 'repeating-pattern');
    const steps = r.decode.count + r.prefill.count + (r.mixed?.count ?? 0);
    assert.ok(Math.abs(steps - 33) <= 1, `${steps} steps against 33`);
    assert.match(r.warnings.join(' '), /as many steps as the sampling kernels \(1 per step\) give\. The 124 CUDA graph launches are 3\.6 per step/);
  });

  it('takes the graph launches once the workload the profile phase drove gives the same count', async () => {
    const path = join(tmp, 'layers-workload.json');
    writeFileSync(path, kinetoTrace(layeredGraphSteps(20)));
    // What the profile phase passes: one stream of 21 output tokens is a prefill and 20 decode steps.
    const r = (await analyzeTraceFiles([path], { expectedSteps: workloadSteps(1, 21) })).ranks[0];
    assert.equal(r.stepSource, 'cuda-graph');
    assert.equal(r.decode.count, 20);
  });

  it('does not cut an eager loop over experts into steps: a unit repeating hundreds of times against one sampling per step', async () => {
    // 31 steps, each a different number of experts (as routing gives), then one greedy sampling.
    const steps: StepSpec[] = Array.from({ length: 31 }, (_, i) => {
      const experts = 3 + ((i * 7) % 5);
      const kernels = Array.from({ length: experts }, (_, e) => [
        { name: 'nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT', at: 30 * e, dur: 12 },
        { name: 'void at::native::index_elementwise_kernel<...>', at: 30 * e + 14, dur: 4 },
      ]).flat();
      kernels.push({ name: 'void at::native::reduce_kernel<512, 1, at::native::ReduceOp<float, at::native::ArgMaxOps<float>>>', at: 30 * experts, dur: 5 });
      return { gapAfter: 2000, kernels };
    });
    const path = join(tmp, 'experts.json');
    writeFileSync(path, kinetoTrace(steps));
    const b = await analyzeTraceFiles([path]);
    assert.equal(b.ranks[0].decode.count, 0, `${b.ranks[0].decode.count} "decode steps" for 31 real ones`);
    assert.match(b.headline, /^Steps could not be identified.*31 sampling kernels/);
  });
});
