import * as assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyzeTraceFiles } from '../../src/core/trace/analyze';
import { TraceFormatError } from '../../src/core/trace/jsonReader';
import { impossibleFigures, loadTraceBase, mutant, TraceBase } from './traceMutants';

// Every real trace, cut to the stretch of its first 1,500 GPU events so that a few hundred mutants take seconds.
const FIXTURES = ['test/fixtures/traces', ...['generate', 'sglang', 'vllm-0.26-piecewise-tp2'].map((d) => `test/fixtures/traces/servers/${d}`)].flatMap((d) =>
  readdirSync(d)
    .filter((f) => f.endsWith('.json.gz'))
    .map((f) => join(d, f)),
);
const SEED = 25;
const PER_FIXTURE = 30;

describe('trace analyzer on hostile traces (seeded fuzz over the real fixtures)', () => {
  const dir = mkdtempSync(join(tmpdir(), 'ib-fuzz-'));
  after(() => rmSync(dir, { recursive: true, force: true }));

  for (const fixture of FIXTURES) {
    it(`${fixture.split('/').pop()}: ${PER_FIXTURE} mutants analyse without a crash or an impossible figure, or are refused with a reason`, async () => {
      const base: TraceBase = loadTraceBase(fixture, 1500);
      const failures: string[] = [];
      for (let n = 0; n < PER_FIXTURE; n++) {
        const m = mutant(base, SEED, n);
        const path = join(dir, `m${n}.json`);
        writeFileSync(path, m.bytes);
        try {
          const problems = impossibleFigures(await analyzeTraceFiles([path]), base);
          if (problems.length) failures.push(`mutant ${n} (${m.what}): ${problems.slice(0, 3).join('; ')}`);
        } catch (err) {
          // A refusal that says why is a right answer for a file that is not a trace; anything else is a crash.
          if (!(err instanceof TraceFormatError) || /file is empty/.test(err.message)) failures.push(`mutant ${n} (${m.what}) threw ${(err as Error).stack}`);
        }
      }
      assert.deepEqual(failures, []);
    });
  }
});
