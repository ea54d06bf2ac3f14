// The Pareto front in the results view: output tokens/s per user against output tokens/s per GPU (and
// per watt where the GPUs' power was sampled), every load of the shown run, or of every configuration of
// its comparison; the front joined by a line, the dominated points drawn apart (hollow diamonds).
import { gpusOfCommand, paretoFront, paretoPoint, type ParetoPoint } from '../../../src/shared/pareto';
import type { RunSummary } from '../../../src/shared/results';
import type { ChartSpec, Series } from '../specs';
import { comparisonRuns } from './configurations';

function pointsOf(run: RunSummary): ParetoPoint[] {
  const name = run.configuration?.name ?? 'this run';
  const gpus = gpusOfCommand(run.configuration?.argv);
  return (run.macro?.levels ?? []).map((l) => paretoPoint(name, l, gpus)).filter((p): p is ParetoPoint => p !== undefined);
}

/** The front's charts for the shown macro run (across its comparison where it is part of one); none under two points. */
export function paretoCharts(run: RunSummary, runs: readonly RunSummary[]): ChartSpec[] {
  if (run.phase !== 'macro') return [];
  const compared = comparisonRuns(run, runs);
  const across = compared.length > 1;
  const points = (across ? compared : [run]).flatMap(pointsOf);
  const specs: ChartSpec[] = [];
  for (const axis of ['perGpu', 'perWatt'] as const) {
    const front = paretoFront(points, axis);
    if (front.points.length < 2) continue;
    const yLabel = axis === 'perGpu' ? 'output tokens/s per GPU' : 'output tokens/s per watt';
    const names = [...new Set(front.points.map((p) => p.series))];
    const series: Series[] = [
      { label: 'Pareto front', colorIndex: names.length, points: front.front.map((p) => ({ x: p.perUser, y: p[axis] as number })) },
      ...names.flatMap((name, i) => {
        const mine = front.points.filter((p) => p.series === name);
        const on = mine.filter((p) => !p.dominated).map((p) => ({ x: p.perUser, y: p[axis] as number }));
        const off = mine.filter((p) => p.dominated).map((p) => ({ x: p.perUser, y: p[axis] as number }));
        return [
          ...(on.length ? [{ label: `${name}: on the front`, colorIndex: i, scatter: true, points: on }] : []),
          ...(off.length ? [{ label: `${name}: dominated`, colorIndex: i, scatter: true, dashed: true, points: off }] : []),
        ];
      }),
    ];
    specs.push({
      kind: 'line',
      id: `pareto-${across ? run.configuration!.comparison : run.id}-${axis}`,
      title: `Pareto front${across ? ' across the configurations' : ' over the levels'}: output tokens/s per user against ${axis === 'perGpu' ? 'per GPU' : 'per watt'}`,
      xLabel: 'output tokens/s per user',
      yLabel,
      series,
      table: {
        id: `pareto-${axis}`,
        title: `Pareto front (${yLabel})`,
        columns: [
          { key: 'series', label: 'configuration', align: 'left' },
          { key: 'load', label: 'load', align: 'left' },
          { key: 'per_user', label: 'tok/s per user', digits: 1 },
          { key: 'y', label: axis === 'perGpu' ? 'tok/s per GPU' : 'tok/s per W', digits: axis === 'perGpu' ? 1 : 3 },
          { key: 'gpus', label: 'GPUs', digits: 0 },
          { key: 'front', label: 'front', align: 'left' },
        ],
        rows: front.points.map((p) => ({
          series: p.series,
          load: p.load,
          per_user: p.perUser,
          y: p[axis] as number,
          gpus: p.gpus,
          front: p.dominated ? 'dominated' : 'on the front',
        })),
        note: 'Per user: output throughput over the requests in flight (vllm bench sweep plot_pareto’s axes). A dominated point is beaten on both axes by another.',
      },
    });
  }
  return specs;
}
