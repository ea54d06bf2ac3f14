import * as assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { EventCat, EventView, TraceFormatError, TraceJsonReader } from '../../../src/core/trace/jsonReader';

interface Seen {
  cat: EventCat;
  name: string;
  ts: number;
  dur: number;
  correlation: number;
}

function readAll(text: string | Buffer, chunk = 1 << 16): { events: Seen[]; summary: ReturnType<TraceJsonReader['end']> } {
  const events: Seen[] = [];
  const reader = new TraceJsonReader((e: EventView) => events.push({ cat: e.cat, name: e.name(), ts: e.ts, dur: e.dur, correlation: e.correlation }));
  const buf = Buffer.isBuffer(text) ? text : Buffer.from(text);
  for (let i = 0; i < buf.length; i += chunk) reader.push(buf.subarray(i, i + chunk));
  return { events, summary: reader.end() };
}

const fixture = gunzipSync(readFileSync('test/fixtures/traces/llama_eager_decode.pt.trace.json.gz'));

describe('streaming trace JSON reader', () => {
  it('reads every event of a real trace exactly as JSON.parse does, whatever the chunk size', () => {
    const expected = (
      JSON.parse(fixture.toString('utf8')) as { traceEvents: { cat?: string; name?: string; ts?: number; dur?: number; args?: { correlation?: number } }[] }
    ).traceEvents;
    const kernels = expected.filter((e) => e.cat === 'kernel');
    // Small chunks cut nearly every event in two; the reader re-reads a cut event when the rest arrives.
    for (const chunk of [1 << 20, 4093, 61]) {
      const { events, summary } = readAll(fixture, chunk);
      assert.equal(summary.events, expected.length, `chunk ${chunk}`);
      assert.equal(summary.truncated, undefined);
      const got = events.filter((e) => e.cat === EventCat.Kernel);
      assert.equal(got.length, kernels.length);
      for (let i = 0; i < got.length; i += 97) {
        assert.equal(got[i].name, kernels[i].name);
        assert.equal(got[i].ts, kernels[i].ts);
        assert.equal(got[i].dur, kernels[i].dur);
        assert.equal(got[i].correlation, kernels[i].args?.correlation);
      }
      assert.deepEqual(summary.metadata.deviceProperties, (JSON.parse(fixture.toString('utf8')) as { deviceProperties: unknown }).deviceProperties);
    }
  });

  it('reads pretty-printed traces (any indent) as it reads compact ones, skipped objects holding braces in strings included', () => {
    const doc = {
      schemaVersion: 1,
      traceEvents: [
        {
          ph: 'X',
          cat: 'cpu_op',
          name: 'aten::weird}{name',
          pid: 1,
          tid: 1,
          ts: 1,
          dur: 2,
          args: { 'External id': 3, note: '}\n  }', nested: { a: [1, { b: '}' }] } },
        },
        {
          ph: 'X',
          cat: 'kernel',
          name: 'void k<{lambda()#1}>(int)',
          pid: 0,
          tid: 7,
          ts: 10.5,
          dur: 3.25,
          args: { 'External id': 9, device: 0, stream: 7, correlation: 42, grid: [1, 2, 3], 'est. achieved occupancy %': 12 },
        },
        { ph: 'X', cat: 'ac2g', name: 'ac2g', pid: 0, tid: 7, ts: 11, id: 42 },
        { ph: 'X', cat: 'cuda_runtime', name: 'cudaLaunchKernel', pid: 1, tid: 1, ts: 9, dur: 1, args: { 'External id': 9, cbid: 211, correlation: 42 } },
      ],
    };
    const compact = readAll(JSON.stringify(doc)).events;
    for (const indent of [1, 2, 4]) {
      for (const chunk of [1 << 16, 7]) {
        const { events, summary } = readAll(JSON.stringify(doc, null, indent), chunk);
        assert.equal(summary.events, 4);
        assert.deepEqual(
          events.map((e) => [e.cat, e.name, e.correlation]),
          compact.map((e) => [e.cat, e.name, e.correlation]),
          `indent ${indent}, chunk ${chunk}`,
        );
        const kernel = events.find((e) => e.cat === EventCat.Kernel)!;
        assert.deepEqual([kernel.ts, kernel.dur, kernel.correlation], [10.5, 3.25, 42]);
      }
    }
  });

  it('reads the capitalised categories of older Kineto (Kernel, Runtime, Memcpy, Memset, Operator)', () => {
    const doc = {
      traceEvents: ['Kernel', 'Runtime', 'Memcpy', 'Memset', 'Operator'].map((cat, i) => ({
        ph: 'X',
        cat,
        name: `e${i}`,
        pid: 0,
        tid: 7,
        ts: i,
        dur: 1,
        args: { correlation: 100 + i },
      })),
    };
    const { events } = readAll(JSON.stringify(doc));
    assert.deepEqual(
      events.map((e) => e.cat),
      [EventCat.Kernel, EventCat.CudaRuntime, EventCat.GpuMemcpy, EventCat.GpuMemset, EventCat.CpuOp],
    );
    assert.deepEqual(
      events.slice(0, 4).map((e) => e.correlation),
      [100, 101, 102, 103],
    );
  });

  it('accepts top-level keys in any order, distributedInfo after traceEvents included', () => {
    const text =
      '{"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1.5,"dur":2}],"distributedInfo":{"rank":3,"world_size":8},"schemaVersion":1}';
    const { events, summary } = readAll(text, 5);
    assert.equal(events.length, 1);
    assert.deepEqual(summary.metadata.distributedInfo, { rank: 3, world_size: 8 });
  });

  it('keeps events whose strings hold control characters (shown as U+FFFD), escaped quotes and unicode', () => {
    const text =
      '{"traceEvents":[{"ph":"X","cat":"kernel","name":"bad\u0001name","ts":1,"dur":1},{"ph":"X","cat":"kernel","name":"q\\"uo\\\\te \\u00e9","ts":2,"dur":1},{"ph":"X","cat":"kernel","name":"ünï","ts":3,"dur":1}]}';
    const { events } = readAll(text, 1);
    assert.deepEqual(
      events.map((e) => e.name),
      ['bad\ufffdname', 'q"uo\\te é', 'ünï'],
    );
  });

  it('reads the bare-array form of Chrome traces', () => {
    const { events } = readAll('[{"ph":"X","cat":"kernel","name":"a","ts":1,"dur":1},{"ph":"X","cat":"cpu_op","name":"b","ts":1,"dur":1}]');
    assert.deepEqual(
      events.map((e) => e.cat),
      [EventCat.Kernel, EventCat.CpuOp],
    );
  });

  it('reads numbers with exponents and pids given as strings', () => {
    const { events } = readAll('{"traceEvents":[{"ph":"X","cat":"kernel","name":"a","pid":"Spans","tid":"x","ts":1.5e3,"dur":-0.25}]}');
    assert.equal(events[0].ts, 1500);
    assert.equal(events[0].dur, -0.25);
  });

  it('says what was cut when the document ends inside an event', () => {
    const text = '{"traceEvents":[{"ph":"X","cat":"kernel","name":"a","ts":1,"dur":1},{"ph":"X","cat":"kernel","na';
    const { events, summary } = readAll(text, 10);
    assert.equal(events.length, 1);
    assert.match(summary.truncated ?? '', /after 1 complete events.*cut event of \d+ bytes was dropped/);
  });

  it('refuses JSON that is not a trace, naming what it found', () => {
    assert.throws(
      () => readAll('{"model":"llama","layers":[1,2,3]}'),
      (e: unknown) => e instanceof TraceFormatError && /no "traceEvents" array \(top-level keys: model, layers\)/.test(e.message),
    );
  });

  it('refuses an empty file and non-JSON bytes with a clear message', () => {
    assert.throws(() => readAll(''), /The file is empty/);
    assert.throws(() => readAll(Buffer.from([0x50, 0x4b, 0x03, 0x04, 0, 0])), /not valid trace JSON at byte 0.*starts with/i);
  });

  it('reports the byte offset of broken JSON inside traceEvents', () => {
    assert.throws(
      () => readAll('{"traceEvents":[{"ph":"X"} {"ph":"X"}]}'),
      (e: unknown) => e instanceof TraceFormatError && e.offset === 27,
    );
  });
});
