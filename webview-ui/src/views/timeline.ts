// What the run's timeline shows, apart from how it is drawn: the requests as typed arrays, the client's
// per-second series, the server's /metrics samples and where each level (and its steady window) sits,
// all on the run's time axis (seconds from its first send). Pure, so the unit tests run it in Node.
import type { MacroLevelSummary, RunSummary } from '../../../src/shared/results';
import { perSecond, timelineRequests, type PerSecond, type TimelineRequests } from '../../../src/shared/requestTimeline';
import type { ResultTable } from '../../../src/shared/table';
import { finite } from './common';

export interface ServerSample {
  t: number;
  running?: number;
  waiting?: number;
  kv_cache_usage?: number;
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
  let t0 = requests.t0;
  let t1 = requests.t1;
  if (server.length) {
    t0 = Math.min(t0, server[0].t);
    t1 = Math.max(t1, server[server.length - 1].t);
  }
  return { runId: run.id, requests, perSecond: series, server, levels, t0, t1: t1 > t0 ? t1 : t0 + 1 };
}

/** The timeline's figures as a table (one row per second of the client's series, the server's nearest sample beside it). */
export function timelineTable(d: TimelineData): ResultTable {
  const s = d.perSecond;
  let j = 0;
  const rows = Array.from(s.t, (t, i) => {
    // The server sample nearest the middle of the second.
    while (j + 1 < d.server.length && Math.abs(d.server[j + 1].t - (t + 0.5)) <= Math.abs(d.server[j].t - (t + 0.5))) j++;
    const near = d.server.length && Math.abs(d.server[j].t - (t + 0.5)) <= 1 ? d.server[j] : undefined;
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
