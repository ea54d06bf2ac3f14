// The trace analyzer against hostile traces: seeded mutants of every real trace in test/fixtures/traces.
//
//   npx tsx bench/trace-fuzz.ts [--mutants 2000] [--seed 1] [--gpu-events 1500|all]
//
// Each mutant changes one to three events of a fixture (a duration of 1e308 or Infinity, a timestamp
// of 0 or a second before the kernel's launch, a kernel split into a B/E pair or given an unknown ph,
// ESC/BEL/NUL in a name, a changed correlation id or category, an event duplicated or removed) or the
// file itself (cut short, a corrupt or cut gzip stream, a UTF-8 BOM); test/fuzz/traceMutants.ts
// makes them. Every mutant is analysed as `infbench analyze` does, and the result checked for what no
// trace can hold: a number that is not finite, a share outside 0..100, a step or GPU span longer than
// the trace, a negative launch-to-start, a control character in a name. Prints, per fixture and in
// all: mutants analysed, refused with a reason (TraceFormatError), crashed (any other error), with an
// impossible figure, and the slowest mutant. --gpu-events keeps the stretch of each fixture that holds
// its first N GPU events (as the unit test does), so that thousands of mutants take minutes.
import { mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { analyzeTraceFiles } from '../src/core/trace/analyze';
import { TraceFormatError } from '../src/core/trace/jsonReader';
import { impossibleFigures, loadTraceBase, mutant } from '../test/fuzz/traceMutants';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

const MUTANTS = Number(arg('mutants', '2000'));
const SEED = Number(arg('seed', '1'));
const GPU_EVENTS = arg('gpu-events', '1500') === 'all' ? Infinity : Number(arg('gpu-events', '1500'));
// Run from the repository root.
const ROOT = join('test', 'fixtures', 'traces');
const FIXTURES = [ROOT, ...['generate', 'sglang', 'vllm-0.26-piecewise-tp2'].map((d) => join(ROOT, 'servers', d))].flatMap((d) =>
  readdirSync(d)
    .filter((f) => f.endsWith('.json.gz'))
    .map((f) => join(d, f)),
);

async function main(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), 'ib-trace-fuzz-'));
  const total = { mutants: 0, analysed: 0, refused: 0, crashed: 0, impossible: 0, slowestMs: 0 };
  const examples: string[] = [];
  const refusals = new Map<string, number>();
  const started = Date.now();
  try {
    console.log(
      `seed ${SEED}, ${MUTANTS} mutants over ${FIXTURES.length} fixtures, ${Number.isFinite(GPU_EVENTS) ? `first ${GPU_EVENTS} GPU events of each` : 'whole traces'}`,
    );
    console.log('fixture | mutants | analysed | refused | crashed | impossible | slowest ms');
    for (let f = 0; f < FIXTURES.length; f++) {
      const base = loadTraceBase(FIXTURES[f], GPU_EVENTS);
      const share = Math.floor(MUTANTS / FIXTURES.length) + (f < MUTANTS % FIXTURES.length ? 1 : 0);
      const row = { mutants: 0, analysed: 0, refused: 0, crashed: 0, impossible: 0, slowestMs: 0 };
      for (let n = 0; n < share; n++) {
        const m = mutant(base, SEED, n);
        const path = join(dir, 'mutant.json');
        writeFileSync(path, m.bytes);
        row.mutants++;
        const t0 = process.hrtime.bigint();
        try {
          const problems = impossibleFigures(await analyzeTraceFiles([path]), base);
          row.analysed++;
          if (problems.length) {
            row.impossible++;
            if (examples.length < 12) examples.push(`${FIXTURES[f].split('/').pop()} #${n} (${m.what}): ${problems[0]}`);
          }
        } catch (err) {
          if (err instanceof TraceFormatError) {
            row.refused++;
            const kind = err.message.replace(/\d+/g, 'N').slice(0, 60);
            refusals.set(kind, (refusals.get(kind) ?? 0) + 1);
          } else {
            row.crashed++;
            if (examples.length < 12) examples.push(`${FIXTURES[f].split('/').pop()} #${n} (${m.what}) crashed: ${(err as Error).message}`);
          }
        }
        row.slowestMs = Math.max(row.slowestMs, Number(process.hrtime.bigint() - t0) / 1e6);
      }
      console.log(
        `${FIXTURES[f].split('/').pop()} | ${row.mutants} | ${row.analysed} | ${row.refused} | ${row.crashed} | ${row.impossible} | ${row.slowestMs.toFixed(0)}`,
      );
      for (const k of Object.keys(total) as (keyof typeof total)[]) total[k] = k === 'slowestMs' ? Math.max(total[k], row[k]) : total[k] + row[k];
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
  console.log(
    `all | ${total.mutants} | ${total.analysed} | ${total.refused} | ${total.crashed} | ${total.impossible} | ${total.slowestMs.toFixed(0)}  (${((Date.now() - started) / 1000).toFixed(0)} s)`,
  );
  for (const [kind, n] of [...refusals].sort((a, b) => b[1] - a[1])) console.log(`refused ${n}x: ${kind}...`);
  for (const e of examples) console.log(`  ${e.slice(0, 300)}`);
  process.exitCode = total.crashed + total.impossible ? 1 : 0;
}

void main();
