import * as assert from 'node:assert/strict';
import type { RunSummary } from '../../../src/shared/results';
import { formatBytes } from '../../../src/shared/table';
import type { LineChartSpec } from '../../../webview-ui/src/specs';
import { microCharts } from '../../../webview-ui/src/views/micro';

// The sizes an all-reduce sweep measures on Kimi-K2.5 (7168 bf16 values × batch) beside the powers
// of two, as test/fixtures/micro/h200-collective-ws1.events.jsonl holds them.
const decode = Array.from({ length: 6 }, (_, k) => 14336 * 2 ** k);
const powers = Array.from({ length: 6 }, (_, k) => 16384 * 2 ** k);

function run(sizes: number[]): RunSummary {
  return {
    id: 'm',
    phase: 'micro',
    target: 'h200',
    startedAt: '2026-12-01T10:00:00Z',
    status: 'completed',
    micro: { points: [], allreduce: sizes.map((size_bytes, i) => ({ size_bytes, time_us: 20 + i, busbw_gbps: 5 + i })) },
  };
}

describe("the all-reduce chart's size labels", () => {
  it('never puts two labels closer than one doubling, so 14 KiB and 16 KiB do not print over each other', () => {
    for (const id of ['m-allreduce-time', 'm-allreduce-busbw']) {
      const chart = microCharts(run([...decode, ...powers])).find((c) => c.id === id) as LineChartSpec;
      const labels = chart.xTicks!;
      for (let i = 1; i < labels.length; i++)
        assert.ok(labels[i] / labels[i - 1] >= 1.9, `${formatBytes(labels[i - 1])} beside ${formatBytes(labels[i])} on ${id}`);
      assert.deepEqual(labels.map(formatBytes), ['14 KiB', '28 KiB', '56 KiB', '112 KiB', '224 KiB', '448 KiB']);
    }
  });

  it('keeps at most ten labels on a wide sweep, and a label at each size of a small one', () => {
    const wide = Array.from({ length: 28 }, (_, k) => 1024 * 2 ** k);
    const chart = microCharts(run(wide)).find((c) => c.id === 'm-allreduce-time') as LineChartSpec;
    assert.ok(chart.xTicks!.length <= 10, `${chart.xTicks!.length} labels`);
    const small = microCharts(run([1024, 65536, 1048576])).find((c) => c.id === 'm-allreduce-time') as LineChartSpec;
    assert.deepEqual(small.xTicks, [1024, 65536, 1048576]);
  });
});
