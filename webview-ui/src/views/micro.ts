// Micro run charts: GEMM time and achieved bandwidth vs M per weight shape (with the GPU's peak as a
// line), all-reduce time and bus bandwidth vs message size.
import type { AllReducePoint, GemmPoint, GpuPeak, RunSummary } from '../../../src/shared/results';
import { ALLREDUCE_BANDWIDTH_COLUMNS, ALLREDUCE_CHART_TABLE_ID, ALLREDUCE_SIZE_COLUMNS } from '../../../src/shared/microTables';
import { formatBytes, type TableCell, type TableColumn } from '../../../src/shared/table';
import type { ChartSpec, Series } from '../specs';
import { drawnRuns, finite, seriesLabel, wantsLog } from './common';

function num(p: Record<string, unknown>, ...keys: string[]): number | undefined {
  for (const k of keys) {
    const v = finite(p[k]);
    if (v !== undefined) return v;
  }
  return undefined;
}

/** The micro results of a run, from its typed lists or, failing those, from the raw points by kind. */
export function microData(run: RunSummary): { gemm: GemmPoint[]; allreduce: AllReducePoint[]; alltoall: AllReducePoint[]; peak: GpuPeak } {
  const micro = run.micro;
  if (!micro) return { gemm: [], allreduce: [], alltoall: [], peak: {} };
  const raw = micro.points ?? [];
  const gemm =
    micro.gemm ??
    raw
      .filter((p) => p.kind === 'gemm')
      .flatMap((p): GemmPoint[] => {
        const m = num(p, 'm', 'M');
        const time = num(p, 'time_us', 'us', 'median_us');
        if (m === undefined || time === undefined) return [];
        return [
          {
            shape: String(p.shape ?? p.name ?? `${p.n}x${p.k}`),
            m,
            n: num(p, 'n', 'N') ?? 0,
            k: num(p, 'k', 'K') ?? 0,
            time_us: time,
            tbps: num(p, 'tbps', 'achieved_tbps'),
            tflops: num(p, 'tflops'),
            backend: p.backend as string | undefined,
          },
        ];
      });
  const allreduce =
    micro.allreduce ??
    raw
      .filter((p) => p.kind === 'allreduce')
      .flatMap((p): AllReducePoint[] => {
        const size = num(p, 'size_bytes', 'bytes', 'size');
        const time = num(p, 'time_us', 'us', 'median_us');
        const busbw = num(p, 'busbw_gbps', 'busbw');
        if (size === undefined || time === undefined || busbw === undefined) return [];
        return [{ size_bytes: size, time_us: time, busbw_gbps: busbw, algbw_gbps: num(p, 'algbw_gbps', 'algbw'), world_size: num(p, 'world_size') }];
      });
  const peakPoint = raw.find((p) => p.kind === 'peak');
  const peak =
    micro.peak ??
    (peakPoint ? { gpu: peakPoint.gpu as string | undefined, memory_tbps: num(peakPoint, 'memory_tbps'), busbw_gbps: num(peakPoint, 'busbw_gbps') } : {});
  return { gemm, allreduce, alltoall: micro.alltoall ?? [], peak };
}

function referenceLine(label: string, y: number, xs: number[]): Series | undefined {
  if (!xs.length) return undefined;
  return {
    label,
    points: [
      { x: Math.min(...xs), y },
      { x: Math.max(...xs), y },
    ],
    reference: true,
  };
}

/**
 * Where a message-size axis (log) puts its labels: at measured sizes, no two closer than one doubling
 * (a sweep of decode sizes and powers of two measures 14 KiB beside 16 KiB, whose labels would print
 * over each other), and at most MAX_SIZE_TICKS of them (then every fourfold step).
 */
function ticks(values: number[]): number[] | undefined {
  const distinct = [...new Set(values)].filter((v) => v > 0).sort((a, b) => a - b);
  if (distinct.length < 2) return distinct.length ? distinct : undefined;
  for (const apart of [1.9, 3.9, 15.9]) {
    const out = [distinct[0]];
    for (const v of distinct) if (v / out.at(-1)! >= apart) out.push(v);
    if (out.length <= MAX_SIZE_TICKS) return out;
  }
  return undefined;
}

const MAX_SIZE_TICKS = 10;

/** The columns of a collective's timings table (collectiveRow's keys); `processes` names its world size. */
function collectiveColumns(runColumn: TableColumn[], processes: string): TableColumn[] {
  return [
    ...runColumn,
    ...ALLREDUCE_SIZE_COLUMNS,
    { key: 'time_us', label: 'time (µs)', digits: 2 },
    ...ALLREDUCE_BANDWIDTH_COLUMNS,
    { key: 'world_size', label: processes, digits: 0 },
  ];
}

/** One row of a collective's timings table. */
function collectiveRow(run: string, a: AllReducePoint): Record<string, TableCell> {
  return { run, size: formatBytes(a.size_bytes), bytes: a.size_bytes, time_us: a.time_us, algbw: a.algbw_gbps, busbw: a.busbw_gbps, world_size: a.world_size };
}

/** A peak figure for a legend: three significant digits. */
function figure(v: number): string {
  return Number(v.toPrecision(3)).toLocaleString('en-US', { maximumFractionDigits: 6 });
}

export function microCharts(run: RunSummary, compare?: RunSummary): ChartSpec[] {
  const runs = drawnRuns(run, compare).map((r) => ({ ...r, data: microData(r.run) }));
  const comparing = runs.length > 1;
  const runColumn: TableColumn[] = comparing ? [{ key: 'run', label: 'run', align: 'left' }] : [];
  const charts: ChartSpec[] = [];
  const shapes = [...new Set(runs.flatMap((r) => r.data.gemm.map((g) => g.shape)))];

  if (shapes.length) {
    const ms = runs.flatMap((r) => r.data.gemm.map((g) => g.m));
    const time: Series[] = [];
    const bw: Series[] = [];
    const rows: Record<string, TableCell>[] = [];
    for (const r of runs) {
      shapes.forEach((shape, i) => {
        const points = r.data.gemm.filter((g) => g.shape === shape).sort((a, b) => a.m - b.m);
        if (!points.length) return;
        time.push({
          label: seriesLabel(shape, r.tag, comparing),
          points: points.map((g) => ({ x: g.m, y: g.time_us })),
          dashed: r.dashed,
          colorIndex: r.colours + i,
        });
        bw.push({
          label: seriesLabel(shape, r.tag, comparing),
          points: points.flatMap((g) => (g.tbps === undefined ? [] : [{ x: g.m, y: g.tbps }])),
          dashed: r.dashed,
          colorIndex: r.colours + i,
        });
        for (const g of points)
          rows.push({ run: r.tag, shape, m: g.m, n: g.n, k: g.k, time_us: g.time_us, tbps: g.tbps, tflops: g.tflops, backend: g.backend });
      });
    }
    const table = {
      id: 'micro-gemm',
      title: 'GEMM timings',
      columns: [
        ...runColumn,
        { key: 'shape', label: 'shape', align: 'left' as const },
        { key: 'm', label: 'M', digits: 0 },
        { key: 'n', label: 'N', digits: 0 },
        { key: 'k', label: 'K', digits: 0 },
        { key: 'time_us', label: 'time (µs)', digits: 2 },
        { key: 'tbps', label: 'achieved TB/s', digits: 2 },
        { key: 'tflops', label: 'TFLOP/s', digits: 1 },
        { key: 'backend', label: 'backend', align: 'left' as const },
      ],
      rows,
    };
    charts.push({
      kind: 'line',
      id: `${run.id}-gemm-time`,
      title: 'GEMM time vs M (tokens in the step)',
      xLabel: 'M (tokens in the step)',
      yLabel: 'time (µs)',
      xLog: wantsLog(ms),
      xTicks: ticks(ms),
      series: time,
      table,
    });
    const peak = runs[0].data.peak.memory_tbps;
    const peakLine = peak === undefined ? undefined : referenceLine(`${runs[0].data.peak.gpu ?? 'GPU'} peak ${figure(peak)} TB/s`, peak, ms);
    if (bw.some((s) => s.points.length)) {
      charts.push({
        kind: 'line',
        id: `${run.id}-gemm-bw`,
        title: 'GEMM achieved memory bandwidth vs M',
        xLabel: 'M (tokens in the step)',
        yLabel: 'achieved TB/s',
        xLog: wantsLog(ms),
        xTicks: ticks(ms),
        series: peakLine ? [...bw, peakLine] : bw,
        table: { ...table, id: 'micro-gemm-bw' },
      });
    }
  }

  if (runs.some((r) => r.data.allreduce.length)) {
    const sizes = runs.flatMap((r) => r.data.allreduce.map((a) => a.size_bytes));
    const time: Series[] = [];
    const bus: Series[] = [];
    const rows: Record<string, TableCell>[] = [];
    for (const r of runs) {
      const points = [...r.data.allreduce].sort((a, b) => a.size_bytes - b.size_bytes);
      time.push({
        label: seriesLabel('time', r.tag, comparing),
        points: points.map((a) => ({ x: a.size_bytes, y: a.time_us })),
        dashed: r.dashed,
        colorIndex: r.colours,
      });
      bus.push({
        label: seriesLabel('busbw', r.tag, comparing),
        points: points.map((a) => ({ x: a.size_bytes, y: a.busbw_gbps })),
        dashed: r.dashed,
        colorIndex: r.colours + 2,
      });
      for (const a of points) rows.push(collectiveRow(r.tag, a));
    }
    const table = {
      id: ALLREDUCE_CHART_TABLE_ID,
      title: 'All-reduce timings',
      columns: collectiveColumns(runColumn, 'GPUs'),
      rows,
    };
    charts.push({
      kind: 'line',
      id: `${run.id}-allreduce-time`,
      title: 'All-reduce time vs message size',
      xLabel: 'message size',
      yLabel: 'time (µs)',
      xLog: true,
      xFormat: 'bytes',
      xTicks: ticks(sizes),
      yLog: wantsLog(runs.flatMap((r) => r.data.allreduce.map((a) => a.time_us))),
      series: time,
      table,
    });
    const peak = runs[0].data.peak.busbw_gbps;
    const peakLine = peak === undefined ? undefined : referenceLine(`${runs[0].data.peak.gpu ?? 'link'} peak ${figure(peak)} GB/s`, peak, sizes);
    charts.push({
      kind: 'line',
      id: `${run.id}-allreduce-busbw`,
      title: 'All-reduce bus bandwidth vs message size',
      xLabel: 'message size',
      yLabel: 'busbw (GB/s)',
      xLog: true,
      xFormat: 'bytes',
      xTicks: ticks(sizes),
      series: peakLine ? [...bus, peakLine] : bus,
      table: { ...table, id: 'micro-allreduce-busbw' },
    });
  }
  // A cluster run: the all-to-all that expert parallelism would run at each decode size, across the hosts.
  if (runs.some((r) => r.data.alltoall.length)) {
    const sizes = runs.flatMap((r) => r.data.alltoall.map((a) => a.size_bytes));
    const rows: Record<string, TableCell>[] = [];
    const time: Series[] = runs.map((r) => {
      const points = [...r.data.alltoall].sort((a, b) => a.size_bytes - b.size_bytes);
      for (const a of points) rows.push(collectiveRow(r.tag, a));
      return {
        label: seriesLabel('time', r.tag, comparing),
        points: points.map((a) => ({ x: a.size_bytes, y: a.time_us })),
        dashed: r.dashed,
        colorIndex: r.colours + 1,
      };
    });
    charts.push({
      kind: 'line',
      id: `${run.id}-alltoall-time`,
      title: 'All-to-all time vs message size (expert-parallel decode sizes)',
      xLabel: 'bytes per rank',
      yLabel: 'time (µs)',
      xLog: true,
      xFormat: 'bytes',
      xTicks: ticks(sizes),
      yLog: wantsLog(runs.flatMap((r) => r.data.alltoall.map((a) => a.time_us))),
      series: time,
      table: {
        id: 'micro-alltoall-timings',
        title: 'All-to-all timings',
        columns: collectiveColumns(runColumn, 'ranks'),
        rows,
      },
    });
  }
  return charts;
}
