import * as assert from 'node:assert/strict';
import { EventView, TraceJsonReader } from '../../../src/core/trace/jsonReader';

// The reader guesses each key of an event to be the one torch writes next ("ph", "cat", "name", ...;
// jsonReader.ts, TORCH_NEXT) and matches it by its bytes; a key written otherwise is read as a
// string. The same bytes read both ways must give the same events, whatever the layout and
// wherever a chunk ends.

interface Seen {
  cat: number;
  ph: number;
  ts: number;
  dur: number;
  pid: number;
  tid: number;
  correlation: number;
  name: string;
  nameEscaped: boolean;
  rawName: number;
  id: string;
}

function snapshot(e: EventView): Seen {
  return {
    cat: e.cat,
    ph: e.ph,
    ts: e.ts,
    dur: e.dur,
    pid: e.pid,
    tid: e.tid,
    correlation: e.correlation,
    name: e.name(),
    nameEscaped: e.nameEscaped,
    rawName: e.rawNameId(),
    id: e.id,
  };
}

/** Every event and the summary, or the error; `general`: no key guessed, every key read as a string. */
function read(doc: Buffer, cuts: number[], general: boolean, region = false): { events: Seen[]; summary?: unknown; error?: string } {
  const events: Seen[] = [];
  const reader = new TraceJsonReader((e) => events.push(snapshot(e)));
  if (general) {
    // Private: the test turns the guesses off (no key guessed after any) to have every key read as a string.
    (reader as unknown as { torchNext: Uint8Array }).torchNext = new Uint8Array(16);
  }
  try {
    let from = 0;
    if (region) {
      // As readPlain does: one buffer, what was left unread moved to the front before each read.
      const buf = Buffer.alloc(doc.length);
      let kept = 0;
      for (const to of [...cuts, doc.length]) {
        doc.copy(buf, kept, from, to);
        const length = kept + (to - from);
        const used = reader.pushRegion(buf, length);
        buf.copyWithin(0, used, length);
        kept = length - used;
        from = to;
      }
    } else {
      for (const to of [...cuts, doc.length]) {
        reader.push(Buffer.from(doc.subarray(from, to)));
        from = to;
      }
    }
    return { events, summary: reader.end() };
  } catch (err) {
    return { events, error: String(err) };
  }
}

/** An event's keys as torch lays them out: "ph", "cat", "name", "pid", "tid" on one line, then ts/dur, then args one per line. */
function torch(head: string, times: string, args?: string[], indent = 2): string {
  const pad = ' '.repeat(indent);
  const lines = [`${pad}{`, `${pad}  ${head}${times || args ? ',' : ''}`];
  if (times) lines.push(`${pad}  ${times}${args ? ',' : ''}`);
  if (args) lines.push(`${pad}  "args": {`, args.map((a) => `${pad}    ${a}`).join(',\n'), `${pad}  }`);
  lines.push(`${pad}}`);
  return lines.join('\n');
}

const EVENTS = [
  torch('"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 7, "tid": 7', '"ts": 100.5, "dur": 3.25', ['"External id": 1', '"note": "}\\n  }"']),
  torch('"ph": "X", "cat": "kernel", "name": "void gemm<float>(int)", "pid": 0, "tid": 7', '"ts": 1.5e2, "dur": 2E1', [
    '"External id": 1',
    '"grid": [1,1,1]',
    '"correlation": 42',
    '"registers per thread": 16',
  ]),
  torch('"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 7, "tid": 7', '"ts": 99, "dur": 1.000', ['"cbid": 211', '"correlation": 42']),
  torch('"ph": "s", "id": 42, "pid": 7, "tid": 7, "cat": "ac2g", "name": "ac2g"', '"ts": 99'),
  torch('"ph": "f", "id": 42, "pid": 0, "tid": 7, "cat": "ac2g", "name": "ac2g", "bp": "e"', '"ts": 150'),
  torch('"ph": "X", "cat": "user_annotation", "name": "decode_step_3 \\"quoted\\" \\u00e9", "pid": 7, "tid": 7', '"ts": 90, "dur": 80'),
  torch('"ph": "X", "cat": "gpu_user_annotation", "name": "decode_step_3", "pid": 0, "tid": 7', '"ts": 140, "dur": 60'),
  torch('"ph": "X", "cat": "python_function", "name": "nn.Module: Linear_0", "pid": 7, "tid": 7', '"ts": -1.25e-1, "dur": 1e400'),
  torch('"ph": "X", "cat": "overhead", "name": "Lazy Function Loading", "pid": -1, "tid": 0', '"ts": 5, "dur": 1'),
  torch('"ph": "M", "name": "process_name", "pid": 7, "tid": 0', '', ['"name": "python3"']),
  torch('"ph": "b", "cat": "kernel", "id": "0x1a", "name": "async kernel", "pid": "Spans", "tid": "x"', '"ts": 160'),
  torch('"ph": "e", "cat": "kernel", "id": "0x1a", "name": "async kernel", "pid": "Spans", "tid": "x"', '"ts": 170'),
  torch('"ph": "i", "cat": "kernel", "name": "instant", "s": "t", "pid": 0, "tid": 7', '"ts": 175'),
  torch('"ph": "X", "cat": "Kernel", "name": "old kineto", "pid": 0, "tid": 7', '"ts": 180, "dur": 2', ['"correlation": 43']),
  torch('"ph": "X", "cat": "Operator", "name": "old op", "pid": 7, "tid": 7', '"ts": 180, "dur": 2'),
  // Odd spacing and order: a guess that does not match leaves the key to be read as a string.
  torch('"ph":"X","cat":"kernel","name":"tight","pid":0,"tid":7', '"ts":181,"dur":1', ['"correlation":44']),
  torch('"ph" : "X", "cat" : "kernel", "name": "spaced", "pid": 0, "tid": 7', '"ts": 182, "dur": 1', ['"correlation": 45']),
  torch('"ph":  "X", "cat":\t"kernel" , "name": "two spaces", "pid": 0, "tid": 7', '"ts": 183, "dur": 1', ['"correlation": 46']),
  torch('"ph": "X" , "cat": "cpu_op" , "name": "comma spaced", "pid": 7, "tid": 7', '"ts": 184, "dur": 1'),
  torch('"cat": "kernel", "ph": "X", "name": "cat first", "pid": 0, "tid": 7', '"ts": 185, "dur": 1', ['"correlation": 47']),
  torch('"cat": "cpu_op", "ph": "X", "name": "cat first op", "pid": 7, "tid": 7', '"ts": 185, "dur": 1'),
  torch('"ph": "\\u0058", "cat": "kernel", "name": "escaped ph", "pid": 0, "tid": 7', '"ts": 186, "dur": 1', ['"correlation": 48']),
  torch('"ph": "X", "cat": "ker\\u006eel", "name": "escaped cat", "pid": 0, "tid": 7', '"ts": 187, "dur": 1', ['"correlation": 49']),
  torch('"ph": "", "cat": "kernel", "name": "empty ph", "pid": 0, "tid": 7', '"ts": 188, "dur": 1'),
  torch('"ph": "XX", "cat": "kernel", "name": "long ph", "pid": 0, "tid": 7', '"ts": 189, "dur": 1'),
  torch('"ph": 88, "cat": "kernel", "name": "number ph", "pid": 0, "tid": 7', '"ts": 190, "dur": 1'),
  torch('"ph": "X", "cat": 1, "name": "number cat", "pid": 0, "tid": 7', '"ts": 191, "dur": 1'),
  torch('"ph": "X", "cat": "", "name": "empty cat", "pid": 0, "tid": 7', '"ts": 192, "dur": 1'),
  torch('"ph": "X", "cat": "a category far longer than thirty-two bytes", "name": "long cat", "pid": 0, "tid": 7', '"ts": 193, "dur": 1'),
  torch('"ph": "X", "ph": "s", "cat": "kernel", "name": "two ph", "pid": 0, "tid": 7', '"ts": 194, "dur": 1'),
  torch('"ph": "X", "cat": "kernel", "cat": "cpu_op", "name": "two cats", "pid": 0, "tid": 7', '"ts": 195, "dur": 1'),
  torch('"ph": "X"', ''),
  torch('"ph": "X", "cat": "kernel"', ''),
  torch('"php": "X", "cat": "kernel", "name": "not ph", "pid": 0, "tid": 7', '"ts": 196, "dur": 1', ['"correlation": 50']),
  torch('"ph": "X", "cats": "kernel", "name": "not cat", "pid": 0, "tid": 7', '"ts": 197, "dur": 1'),
  torch('"ph": "X", "cat": "kernel", "name": "deep", "pid": 0, "tid": 7', '"ts": 198.000000000000001, "dur": 123456789012345678', ['"correlation": 51'], 6),
  // Keys after "cat" out of torch's order, or near to its keys: each guess that fails reads the key as a string.
  torch('"ph": "X", "cat": "kernel", "pid": 0, "name": "pid first", "tid": 7', '"dur": 1, "ts": 200', ['"correlation": 53']),
  torch('"ph": "X", "cat": "kernel", "names": "not name", "name" : "spaced name", "pid":0, "tid" :7', '"ts":201 , "dur" : 1', ['"correlation": 54']),
  torch('"ph": "X", "cat": "kernel", "name": 5, "pid": "0", "tid": null', '"tsx": 1, "ts": 202, "durs": 9, "dur": 1', ['"correlation": 55']),
  torch('"ph": "X", "cat": "kernel", "name": "args not an object", "pid": 0, "tid": 7', '"ts": 203, "dur": 1, "args": [1, {"correlation": 9}], "arg": 1'),
  torch('"ph": "X", "cat": "cuda_runtime", "name": "extra keys", "pid": 7, "tid": 7, "id": 3', '"ts": 204, "dur": 1, "bp": "e"', ['"correlation": 56']),
  torch('"ph": "X", "cat": "kernel", "name": "two names", "name": "second", "pid": 0, "tid": 7', '"ts": 205, "ts": 206, "dur": 1', ['"correlation": 57']),
  torch('"ph":\n"X", "cat":\n"kernel", "name":\r\n"new lines", "pid":\t0, "tid": 7', '"ts": 207, "dur": 1', ['"correlation": 58']),
  '{"ph": "X", "cat": "kernel", "name": "compact", "pid": 0, "tid": 7, "ts": 199, "dur": 1, "args": {"correlation": 52}}',
  '{"ph":"X","cat":"cpu_op","name":"compact op","pid":7,"tid":7,"ts":199,"dur":1,"args":{"a":{"b":"}"}}}',
  '{ "ph": "s", "id": 52, "cat": "ac2g" }',
  '{}',
];

function document(events: string[]): Buffer {
  return Buffer.from(`{"schemaVersion": 1, "traceEvents": [\n${events.join(',\n')}\n], "traceName": "t"}\n`);
}

describe('torch key order guessed (jsonReader)', () => {
  it('reads each event as with no guess: odd spacing, escapes, exponents, keys out of order', () => {
    const doc = document(EVENTS);
    const general = read(doc, [], true);
    assert.equal(general.error, undefined);
    assert.equal(general.events.length, EVENTS.length);
    assert.deepEqual(read(doc, [], false), general);
    // Events one at a time too, so that a difference names its event.
    for (const e of EVENTS) assert.deepEqual(read(document([e]), [], false), read(document([e]), [], true), e);
  });

  it('gives the same events wherever a chunk ends, pushed or read in place', () => {
    const doc = document(EVENTS);
    const whole = read(doc, [], true).events;
    for (let cut = 1; cut < doc.length; cut++) {
      const expected = read(doc, [cut], true);
      assert.deepEqual(expected.events, whole, `cut at ${cut}`);
      assert.deepEqual(read(doc, [cut], false), expected, `cut at ${cut}`);
      if (cut % 7 === 0) assert.deepEqual(read(doc, [cut], false, true), read(doc, [cut], true, true), `read in place, cut at ${cut}`);
    }
    for (const chunk of [1, 2, 3, 5, 17, 64]) {
      const cuts: number[] = [];
      for (let at = chunk; at < doc.length; at += chunk) cuts.push(at);
      assert.deepEqual(read(doc, cuts, false), read(doc, cuts, true), `chunks of ${chunk}`);
      assert.deepEqual(read(doc, cuts, false, true), read(doc, cuts, true, true), `chunks of ${chunk}, read in place`);
      assert.deepEqual(read(doc, cuts, false).events, whole, `chunks of ${chunk}`);
    }
  });

  it('fails on broken events as with no guess', () => {
    const broken = [
      torch('"ph": "X", "cat": "kernel" "name": "no comma"', '"ts": 1, "dur": 1'),
      torch('"ph": "X", "cat": "kernel", name: "bare key"', '"ts": 1, "dur": 1'),
      torch('"ph": "X" "cat": "kernel"', ''),
      '{"ph": "X", "cat": "kernel", "name": "cut',
      `{"ph": "X", "cat": "cpu_op", "name": "nul"${'\u0000'.repeat(64)}`,
    ];
    for (const e of broken) {
      const doc = document([EVENTS[1], e]);
      const general = read(doc, [], true);
      assert.deepEqual(read(doc, [], false), general, e);
      for (let cut = 1; cut < doc.length; cut += 3) assert.deepEqual(read(doc, [cut], false), read(doc, [cut], true), `${e} cut at ${cut}`);
    }
  });
});
