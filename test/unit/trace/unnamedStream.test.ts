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

/** Whether one pass cut the steps while streaming (parts) rather than keeping every kernel to the end. */
async function cutWhileStreaming(file: string, options: TraceAnalysisOptions): Promise<boolean> {
  const online = new OnlineAnalyzer(options);
  const s = await readTraceFile(file, online.onEvent);
  const base = { file, fallbackRank: 0, metadata: s.metadata, events: s.events, jsonBytes: s.bytes, fileBytes: s.fileBytes, compressed: s.compressed };
  return 'source' in online.finish(base);
}

interface Events {
  traceEvents: Record<string, unknown>[];
}

/**
 * The capture repeated `copies` times, each copy shifted past the last in time and correlation id,
 * as bench/trace-throughput.ts builds its long traces; `reverseBlocks` reverses each run of that
 * many GPU events in the file (streams interleaving), `cutAt` cuts the JSON at that share.
 */
function replicate(fixture: string, copies: number, opts: { reverseBlocks?: number; cutAt?: number } = {}): string {
  const doc = JSON.parse(gunzipSync(readFileSync(fixture)).toString('utf8')) as Events & Record<string, unknown>;
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
  let text = JSON.stringify({ ...doc, traceEvents: events });
  if (opts.cutAt) text = text.slice(0, Math.floor(text.length * opts.cutAt));
  const file = join(
    dir,
    `${fixture
      .split('/')
      .pop()!
      .replace(/\.pt\.trace\.json\.gz$/, '')}-x${copies}-${n ?? 0}-${opts.cutAt ?? 1}.json`,
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
      const streamed = await analyzeTraceFiles([file], TINY);
      const kept = await analyzeTraceFiles([file], { mode: 'in-memory' });
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
      const streamed = await analyzeTraceFiles([file], options);
      const kept = await analyzeTraceFiles([file], { mode: 'in-memory' });
      assert.ok(kept.ranks[0].decode.count > 100);
      assert.deepEqual(figures(streamed), figures(kept));
    });
  }

  it('cuts in start order when streams interleave in the file, and drops the step a cut file cuts', async () => {
    const fixture = join(GENERATE, 'generate_eager.pt.trace.json.gz');
    const interleaved = replicate(fixture, 3, { reverseBlocks: 16 });
    const cutFile = replicate(fixture, 3, { cutAt: 0.6 });
    for (const file of [interleaved, cutFile]) {
      const streamed = await analyzeTraceFiles([file], { prefixKernels: 2000 });
      const kept = await analyzeTraceFiles([file], { mode: 'in-memory' });
      assert.deepEqual(figures(streamed), figures(kept));
      if (file === cutFile) {
        assert.ok(streamed.ranks[0].truncated);
        assert.match(streamed.ranks[0].warnings.join(' '), /last step, cut with it, is left out/);
      }
    }
  });
});
