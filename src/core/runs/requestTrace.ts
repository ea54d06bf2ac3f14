// A macro run's requests as a Chrome trace (the Trace Event Format that Perfetto and chrome://tracing
// open): one track per load level, each request a bar split into "waiting for the first token" and
// "decoding", and the server's own state (running, waiting, KV cache) as counter tracks beneath, on
// the same time axis. Opened beside the server's torch-profiler trace it shows the load the steps served.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { MacroLevelSummary, MacroRequestPoint } from '../../shared/results';
import { MacroRequestRecord } from '../../remote/agentSchema';
import { serverState } from '../macro/serverState';
import { levelLabel } from '../macro/tables';
import { metaPath, RunFolder, runDir, runsRoot, writeAtomic } from './runFolder';
import { finite } from '../../shared/finite';

interface TraceEvent {
  name: string;
  ph: 'X' | 'C' | 'M';
  pid: number;
  tid?: number;
  ts?: number;
  dur?: number;
  cat?: string;
  args?: Record<string, unknown>;
}

export interface ChromeTrace {
  traceEvents: TraceEvent[];
  displayTimeUnit: 'ms';
  metadata: Record<string, unknown>;
}

const SERVER_PID = 0;
const US = 1e6;

// The results view draws one point per request; beyond this many a run keeps the latest.
export const MAX_REQUEST_POINTS = 20_000;

/** A request record as the results view draws it (latency over time, the run's timeline): times from the run's first send. */
export function requestPoint(level: number, r: MacroRequestRecord): MacroRequestPoint {
  return {
    level,
    start_s: r.run_s ?? r.start_s ?? 0,
    ok: r.ok === true,
    ttft_ms: r.ttft_ms,
    e2el_ms: r.e2el_ms,
    tpot_ms: r.tpot_ms,
    queued_ms: r.lag_ms,
    output_tokens: r.output_tokens,
  };
}

/** The request points of a stored run's event log (a run the CLI made keeps no view of its own): the latest MAX_REQUEST_POINTS. */
export function requestPointsOfLog(text: string): MacroRequestPoint[] {
  const out: MacroRequestPoint[] = [];
  for (const line of text.split('\n')) {
    // Most lines are other events: only these are parsed.
    if (!line.includes('"macro.request"')) continue;
    try {
      for (const { level, record } of requestRecords([JSON.parse(line)])) out.push(requestPoint(level, record));
    } catch {
      // a line cut short by a crash
    }
  }
  return out.length > MAX_REQUEST_POINTS ? out.slice(out.length - MAX_REQUEST_POINTS) : out;
}

/** The request records of a run's event log (the `macro.request` events), with the level each belongs to. */
export function requestRecords(events: readonly unknown[]): { level: number; record: MacroRequestRecord }[] {
  const out: { level: number; record: MacroRequestRecord }[] = [];
  for (const e of events) {
    const event = e as { type?: unknown; level?: unknown; record?: unknown };
    if (event?.type !== 'macro.request' || typeof event.level !== 'number' || !event.record || typeof event.record !== 'object') continue;
    out.push({ level: event.level, record: event.record as MacroRequestRecord });
  }
  return out;
}

/**
 * The trace of a macro run. Requests go on lanes (threads) chosen so that bars on one lane never
 * overlap: the number of lanes a level uses is the most requests it had in flight.
 */
export function requestTrace(
  records: readonly { level: number; record: MacroRequestRecord }[],
  levels: readonly MacroLevelSummary[],
  runId: string,
): ChromeTrace {
  const events: TraceEvent[] = [{ name: 'process_name', ph: 'M', pid: SERVER_PID, args: { name: "server's own state (/metrics)" } }];
  const byLevel = new Map<number, { level: number; record: MacroRequestRecord }[]>();
  for (const r of records) {
    if (finite(r.record.run_s) === undefined) continue;
    byLevel.set(r.level, [...(byLevel.get(r.level) ?? []), r]);
  }
  for (const [index, rs] of [...byLevel.entries()].sort((a, b) => a[0] - b[0])) {
    const pid = index + 1;
    const summary = levels.find((l) => l.level === index);
    events.push({ name: 'process_name', ph: 'M', pid, args: { name: summary ? `level ${levelLabel(summary)}` : `level ${index}` } });
    events.push({ name: 'process_sort_index', ph: 'M', pid, args: { sort_index: pid } });
    const laneEnds: number[] = [];
    for (const { record } of [...rs].sort((a, b) => a.record.run_s! - b.record.run_s!)) {
      const start = record.run_s! * US;
      const total = Math.max(1, (finite(record.e2el_ms) ?? 0) * 1e3);
      let lane = laneEnds.findIndex((end) => end <= start);
      if (lane < 0) lane = laneEnds.push(0) - 1;
      laneEnds[lane] = start + total;
      const name = record.ok ? `request ${record.id ?? ''}`.trim() : `failed: ${record.reason ?? record.error ?? 'error'}`;
      events.push({
        name,
        ph: 'X',
        pid,
        tid: lane + 1,
        ts: start,
        dur: total,
        cat: record.ok ? 'request' : 'request,failed',
        args: {
          ok: record.ok,
          ttft_ms: record.ttft_ms,
          tpot_ms: record.tpot_ms,
          e2el_ms: record.e2el_ms,
          prompt_tokens: record.prompt_tokens,
          output_tokens: record.output_tokens,
          sent_late_ms: record.lag_ms,
          ...(record.ok ? {} : { error: record.error }),
        },
      });
      const ttft = finite(record.ttft_ms);
      if (record.ok && ttft !== undefined) {
        const first = Math.min(total, ttft * 1e3);
        events.push({ name: 'waiting for the first token', ph: 'X', pid, tid: lane + 1, ts: start, dur: first, cat: 'phase' });
        if (total > first) events.push({ name: 'decoding', ph: 'X', pid, tid: lane + 1, ts: start + first, dur: total - first, cat: 'phase' });
      }
    }
  }
  for (const level of levels) {
    for (const s of serverState(level)?.samples ?? []) {
      const ts = s.t * US;
      if (s.running !== undefined || s.waiting !== undefined)
        events.push({ name: 'requests', ph: 'C', pid: SERVER_PID, ts, args: { running: s.running ?? 0, waiting: s.waiting ?? 0 } });
      if (s.kv_cache_usage !== undefined)
        events.push({ name: 'KV cache used %', ph: 'C', pid: SERVER_PID, ts, args: { used: +(s.kv_cache_usage * 100).toFixed(2) } });
      if (s.generation_tokens_per_s !== undefined)
        events.push({ name: 'generated tok/s', ph: 'C', pid: SERVER_PID, ts, args: { tok_s: s.generation_tokens_per_s } });
      if (s.prefix_cache_hit_rate !== undefined)
        events.push({ name: 'prefix-cache hit %', ph: 'C', pid: SERVER_PID, ts, args: { hit: +(s.prefix_cache_hit_rate * 100).toFixed(2) } });
    }
  }
  return {
    traceEvents: events,
    displayTimeUnit: 'ms',
    metadata: {
      run: runId,
      // The torch profiler's trace keeps its own clock: line the two up by the first step of a level.
      time_origin: "the run's first request send (seconds 0); the client's monotonic clock",
    },
  };
}

export const REQUEST_TRACE_FILE = 'requests.trace.json';

/** Writes the run's requests as a Chrome trace into its folder; returns the file's path, or undefined when it holds no request. */
export function writeRequestTrace(run: RunFolder, levels: readonly MacroLevelSummary[]): string | undefined {
  const records = requestRecords(run.readEvents());
  if (!records.length) return undefined;
  const path = join(run.dir, REQUEST_TRACE_FILE);
  writeAtomic(path, JSON.stringify(requestTrace(records, levels, run.info.id)));
  return path;
}

/**
 * A stored macro run's requests as a Chrome trace (JSON text), for an export from a front end; throws
 * saying why when the run has none to draw.
 */
export function storedRunTrace(workspace: string, runId: string): string {
  // A run id is a folder name: nothing that climbs out of the runs folder.
  const dir = runDir(workspace, runId);
  if (!/^[\w.-]+$/.test(runId) || runId.startsWith('.') || !existsSync(metaPath(dir)))
    throw new Error(`No run "${runId}" in ${runsRoot(workspace)}: it may have been deleted; pick a run in the list again.`);
  const run = RunFolder.open(dir);
  if (run.info.phase !== 'macro') throw new Error(`Run ${runId} is a ${run.info.phase} run: a request trace is made of a macro run's requests.`);
  const records = requestRecords(run.readEvents()).filter((r) => finite(r.record.run_s) !== undefined);
  if (!records.length)
    throw new Error(
      `Run ${runId} kept no request with its send time, so there is nothing to put on a trace. A vllm bench serve result needs --save-detailed (its start_times); a macro run keeps them from its first finished request.`,
    );
  const levels = run.readResult<{ levels?: MacroLevelSummary[] }>()?.levels ?? [];
  return JSON.stringify(requestTrace(records, levels, runId));
}
