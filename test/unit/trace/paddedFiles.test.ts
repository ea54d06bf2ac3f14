import * as assert from 'node:assert/strict';
import { closeSync, mkdtempSync, openSync, readFileSync, rmSync, truncateSync, writeFileSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { TraceFormatError } from '../../../src/core/trace/jsonReader';

// Files whose bytes stop being a trace partway: a pre-allocated or sparse file whose writer had not
// finished (NULs, or a hole that reads as NULs), an event that never closes, a second document after
// the first. Before, the reader kept the cut event and grew its buffer with the padding: a 2 GiB
// sparse file with 1 MB of trace in it took 6.1 GiB of memory.
const dir = mkdtempSync(join(tmpdir(), 'ib-padded-'));
after(() => rmSync(dir, { recursive: true, force: true }));

const sglang = gunzipSync(readFileSync('test/fixtures/traces/servers/sglang/1764579600.123-TP-0.trace.json.gz'));

async function refusal(path: string): Promise<TraceFormatError> {
  try {
    await analyzeTraceFiles([path]);
  } catch (err) {
    if (err instanceof TraceFormatError) return err;
    throw err;
  }
  assert.fail(`${path} was analysed, not refused`);
}

describe('trace analyzer on padded and sparse files', () => {
  it('refuses a trace cut at 1 MB and followed by a 256 MiB hole (a sparse file), naming the byte where the data stop', async () => {
    const path = join(dir, 'sparse.json');
    writeFileSync(path, sglang.subarray(0, 1_000_000));
    // A hole: no disk used, read back as NULs.
    truncateSync(path, 256 << 20);
    const t0 = Date.now();
    const heap0 = process.memoryUsage().arrayBuffers;
    const err = await refusal(path);
    assert.match(err.message, /^The trace's data stop at byte 1000000, inside traceEvents after \d+ events: from there on the file holds NUL bytes/);
    assert.match(err.message, /Copy the trace again once the profiler has finished writing it\.$/);
    assert.equal(err.offset, 1_000_000);
    // Refused at the first buffer that holds the padding, not after reading 256 MiB into memory.
    assert.ok(process.memoryUsage().arrayBuffers - heap0 < 64 << 20, `${(process.memoryUsage().arrayBuffers - heap0) >> 20} MiB of buffers held`);
    assert.ok(Date.now() - t0 < 5000, `${Date.now() - t0} ms`);
  });

  it('refuses a gzip trace whose JSON is cut and padded with NULs the same way', async () => {
    const { gzipSync } = await import('node:zlib');
    const path = join(dir, 'padded.json.gz');
    writeFileSync(path, gzipSync(Buffer.concat([sglang.subarray(0, 700_001), Buffer.alloc(3 << 20)])));
    const err = await refusal(path);
    assert.match(err.message, /^The trace's data stop at byte 700001, inside traceEvents/);
  });

  it('refuses an event that never closes once it passes 16 MB, instead of holding the rest of the file', async () => {
    const path = join(dir, 'open-event.json');
    const fd = openSync(path, 'w');
    writeSync(fd, '{"traceEvents":[{"ph":"X","cat":"kernel","name":"');
    const run = Buffer.alloc(1 << 20, 'a');
    for (let i = 0; i < 24; i++) writeSync(fd, run);
    closeSync(fd);
    const err = await refusal(path);
    assert.match(err.message, /^Not valid trace JSON at byte 16: an event longer than 16 MB \(no profiler writes one; the file is damaged\)/);
  });

  it('reads a whole trace followed by NULs and new lines, and refuses one followed by a second document', async () => {
    const padded = join(dir, 'whole-then-nuls.json');
    writeFileSync(padded, Buffer.concat([sglang, Buffer.alloc(5 << 20), Buffer.from('\n')]));
    const b = await analyzeTraceFiles([padded]);
    assert.equal(b.ranks[0].decode.count, 20);
    assert.equal(b.ranks[0].truncated, undefined);

    const joined = join(dir, 'two-documents.json');
    writeFileSync(joined, Buffer.concat([sglang, Buffer.from('\n'), sglang]));
    const err = await refusal(joined);
    assert.equal(err.offset, sglang.length + 1 + sglang.indexOf('{'));
    assert.match(err.message, /^The trace's JSON document is followed by more at byte \d+ \("\{/);
    assert.match(err.message, /two traces joined into one file, or a damaged copy/);
  });
});
