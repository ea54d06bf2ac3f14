import * as assert from 'node:assert/strict';
import { serverStateTable, tooShortToSample } from '../../../src/core/macro/serverState';
import { formatCell } from '../../../src/shared/table';
import { MacroLevelSummary } from '../../../src/shared/results';

// A level as the agent summarises it, cut to what the server-state table reads; its /metrics reads one second apart.
function level(concurrency: number, duration: number, samples: { t: number; running: number; kv: number }[]): MacroLevelSummary {
  const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
  const running = samples.map((s) => s.running);
  const kv = samples.map((s) => s.kv);
  return {
    max_concurrency: concurrency,
    request_rate: null,
    duration,
    completed: 8,
    failed: 0,
    output_throughput: 100,
    server_state: {
      interval_s: 1,
      failed_reads: 0,
      samples: samples.map((s) => ({ t: s.t, running: s.running, waiting: 0, kv_cache_usage: s.kv })),
      summary: {
        samples: samples.length,
        running: { mean: mean(running), max: Math.max(...running) },
        waiting: { mean: 0, max: 0 },
        kv_cache_usage: { mean: mean(kv), max: Math.max(...kv) },
      },
    },
  } as unknown as MacroLevelSummary;
}

describe("the server's state of a level too short to sample", () => {
  // Seen on a 1.25 s level: one read as it started (nothing running yet), one as it ended (all done).
  const short = level(4, 1.25, [
    { t: 0.02, running: 0, kv: 0 },
    { t: 1.03, running: 0, kv: 0 },
  ]);
  const long = level(
    8,
    6,
    [0, 1, 2, 3, 4, 5].map((t) => ({ t, running: t === 0 ? 0 : 8, kv: t === 0 ? 0 : 0.4 })),
  );

  it('says the level is too short to sample instead of printing running 0 and KV 0 %', () => {
    const table = serverStateTable([short, long])!;
    const cells = (row: Record<string, unknown>) => table.columns.map((c) => formatCell(row[c.key] as never, c));
    const [shortRow, longRow] = table.rows;
    assert.match(String(shortRow.running_mean), /too short to sample \(2 reads in 1\.25 s/);
    assert.deepEqual(cells(shortRow).slice(2), ['—', '—', '—', '—'], 'no zero printed for the short level');
    assert.equal(longRow.running_max, 8);
    assert.equal(longRow.kv_max, 40);
    assert.match(table.note!, /too short to sample its batch, queue and cache \(its counters' totals still count\): run it longer/);
  });

  it("keeps a short level's prefix-cache hit rate and preemptions, which come from its counters' change over the level", () => {
    const counted = structuredClone(short);
    Object.assign((counted.server_state as { summary: object }).summary, { prefix_cache_hit_rate: 0.5333, preemptions: 2 });
    const table = serverStateTable([counted])!;
    assert.equal(table.rows[0].hit_rate, 53.33);
    assert.equal(table.rows[0].preemptions, 2);
    assert.match(String(table.rows[0].running_mean), /too short to sample/);
  });

  it('counts a level with enough reads as sampled', () => {
    assert.equal(tooShortToSample(long), undefined);
    assert.ok(tooShortToSample(short));
  });
});
