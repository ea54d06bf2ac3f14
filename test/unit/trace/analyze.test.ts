import * as assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { analyzeTracesInWorker, poolSize, WORKER_PEAK_BYTES } from '../../../src/core/trace/analyzeInWorker';
import { renderBreakdownText } from '../../../src/core/trace/format';
import { RankBreakdown, TraceBreakdown } from '../../../src/core/trace/types';
import { kinetoTrace, StepSpec } from './kineto';

const FIXTURES = 'test/fixtures/traces';
const dir = mkdtempSync(join(tmpdir(), 'ib-trace-'));

function write(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

function share(b: { categories: { category: string; sharePct: number; msPerStep: number; rawMsPerStep: number }[] }, category: string) {
  const c = b.categories.find((x) => x.category === category);
  assert.ok(c, `no category ${category} in ${b.categories.map((x) => x.category).join(', ')}`);
  return c;
}

/** A decode step of known composition: GEMM 100 us, all-reduce `ar` us, attention on a second stream overlapping the all-reduce by 30 us, a 10 us gap, a norm. */
function decodeStep(ar: number, annotation?: string, gapAfter = 500): StepSpec {
  return {
    annotation,
    gapAfter,
    kernels: [
      { name: 'nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT', at: 0, dur: 100 },
      { name: 'void vllm::cross_device_reduce_1stage<__nv_bfloat16, 8>(...)', at: 100, dur: ar },
      { name: 'void flash::flash_fwd_splitkv_kernel<...>', at: 70 + ar, dur: 50, stream: 8 },
      { name: 'void vllm::rms_norm_kernel<c10::BFloat16>(...)', at: 130 + ar, dur: 10 },
    ],
  };
}
const prefillStep = (annotation?: string): StepSpec => ({
  annotation,
  gapAfter: 800,
  kernels: [{ name: 'sm90_xmma_gemm_bf16bf16_bf16f32', at: 0, dur: 1000 }],
});

function rankTrace(ar: number, rank: number, annotate: boolean, distributedInfoLast = false): string {
  const steps = [prefillStep(annotate ? 'execute_new_2_cached_0' : undefined)];
  for (let i = 0; i < 4; i++) steps.push(decodeStep(ar, annotate ? 'execute_new_0_cached_2' : undefined));
  return kinetoTrace(steps, { rank, worldSize: 2, distributedInfoLast });
}

function sumShares(r: { categories: { sharePct: number }[] }): number {
  return r.categories.reduce((a, c) => a + c.sharePct, 0);
}

describe('trace breakdown on real H200 traces', () => {
  for (const name of ['llama_eager_decode', 'llama_cudagraph_decode']) {
    it(`${name}: every kernel's count and total time agree with torch's key_averages() (within 0.01%)`, async () => {
      const b = await analyzeTraceFiles([join(FIXTURES, `${name}.pt.trace.json.gz`)]);
      const expected = JSON.parse(readFileSync(join(FIXTURES, `${name}.key_averages.json`), 'utf8')) as {
        events: { name: string; device_type: string; count: number; self_device_time_total_us: number }[];
      };
      const ours = new Map(b.ranks[0].kernelTotals.map((k) => [k.name, k]));
      const annotations = /^(execute_new_\d+_cached_\d+|gpu_model_runner: forward)$/;
      let compared = 0;
      for (const row of expected.events) {
        if (row.device_type !== 'DeviceType.CUDA' || row.self_device_time_total_us <= 0) continue;
        const k = ours.get(row.name);
        if (!k) {
          // key_averages also lists the GPU-side copies of record_function ranges; they are not kernels
          assert.match(row.name, annotations, `kernel missing from the breakdown: ${row.name}`);
          continue;
        }
        compared++;
        assert.equal(k.count, row.count, row.name);
        assert.ok(
          Math.abs(k.totalMs * 1000 - row.self_device_time_total_us) <= 1e-4 * row.self_device_time_total_us,
          `${row.name}: ${k.totalMs * 1000} us vs ${row.self_device_time_total_us} us`,
        );
      }
      assert.equal(compared, ours.size, 'a kernel in the breakdown that torch does not list');
      assert.ok(compared > 25);
    });
  }

  it('finds the 20 decode steps and the prefill of the eager trace from its vLLM-style step annotations', async () => {
    const r = (await analyzeTraceFiles([join(FIXTURES, 'llama_eager_decode.pt.trace.json.gz')])).ranks[0];
    assert.equal(r.stepSource, 'annotation');
    assert.equal(r.decode.count, 20);
    assert.equal(r.prefill.count, 1);
    assert.equal(r.totals.kernelsOutsideSteps, 0);
    assert.ok(Math.abs(sumShares(r.decode) - 100) < 1e-6);
    const msSum = r.decode.categories.reduce((a, c) => a + c.msPerStep, 0);
    assert.ok(Math.abs(msSum - r.decode.stepMs!.mean) < 1e-6);
    assert.equal(r.device, 'NVIDIA H200');
    assert.ok(r.launch && r.launch.launches > 4000 && r.launch.graphLaunches === 0);
  });

  it('finds one decode step per CUDA graph replay when the trace has no annotations', async () => {
    const r = (await analyzeTraceFiles([join(FIXTURES, 'llama_cudagraph_decode.pt.trace.json.gz')])).ranks[0];
    assert.equal(r.stepSource, 'cuda-graph');
    assert.equal(r.decode.count, 20);
    assert.equal(r.prefill.count, 0);
    assert.equal(r.launch?.graphLaunches, 20);
    // the captured step holds 4 layers: 4 attention kernels and 21 GEMMs (4 x 5 + lm_head) per step
    assert.equal(share(r.decode, 'attention').rawMsPerStep > 0, true);
    assert.equal(r.decode.categories.find((c) => c.category === 'gemm')?.kernelsPerStep, 21);
    assert.equal(r.decode.categories.find((c) => c.category === 'attention')?.kernelsPerStep, 4);
    assert.ok(Math.abs(sumShares(r.decode) - 100) < 1e-6);
  });

  it('says a step told big by its size alone is a prefill or a mixed step, which nothing in an unnamed trace tells apart', async () => {
    const text = renderBreakdownText(await analyzeTraceFiles([join(FIXTURES, 'llama_cudagraph_decode.pt.trace.json.gz')]));
    assert.match(text, /: 20 decode, 0 prefill or mixed[;\n]/);
  });
});

describe('trace breakdown arithmetic (synthetic traces with known answers)', () => {
  let both: TraceBreakdown;
  before(async () => {
    both = await analyzeTraceFiles([write('rank0.json', rankTrace(50, 0, true)), write('rank1.json', rankTrace(100, 1, true, true))]);
  });

  it('attributes overlap once, to the kernel that started first, and makes idle its own category', () => {
    const r0 = both.ranks[0];
    assert.equal(r0.decode.count, 4);
    assert.equal(r0.prefill.count, 1);
    assert.ok(Math.abs(r0.decode.stepMs!.mean - 0.19) < 1e-9);
    assert.ok(Math.abs(share(r0.decode, 'all-reduce').msPerStep - 0.05) < 1e-9);
    assert.ok(Math.abs(share(r0.decode, 'attention').msPerStep - 0.02) < 1e-9, 'attention keeps only what the all-reduce did not cover');
    assert.ok(Math.abs(share(r0.decode, 'attention').rawMsPerStep - 0.05) < 1e-9, 'raw sums count the overlap too');
    assert.ok(Math.abs(share(r0.decode, 'idle').msPerStep - 0.01) < 1e-9);
    assert.ok(Math.abs(share(r0.decode, 'gemm').sharePct - (100 * 100) / 190) < 1e-9);
    assert.ok(Math.abs(sumShares(r0.decode) - 100) < 1e-9);
    assert.ok(Math.abs(r0.decode.periodMs!.mean - 0.69) < 1e-9, 'period = step + gap to the next step');
  });

  it('reads each rank from distributedInfo wherever it sits, and reports rank skew', () => {
    assert.deepEqual(
      both.ranks.map((r) => r.rank),
      [0, 1],
    );
    assert.equal(both.ranks[1].worldSize, 2);
    assert.ok(both.skew);
    assert.equal(both.skew.slowestRank, 1);
    assert.ok(Math.abs(both.skew.spreadPct - (100 * (0.24 - 0.19)) / 0.19) < 1e-9);
  });

  it('averages categories over ranks and leads with the biggest one', () => {
    assert.ok(Math.abs(share(both.overall, 'all-reduce').msPerStep - 0.075) < 1e-9);
    assert.ok(Math.abs(share(both.overall, 'all-reduce').sharePct - (100 * 0.075) / 0.215) < 1e-9);
    assert.equal(
      both.headline,
      `gemm ${((100 * 0.1) / 0.215).toFixed(1)}% (0.100 ms) of a 0.215 ms decode step (2 ranks, 8 decode steps; steps from vLLM's step annotation)`,
    );
    assert.ok(both.allReduce && Math.abs(both.allReduce.msPerStep - 0.075) < 1e-9);
    assert.equal(both.categoryOrder.at(-1), 'idle');
  });

  it('falls back to CUDA graph launches, then to the repeating pass, where the workload driven gives the same count, and still tells the prefill apart', async () => {
    const graphSteps: StepSpec[] = [prefillStep(), ...Array.from({ length: 3 }, () => ({ ...decodeStep(50), graph: true }))];
    // These synthetic steps sample nothing: the workload's count is the second witness.
    const workload = (steps: number) => ({ expectedSteps: { min: steps, max: steps, what: `${steps} steps` } });
    const g = (await analyzeTraceFiles([write('graph.json', kinetoTrace(graphSteps))], workload(3))).ranks[0];
    assert.equal(g.stepSource, 'cuda-graph');
    assert.equal(g.decode.count, 3);
    assert.equal(g.totals.kernelsOutsideSteps, 1, 'the eager prefill before the first graph launch belongs to no step');

    const gaps = (await analyzeTraceFiles([write('gaps.json', rankTrace(50, 0, false))], workload(5))).ranks[0];
    assert.equal(gaps.stepSource, 'repeating-pattern');
    assert.equal(gaps.decode.count, 4);
    assert.equal(gaps.prefill.count, 1);
    assert.ok(Math.abs(gaps.decode.stepMs!.mean - 0.19) < 1e-9);
    assert.match(gaps.warnings.join(' '), /steps cut where the kernel sequence repeats/);
  });

  it('uses a step annotation name the user gives', async () => {
    const steps = [decodeStep(50, 'my_engine_step'), decodeStep(50, 'my_engine_step')];
    const r = (await analyzeTraceFiles([write('custom.json', kinetoTrace(steps))], { stepAnnotation: '^my_engine_step$' })).ranks[0];
    assert.equal(r.stepSource, 'annotation');
    assert.equal(r.decode.count, 2);
  });

  it('runs in worker threads with the same answer as on the calling thread', async () => {
    const files = [write('w0.json.gz', gzipSync(rankTrace(50, 0, true))), write('w1.json', rankTrace(100, 1, true))];
    const inWorker = await analyzeTracesInWorker(files, {}, { concurrency: 2 });
    const inline = await analyzeTraceFiles(files);
    assert.deepEqual(inWorker, inline);
    assert.equal(inWorker.ranks[0].totals.compressed, true);
  });

  it("analyses a capture's rank files across workers at once with the breakdown of one rank after the other", async () => {
    // The real TP-2 capture's two ranks (vLLM 0.26 on the H200), and four copies of each: a folder
    // of eight rank files, as one bounded capture of a TP-8 server writes; more files than workers,
    // so that each worker takes several and they finish out of order.
    const capture = join(FIXTURES, 'servers', 'vllm-0.26-piecewise-tp2');
    const ranks = readdirSync(capture).filter((f) => f.includes('_rank'));
    assert.equal(ranks.length, 2);
    const folder = join(dir, 'tp8-capture');
    mkdirSync(folder);
    const files: string[] = [];
    for (let copy = 0; copy < 4; copy++)
      for (const f of ranks) {
        const to = join(folder, `copy${copy}_${f}`);
        copyFileSync(join(capture, f), to);
        files.push(to);
      }
    const serial = await analyzeTraceFiles(files);
    const parallel = await analyzeTracesInWorker(files, {}, { concurrency: 3 });
    assert.deepEqual(parallel, serial);
    assert.equal(parallel.ranks.length, 8);
    assert.deepEqual(parallel.ranks.map((r) => r.file).sort(), [...files].sort());
    assert.deepEqual(parallel.ranks.map((r) => r.rank).sort(), [0, 0, 0, 0, 1, 1, 1, 1]);
    assert.ok(parallel.ranks.every((r) => r.decode.count > 0));
  });

  it('runs one worker per core, fewer when free memory would not hold them all at their peak, and at least one', () => {
    assert.equal(poolSize(8, 16, 64e9), 8);
    assert.equal(poolSize(8, 4, 64e9), 4);
    assert.equal(poolSize(8, 16, 6 * WORKER_PEAK_BYTES), 3);
    assert.equal(poolSize(8, 16, 0), 1);
    assert.equal(poolSize(1, 16, 64e9), 1);
  });
});

describe('streaming and in-memory analysis agree', () => {
  const cases: [string, () => string][] = [
    ['the eager H200 trace (step annotations)', () => join(FIXTURES, 'llama_eager_decode.pt.trace.json.gz')],
    ['the CUDA-graph H200 trace (graph launches)', () => join(FIXTURES, 'llama_cudagraph_decode.pt.trace.json.gz')],
    ['a synthetic rank with overlapping streams', () => write('agree.json', rankTrace(50, 0, true))],
  ];
  for (const [what, file] of cases) {
    it(`gives the same breakdown both ways for ${what}, streaming in one pass`, async () => {
      const streamed = await analyzeTraceFiles([file()]);
      const kept = await analyzeTraceFiles([file()], { mode: 'in-memory' });
      assert.equal(streamed.ranks[0].analysis, 'streaming');
      assert.equal(kept.ranks[0].analysis, 'in-memory');
      const strip = (b: TraceBreakdown) => ({ ...b, ranks: b.ranks.map((r) => ({ ...r, analysis: undefined })) });
      assert.deepEqual(strip(streamed), strip(kept));
    });
  }

  it('reads a trace once when nothing names its steps, cutting them from the kernels that pass kept', async () => {
    const r = (await analyzeTraceFiles([write('gaps2.json', rankTrace(50, 0, false))], { expectedSteps: { min: 5, max: 5, what: '5 steps' } })).ranks[0];
    assert.equal(r.analysis, 'streaming');
    assert.equal(r.stepSource, 'repeating-pattern');
  });
});

describe('bad trace inputs', () => {
  it('leaves out events whose times are NaN, Infinity or negative, says how many, and shows no NaN or Infinity', async () => {
    const good = rankTrace(50, 0, true);
    // Python's json.dump writes NaN and Infinity as bare tokens; a huge exponent overflows to Infinity.
    const bad = ['NaN', 'Infinity', '-Infinity', '-5.0', '1e999']
      .map(
        (dur, i) => `{"ph":"X","cat":"kernel","name":"broken_kernel_${i}","pid":0,"tid":7,"ts":${1000 + i},"dur":${dur},"args":{"correlation":${900000 + i}}}`,
      )
      .join(',');
    const file = write('bad-times.json', good.replace(/"traceEvents": ?\[/, `"traceEvents": [${bad},`));
    for (const mode of ['auto', 'in-memory'] as const) {
      const b = await analyzeTraceFiles([file], { mode });
      const r = b.ranks[0];
      assert.ok(
        r.warnings.some((w) => w.startsWith('5 event(s) with a non-finite or negative time')),
        r.warnings.join(' | '),
      );
      assert.ok(!r.kernelTotals.some((k) => k.name.startsWith('broken_kernel')), 'a broken event was counted');
      // Every figure, the warnings (which name what was wrong) aside.
      const figures = JSON.stringify({ ...b, ranks: b.ranks.map((x) => ({ ...x, warnings: [] })) });
      assert.doesNotMatch(figures, /NaN|Infinity|null,"msPerStep"/);
      assert.equal(r.decode.count, 4);
    }
  });

  const eagerGz = readFileSync(join(FIXTURES, 'llama_eager_decode.pt.trace.json.gz'));

  it('analyses what is whole of a cut gzip file and says it was cut', async () => {
    const cut = write('cut.json.gz', eagerGz.subarray(0, Math.floor(eagerGz.length * 0.6)));
    const r: RankBreakdown = (await analyzeTraceFiles([cut])).ranks[0];
    assert.match(r.truncated ?? '', /gzip stream is cut short.*ends inside traceEvents after \d+ complete events/);
    assert.ok(r.totals.kernels > 0 && r.totals.kernels < 4751);
    assert.ok(r.totals.events > 1000);
  });

  it('analyses the whole events of JSON cut mid-event', async () => {
    const text = kinetoTrace([decodeStep(50, 'execute_new_0_cached_1'), decodeStep(50, 'execute_new_0_cached_1'), decodeStep(50, 'execute_new_0_cached_1')]);
    const at = text.lastIndexOf('"name"');
    const b = await analyzeTraceFiles([write('cut.json', text.slice(0, at))]);
    assert.match(b.ranks[0].truncated ?? '', /ends inside traceEvents after \d+ complete events.*cut event/);
    assert.match(b.warnings.join(' '), /rank 0 .*ends inside traceEvents/);
    assert.equal(b.ranks[0].decode.count, 2, 'the step cut with the file is left out');
    assert.match(b.ranks[0].warnings.join(' '), /last step, cut with it, is left out/);
    const kept = await analyzeTraceFiles([join(dir, 'cut.json')], { mode: 'in-memory' });
    assert.equal(kept.ranks[0].decode.count, 2);
  });

  it('refuses an empty file', async () => {
    await assert.rejects(analyzeTraceFiles([write('empty.json', '')]), /The file is empty/);
  });

  it('refuses JSON that is not a trace', async () => {
    await assert.rejects(
      analyzeTraceFiles([write('config.json', '{"model": "x", "tensor_parallel_size": 8}')]),
      /no "traceEvents" array.*not a Chrome\/Kineto trace/,
    );
  });

  it('refuses a non-trace file in a worker too, naming the file', async () => {
    const f = write('notes.txt', 'hello');
    await assert.rejects(analyzeTracesInWorker([f]), (e: Error) => e.message.includes(f) && /starts with "\{" or "\["/.test(e.message));
  });

  it('gives an empty breakdown with a reason for a trace without kernels', async () => {
    const b = await analyzeTraceFiles([
      write('cpu-only.json', JSON.stringify({ traceEvents: [{ ph: 'X', cat: 'cpu_op', name: 'aten::mm', pid: 1, tid: 1, ts: 1, dur: 5 }] })),
    ]);
    assert.equal(b.headline, 'No decode steps found in the trace(s).');
    assert.equal(b.ranks[0].stepSource, 'none');
    assert.match(b.ranks[0].warnings.join(' '), /no GPU kernels/);
  });
});
