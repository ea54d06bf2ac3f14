// Macro run charts: throughput vs load, latency percentiles vs load, latency of each request over time.
import type { MacroLevelSummary, RunSummary } from '../../../src/shared/results';
import { GOODPUT_COLUMN, SERVING_FIGURE_COLUMNS } from '../../../src/shared/servingColumns';
import type { ResultTable, TableColumn, TableCell } from '../../../src/shared/table';
import type { ChartSpec, Series } from '../specs';
import { drawnRuns, finite, seriesLabel, wantsLog } from './common';
import { collapseTrials } from '../../../src/shared/trialLevels';

const STAT_ORDER = ['mean', 'median', 'p50', 'p90', 'p95', 'p99', 'p99.9'];

/** A level's load on the x axis: its concurrency, or its request rate. */
export function loadOf(level: MacroLevelSummary): number | undefined {
  return finite(level.max_concurrency) ?? finite(level.request_rate);
}

function loadAxis(runs: RunSummary[]): { label: string; key: string } {
  const levels = runs.flatMap((r) => r.macro?.levels ?? []);
  // No level yet (a run that just started) reads as a concurrency sweep, the default.
  const byRate = levels.length > 0 && levels.every((l) => finite(l.max_concurrency) === undefined && finite(l.request_rate) !== undefined);
  return byRate ? { label: 'request rate (req/s)', key: 'request_rate' } : { label: 'concurrency (max in-flight requests)', key: 'max_concurrency' };
}

/** The percentile statistics present for a metric, in a reading order (mean, median, p90, p99...). */
export function statsFor(levels: MacroLevelSummary[], metric: string): string[] {
  const found = new Set<string>();
  const pattern = new RegExp(`^(mean|median|p\\d+(?:\\.\\d+)?)_${metric}_ms$`);
  for (const l of levels)
    for (const k of Object.keys(l)) {
      const m = pattern.exec(k);
      if (m && finite(l[k]) !== undefined) found.add(m[1]);
    }
  const rank = (s: string) => (STAT_ORDER.includes(s) ? STAT_ORDER.indexOf(s) : 50 + parseFloat(s.slice(1)));
  // p50 is the median under another name: draw it once.
  if (found.has('median')) found.delete('p50');
  return [...found].sort((a, b) => rank(a) - rank(b));
}

function allLevelsSorted(run: RunSummary): MacroLevelSummary[] {
  // A load run several times (--trials) is one point: the trials' means.
  return collapseTrials(run.macro?.levels ?? [])
    .filter((l) => loadOf(l) !== undefined)
    .sort((a, b) => loadOf(a)! - loadOf(b)!);
}

/** The levels a line joins: a level cut short measured less load than it names, so it is only marked. */
function levelsSorted(run: RunSummary): MacroLevelSummary[] {
  return allLevelsSorted(run).filter((l) => !l.cut);
}

/** What a level's row says beside its figures: still running, or cut short and how far it got. */
export function levelState(l: MacroLevelSummary): string {
  if (l.cut) return `cut short: ${l.cut.done}${l.cut.planned !== undefined ? ` of ${l.cut.planned}` : ''} requests (${l.cut.reason})`;
  return l.partial ? 'running' : 'complete';
}

export function macroCharts(run: RunSummary, compare?: RunSummary): ChartSpec[] {
  const runs = drawnRuns(run, compare);
  const comparing = runs.length > 1;
  const axis = loadAxis(runs.map((r) => r.run));
  const loads = runs.flatMap((r) => levelsSorted(r.run).map((l) => loadOf(l)!));
  const xLog = wantsLog(loads);
  const distinctLoads = [...new Set(loads)].sort((a, b) => a - b);
  // A tick at each level (log or not): a sweep's first level alone would otherwise get ticks at 0.96, 0.98...
  const xTicks = distinctLoads.length <= 12 ? distinctLoads : undefined;
  const charts: ChartSpec[] = [];
  const runColumn: TableColumn[] = comparing ? [{ key: 'run', label: 'run', align: 'left' }] : [];

  // Throughput vs load.
  const throughputSeries: Series[] = [];
  const throughputRows: Record<string, TableCell>[] = [];
  runs.forEach(({ run: r, tag, dashed, colours }) => {
    const levels = levelsSorted(r);
    throughputSeries.push(
      {
        label: seriesLabel('output tok/s', tag, comparing),
        points: levels.map((l) => ({ x: loadOf(l)!, y: l.output_throughput })),
        dashed,
        colorIndex: colours,
      },
      {
        label: seriesLabel('total tok/s', tag, comparing),
        points: levels.map((l) => ({ x: loadOf(l)!, y: l.total_token_throughput })),
        dashed,
        colorIndex: colours + 1,
      },
    );
    const cut = allLevelsSorted(r).filter((l) => l.cut);
    if (cut.length)
      throughputSeries.push({
        label: seriesLabel('cut short (not joined)', tag, comparing),
        points: cut.map((l) => ({ x: loadOf(l)!, y: l.output_throughput })),
        marker: 'cut',
      });
    // Levels the load generator itself limited: their throughput is the client's ceiling, not the server's.
    const limited = levels.filter((l) => l.limits?.length);
    if (limited.length)
      throughputSeries.push({
        label: seriesLabel('load generator limited', tag, comparing),
        points: limited.map((l) => ({ x: loadOf(l)!, y: l.output_throughput })),
        marker: 'limited',
      });
    for (const l of allLevelsSorted(r)) {
      throughputRows.push({
        run: tag,
        load: loadOf(l),
        state: levelState(l),
        limited: l.limits?.map((x) => x.figure).join('; ') ?? '',
        completed: l.completed,
        failed: l.failed,
        duration: l.duration,
        request_throughput: l.request_throughput,
        output_throughput: l.output_throughput,
        total_token_throughput: l.total_token_throughput,
      });
    }
  });
  charts.push({
    kind: 'line',
    id: `${run.id}-throughput`,
    title: `Throughput vs ${axis.key === 'request_rate' ? 'request rate' : 'concurrency'}`,
    xLabel: axis.label,
    yLabel: 'tokens per second',
    xLog,
    xTicks,
    series: throughputSeries,
    table: {
      id: 'macro-throughput',
      title: 'Throughput per load level',
      columns: [
        ...runColumn,
        { key: 'load', label: axis.key === 'request_rate' ? 'request rate (req/s)' : 'concurrency', digits: axis.key === 'request_rate' ? 2 : 0 },
        { key: 'state', label: 'level', align: 'left' },
        { key: 'completed', label: 'completed', digits: 0 },
        { key: 'failed', label: 'failed', digits: 0 },
        { key: 'duration', label: 'duration (s)', digits: 2 },
        { key: 'request_throughput', label: 'req/s', digits: 2 },
        { key: 'output_throughput', label: 'output tok/s', digits: 1 },
        { key: 'total_token_throughput', label: 'total tok/s', digits: 1 },
        { key: 'limited', label: 'load generator limit', align: 'left' },
      ],
      rows: throughputRows,
      note: runs.some(({ run: r }) => r.macro?.levels.some((l) => l.limits?.length))
        ? "▲ marks a level the load generator itself limited (it sent late or ran out of CPU): its throughput is the client's ceiling, not the server's."
        : undefined,
    },
  });

  // Percentiles of each latency metric vs load.
  for (const [metric, name] of [
    ['ttft', 'TTFT'],
    ['tpot', 'TPOT'],
    ['itl', 'ITL'],
    ['e2el', 'E2E latency'],
  ] as const) {
    const stats = [...new Set(runs.flatMap((r) => statsFor(r.run.macro?.levels ?? [], metric)))];
    if (!stats.length) continue;
    const series: Series[] = [];
    const rows: Record<string, TableCell>[] = [];
    runs.forEach(({ run: r, tag, dashed, colours }) => {
      const levels = levelsSorted(r);
      stats.forEach((stat, i) => {
        const key = `${stat}_${metric}_ms`;
        series.push({
          label: seriesLabel(stat, tag, comparing),
          points: levels.flatMap((l) => (finite(l[key]) === undefined ? [] : [{ x: loadOf(l)!, y: l[key] as number }])),
          dashed,
          colorIndex: colours + i,
        });
      });
      for (const l of levels) rows.push({ run: tag, load: loadOf(l), ...Object.fromEntries(stats.map((s) => [s, finite(l[`${s}_${metric}_ms`])])) });
    });
    charts.push({
      kind: 'line',
      id: `${run.id}-${metric}`,
      title: `${name} percentiles vs ${axis.key === 'request_rate' ? 'request rate' : 'concurrency'}`,
      xLabel: axis.label,
      yLabel: `${name} (ms)`,
      xLog,
      xTicks,
      series,
      table: {
        id: `macro-${metric}`,
        title: `${name} (ms) per load level`,
        columns: [
          ...runColumn,
          { key: 'load', label: axis.key === 'request_rate' ? 'request rate (req/s)' : 'concurrency', digits: axis.key === 'request_rate' ? 2 : 0 },
          ...stats.map((s) => ({ key: s, label: s, digits: 2 })),
        ],
        rows,
      },
    });
  }

  // Each request's latency over the run's time: shows warm-up, queueing, stalls.
  if (runs.some((r) => r.run.macro?.requests?.length)) {
    const series: Series[] = [];
    const rows: Record<string, TableCell>[] = [];
    runs.forEach(({ run: r, tag, dashed, colours }) => {
      const requests = (r.macro?.requests ?? []).filter((q) => q.ok);
      series.push(
        {
          label: seriesLabel('E2E latency', tag, comparing),
          points: requests.flatMap((q) => (finite(q.e2el_ms) === undefined ? [] : [{ x: q.start_s, y: q.e2el_ms! }])),
          dashed,
          colorIndex: colours,
          scatter: true,
        },
        {
          label: seriesLabel('TTFT', tag, comparing),
          points: requests.flatMap((q) => (finite(q.ttft_ms) === undefined ? [] : [{ x: q.start_s, y: q.ttft_ms! }])),
          dashed,
          colorIndex: colours + 1,
          scatter: true,
        },
      );
      for (const q of r.macro?.requests ?? [])
        rows.push({ run: tag, start_s: q.start_s, level: q.level, ttft_ms: q.ttft_ms, e2el_ms: q.e2el_ms, ok: q.ok ? 'yes' : 'failed' });
    });
    charts.push({
      kind: 'line',
      id: `${run.id}-requests`,
      title: 'Latency of each request over time',
      xLabel: 'request sent at (s from the run start)',
      yLabel: 'latency (ms)',
      series,
      table: {
        id: 'macro-requests',
        title: 'Requests',
        columns: [
          ...runColumn,
          { key: 'start_s', label: 'sent at (s)', digits: 3 },
          { key: 'level', label: 'level', digits: 0 },
          { key: 'ttft_ms', label: 'TTFT (ms)', digits: 1 },
          { key: 'e2el_ms', label: 'E2E (ms)', digits: 1 },
          { key: 'ok', label: 'ok', align: 'left' },
        ],
        rows,
      },
    });
  }
  charts.push(...serverStateCharts(run));
  return charts;
}

interface StateSample {
  t: number;
  running?: number;
  waiting?: number;
  kv_cache_usage?: number;
  prefix_cache_hit_rate?: number;
}

/** The server's /metrics samples of every level, on the run's time axis (seconds from its first level's start). */
function stateSamples(run: RunSummary): StateSample[] {
  return allLevelsSorted(run)
    .flatMap((l) => ((l.server_state as { samples?: StateSample[] } | undefined)?.samples ?? []).filter((s) => finite(s.t) !== undefined))
    .sort((a, b) => a.t - b.t);
}

/**
 * The server's own state over the run, on the same time axis as each request's latency: requests running
 * and waiting (the queue that makes TTFT grow), KV-cache use and prefix-cache hits. Only the run shown.
 */
export function serverStateCharts(run: RunSummary): ChartSpec[] {
  const samples = stateSamples(run);
  if (!samples.length) return [];
  // Each chart: its series (label, the sample's field, colour, scale to the axis's unit), the axis and titles.
  const charts: { id: string; title: string; yLabel: string; series: [string, keyof StateSample, number, number][] }[] = [
    {
      id: 'queue',
      title: "The server's requests over time: running and waiting",
      yLabel: 'requests',
      series: [
        ['running', 'running', 0, 1],
        ['waiting', 'waiting', 1, 1],
      ],
    },
    {
      id: 'cache',
      title: "The server's cache over time",
      yLabel: '%',
      series: [
        ['KV cache used %', 'kv_cache_usage', 2, 100],
        ['prefix-cache hit %', 'prefix_cache_hit_rate', 3, 100],
      ],
    },
  ];
  const value = (s: StateSample, key: keyof StateSample, scale: number) => (finite(s[key]) === undefined ? undefined : (s[key] as number) * scale);
  return charts.flatMap(({ id, title, yLabel, series }): ChartSpec[] => {
    const drawn = series
      .map(([label, key, colorIndex, scale]) => ({
        label,
        colorIndex,
        points: samples.flatMap((s) => (value(s, key, scale) === undefined ? [] : [{ x: s.t, y: value(s, key, scale)! }])),
      }))
      .filter((x) => x.points.length);
    if (!drawn.length) return [];
    return [
      {
        kind: 'line',
        id: `${run.id}-server-${id}`,
        title,
        xLabel: "s from the run start (the requests chart's axis)",
        yLabel,
        series: drawn,
        table: {
          id: `macro-server-${id}`,
          title,
          columns: [{ key: 't', label: 's', digits: 1 }, ...series.map(([label, key, , scale]) => ({ key, label, digits: scale === 1 ? 0 : 1 }))],
          rows: samples.map((s) => ({ t: s.t, ...Object.fromEntries(series.map(([, key, , scale]) => [key, value(s, key, scale) ?? null])) })),
        },
      },
    ];
  });
}

/**
 * The serving table's columns until the user asks for all of them: the load and its outcome, TTFT and
 * TPOT at p50 and p99, ITL and E2EL at p99, output tok/s and goodput (the means, the duration, ITL
 * p50, total tok/s and req/s wait behind "All columns"). Twenty columns need about 1,200 px; these
 * fit the results view beside the findings document (under 570 px in a 1600 px window).
 */
const FEWER_COLUMNS = new Set([
  'load',
  'state',
  'completed',
  'failed',
  'p50_ttft_ms',
  'p99_ttft_ms',
  'p50_tpot_ms',
  'p99_tpot_ms',
  'p99_itl_ms',
  'p99_e2el_ms',
  'output_throughput',
  'request_goodput',
]);

/**
 * The full serving table of a run, one row per level (the findings document quotes only TTFT and
 * TPOT p50/p99, throughput and goodput; everything `vllm bench serve` reports is here;
 * `fewer` keeps the columns that fit beside the document).
 */
export function servingTable(run: RunSummary, options: { fewer?: boolean } = {}): ResultTable | undefined {
  const levels = allLevelsSorted(run);
  if (!levels.length) return undefined;
  const goodput = levels.some((l) => finite(l.request_goodput) !== undefined);
  const columns: TableColumn[] = [
    { key: 'load', label: loadAxis([run]).key === 'request_rate' ? 'req/s sent' : 'concurrency', digits: loadAxis([run]).key === 'request_rate' ? 2 : 0 },
    { key: 'state', label: 'level', align: 'left' },
    { key: 'completed', label: 'OK', digits: 0 },
    { key: 'failed', label: 'Failed', digits: 0 },
    { key: 'duration', label: 'Duration s', digits: 2 },
    ...SERVING_FIGURE_COLUMNS,
    ...(goodput ? [GOODPUT_COLUMN] : []),
  ];
  // --slo: each load's verdict, as the agent judged it (on the trials' intervals where it repeated the load).
  const verdict = (l: MacroLevelSummary) => (l.slo as { verdict?: string } | undefined)?.verdict?.replace('undecided', 'spread too wide to decide');
  if (levels.some(verdict)) columns.push({ key: 'slo', label: 'SLO', align: 'left' });
  const rows = levels.map((l) => {
    const row: Record<string, TableCell> = { load: loadOf(l), state: levelState(l) };
    // p50 is the median: vLLM writes p50_ only when asked for percentile 50, median_ always.
    for (const c of columns.slice(2)) row[c.key] = finite(l[c.key]) ?? (c.key.startsWith('p50_') ? finite(l[`median_${c.key.slice(4)}`]) : undefined) ?? null;
    if (row.slo !== undefined) row.slo = verdict(l) ?? '';
    return row;
  });
  // Fewer columns also leave out what says nothing here: Failed where none failed, the level's state where every level completed.
  const silent = (key: string, quiet: (v: TableCell) => boolean) => rows.every((r) => quiet(r[key]));
  const shown = options.fewer
    ? columns.filter(
        (c) =>
          (FEWER_COLUMNS.has(c.key) || c.key === 'slo') &&
          !(c.key === 'failed' && silent('failed', (v) => !v)) &&
          !(c.key === 'state' && silent('state', (v) => v === 'complete')),
      )
    : columns;
  return { id: 'macro-serving', title: 'Serving metrics per load level', columns: shown, rows };
}
