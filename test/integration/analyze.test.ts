import * as assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { TraceBreakdown } from '../../src/core/trace/types';

// The built CLI, as a user runs it: no server, no target, only trace files.
const cli = (...args: string[]) => spawnSync('node', ['dist/cli.js', 'analyze', ...args], { encoding: 'utf8' });
const FIXTURES = 'test/fixtures/traces';

describe('infbench analyze', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ib-analyze-'));

  it('prints the per-category breakdown of a real trace and writes it as JSON', () => {
    const out = join(dir, 'breakdown.json');
    const r = cli(join(FIXTURES, 'llama_cudagraph_decode.pt.trace.json.gz'), '--out', out);
    assert.equal(r.status, 0, r.stderr);
    assert.match(
      r.stdout,
      /^\S+ [\d.]+% \([\d.]+ ms\) of a [\d.]+ ms decode step \(1 rank, 20 decode steps; steps from one CUDA graph launch per step \(no step names\)\)/,
    );
    assert.match(r.stdout, /Where a decode step goes/);
    assert.match(r.stdout, /\nidle +[\d.]+ +[\d.]+/);
    assert.match(r.stdout, /Top kernels in decode steps/);
    const b = JSON.parse(readFileSync(out, 'utf8')) as TraceBreakdown;
    assert.equal(b.ranks[0].decode.count, 20);
    assert.equal(b.headline, r.stdout.split('\n')[0]);
  });

  it('treats several files as ranks and prints JSON with --json', () => {
    const r = cli(join(FIXTURES, 'llama_eager_decode.pt.trace.json.gz'), join(FIXTURES, 'llama_cudagraph_decode.pt.trace.json.gz'), '--json');
    assert.equal(r.status, 0, r.stderr);
    const b = JSON.parse(r.stdout) as TraceBreakdown;
    assert.deepEqual(
      b.ranks.map((x) => x.stepSource),
      ['annotation', 'cuda-graph'],
    );
    // neither file names its rank, so they are numbered in the order given
    assert.deepEqual(
      b.ranks.map((x) => x.rank),
      [0, 1],
    );
    assert.ok(b.skew && b.skew.slowestRank === 0);
  });

  it('classifies with a family the user adds', () => {
    const r = cli(join(FIXTURES, 'llama_cudagraph_decode.pt.trace.json.gz'), '--json', '--family', 'layernorm-ish=vectorized_layer_norm');
    assert.equal(r.status, 0, r.stderr);
    const b = JSON.parse(r.stdout) as TraceBreakdown;
    assert.ok(b.overall.categories.some((c) => c.category === 'layernorm-ish' && c.kernelsPerStep === 9));
  });

  it('refuses a file that is not a trace with the reason and exit code 1', () => {
    const f = join(dir, 'config.json');
    writeFileSync(f, '{"model":"m"}');
    const r = cli(f);
    assert.equal(r.status, 1);
    assert.match(r.stderr, /infbench analyze: .*config\.json: This JSON has no "traceEvents" array/);
  });

  it('prints a trace whose kernel names hold ESC and BEL with no control character reaching the terminal', () => {
    const doc = JSON.parse(gunzipSync(readFileSync(join(FIXTURES, 'llama_cudagraph_decode.pt.trace.json.gz'))).toString('utf8')) as {
      traceEvents: { cat?: string; name?: string }[];
    };
    for (const e of doc.traceEvents) if (e.cat === 'kernel' && e.name?.startsWith('nvjet')) e.name = `\u001b]0;owned\u0007\u001b[2J${e.name}`;
    const f = join(dir, 'escapes.json');
    writeFileSync(f, JSON.stringify(doc));
    const r = cli(f);
    assert.equal(r.status, 0, r.stderr);
    assert.match(r.stdout, /\ufffd\]0;owned\ufffd\ufffd\[2Jnvjet/);
    // eslint-disable-next-line no-control-regex
    assert.doesNotMatch(r.stdout + r.stderr, /[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/);
  });

  it('refuses an --out in a folder that does not exist before reading the traces, with exit code 2', () => {
    const r = cli(join(FIXTURES, 'llama_eager_decode.pt.trace.json.gz'), '--out', join(dir, 'missing', 'b.json'));
    assert.equal(r.status, 2);
    assert.match(r.stderr, /--out .*b\.json: the folder .*missing does not exist/);
    assert.equal(r.stdout, '');
  });

  it('explains usage mistakes with exit code 2', () => {
    assert.equal(cli().status, 2);
    const r = cli('missing.json');
    assert.equal(r.status, 2);
    assert.match(r.stderr, /missing\.json: no such file/);
  });
});
