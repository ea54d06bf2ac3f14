import * as assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { OnlineAnalyzer } from '../../../src/core/trace/online';
import { readTraceFile } from '../../../src/core/trace/source';
import { RankBreakdown, TraceAnalysisOptions, TraceBreakdown } from '../../../src/core/trace/types';

// Traces that name no step, long enough that the analyzer stops collecting their kernels and cuts
// the steps while streaming (online.ts, unnamed.ts): `prefixKernels` set far below the fixtures'
// kernel counts makes the small real captures (test/fixtures/traces/servers/generate, checked
// against truth.json) and their replicas long traces in this sense.
const SERVERS = 'test/fixtures/traces/servers';
const GENERATE = join(SERVERS, 'generate');
const TRUTH = JSON.parse(readFileSync(join(SERVERS, 'truth.json'), 'utf8')) as Record<
  string,
  { prefill: { steps: number }; decode: { steps: number; gpuUsPerStep?: number } }
>;
const TINY: TraceAnalysisOptions = { prefixKernels: 1000 };
const dir = mkdtempSync(join(tmpdir(), 'ib-unnamed-'));

/** GPU time of the kernels in one decode step (overlap counted twice, as truth.json counts it). */
const kernelUsPerStep = (r: RankBreakdown) => 1000 * r.decode.categories.reduce((a, c) => a + c.rawMsPerStep, 0);
/** The breakdown without the field that says which way it was read. */
const figures = (b: TraceBreakdown) => ({ ...b, ranks: b.ranks.map((r) => ({ ...r, analysis: undefined })) });

/** One streaming pass: what it ends with, and the most kernels it kept as numbers at any time. */
async function onePass(file: string, options: TraceAnalysisOptions) {
  const online = new OnlineAnalyzer(options);
  let peakKept = 0;
  const s = await readTraceFile(file, (e) => {
    online.onEvent(e);
    peakKept = Math.max(peakKept, online.keptKernels);
  });
  const base = { file, fallbackRank: 0, metadata: s.metadata, events: s.events, jsonBytes: s.bytes, fileBytes: s.fileBytes, compressed: s.compressed };
  return { result: online.finish(base), peakKept };
}

/** The file analysed while streaming (with `options`) and the in-memory way, to be compared. */
async function bothWays(file: string, options: TraceAnalysisOptions): Promise<{ streamed: TraceBreakdown; kept: TraceBreakdown }> {
  return { streamed: await analyzeTraceFiles([file], options), kept: await analyzeTraceFiles([file], { mode: 'in-memory' }) };
}

/** Whether one pass cut the steps while streaming (parts) rather than keeping every kernel to the end. */
async function cutWhileStreaming(file: string, options: TraceAnalysisOptions): Promise<boolean> {
  return 'source' in (await onePass(file, options)).result;
}

interface Events {
  traceEvents: Record<string, unknown>[];
}

interface ReplicaOptions {
  reverseBlocks?: number;
  cutAt?: number;
  /** Drop the CPU-side annotations (user_annotation), leaving the GPU-side ones alone to name the steps. */
  gpuNamesOnly?: boolean;
  /** Every event in start order, as some tools rewrite a trace (GPU annotations then come before their kernels). */
  byStart?: boolean;
}

/**
 * The capture repeated `copies` times, each copy shifted past the last in time and correlation id,
 * as bench/trace-throughput.ts builds its long traces; `reverseBlocks` reverses each run of that
 * many GPU events in the file (streams interleaving), `cutAt` cuts the JSON at that share.
 */
function replicate(fixture: string, copies: number, opts: ReplicaOptions = {}): string {
  const doc = JSON.parse(gunzipSync(readFileSync(fixture)).toString('utf8')) as Events & Record<string, unknown>;
  if (opts.gpuNamesOnly) doc.traceEvents = doc.traceEvents.filter((e) => e.cat !== 'user_annotation');
  const num = (v: unknown) => (typeof v === 'number' ? v : 0);
  const span =
    Math.max(...doc.traceEvents.map((e) => num(e.ts) + num(e.dur))) -
    Math.min(...doc.traceEvents.filter((e) => typeof e.ts === 'number').map((e) => num(e.ts)));
  const events: Record<string, unknown>[] = [];
  for (let c = 0; c < copies; c++) {
    for (const e of doc.traceEvents) {
      const args = e.args as Record<string, unknown> | undefined;
      events.push({
        ...e,
        ...(typeof e.ts === 'number' ? { ts: e.ts + c * (span + 1000) } : {}),
        ...(typeof args?.correlation === 'number' ? { args: { ...args, correlation: args.correlation + c * 1_000_000 } } : {}),
      });
    }
  }
  const n = opts.reverseBlocks;
  if (n) {
    const at = events.flatMap((e, i) => (e.cat === 'kernel' || e.cat === 'gpu_memcpy' || e.cat === 'gpu_memset' ? [i] : []));
    for (let b = 0; b + n <= at.length; b += n) {
      const block = at.slice(b, b + n).map((i) => events[i]);
      block.reverse().forEach((e, j) => (events[at[b + j]] = e));
    }
  }
  if (opts.byStart) events.sort((a, b) => (typeof a.ts === 'number' ? a.ts : 0) - (typeof b.ts === 'number' ? b.ts : 0));
  let text = JSON.stringify({ ...doc, traceEvents: events });
  if (opts.cutAt) text = text.slice(0, Math.floor(text.length * opts.cutAt));
  const file = join(
    dir,
    `${fixture
      .split('/')
      .pop()!
      .replace(/\.pt\.trace\.json\.gz$/, '')}-x${copies}-${n ?? 0}-${opts.cutAt ?? 1}${opts.gpuNamesOnly ? '-gpu' : ''}${opts.byStart ? '-sorted' : ''}.json`,
  );
  writeFileSync(file, text);
  return file;
}

describe('traces that name no step, cut while streaming', function () {
  this.timeout(60_000);
  // The replicas take about 200 MB.
  after(() => rmSync(dir, { recursive: true, force: true }));
  const captures = readdirSync(GENERATE)
    .filter((f) => f.endsWith('.json.gz'))
    .sort()
    .map((f) => join(GENERATE, f));

  for (const file of captures) {
    const name = file.slice(SERVERS.length + 1);
    it(`${name}: the steps of truth.json within one, as the in-memory way finds them`, async () => {
      assert.ok(await cutWhileStreaming(file, TINY), 'the steps were not cut while streaming');
      const { streamed, kept } = await bothWays(file, TINY);
      const r = streamed.ranks[0];
      const m = kept.ranks[0];
      const t = TRUTH[name];
      assert.equal(r.analysis, 'streaming');
      assert.ok(Math.abs(r.decode.count - t.decode.steps) <= 1, `${r.decode.count} decode steps vs ${t.decode.steps}`);
      assert.ok(Math.abs(r.prefill.count - t.prefill.steps) <= 1, `${r.prefill.count} prefill steps vs ${t.prefill.steps}`);
      assert.equal(r.stepSource, m.stepSource);
      assert.equal(r.stepConfidence, m.stepConfidence);
      assert.notEqual(r.stepConfidence, 'exact');
      // truth.json has the kernel time of a step where its steps are the analyzer's (module forwards).
      const truthUs = t.decode.gpuUsPerStep ?? kernelUsPerStep(m);
      assert.ok(Math.abs(kernelUsPerStep(r) - truthUs) <= 0.01 * truthUs, `${kernelUsPerStep(r).toFixed(1)} us of kernels per decode step vs ${truthUs}`);
      assert.deepEqual(figures(streamed), figures(kept));
    });
  }

  it('keeps collecting a trace shorter than the prefix, and cuts it at the end as before', async () => {
    assert.equal(await cutWhileStreaming(captures[0], {}), false);
  });

  const long: [string, string][] = [
    ['a generate loop (the repeating pass)', join(GENERATE, 'generate_eager.pt.trace.json.gz')],
    ['a with_stack generate loop (module forwards)', join(GENERATE, 'generate_eager_stack.pt.trace.json.gz')],
    ['CUDA graph replays', 'test/fixtures/traces/llama_cudagraph_decode.pt.trace.json.gz'],
  ];
  for (const [what, fixture] of long) {
    it(`gives the in-memory breakdown of a long trace of ${what}, to the last digit`, async () => {
      const file = replicate(fixture, 6);
      const options = { prefixKernels: 2000 };
      assert.ok(await cutWhileStreaming(file, options));
      const { streamed, kept } = await bothWays(file, options);
      assert.ok(kept.ranks[0].decode.count > 100);
      assert.deepEqual(figures(streamed), figures(kept));
    });
  }

  it('cuts in start order when streams interleave in the file, and drops the step a cut file cuts', async () => {
    const fixture = join(GENERATE, 'generate_eager.pt.trace.json.gz');
    const interleaved = replicate(fixture, 3, { reverseBlocks: 16 });
    const cutFile = replicate(fixture, 3, { cutAt: 0.6 });
    for (const file of [interleaved, cutFile]) {
      const { streamed, kept } = await bothWays(file, { prefixKernels: 2000 });
      assert.deepEqual(figures(streamed), figures(kept));
      if (file === cutFile) {
        assert.ok(streamed.ranks[0].truncated);
        assert.match(streamed.ranks[0].warnings.join(' '), /last step, cut with it, is left out/);
      }
    }
  });

  // Steps that only GPU-side annotations name (gpu_user_annotation, no CPU annotation matching):
  // kernels join the range that holds their start. Kineto writes those ranges after every kernel, so
  // the first reading cannot cut by them and the file is read once more knowing them; a trace in
  // start order is cut in one reading.
  const gpuNamed: [string, string][] = [
    ["vLLM 0.11's steps", 'test/fixtures/traces/llama_eager_decode.pt.trace.json.gz'],
    ["vLLM 0.26's steps", join(SERVERS, 'vllm-0.26-piecewise-tp2/dp0_pp0_tp0_dcp0_ep0_rank0.1796115891487369708.pt.trace.json.gz')],
    ["SGLang's steps", join(SERVERS, 'sglang/1764579600.123-TP-0.trace.json.gz')],
  ];
  for (const [what, fixture] of gpuNamed) {
    for (const byStart of [false, true]) {
      it(`cuts ${what}, named on the GPU side only, while streaming${byStart ? ' in one reading (events in start order)' : ''}, as the in-memory way does`, async () => {
        const options = { prefixKernels: 2000 };
        for (const copies of [1, 6]) {
          const file = replicate(fixture, copies, { gpuNamesOnly: true, byStart });
          const { result, peakKept } = await onePass(file, options);
          assert.ok(byStart ? 'source' in result && result.source === 'gpu-annotation' : 'reread' in result, Object.keys(result).join());
          assert.ok(peakKept <= 2000);
          const { streamed, kept } = await bothWays(file, options);
          const r = streamed.ranks[0];
          assert.equal(r.analysis, 'streaming');
          assert.equal(r.stepSource, 'gpu-annotation');
          assert.equal(r.stepConfidence, 'likely');
          assert.match(r.warnings.join(' '), /GPU-side annotations only/);
          assert.ok(kept.ranks[0].decode.count >= 20 * copies);
          assert.deepEqual(figures(streamed), figures(kept));
        }
      });
    }
  }

  it('cuts GPU-named steps in start order when streams interleave, and drops the step a cut file cuts', async () => {
    const fixture = gpuNamed[1][1];
    for (const byStart of [false, true]) {
      const interleaved = replicate(fixture, 3, { gpuNamesOnly: true, byStart, reverseBlocks: 16 });
      const cutFile = replicate(fixture, 3, { gpuNamesOnly: true, byStart, cutAt: 0.9 });
      for (const file of [interleaved, cutFile]) {
        const { streamed, kept } = await bothWays(file, { prefixKernels: 2000 });
        assert.equal(streamed.ranks[0].stepSource, 'gpu-annotation');
        assert.deepEqual(figures(streamed), figures(kept));
        if (file === cutFile) {
          assert.ok(streamed.ranks[0].truncated);
          assert.match(streamed.ranks[0].warnings.join(' '), /last step, cut with it, is left out/);
        }
      }
    }
  });

  /** Kernels with names drawn at random (seeded): no pass repeats, nothing names a step. */
  function noStructure(kernels: number): string {
    let seed = 7;
    const rand = () => (seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32;
    const events: object[] = [];
    let t = 1_000_000;
    for (let i = 0; i < kernels; i++) {
      const correlation = i + 1;
      events.push({ ph: 'X', cat: 'cuda_runtime', name: 'cudaLaunchKernel', pid: 1, tid: 1, ts: t - 20, dur: 3 + rand(), args: { correlation } });
      const dur = 2 + Math.floor(40 * rand());
      events.push({ ph: 'X', cat: 'kernel', name: `kernel_${Math.floor(60 * rand())}`, pid: 0, tid: 7, ts: t, dur, args: { stream: 7, correlation } });
      t += dur + 1 + Math.floor(5 * rand());
    }
    const file = join(dir, `no-structure-${kernels}.json`);
    writeFileSync(file, JSON.stringify({ schemaVersion: 1, traceEvents: events }));
    return file;
  }

  it('stops keeping the kernels of a long trace with no steps at 8 times the prefix, and says so', async () => {
    const file = noStructure(30_000);
    const options = { prefixKernels: 500 };
    const { result, peakKept } = await onePass(file, options);
    assert.ok('source' in result && result.source === 'none');
    assert.ok(peakKept <= 8 * 500, `${peakKept} kernels kept`);
    const { streamed, kept } = await bothWays(file, options);
    const r = streamed.ranks[0];
    assert.equal(r.analysis, 'streaming');
    assert.equal(r.stepSource, 'none');
    assert.equal(r.stepConfidence, 'unsure');
    assert.equal(r.totals.kernelsOutsideSteps, 30_000);
    assert.deepEqual(r.warnings, [
      "No step annotations, no module forwards, no CUDA graph launches, and no forward pass that repeats in the kernel sequence of the first 4000 kernels (of a longer trace; no further kernels were kept to look for steps): the steps cannot be told apart. Profile through the server (its step annotations), or name the server's step annotation (the inferenceBench.stepAnnotation setting, or infbench analyze --step-annotation).",
    ]);
    // Everything but the warning is the in-memory breakdown: kernel totals and launch statistics come from the stream.
    const noWarnings = (b: TraceBreakdown) => ({ ...figures(b), ranks: figures(b).ranks.map((x) => ({ ...x, warnings: [] })) });
    assert.deepEqual(noWarnings(streamed), noWarnings(kept));
  });

  it('cuts a trace with no steps that ends before that cap from all its kernels, as before', async () => {
    const file = noStructure(3_900);
    const options = { prefixKernels: 500 };
    const { result } = await onePass(file, options);
    assert.ok('collected' in result);
    const { streamed, kept } = await bothWays(file, options);
    assert.equal(streamed.ranks[0].stepSource, 'none');
    assert.deepEqual(figures(streamed), figures(kept));
  });
});
