import * as assert from 'node:assert/strict';
import { hasResults, listedRuns, RunSummary } from '../../../src/shared/results';

// What the sidebar, the results view's run list and Compare offer: runs that kept results, and a
// target's newest run even when it failed before its first one (so its reason stays in sight).
const run = (id: string, target: string, startedAt: string, status: RunSummary['status'], data: Partial<RunSummary> = {}): RunSummary => ({
  id,
  phase: 'macro',
  target,
  startedAt,
  status,
  ...data,
});

describe('the runs a list offers', () => {
  const levels = { macro: { levels: [{ concurrency: 1 } as never] } };
  const runs = [
    run('b-failed-new', 'b', '2026-12-02T10:05:00Z', 'failed'),
    run('a-failed-newest', 'a', '2026-12-02T10:04:00Z', 'failed'),
    run('a-cancelled-kept', 'a', '2026-12-02T10:03:00Z', 'cancelled', levels),
    run('a-failed-old', 'a', '2026-12-02T10:02:00Z', 'failed'),
    run('a-interrupted-empty', 'a', '2026-12-02T10:01:00Z', 'interrupted', { macro: { levels: [] } }),
    run('a-done', 'a', '2026-12-02T10:00:00Z', 'completed', levels),
  ];

  it("leaves out failures that kept nothing, but for each target's newest run", () => {
    assert.deepEqual(
      listedRuns(runs).map((r) => r.id),
      ['b-failed-new', 'a-failed-newest', 'a-cancelled-kept', 'a-done'],
    );
  });

  it('counts levels, points, a breakdown and what a probe found as results, and a run still going', () => {
    assert.equal(hasResults(run('x', 'a', '', 'failed')), false);
    assert.equal(hasResults(run('x', 'a', '', 'running')), true);
    assert.equal(hasResults(run('x', 'a', '', 'failed', { micro: { points: [], allreduce: [{} as never] } })), true);
    assert.equal(hasResults(run('x', 'a', '', 'interrupted', { profile: { headline: 'all-reduce 51.5%' } })), true);
    assert.equal(hasResults(run('x', 'a', '', 'cancelled', { phase: 'probe', probe: { tables: [] } })), false);
    assert.equal(hasResults(run('x', 'a', '', 'completed', { phase: 'probe' })), true);
  });
});
