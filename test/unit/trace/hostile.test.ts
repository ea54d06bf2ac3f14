import * as assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gzipSync } from 'node:zlib';
import { analyzeTraceFiles } from '../../../src/core/trace/analyze';
import { KernelClassifier } from '../../../src/core/trace/families';
import { renderBreakdownText } from '../../../src/core/trace/format';
import { kinetoTrace, StepSpec } from './kineto';

// Traces a broken profiler, a bad copy or a hostile hand could produce: what issue 25 found the
// analyzer printing as figures. Each is a known trace with one thing broken, so the right answer is known.
const dir = mkdtempSync(join(tmpdir(), 'ib-hostile-'));
after(() => rmSync(dir, { recursive: true, force: true }));

function write(name: string, content: string | Buffer): string {
  const path = join(dir, name);
  writeFileSync(path, content);
  return path;
}

/** Eight annotated decode steps of 100 + 50 us of GEMM and attention, 500 us apart, on a clock that reads 5e12 us. */
function steps(): StepSpec[] {
  return Array.from({ length: 8 }, () => ({
    annotation: 'execute_new_0_cached_2',
    gapAfter: 500,
    kernels: [
      { name: 'nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT', at: 0, dur: 100 },
      { name: 'void flash::flash_fwd_splitkv_kernel<...>', at: 100, dur: 50 },
    ],
  }));
}
const clean = () => JSON.parse(kinetoTrace(steps(), { t0: 5e12 })) as { traceEvents: Record<string, unknown>[] };
const kernelsOf = (doc: { traceEvents: Record<string, unknown>[] }) => doc.traceEvents.filter((e) => e.cat === 'kernel');

describe('trace analyzer on impossible values', () => {
  it('leaves out a kernel that lasts 1e308 us and says so: the step stays 0.15 ms, nothing reads Infinity', async () => {
    const doc = clean();
    kernelsOf(doc)[3].dur = 1e308;
    const b = await analyzeTraceFiles([write('huge-dur.json', JSON.stringify(doc))]);
    const r = b.ranks[0];
    assert.equal(r.decode.stepMs?.max, 0.15);
    assert.doesNotMatch(b.headline, /Infinity|NaN|e\+/);
    assert.ok(
      r.warnings.some((w) => w.startsWith('1 event(s) lasting more than a day were left out')),
      r.warnings.join('\n'),
    );
  });

  it('leaves out kernels stamped at time 0 in a trace whose clock reads 5e12 us, even when one comes first in the file', async () => {
    const doc = clean();
    const ks = kernelsOf(doc);
    ks[0].ts = 0;
    ks[9].ts = 0;
    const b = await analyzeTraceFiles([write('zero-ts.json', JSON.stringify(doc))]);
    const r = b.ranks[0];
    assert.ok(r.totals.gpuSpanMs < 10, `GPU span ${r.totals.gpuSpanMs} ms`);
    assert.ok((r.decode.stepMs?.max ?? 0) <= 0.15, `longest step ${r.decode.stepMs?.max} ms`);
    assert.ok(
      r.warnings.some((w) => w.startsWith('2 event(s) more than an hour away from the rest of the trace')),
      r.warnings.join('\n'),
    );
  });

  it('leaves out a kernel that starts before its launch call: launch-to-start is never negative', async () => {
    const doc = clean();
    // 100 us early: about 50 us before its launch call, close enough to the profile to pass every other check.
    const k = kernelsOf(doc)[4];
    k.ts = (k.ts as number) - 100;
    for (const mode of ['auto', 'in-memory'] as const) {
      const r = (await analyzeTraceFiles([write('before-launch.json', JSON.stringify(doc))], { mode })).ranks[0];
      assert.ok((r.launch?.launchToStartUs?.min ?? 0) >= 0, `${mode}: launch-to-start min ${r.launch?.launchToStartUs?.min} us`);
      assert.ok(r.totals.gpuSpanMs < 10, `${mode}: GPU span ${r.totals.gpuSpanMs} ms`);
      assert.ok(
        r.warnings.some((w) => w.startsWith('1 kernel(s) that start before their launch call')),
        `${mode}: ${r.warnings.join('\n')}`,
      );
    }
  });

  it('leaves out a copy with no launch call that starts a second before the profile, as Kineto writes it (CPU events first)', async () => {
    const doc = clean();
    doc.traceEvents.sort((a, b) => Number(a.cat === 'kernel') - Number(b.cat === 'kernel'));
    const k = kernelsOf(doc)[5];
    Object.assign(k, { cat: 'gpu_memcpy', name: 'Memcpy DtoH (Device -> Pinned)', ts: (k.ts as number) - 1_000_000, args: {} });
    const r = (await analyzeTraceFiles([write('early-copy.json', JSON.stringify(doc))])).ranks[0];
    assert.ok(r.totals.gpuSpanMs < 10, `GPU span ${r.totals.gpuSpanMs} ms`);
    assert.ok(
      r.warnings.some((w) => w.startsWith("1 GPU event(s) starting more than 100 ms before the profile's first CPU event")),
      r.warnings.join('\n'),
    );
  });

  it('reads a kernel written as a begin/end pair as the complete event it is, and counts one with an unknown ph in a warning', async () => {
    const doc = clean();
    const [a, b] = kernelsOf(doc);
    const at = doc.traceEvents.indexOf(a);
    doc.traceEvents.splice(at, 1, { ...a, ph: 'B', dur: undefined }, { ...a, ph: 'E', ts: (a.ts as number) + 100, dur: undefined });
    b.ph = 'Q';
    const r = (await analyzeTraceFiles([write('begin-end.json', JSON.stringify(doc))])).ranks[0];
    // 16 kernels, one of them unreadable; the pair is the first step's 100 us GEMM.
    assert.equal(r.totals.kernels, 15);
    assert.equal(r.kernelTotals.find((k) => k.name.startsWith('nvjet'))?.count, 8);
    assert.ok(
      r.warnings.some((w) => w.startsWith('1 GPU event(s) with an unknown or missing "ph"')),
      r.warnings.join('\n'),
    );
  });
});

describe('trace analyzer on hostile names and files', () => {
  it('shows ESC, BEL and NUL in kernel names as U+FFFD, in the breakdown and in the printed tables', async () => {
    const doc = clean();
    for (const k of kernelsOf(doc).filter((x) => String(x.name).startsWith('nvjet'))) k.name = '\u001b]0;owned\u0007\u001b[2Jnvjet_gemm\u0000';
    const b = await analyzeTraceFiles([write('escapes.json', JSON.stringify(doc))]);
    const names = b.ranks[0].kernelTotals.map((k) => k.name);
    assert.ok(names.includes('\ufffd]0;owned\ufffd\ufffd[2Jnvjet_gemm\ufffd'), names.join(', '));
    // eslint-disable-next-line no-control-regex
    assert.doesNotMatch(renderBreakdownText(b), /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  });

  it('reads a trace that starts with a UTF-8 byte order mark', async () => {
    const b = await analyzeTraceFiles([write('bom.json', Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from(kinetoTrace(steps()))]))]);
    assert.equal(b.ranks[0].decode.count, 8);
  });

  it('says a file with gzip magic bytes and corrupt data is not a valid gzip file, not that it is empty', async () => {
    const z = gzipSync(kinetoTrace(steps()));
    z.fill(0x55, 10, 40);
    await assert.rejects(analyzeTraceFiles([write('corrupt.json.gz', z)]), /^TraceFormatError: Not a valid gzip file \(the gzip data is corrupt \(/);
  });

  it('refuses a kernel family whose pattern nests quantifiers, saying why, instead of hanging on a long name', () => {
    assert.throws(() => new KernelClassifier([{ category: 'mine', pattern: '(a+)+$' }]), /refused: it repeats a group that holds a quantifier/);
    assert.throws(() => new KernelClassifier([{ category: 'mine', pattern: '.*a.*b' }]), /to the power 3/);
    // What is left is at most quadratic, over a name's first 4,096 characters: a 100 kB name is classified at once.
    const c = new KernelClassifier([{ category: 'mine', pattern: '^.*a.*b' }]);
    assert.equal(c.classify(`${'a'.repeat(100_000)}b`), 'other');
    assert.equal(c.classify('xab'), 'mine');
  });
});
