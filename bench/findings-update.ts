// How long one findings update takes to compute, as a sweep streams rows into the document.
//
//   npx tsx bench/findings-update.ts [--regions 20,200] [--updates 200]
//
// For each document size: a skeleton with the user's notes padded out and `regions` finished runs
// already written (each a macro table of 8 rows), then `updates` row-by-row updates of one more
// run, then 50 first updates of new runs. Prints the document size, the median and p99 time of
// applyFindingsUpdate (parse and hash the markers, render, diff; a new region also parses the
// headings with markdown-it) and the mean size of the edit. This is the work the extension host
// does per section per batch (every 150 ms at most).
import { FindingsUpdate } from '../src/core/campaign/phaseContext';
import { renderSkeleton } from '../src/core/findings/skeleton';
import { applyFindingsUpdate } from '../src/core/findings/update';

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

function macro(sectionId: string, rows: number): FindingsUpdate {
  const levels = Array.from({ length: rows }, (_, i) => 2 ** i);
  return {
    sectionId,
    heading: `Macro run ${sectionId}`,
    lines: ['Single-stream decode 57.1 tok/s at c=1.', 'Target h200 · vLLM 0.16.0 · `--tensor-parallel-size 8`'],
    tables: [
      {
        id: 'levels',
        title: 'Serving by concurrency',
        columns: ['c', 'ttft_p50', 'ttft_p99', 'tpot_p50', 'tpot_p99', 'itl_p99', 'tput'].map((key) => ({ key, label: key, digits: key === 'c' ? 0 : 2 })),
        rows: levels.map((c) => ({ c, ttft_p50: 40 + c, ttft_p99: 90 + c, tpot_p50: 17.5 + c / 20, tpot_p99: 19 + c / 10, itl_p99: 25 + c / 5, tput: 57 * c })),
      },
    ],
  };
}

const percentile = (xs: number[], p: number) => [...xs].sort((a, b) => a - b)[Math.min(xs.length - 1, Math.floor((xs.length * p) / 100))];

const updates = Number(arg('updates', '200'));
for (const regions of arg('regions', '20,200').split(',').map(Number)) {
  let text = renderSkeleton('k25b6000bench1.md').replace(
    '## Notes\n',
    `## Notes\n\n${'The user writes a paragraph of notes here, with 注意力 and 🚀 now and then.\n\n'.repeat(regions * 5)}`,
  );
  for (let r = 0; r < regions; r++) text = applyFindingsUpdate(text, macro(`macro-old-${r}`, 8)).text;
  const startChars = text.length;
  const times: number[] = [];
  let editChars = 0;
  for (let u = 0; u < updates; u++) {
    const started = process.hrtime.bigint();
    const result = applyFindingsUpdate(text, macro('macro-live', 1 + (u % 12)), { now: new Date(Date.UTC(2026, 11, 1, 10, 0, u)) });
    times.push(Number(process.hrtime.bigint() - started) / 1e6);
    editChars += result.edits.reduce((n, e) => n + e.text.length, 0);
    text = result.text;
  }
  // A run's first update places a new region: this is the path that parses the headings.
  const inserts: number[] = [];
  for (let u = 0; u < 50; u++) {
    const started = process.hrtime.bigint();
    applyFindingsUpdate(text, macro(`macro-new-${u}`, 1));
    inserts.push(Number(process.hrtime.bigint() - started) / 1e6);
  }
  console.log(
    `regions ${regions}, document ${(startChars / 1024).toFixed(0)} KiB: row update median ${percentile(times, 50).toFixed(2)} ms, p99 ${percentile(times, 99).toFixed(2)} ms, mean edit ${(editChars / updates / 1024).toFixed(1)} KiB; new region median ${percentile(inserts, 50).toFixed(2)} ms, p99 ${percentile(inserts, 99).toFixed(2)} ms`,
  );
}
