// Time to analyse every trace in a folder, one after the other, N times in one process: the best
// and median run. For A/B comparisons of the analyzer (bundle this script at each commit with
// `npx esbuild bench/trace-analyze-folder.ts --bundle --platform=node --outfile=<dir>/<commit>.js`
// and run the bundles interleaved, pinned to one core).
//
//   npx tsx bench/trace-analyze-folder.ts FOLDER [RUNS=5]
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { analyzeTraceFile } from '../src/core/trace/analyze';

async function main(): Promise<void> {
  const dir = process.argv[2];
  const runs = Number(process.argv[3] ?? 5);
  const files = readdirSync(dir)
    .sort()
    .map((f) => join(dir, f));
  let bytes = 0;
  for (const f of files) bytes += readFileSync(f).length;
  const times: number[] = [];
  for (let run = 0; run < runs; run++) {
    const t = process.hrtime.bigint();
    for (const f of files) await analyzeTraceFile(f, 0);
    times.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  times.sort((a, b) => a - b);
  console.log(
    `${(bytes / 1e6).toFixed(1)} MB in ${files.length} files: best ${times[0].toFixed(0)} ms (${(bytes / 1e3 / times[0]).toFixed(0)} MB/s), median ${times[times.length >> 1].toFixed(0)} ms`,
  );
}

void main();
