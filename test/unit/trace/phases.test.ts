import * as assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { RankBreakdown } from '../../../src/core/trace/types';

// GPU work written in the Chrome trace format's other phases: begin/end pairs on the stream's thread
// ("B"/"E"), async pairs matched by id ("b"/"e"), instants ("i"). The real vLLM trace below (one
// 10.74 ms decode step under a full CUDA graph) rewritten so: before, such kernels vanished without
// a word and the step read 0.043 ms.
type TraceEvent = Record<string, unknown> & { ph?: string; cat?: string; ts?: number; dur?: number; args?: Record<string, unknown> };

const FIXTURE = 'test/fixtures/traces/public/tracelens/vllm_decode_full_graph_execution.json.gz';
const dir = mkdtempSync(join(tmpdir(), 'ib-phases-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function load(): { doc: Record<string, unknown>; events: TraceEvent[] } {
  const doc = JSON.parse(gunzipSync(readFileSync(FIXTURE)).toString('utf8')) as Record<string, unknown> & { traceEvents: TraceEvent[] };
  return { doc, events: doc.traceEvents };
}
const isGpu = (e: TraceEvent) => e.ph === 'X' && (e.cat === 'kernel' || e.cat === 'gpu_memcpy' || e.cat === 'gpu_memset');

async function analyse(name: string, doc: Record<string, unknown>): Promise<RankBreakdown> {
  const path = join(dir, name);
  writeFileSync(path, JSON.stringify(doc));
  return (await analyzeTraceFiles([path])).ranks[0];
}

/** Each GPU event replaced by what `rewrite` makes of it (the begin where the event was, the end at the end of the file, as a writer closing spans later would). */
function rewritten(rewrite: (e: TraceEvent, i: number) => [TraceEvent, TraceEvent] | TraceEvent): Record<string, unknown> {
  const { doc, events } = load();
  const out: TraceEvent[] = [];
  const ends: TraceEvent[] = [];
  events.forEach((e, i) => {
    if (!isGpu(e)) return out.push(e);
    const r = rewrite(e, i);
    if (Array.isArray(r)) {
      out.push(r[0]);
      ends.push(r[1]);
    } else out.push(r);
  });
  return { ...doc, traceEvents: [...out, ...ends.reverse()] };
}

const figures = (r: RankBreakdown) => ({
  steps: r.decode.count,
  stepMs: r.decode.stepMs?.mean.toFixed(3),
  kernels: r.totals.kernels,
  kernelMs: r.totals.kernelMs.toFixed(3),
  categories: r.decode.categories.map((c) => `${c.category} ${c.msPerStep.toFixed(3)}`),
});

describe('trace analyzer on GPU work written in other phases of the Chrome trace format', () => {
  it('reads kernels written as async "b"/"e" pairs (matched by id) as the complete events they are: the 10.74 ms step stays 10.74 ms', async () => {
    const { doc } = load();
    const plain = figures(await analyse('plain.json', doc));
    assert.equal(plain.stepMs, '10.743');
    const async = await analyse(
      'async.json',
      rewritten((e, i) => {
        const { dur, ...rest } = e;
        return [
          { ...rest, ph: 'b', id: `0x${i.toString(16)}` },
          { ph: 'e', cat: e.cat, name: e.name, id: `0x${i.toString(16)}`, pid: e.pid, tid: e.tid, ts: (e.ts as number) + (dur as number) },
        ];
      }),
    );
    assert.deepEqual(figures(async), plain);
    assert.deepEqual(async.warnings, []);
  });

  it('reads kernels written as "B"/"E" pairs on their stream, the end naming nothing but its time', async () => {
    const { doc } = load();
    const plain = figures(await analyse('plain.json', doc));
    const { events } = load();
    // Pairs on one thread nest: each kernel's end right after its begin keeps them apart.
    const out: TraceEvent[] = [];
    for (const e of events) {
      if (!isGpu(e)) out.push(e);
      else {
        const { dur, ...rest } = e;
        out.push({ ...rest, ph: 'B' }, { ph: 'E', pid: e.pid, tid: e.tid, ts: (e.ts as number) + (dur as number) });
      }
    }
    const r = await analyse('begin-end.json', { ...doc, traceEvents: out });
    assert.deepEqual(figures(r), plain);
    assert.deepEqual(r.warnings, []);
  });

  it('counts kernels written as instants, which have no duration, and unpaired halves in warnings: never dropped without a word', async () => {
    let instants = 0;
    let halves = 0;
    const r = await analyse(
      'instants.json',
      rewritten((e, i) => {
        if (i % 7 === 0) {
          instants++;
          const { dur: _dur, ...rest } = e;
          return { ...rest, ph: 'i', s: 't' };
        }
        if (i % 11 === 0) {
          halves++;
          return { ...e, ph: 'b', id: i };
        }
        return e;
      }),
    );
    assert.ok(instants > 10 && halves > 5, `${instants} instants, ${halves} halves`);
    assert.ok(
      r.warnings.includes(
        `${instants} GPU event(s) written as instant events ("ph": "i", "I" or "n") have no duration and were left out: the breakdown is missing their GPU time. torch.profiler writes kernels as complete ("X") events; re-export the trace with torch.profiler.`,
      ),
      r.warnings.join('\n'),
    );
    assert.ok(
      r.warnings.includes(
        `${halves} GPU event(s) written as half of a begin/end pair ("B"/"E", "b"/"e") whose other half is missing were left out: the breakdown is missing their GPU time.`,
      ),
      r.warnings.join('\n'),
    );
  });
});
