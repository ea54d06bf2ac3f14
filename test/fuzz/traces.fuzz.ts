import * as assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyzeTraceFiles } from '../../src/core/trace/analyze';
import { TraceFormatError } from '../../src/core/trace/jsonReader';
import { TraceBreakdown } from '../../src/core/trace/types';
import { FuzzTally } from './tally';
import { baseBytes, figureDifference, impossibleFigures, loadTraceBase, mutant, TraceBase } from './traceMutants';

// Every real trace, cut to the stretch of its first 1,500 GPU events so that a few hundred mutants take seconds.
const FIXTURES = [
  'test/fixtures/traces',
  'test/fixtures/traces/public/tracelens',
  ...['generate', 'sglang', 'vllm-0.26-piecewise-tp2'].map((d) => `test/fixtures/traces/servers/${d}`),
].flatMap((d) =>
  readdirSync(d)
    .filter((f) => f.endsWith('.json.gz'))
    .map((f) => join(d, f)),
);
const SEED = 25;
const PER_FIXTURE = 20;
/** A mutant analysed slower than this counts as a hang: every one of these small files takes well under a second. */
const HANG_MS = 10_000;

describe('trace analyzer on hostile traces (seeded fuzz over the real fixtures)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ib-fuzz-'));
  const tally = new FuzzTally('traces');
  after(() => {
    rmSync(dir, { recursive: true, force: true });
    tally.print();
  });

  let file = 0;
  async function analyse(bytes: Buffer): Promise<TraceBreakdown> {
    const path = join(dir, `m${file++}.json`);
    writeFileSync(path, bytes);
    try {
      return await analyzeTraceFiles([path]);
    } finally {
      rmSync(path, { force: true });
    }
  }

  for (const fixture of FIXTURES) {
    it(`${fixture.split('/').pop()}: ${PER_FIXTURE} mutants analyse without a crash, a hang or a wrong figure, or are refused with a reason`, async () => {
      const base: TraceBase = loadTraceBase(fixture, 1500);
      const unmutated = await analyse(baseBytes(base));
      const failures: string[] = [];
      for (let n = 0; n < PER_FIXTURE; n++) {
        const m = mutant(base, SEED, n);
        const at = `${fixture.split('/').pop()} mutant ${n} (${m.what})`;
        const t0 = Date.now();
        let outcome: Parameters<FuzzTally['record']>[0] = 'ok';
        let why = '';
        try {
          const b = await analyse(m.bytes);
          const problems = impossibleFigures(b, base);
          if (problems.length) [outcome, why] = ['silent-wrong', problems.slice(0, 3).join('; ')];
          else if (m.mustRefuse) [outcome, why] = ['silent-wrong', 'analysed a file whose data stop in NULs instead of refusing it'];
          else if (m.mustWarn && !b.ranks.some((r) => r.warnings.some((w) => m.mustWarn!.test(w))))
            [outcome, why] = ['silent-wrong', `GPU work left out without a warning matching ${m.mustWarn}`];
          else if (m.sameAs) {
            const expected = m.sameAs.equals(baseBytes(base)) ? unmutated : await analyse(m.sameAs);
            const difference = figureDifference(b, expected);
            if (difference) [outcome, why] = ['silent-wrong', `figures differ from those of the same events unchanged: ${difference}`];
          }
        } catch (err) {
          // A refusal that says why is a right answer for a file that is not a trace; anything else is a crash.
          if (!(err instanceof TraceFormatError) || /file is empty/.test(err.message)) [outcome, why] = ['crash', String((err as Error).stack)];
        }
        const ms = Date.now() - t0;
        if (outcome === 'ok' && ms > HANG_MS) [outcome, why] = ['hang', `${ms} ms`];
        tally.record(outcome, `${at}: ${why}`);
        if (outcome !== 'ok') failures.push(`${outcome}: ${at}: ${why}`);
      }
      assert.deepEqual(failures, []);
    });
  }
});
