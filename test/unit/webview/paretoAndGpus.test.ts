import * as assert from 'node:assert/strict';
import type { MacroLevelSummary, MacroRequestPoint, RunSummary } from '../../../src/shared/results';
import { paretoCharts } from '../../../webview-ui/src/views/pareto';
import { timelineData } from '../../../webview-ui/src/views/timeline';
import type { LineChartSpec } from '../../../webview-ui/src/specs';

function level(c: number, outputThroughput: number, extra: Partial<MacroLevelSummary> = {}): MacroLevelSummary {
  return {
    level: 0,
    max_concurrency: c,
    request_rate: null,
    completed: 4,
    failed: 0,
    duration: 2,
    total_input_tokens: 1,
    total_output_tokens: 1,
    request_throughput: 1,
    output_throughput: outputThroughput,
    total_token_throughput: 1,
    ...extra,
  };
}

function run(id: string, name: string, index: number, levels: MacroLevelSummary[]): RunSummary {
  return {
    id,
    phase: 'macro',
    target: 'gpu1',
    startedAt: id,
    status: 'completed',
    macro: { levels },
    configuration: { id: `cfg${index}`, name, comparison: 'cmp-7', index, argv: ['vllm', 'serve', 'm', '--tensor-parallel-size', '8'] },
  };
}

describe('the Pareto front in the results view', () => {
  it('draws every configuration’s loads per user against per GPU, the front joined and the dominated points apart', () => {
    const a = run('r1', 'tp8', 0, [level(1, 80), level(8, 400)]);
    const b = run('r2', 'ep8', 1, [level(1, 90), level(8, 300)]);
    const [chart] = paretoCharts(a, [a, b]) as LineChartSpec[];
    assert.match(chart.title, /across the configurations/);
    const byLabel = Object.fromEntries(chart.series.map((s) => [s.label, s.points]));
    // Per user: 80/1, 400/8, 90/1, 300/8; per GPU (8 from -tp): 10, 50, 11.25, 37.5.
    assert.deepEqual(byLabel['Pareto front'], [
      { x: 50, y: 50 },
      { x: 90, y: 11.25 },
    ]);
    assert.deepEqual(byLabel['tp8: dominated'], [{ x: 80, y: 10 }]);
    assert.deepEqual(byLabel['ep8: dominated'], [{ x: 37.5, y: 37.5 }]);
    assert.ok(
      chart.series.filter((s) => s.label.endsWith('dominated')).every((s) => s.scatter && s.dashed),
      'dominated points drawn apart',
    );
    assert.equal(chart.table.rows.filter((r) => r.front === 'dominated').length, 2);
  });

  it('adds a per-watt front where the GPUs’ power was sampled, and draws nothing for a single level', () => {
    const t = (w: number) => ({ gpu_telemetry: { gpus: 2, samples: 10, output_tokens_per_s_per_watt: w } });
    const r = run('r1', 'tp8', 0, [level(1, 80, t(0.1)), level(8, 400, t(0.5))]);
    delete r.configuration!.comparison;
    const charts = paretoCharts(r, [r]);
    assert.deepEqual(
      charts.map((c) => c.id),
      ['pareto-r1-perGpu', 'pareto-r1-perWatt'],
    );
    assert.deepEqual(paretoCharts(run('r3', 'x', 0, [level(1, 80)]), []), []);
  });
});

describe('the GPUs on the run’s timeline', () => {
  it('puts each GPU’s power and SM clock samples on the requests’ time axis', () => {
    const points: MacroRequestPoint[] = [{ level: 0, start_s: 0.5, ttft_ms: 100, e2el_ms: 1000, ok: true, output_tokens: 10 }];
    const series = [
      [0.4, 0, 300, 1980, 90, 1000, 60, 0],
      [0.4, 1, 310, 1970, 91, 1000, 61, 4],
      [0.9, 0, 500, 1800, 99, 1000, 65, 4],
    ];
    const r: RunSummary = {
      id: 'r',
      phase: 'macro',
      target: 't',
      startedAt: 'x',
      status: 'completed',
      macro: { levels: [level(1, 10, { gpu_telemetry: { series } })], requests: points },
    };
    const d = timelineData(r)!;
    assert.deepEqual(
      d.gpus!.map((g) => [g.t, g.gpu, g.powerW, g.smClockMhz]),
      [
        [0.4, 0, 300, 1980],
        [0.4, 1, 310, 1970],
        [0.9, 0, 500, 1800],
      ],
    );
    const none: RunSummary = { ...r, macro: { levels: [level(1, 10)], requests: points } };
    assert.equal(timelineData(none)!.gpus, undefined);
  });
});
