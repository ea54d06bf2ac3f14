import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { RankBreakdown, TraceAnalysisOptions } from '../../../src/core/trace/types';
import { seededRandom } from '../../fuzz/traceMutants';

// The same events in another order must give the same figures. Kineto writes the CPU side first,
// then GPU activities nearly in time order (order.ts says what it guarantees); a file shuffled,
// sorted by something else or joined from pieces gave other figures without a word: TraceLens's
// SGLang trace, shuffled, read a 10.43 ms step and 68 kernels instead of 473.75 ms and 558.
type Doc = Record<string, unknown> & { traceEvents: Record<string, unknown>[] };

const dir = mkdtempSync(join(tmpdir(), 'ib-order-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const load = (file: string): Doc => JSON.parse(gunzipSync(readFileSync(file)).toString('utf8')) as Doc;

function shuffled(doc: Doc, seed: number): Doc {
  const events = [...doc.traceEvents];
  const random = seededRandom(seed);
  for (let i = events.length - 1; i > 0; i--) {
    const j = Math.floor(random() * (i + 1));
    [events[i], events[j]] = [events[j], events[i]];
  }
  return { ...doc, traceEvents: events };
}

async function analyse(name: string, doc: Doc, options: TraceAnalysisOptions = {}): Promise<RankBreakdown> {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(doc));
  return (await analyzeTraceFiles([path], options)).ranks[0];
}

/** What a user reads off a rank: steps, their time and categories, the kernels, the warnings. */
const figures = (r: RankBreakdown) => ({
  source: r.stepSource,
  decode: r.decode.count,
  prefill: r.prefill.count,
  stepMs: r.decode.stepMs?.mean.toFixed(3),
  kernels: r.totals.kernels,
  kernelMs: r.totals.kernelMs.toFixed(3),
  categories: r.decode.categories.map((c) => `${c.category} ${c.msPerStep.toFixed(4)}`),
  top: r.topKernels.slice(0, 5).map((k) => `${k.name} ${k.count}`),
  warnings: r.warnings,
});

describe('trace analyzer on events out of the order Kineto writes', () => {
  it("gives TraceLens's SGLang trace its 473.75 ms step and 558 kernels whatever the order of its events", async () => {
    const doc = load('test/fixtures/traces/public/tracelens/sglang_decode_sglang_Qwen3-8B_decode.json.gz');
    const ordered = await analyse('sglang.json', doc);
    // Its own order holds a kernel 465 ms behind the kernels before it: still streamed, as Kineto wrote it.
    assert.equal(ordered.analysis, 'streaming');
    assert.equal(ordered.decode.stepMs?.mean.toFixed(2), '473.75');
    assert.equal(ordered.totals.kernels, 558);
    for (const seed of [1, 2, 3]) {
      const r = await analyse(`sglang-${seed}.json`, shuffled(doc, seed));
      assert.deepEqual(figures(r), figures(ordered), `seed ${seed}`);
    }
  });

  it('keeps every kernel of a trace written GPU side first, its last step annotation ahead of all (none taken for a damaged timestamp)', async () => {
    const doc = load('test/fixtures/traces/llama_eager_decode.pt.trace.json.gz');
    const ordered = await analyse('eager.json', doc);
    const last = doc.traceEvents.filter((e) => e.cat === 'user_annotation').reduce((a, b) => ((a.ts as number) > (b.ts as number) ? a : b));
    const gpu = (e: Record<string, unknown>) => e.cat === 'kernel' || e.cat === 'gpu_memcpy' || e.cat === 'gpu_memset';
    const rest = doc.traceEvents.filter((e) => e !== last);
    // The GPU work of the 2 s before that annotation is not "before the profile": the profile's first CPU event comes later in the file.
    const r = await analyse('eager-gpu-first.json', { ...doc, traceEvents: [last, ...rest.filter(gpu), ...rest.filter((e) => !gpu(e))] });
    assert.equal(r.totals.kernels, 4751);
    assert.deepEqual(figures(r), figures(ordered));
  });

  it('cuts a long with_stack trace with no step names into its module forwards whatever the order (steps decided from its first kernels)', async () => {
    const doc = load('test/fixtures/traces/servers/generate/generate_eager_stack.pt.trace.json.gz');
    // A prefix of 1,000 kernels stands for a trace far longer than the prefix the analyzer decides from.
    const options = { prefixKernels: 1000 };
    const ordered = await analyse('stack.json', doc, options);
    assert.deepEqual([ordered.stepSource, ordered.prefill.count, ordered.decode.count], ['module-forward', 1, 23]);
    for (const seed of [4, 5]) {
      const r = await analyse(`stack-${seed}.json`, shuffled(doc, seed), options);
      assert.deepEqual(figures(r), figures(ordered), `seed ${seed}`);
    }
  });
});
