// What the run's timeline shows, apart from how it is drawn: the requests as typed arrays, the client's
// per-second series, the server's /metrics samples and where each level (and its steady window) sits,
// all on the run's time axis (seconds from its first send). Pure, so the unit tests run it in Node.
import type { MacroLevelSummary, ProfileStep, RunSummary } from '../../../src/shared/results';
import { perSecond, timelineRequests, type PerSecond, type TimelineRequests } from '../../../src/shared/requestTimeline';
import type { ResultTable } from '../../../src/shared/table';
import { finite } from './common';
import { categoryOrder, profileData, shortKernelName } from './profile';

export interface ServerSample {
  t: number;
  running?: number;
  waiting?: number;
  kv_cache_usage?: number;
}

/** One sample of one GPU (nvidia-smi on the host, while a level ran), on the run's axis. */
export interface GpuSample {
  t: number;
  gpu: number;
  powerW?: number;
  smClockMhz?: number;
  utilPercent?: number;
  tempC?: number;
}

export interface TimelineLevel {
  label: string;
  start: number;
  end: number;
  /** The level's steady window (warm-up and drain trimmed), on the run's axis. */
  steady?: [number, number];
}

export interface TimelineData {
  runId: string;
  requests: TimelineRequests;
  perSecond: PerSecond;
  server: ServerSample[];
  levels: TimelineLevel[];
  t0: number;
  t1: number;
  /** Why the server's series are not drawn, when the run kept none of them. */
  serverMissing?: string;
  /** The GPUs' samples, every GPU's by time (none where the host had no nvidia-smi). */
  gpus?: GpuSample[];
}

/** The GPUs' samples of every level: the agent's compact rows [t, gpu, power W, SM MHz, util %, memory MiB, temp °C, reasons]. */
export function gpuSamples(levels: readonly MacroLevelSummary[]): GpuSample[] {
  const num = (v: unknown) => finite(v);
  return levels
    .flatMap((l) =>
      ((l.gpu_telemetry as { series?: unknown[][] } | undefined)?.series ?? []).filter(
        (r) => Array.isArray(r) && num(r[0]) !== undefined && num(r[1]) !== undefined,
      ),
    )
    .map((r) => ({ t: r[0] as number, gpu: r[1] as number, powerW: num(r[2]), smClockMhz: num(r[3]), utilPercent: num(r[4]), tempC: num(r[6]) }))
    .sort((a, b) => a.t - b.t);
}

/** Why a run kept no sample of the server's state: the reason its levels recorded, else what leaves none. */
export function serverMissingReason(levels: readonly MacroLevelSummary[]): string {
  for (const l of levels) {
    const m = l.server_metrics as { available?: unknown; note?: unknown } | undefined;
    if (m?.available === false && typeof m.note === 'string' && m.note) return `No server series (running, waiting, KV cache): ${m.note}.`;
  }
  return "No server series (running, waiting, KV cache): the run kept no reading of the server's /metrics (an imported result, or a server whose /metrics has no running, waiting or KV-cache gauges).";
}

function levelName(l: MacroLevelSummary): string {
  const rate = l.request_rate as number | string | null;
  if (rate !== null && rate !== undefined) return `${rate === 'inf' ? '∞' : rate} req/s`;
  return `c=${l.max_concurrency}`;
}

/** The timeline of a macro run; undefined when it kept no request (a run before its first one finished, or a stored CLI run). */
export function timelineData(run: RunSummary): TimelineData | undefined {
  const points = run.macro?.requests ?? [];
  if (run.phase !== 'macro' || !points.length) return undefined;
  const requests = timelineRequests(points);
  if (!requests.count) return undefined;
  const bounds = new Map<number, [number, number]>();
  for (let i = 0; i < requests.count; i++) {
    const b = bounds.get(requests.level[i]);
    if (!b) bounds.set(requests.level[i], [requests.sent[i], requests.end[i]]);
    else {
      b[0] = Math.min(b[0], requests.sent[i]);
      b[1] = Math.max(b[1], requests.end[i]);
    }
  }
  const summaries = run.macro?.levels ?? [];
  const levels: TimelineLevel[] = [...bounds.entries()]
    .sort((a, b) => a[1][0] - b[1][0])
    .map(([index, [start, end]]) => {
      const summary = summaries.find((l) => l.level === index);
      const steady = summary?.steady as { start_s?: unknown; end_s?: unknown } | undefined;
      const from = finite(steady?.start_s);
      const to = finite(steady?.end_s);
      return {
        label: summary ? levelName(summary) : `level ${index + 1}`,
        start,
        end,
        // The agent gives the steady window from the level's first send.
        ...(from !== undefined && to !== undefined ? { steady: [start + from, start + to] as [number, number] } : {}),
      };
    });
  const server = summaries
    .flatMap((l) => ((l.server_state as { samples?: ServerSample[] } | undefined)?.samples ?? []).filter((s) => finite(s.t) !== undefined))
    .sort((a, b) => a.t - b.t);
  const series = perSecond(requests);
  const gpus = gpuSamples(summaries);
  let t0 = requests.t0;
  let t1 = requests.t1;
  if (server.length) {
    t0 = Math.min(t0, server[0].t);
    t1 = Math.max(t1, server[server.length - 1].t);
  }
  return {
    runId: run.id,
    requests,
    perSecond: series,
    server,
    levels,
    t0,
    t1: t1 > t0 ? t1 : t0 + 1,
    ...(server.length ? {} : { serverMissing: serverMissingReason(summaries) }),
    ...(gpus.length ? { gpus } : {}),
  };
}

/** The timeline's figures as a table: one row per second of the client's series, the server's sample of that second beside it. */
export function timelineTable(d: TimelineData): ResultTable {
  const s = d.perSecond;
  let j = 0;
  const rows = Array.from(s.t, (t, i) => {
    // The server's last sample taken within this second, if any.
    while (j < d.server.length && d.server[j].t < t) j++;
    let near: ServerSample | undefined;
    while (j < d.server.length && d.server[j].t < t + 1) near = d.server[j++];
    return {
      t,
      in_flight: s.inFlight[i],
      tok_s: s.tokensPerS[i],
      running: near?.running ?? null,
      waiting: near?.waiting ?? null,
      kv: near?.kv_cache_usage === undefined ? null : near.kv_cache_usage * 100,
    };
  });
  return {
    id: 'macro-timeline',
    title: "The run second by second: requests in flight and output tokens/s (client), the server's running, waiting and KV cache",
    columns: [
      { key: 't', label: 's from the first send', digits: 0 },
      { key: 'in_flight', label: 'In flight', digits: 1 },
      { key: 'tok_s', label: 'Output tok/s', digits: 0 },
      { key: 'running', label: 'Server running', digits: 0 },
      { key: 'waiting', label: 'Server waiting', digits: 0 },
      { key: 'kv', label: 'KV cache %', digits: 1 },
    ],
    rows,
  };
}

export interface StepTimelineData {
  runId: string;
  rank: number;
  /** Stacking order, bottom first: the largest category over the run first, idle last. */
  categories: string[];
  steps: ProfileStep[];
}

/** The step timeline of a profile run that kept its steps (a profile analysed before they were kept has none). */
export function stepTimelineData(run: RunSummary): StepTimelineData | undefined {
  const kept = run.profile?.stepTimeline;
  if (run.phase !== 'profile' || !kept || !Array.isArray(kept.steps) || !kept.steps.length) return undefined;
  const summary = profileData(run);
  const order = summary ? categoryOrder([summary]) : [];
  const seen = new Set(order);
  const more: string[] = [];
  for (const s of kept.steps)
    for (const c of Object.keys(s.by_category))
      if (!seen.has(c)) {
        seen.add(c);
        more.push(c);
      }
  // Only the categories some step spent time in, so that the legend names what is drawn.
  const spent = (c: string) => kept.steps.some((s) => (s.by_category[c] ?? 0) > 0);
  const withoutIdle = [...order, ...more].filter((c) => c !== 'idle' && spent(c));
  return { runId: run.id, rank: kept.rank, categories: spent('idle') ? [...withoutIdle, 'idle'] : withoutIdle, steps: kept.steps };
}

/** What the table under the timeline lists for one step: its categories' time, then its largest kernels. */
export function stepTables(step: ProfileStep, index: number, categories: readonly string[]): ResultTable[] {
  const order = [...categories, ...Object.keys(step.by_category).filter((c) => !categories.includes(c))];
  const title = `Step ${index + 1}${step.kind ? ` (${step.kind})` : ''}: ${(step.dur_us / 1000).toFixed(2)} ms`;
  return [
    {
      id: 'profile-step-categories',
      title: `${title}, by kernel category`,
      columns: [
        { key: 'category', label: 'Category', align: 'left' },
        { key: 'ms', label: 'ms', digits: 3 },
        { key: 'share', label: '% of the step', digits: 1 },
      ],
      rows: order
        .filter((c) => step.by_category[c] > 0)
        .map((c) => ({ category: c, ms: step.by_category[c] / 1000, share: step.dur_us ? (100 * step.by_category[c]) / step.dur_us : null })),
    },
    {
      id: 'profile-step-kernels',
      title: `${title}, its largest kernels`,
      columns: [
        { key: 'name', label: 'Kernel', align: 'left' },
        { key: 'category', label: 'Category', align: 'left' },
        { key: 'count', label: 'Launches', digits: 0 },
        { key: 'us', label: 'µs', digits: 1 },
      ],
      rows: step.kernels.map((k) => ({ name: shortKernelName(k.name), full_name: k.name, category: k.category, count: k.count, us: k.total_us })),
    },
  ];
}
