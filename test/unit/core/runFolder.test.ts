import * as assert from 'node:assert/strict';
import { appendFileSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { RunFolder } from '../../../src/core/runs/runFolder';

describe('run folders', () => {
  it('keeps every event appended before a crash, skipping a line cut mid-write', () => {
    const ws = mkdtempSync(join(tmpdir(), 'ib-runs-'));
    const run = RunFolder.create(ws, 'macro', 'local', { concurrency: [1] });
    run.appendEvent('{"v":1,"type":"progress","t":1,"done":1,"total":3}');
    run.appendEvent('{"v":1,"type":"progress","t":2,"done":2,"total":3}');
    appendFileSync(run.eventLogPath, '{"v":1,"type":"prog');
    const reopened = RunFolder.open(run.dir);
    assert.equal(reopened.info.status, 'running');
    assert.equal(reopened.readEvents().length, 2);
  });

  it('lists runs newest first and gives two runs in the same millisecond their own folders', () => {
    const ws = mkdtempSync(join(tmpdir(), 'ib-runs-'));
    const t = new Date('2026-12-01T10:00:00Z');
    const a = RunFolder.create(ws, 'macro', 'local', {}, t);
    const b = RunFolder.create(ws, 'macro', 'local', {}, t);
    const c = RunFolder.create(ws, 'profile', 'local', {}, new Date('2026-12-01T11:00:00Z'));
    assert.notEqual(a.dir, b.dir);
    b.finish('interrupted', 'connection dropped');
    const listed = RunFolder.list(ws);
    assert.equal(listed[0].info.id, c.info.id);
    assert.equal(listed.find((r) => r.info.id === b.info.id)?.info.status, 'interrupted');
  });
});

describe("a run folder's event log written by an older agent", () => {
  it("shows a server's terminal controls in its events as U+FFFD, as the live stream does", () => {
    const ws = mkdtempSync(join(tmpdir(), 'ib-runs-'));
    const run = RunFolder.create(ws, 'macro', 'local', { concurrency: [1] });
    run.appendEvent(JSON.stringify({ v: 1, type: 'log', t: 1, level: 'warn', message: 'HTTP 500: \x1b]0;PWNED-TITLE\x07 \x1b[2J' }));
    const [event] = RunFolder.open(run.dir).readEvents() as { message: string }[];
    assert.equal(event.message, 'HTTP 500: \ufffd]0;PWNED-TITLE\ufffd \ufffd[2J');
  });
});
