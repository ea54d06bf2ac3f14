// How often does `infbench compare` flag a difference between two runs of the same server and load?
//
//   npx tsx bench/compare-noise.ts [--runs 12] [--concurrency 1,4]
//
// Writes --runs results per concurrency with test/fixtures/vllm-bench/make_fixtures.py's replay of
// the simulator's timing model (the same server and load, a different jitter seed each time), then
// compares every pair with the macro rules and prints how many quantities were flagged: with no real
// change, every flag is a false alarm. The 3-standard-error test alone would flag about 0.3% of the
// quantities whose spread is known.
import { execFileSync } from 'node:child_process';
import { parseArgs } from 'node:util';
import { compareMacro } from '../src/core/compare/macro';
import { levelFromVllm } from '../src/core/compare/vllmBench';

const { values } = parseArgs({ options: { runs: { type: 'string', default: '12' }, concurrency: { type: 'string', default: '1,4' } } });
const runs = Number(values.runs);
const levels = values.concurrency!.split(',').map(Number);
const py = [
  'import json, sys',
  "sys.path.insert(0, 'test/fixtures/vllm-bench')",
  'import make_fixtures as mf',
  `out = [[mf.result_json(c, max(16, 4 * c), 1000 + s, ["ttft", "tpot", "itl", "e2el"], [50.0, 90.0, 99.0], "20261201-000000") for c in ${JSON.stringify(levels)}] for s in range(${runs})]`,
  'print(json.dumps(out))',
].join('\n');
const results = JSON.parse(execFileSync('python3', ['-c', py], { maxBuffer: 1 << 28 }).toString()) as Record<string, unknown>[][];
const asLevels = results.map((r) => r.map(levelFromVllm) as unknown as Record<string, unknown>[]);
let compared = 0;
let flagged = 0;
const byMetric = new Map<string, number>();
for (let i = 0; i < asLevels.length; i++) {
  for (let j = i + 1; j < asLevels.length; j++) {
    const c = compareMacro({ id: `s${i}`, label: '' }, asLevels[i], { id: `s${j}`, label: '' }, asLevels[j]);
    for (const d of c.differences) {
      compared++;
      if (d.flagged) {
        flagged++;
        byMetric.set(d.metric, (byMetric.get(d.metric) ?? 0) + 1);
      }
    }
  }
}
const pairs = (runs * (runs - 1)) / 2;
console.log(`${runs} runs of the same simulated server and load at concurrency ${levels.join(', ')}; ${pairs} pairs compared`);
console.log(`false alarms: ${flagged} of ${compared} quantities (${((100 * flagged) / compared).toFixed(2)}%)`);
for (const [metric, n] of [...byMetric].sort((a, b) => b[1] - a[1])) console.log(`  ${metric}: ${n}`);
