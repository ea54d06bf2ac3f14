import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { compareRunFolders, CompareError, findRun } from '../../../src/core/compare/compareRuns';
import { compareMacro } from '../../../src/core/compare/macro';
import { comparisonText } from '../../../src/cli/commands/compare';
import { compareMicro } from '../../../src/core/compare/micro';
import { normalQuantile, standardError } from '../../../src/core/compare/noise';
import { compareProfiles } from '../../../src/core/compare/profile';
import { ImportError, importVllmBench, levelFromVllm, parseVllmBenchFile } from '../../../src/core/compare/vllmBench';
import { MicroInput, ProfileInput, profileInputFrom } from '../../../src/core/explain/inputs';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { RunFolder } from '../../../src/core/runs/runFolder';
import { readStoredRun } from '../../../src/core/runs/storedRuns';
import { storedRunTrace } from '../../../src/core/runs/requestTrace';
import { timelineData } from '../../../webview-ui/src/views/timeline';

const FIXTURES = join(__dirname, '..', '..', 'fixtures', 'vllm-bench');
const C1 = join(FIXTURES, 'kimi-sim-c1.json');
const SWEEP = join(FIXTURES, 'kimi-sim-sweep.jsonl');
const DETAILED = join(FIXTURES, 'kimi-sim-c2-detailed.json');
const ref = (id: string) => ({ id, label: id });
const workspace = () => mkdtempSync(join(tmpdir(), 'ib-compare-'));

describe('importing a vllm bench serve result', () => {
  it("keeps vLLM's numbers under the same names, one level per result, without the per-request lists", () => {
    const raw = JSON.parse(readFileSync(C1, 'utf8'));
    const [level] = parseVllmBenchFile(readFileSync(C1, 'utf8')).map(levelFromVllm);
    assert.equal(level.max_concurrency, 1);
    assert.equal(level.request_rate, null, '"inf" becomes our null (unlimited)');
    for (const key of ['median_tpot_ms', 'p99_tpot_ms', 'mean_ttft_ms', 'output_throughput', 'completed', 'duration']) assert.equal(level[key], raw[key], key);
    assert.equal(level.latencies, undefined);
    assert.equal(level.model_id, undefined);
    // Known answer: at concurrency 1 the simulator's TPOT is its batch-1 step, 21.7 ms (±3% jitter averages out).
    assert.ok(Math.abs((level.median_tpot_ms as number) - 21.7) < 0.1);
  });

  it('reads an --append-result file as a sweep and creates a completed macro run folder', () => {
    const ws = workspace();
    const run = importVllmBench(ws, SWEEP);
    const reopened = RunFolder.open(run.dir);
    assert.equal(reopened.info.phase, 'macro');
    assert.equal(reopened.info.status, 'completed');
    assert.equal(reopened.info.simulated, true, 'a simulated model id keeps the simulator label');
    assert.equal(reopened.info.options.imported_from, 'kimi-sim-sweep.jsonl');
    const result = reopened.readResult<{ levels: { max_concurrency: number; p90_e2el_ms?: number }[]; source: string }>()!;
    assert.equal(result.source, 'vllm bench serve');
    assert.deepEqual(
      result.levels.map((l) => l.max_concurrency),
      [1, 4, 16],
    );
    assert.ok(typeof result.levels[0].p90_e2el_ms === 'number', '--metric-percentiles 50,90,99 fields come through');
    assert.equal(RunFolder.list(ws)[0].info.id, run.info.id);
  });

  it("puts a --save-detailed result's requests on the results view's timeline, each as vLLM timed it", async () => {
    const raw = JSON.parse(readFileSync(DETAILED, 'utf8'));
    const ws = workspace();
    const run = importVllmBench(ws, DETAILED);
    assert.equal(run.readResult<{ requests: number }>()!.requests, 8);
    const shown = await readStoredRun(run.dir);
    const points = shown!.macro!.requests!;
    assert.equal(points.length, 8);
    const first = Math.min(...raw.start_times);
    points.forEach((p, i) => {
      assert.ok(Math.abs(p.start_s - (raw.start_times[i] - first)) < 1e-6, `request ${i} sent ${p.start_s}`);
      assert.ok(Math.abs(p.ttft_ms! - raw.ttfts[i] * 1000) < 1e-3);
      assert.ok(Math.abs(p.e2el_ms! - raw.latencies[i] * 1000) < 1e-3);
      assert.equal(p.output_tokens, raw.output_lens[i]);
      // Known answer: the simulator's step at two running sequences, 21.9 ms, ±3% jitter.
      assert.ok(Math.abs(p.tpot_ms! - 21.9) < 0.7, `TPOT ${p.tpot_ms}`);
      assert.equal(p.queued_ms, null, "at an unlimited rate vLLM's queue time is the wait for a slot, not a late send");
    });
    const t = timelineData(shown!)!;
    assert.equal(t.requests.lanes, 2, '--max-concurrency 2: two lanes');
    assert.deepEqual(
      t.levels.map((l) => l.label),
      ['c=2'],
    );
  });

  it('exports an imported run with per-request data as a Chrome trace, and says why one without it has none', () => {
    const ws = workspace();
    const detailed = importVllmBench(ws, DETAILED);
    const trace = JSON.parse(storedRunTrace(ws, detailed.info.id)) as { traceEvents: { name: string; ph: string; tid?: number; dur?: number }[] };
    const requests = trace.traceEvents.filter((e) => e.ph === 'X' && e.name.startsWith('request'));
    assert.equal(requests.length, 8);
    assert.deepEqual([...new Set(requests.map((e) => e.tid))].sort(), [1, 2]);
    assert.ok(trace.traceEvents.some((e) => e.name === 'process_name' && JSON.stringify(e).includes('level c=2')));
    const summary = importVllmBench(ws, C1);
    assert.throws(() => storedRunTrace(ws, summary.info.id), /kept no request with its send time.*--save-detailed/);
    assert.throws(() => storedRunTrace(ws, '../../etc'), /No run "\.\.\/\.\.\/etc"/);
  });

  it('says what is wrong with a file that is not a vllm bench serve result', () => {
    const ws = workspace();
    const bad = join(ws, 'bad.json');
    writeFileSync(bad, '{"date": "20261201-000000", "completed": 3}\n');
    assert.throws(
      () => importVllmBench(ws, bad),
      (e: Error) => e instanceof ImportError && /lacks duration, output_throughput/.test(e.message),
    );
    writeFileSync(bad, '{"completed": 1, "duration": 2, "output_throughput": 3}\n{oops\n');
    assert.throws(() => importVllmBench(ws, bad), /line 2 is not JSON/);
    assert.throws(() => importVllmBench(ws, join(ws, 'missing.json')), /Cannot read .*missing\.json: ENOENT/);
  });
});

describe('judging differences against noise', () => {
  it('uses the sampling error of the statistic compared', () => {
    assert.ok(Math.abs(normalQuantile(0.99) - 2.3263) < 1e-3);
    assert.ok(Math.abs(standardError('median', 1, 100) - 0.12533) < 1e-4);
    assert.equal(standardError('mean', 2, 16), 0.5);
    assert.ok(standardError(0.99, 1, 100) > 3 * standardError('mean', 1, 100), 'p99 is far noisier than the mean');
  });
});

describe('comparing macro runs', () => {
  const levels = (file: string) => parseVllmBenchFile(readFileSync(file, 'utf8')).map(levelFromVllm) as unknown as Record<string, unknown>[];

  it('finds no difference beyond noise between two runs of the same server and load', () => {
    // The two fixtures' concurrency-1 runs replay the same timing model with different jitter seeds.
    const c = compareMacro(ref('A'), levels(C1), ref('B'), levels(SWEEP));
    assert.equal(c.differences.filter((d) => d.flagged).length, 0, c.summary.join('\n'));
    assert.match(c.summary[0], /No difference between A and B beyond noise/);
    assert.deepEqual(c.unmatched, ['c=4 only in B', 'c=16 only in B']);
  });

  it('says there is nothing to compare when the runs share no level, rather than "no difference", and marks nothing', () => {
    const a = levels(C1);
    const b = levels(SWEEP).filter((l) => l.max_concurrency !== a[0].max_concurrency);
    const c = compareMacro(ref('A'), a, ref('B'), b);
    assert.deepEqual(c.summary, [
      'Nothing to compare between A and B: they measured nothing the same way (no common level, shape or category with the same workload).',
    ]);
    assert.doesNotMatch(comparisonText(c, false), /▲/);
  });

  it('flags an 8% slower TPOT and the lower throughput that comes with it, naming the better run', () => {
    const a = levels(C1);
    const slower = a.map((l) => ({
      ...l,
      median_tpot_ms: (l.median_tpot_ms as number) * 1.08,
      mean_tpot_ms: (l.mean_tpot_ms as number) * 1.08,
      output_throughput: (l.output_throughput as number) / 1.08,
    }));
    const c = compareMacro(ref('before'), a, ref('after'), slower);
    const tpot = c.differences.find((d) => d.metric === 'TPOT median (ms)')!;
    assert.equal(tpot.flagged, true);
    assert.equal(tpot.better, 'a');
    const thr = c.differences.find((d) => d.metric === 'output throughput (tok/s)')!;
    assert.equal(thr.flagged, true);
    assert.match(c.summary.join('\n'), /c=1: TPOT median 21\.\d+ → 23\.\d+ ms \(\+8\.0%, beyond the ±0\.\d+ ms noise threshold, 1% floor\): before is better/);
    assert.equal(c.differences.find((d) => d.metric === 'TTFT mean (ms)')!.flagged, false, 'what did not change is not flagged');
  });

  it('sums up a sweep that moved everywhere in one line per metric, the median once (not again as p50)', () => {
    const a = levels(SWEEP);
    // Every latency statistic 10% higher and throughput 10% lower at all three levels: dozens of flagged quantities.
    const slower = a.map((l) =>
      Object.fromEntries(
        Object.entries(l).map(([k, v]) => [
          k,
          typeof v !== 'number' ? v : /_(ttft|tpot|itl|e2el)_ms$/.test(k) && !k.startsWith('std_') ? v * 1.1 : /_throughput$/.test(k) ? v / 1.1 : v,
        ]),
      ),
    );
    const c = compareMacro(ref('before'), a, ref('after'), slower);
    assert.ok(!c.differences.some((d) => /p50/.test(d.metric)), 'p50 is the median, compared once');
    assert.ok(c.differences.filter((d) => d.flagged).length > 20, 'the sweep moved in many quantities');
    const text = c.summary.join('\n');
    assert.ok(c.summary.length <= 6, text);
    assert.doesNotMatch(text, /p50/);
    for (const family of ['output throughput', 'TPOT median', 'TTFT median', 'ITL median', 'E2EL median'])
      assert.equal(c.summary.filter((l) => l.startsWith(family)).length, 1, `${family} once in:\n${text}`);
    assert.match(
      text,
      /TPOT median \(ms\): c=1 21\.\d+ → 23\.\d+ \(\+10\.0%\), c=4 [\d.]+ → [\d.]+ \(\+10\.0%\), c=16 [\d.]+ → [\d.]+ \(\+10\.0%\): before is better at c=1, c=4, c=16; mean, p90, p99 moved too\./,
    );
  });

  it('does not flag a change smaller than the noise of a spread-out metric', () => {
    const a = levels(C1);
    // TTFT's sd is ~1.1 ms over 16 requests: a 1 ms shift of the mean is within 3 SE of the difference.
    const b = a.map((l) => ({ ...l, mean_ttft_ms: (l.mean_ttft_ms as number) + 1 }));
    assert.equal(compareMacro(ref('A'), a, ref('B'), b).differences.find((d) => d.metric === 'TTFT mean (ms)')!.flagged, false);
    const far = a.map((l) => ({ ...l, mean_ttft_ms: (l.mean_ttft_ms as number) + 3 }));
    assert.equal(compareMacro(ref('A'), a, ref('B'), far).differences.find((d) => d.metric === 'TTFT mean (ms)')!.flagged, true);
  });
});

describe('comparing profiles', () => {
  const profile = (over: Partial<ProfileInput> & { by_category_ms: Record<string, number> }): ProfileInput => ({
    runId: 'p',
    batch: 1,
    step_ms: Object.values(over.by_category_ms).reduce((a, b) => a + b, 0),
    ...over,
  });

  it('flags the category that moved and the kernels that appeared or vanished', () => {
    const a = profile({
      by_category_ms: { 'all-reduce': 11.17, 'moe gemm': 3.98, attention: 1.3, idle: 5.25 },
      top_kernels: [
        { name: 'cross_device_reduce_1stage<bf16>', category: 'all-reduce', ms_per_step: 11.17 },
        { name: 'fused_moe_kernel', category: 'moe gemm', ms_per_step: 3.98 },
      ],
    });
    const b = profile({
      by_category_ms: { 'all-reduce': 6.1, 'moe gemm': 3.99, attention: 1.3, idle: 5.25 },
      top_kernels: [
        { name: 'allreduce_fusion_kernel<bf16>', category: 'all-reduce', ms_per_step: 6.1 },
        { name: 'fused_moe_kernel', category: 'moe gemm', ms_per_step: 3.99 },
      ],
    });
    const c = compareProfiles(ref('A'), a, ref('B'), b);
    const flagged = c.differences.filter((d) => d.flagged).map((d) => d.where);
    assert.ok(flagged.includes('decode step'));
    assert.ok(flagged.includes('category all-reduce'));
    assert.ok(!flagged.includes('category moe gemm'), '0.01 ms is not a change that matters');
    // The step leads, though all-reduce moved further: it is what the categories add up to.
    assert.match(c.summary[0], /^The decode step went from/);
    const text = c.summary.join('\n');
    assert.match(text, /all-reduce: 11\.17 → 6\.10 ms per step \(−45\.4%\), 51\.5% → 36\.7% of the step/);
    assert.match(text, /Vanished in B: cross_device_reduce_1stage<bf16>/);
    assert.match(text, /Appeared in B: allreduce_fusion_kernel<bf16>/);
  });
});

describe('comparing micro runs', () => {
  it('flags a GEMM 10% slower but not a 0.5 us wobble on a 3 us kernel', () => {
    const base: MicroInput = {
      runId: 'a',
      gemm: [
        { shape: 'moe.gate_up', m: 1, n: 512, k: 7168, time_us: 20 },
        { shape: 'moe.down', m: 1, n: 7168, k: 256, time_us: 3 },
      ],
      allreduce: [{ size_bytes: 14336, time_us: 40 }],
      launch: [{ mode: 'graph', us_per_kernel: 1 }],
    };
    const after: MicroInput = {
      ...base,
      runId: 'b',
      gemm: [
        { ...base.gemm[0], time_us: 22 },
        { ...base.gemm[1], time_us: 3.5 },
      ],
    };
    const c = compareMicro(ref('A'), base, ref('B'), after);
    assert.deepEqual(
      c.differences.filter((d) => d.flagged).map((d) => d.where),
      ['GEMM moe.gate_up 512x7168 M=1'],
    );
    assert.match(c.summary[0], /GEMM moe\.gate_up 512x7168 M=1: 20\.0 → 22\.0 us \(\+10\.0%\): A is faster/);
  });
});

describe('comparing run folders', () => {
  it('refuses two runs of different phases, saying what to use instead', () => {
    const ws = workspace();
    const macro = importVllmBench(ws, C1);
    const micro = RunFolder.create(ws, 'micro', 'local', {});
    micro.writeResult({ points: [] });
    micro.finish('completed');
    assert.throws(
      () => compareRunFolders(macro, micro),
      (e: Error) => e instanceof CompareError && /compare two runs of the same phase .*infbench explain/.test(e.message),
    );
  });

  it('finds runs by a unique start of their id and explains a missing one', () => {
    const ws = workspace();
    const run = importVllmBench(ws, C1);
    assert.equal(findRun(ws, run.info.id.slice(0, 12)).info.id, run.info.id);
    assert.throws(() => findRun(ws, 'nope'), /No run "nope"/);
  });
});

describe('comparing profiles of real H200 traces', () => {
  it('flags eager launching against CUDA graphs as idle time while the GEMMs stay the same', async () => {
    const traces = join(__dirname, '..', '..', 'fixtures', 'traces');
    const graph = profileInputFrom('graph', await analyzeTraceFiles([join(traces, 'llama_cudagraph_decode.pt.trace.json.gz')]), { concurrency: 4 })!;
    const eager = profileInputFrom('eager', await analyzeTraceFiles([join(traces, 'llama_eager_decode.pt.trace.json.gz')]), { concurrency: 4 })!;
    const c = compareProfiles(ref('graph'), graph, ref('eager'), eager);
    const flagged = (where: string) => c.differences.find((d) => d.where === where && d.metric === 'ms per step')!.flagged;
    assert.equal(flagged('decode step'), true);
    assert.equal(flagged('category idle'), true);
    assert.equal(flagged('category gemm'), false, 'the same cuBLAS GEMMs run in both');
    assert.equal(c.differences.find((d) => d.where === 'decode step')!.better, 'a');
    // A graph step without names runs from its input copies to its sampling (as a named one does), so the
    // GPU's wait on cudaGraphLaunch before the replay is the graph run's idle.
    assert.match(c.summary.join('\n'), /idle: 0\.51 → 98\.\d\d ms per step/);
    assert.match(c.summary[0], /^The decode step went from 1\.04 to 98\.\d\d ms/);
    // Same model, same kernels: a kernel that only left the other run's top 15 has not vanished.
    assert.ok(!c.summary.some((l) => /Appeared|Vanished/.test(l)), c.summary.join('\n'));
  });
});
